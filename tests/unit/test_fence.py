"""The write fence kit: open outside any fence, closed when its check says so, inherited by the
tasks started under it, and never leaking into the context that set it."""

from __future__ import annotations

import asyncio

import pytest

from argocd_image_updater.kits.fence import WriteFenced, check_fence, fenced_context


async def test_writes_are_allowed_outside_any_fence() -> None:
    check_fence("writing anything")


async def test_a_closed_fence_refuses_naming_the_write_and_the_reason() -> None:
    allowed = True

    async def work() -> list[str]:
        seen = []
        check_fence("patching a")
        seen.append("a")
        nonlocal allowed
        allowed = False
        try:
            check_fence("patching b")
        except WriteFenced as err:
            seen.append(str(err))
        return seen

    context = fenced_context(lambda: allowed, "closed for the test")
    assert await asyncio.create_task(work(), context=context) == [
        "a",
        "not patching b: closed for the test",
    ]
    check_fence("patching c")  # the caller's own context has no fence


async def test_tasks_started_under_a_fence_inherit_it() -> None:
    async def child() -> None:
        check_fence("pushing")

    async def parent() -> None:
        await asyncio.gather(child(), asyncio.create_task(child()))

    with pytest.raises(WriteFenced, match=r"^not pushing: no$"):
        await asyncio.create_task(parent(), context=fenced_context(lambda: False, "no"))
