"""Watches against the API fake over a socket: bookmarks asked for and resumed from (no list
again after a compaction), 410 Gone listed again, an event longer than the line limit refused,
a throttled watch start retried, and the supervised ImageUpdater watch (restarted after any
failure, reported by /healthz after repeated ones)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from waiting import eventually

from argocd_image_updater.controller.spec_watch import (
    FAILURES_UNHEALTHY,
    Restarts,
    watch_specs,
)
from argocd_image_updater.kube.client import APPLICATIONS, IMAGE_UPDATERS, KubeClient, KubeError
from argocd_image_updater.kube.retry import RetryPolicy
from argocd_image_updater.kube.watch import follow
from argocd_image_updater.observe.health import Health
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer

NS = "argocd"


async def no_wait(seconds: float) -> None:
    pass


@pytest.fixture
async def server() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(bookmark_interval=0.05) as served:
        served.store.put(objects.application("web", NS, images=["nginx:1"]))
        yield served


@pytest.fixture
async def client(server: KubeApiServer, tmp_path: Path) -> AsyncIterator[KubeClient]:
    config = server.write_kubeconfig(tmp_path / "config", namespace=NS)
    async with await KubeClient.connect(str(config)) as kube:
        kube.retry = RetryPolicy(sleep=no_wait)
        yield kube


class Followed:
    """:func:`follow` run in a task, its events kept."""

    def __init__(self, client: KubeClient) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.task = asyncio.create_task(self._run(client))

    async def _run(self, client: KubeClient) -> None:
        async for kind, obj in follow(client, APPLICATIONS, NS):
            self.events.append((kind, obj))

    def names(self, kind: str) -> list[str]:
        return [obj["metadata"]["name"] for k, obj in self.events if k == kind]

    def bookmarked(self) -> int:
        marks = [int(o["metadata"]["resourceVersion"]) for k, o in self.events if k == "BOOKMARK"]
        return max(marks, default=0)

    async def stop(self) -> None:
        self.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self.task


async def test_bookmarks_keep_a_quiet_watch_current(
    server: KubeApiServer, client: KubeClient
) -> None:
    followed = Followed(client)
    try:
        await eventually(lambda: followed.names("ADDED") == ["web"], "the listed Application")
        # Other resources change; the Applications stay quiet.
        for index in range(5):
            server.store.put(objects.image_updater(f"iu{index}", NS))
        latest = int(server.store.resource_version)
        await eventually(lambda: followed.bookmarked() >= latest, "a bookmark of the progress")
        server.store.compact()
        server.end_watches()  # as at the watch's timeout: it resumes from the bookmark
        await eventually(lambda: server.request_count("watch", "applications") >= 2, "a resume")
        server.store.put(objects.application("two", NS, images=["nginx:1"]))
        await eventually(lambda: "two" in followed.names("ADDED"), "the event after the resume")
        assert server.request_count("list", "applications") == 1  # never listed again
    finally:
        await followed.stop()


async def test_a_410_lists_again(server: KubeApiServer, client: KubeClient) -> None:
    server.bookmark_interval = 3600.0  # no progress reported: the version ages
    followed = Followed(client)
    try:
        await eventually(lambda: server.store.watchers == 1, "the watch")
        for index in range(3):
            server.store.put(objects.image_updater(f"iu{index}", NS))
        server.store.compact()
        server.end_watches()
        await eventually(lambda: server.request_count("list", "applications") == 2, "a second list")
        await eventually(lambda: followed.names("ADDED") == ["web", "web"], "the list's objects")
    finally:
        await followed.stop()


async def test_an_event_longer_than_the_limit_ends_the_watch(
    server: KubeApiServer, client: KubeClient
) -> None:
    client.watch_line_limit = 4096
    big = objects.application("big", NS, images=["nginx:1"])
    big["metadata"]["annotations"] = {"note": "x" * 20_000}
    server.store.put(big)
    with pytest.raises(KubeError, match="a watch event longer than 4096 bytes"):
        async for _ in client.watch_objects(APPLICATIONS, NS):
            pass


async def test_a_throttled_watch_start_is_retried(
    server: KubeApiServer, client: KubeClient
) -> None:
    server.fail_next(2, verb="watch", resource="applications", status=429)
    async for kind, obj in client.watch_objects(APPLICATIONS, NS):
        assert (kind, obj["metadata"]["name"]) == ("ADDED", "web")
        break
    assert server.request_count("watch", "applications") == 3


async def test_the_supervised_watch_reports_repeated_failure_and_recovers(
    server: KubeApiServer, client: KubeClient
) -> None:
    health = Health()
    wake, stop = asyncio.Event(), asyncio.Event()
    server.fail_next(10_000, verb="list", resource="imageupdaters", status=403)
    server.store.put(objects.image_updater("iu", NS))
    task = asyncio.create_task(
        watch_specs(
            lambda scope: follow(client, IMAGE_UPDATERS, scope),
            [NS],
            wake,
            stop,
            health,
            Restarts(base=0.001, cap=0.001),
        )
    )
    try:
        await eventually(lambda: not health.healthy()[0], "the failing watch reported")
        _, message = health.healthy()
        assert "watch of ImageUpdaters in argocd" in message and "HTTP 403" in message
        assert server.request_count("list", "imageupdaters") >= FAILURES_UNHEALTHY
        server.clear_faults()
        await eventually(lambda: health.healthy()[0], "the watch working again")
        refs = [{"namePattern": "web", "images": [{"alias": "a", "imageName": "nginx:1.x"}]}]
        server.store.patch("imageupdaters", NS, "iu", {"spec": {"applicationRefs": refs}})
        await eventually(wake.is_set, "a cycle woken by the spec change")
    finally:
        stop.set()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_any_exception_restarts_the_watch() -> None:
    """Not only API errors: whatever the stream raises is logged and the watch starts again."""
    starts: list[str | None] = []
    wake, stop = asyncio.Event(), asyncio.Event()

    async def source(scope: str | None) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        starts.append(scope)
        if len(starts) < 3:
            raise RuntimeError("the HTTP transport is closed")
        meta = {"namespace": NS, "name": "iu", "generation": len(starts)}
        yield "MODIFIED", {"metadata": meta}
        await stop.wait()

    task = asyncio.create_task(
        watch_specs(source, [NS], wake, stop, Health(), Restarts(base=0.001, cap=0.001))
    )
    await eventually(wake.is_set, "the restarted watch's event")
    assert starts == [NS, NS, NS]
    stop.set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
