"""What the controller lets go after each cycle: the C heap's free pages (glibc's malloc_trim) and
the statuses of the ImageUpdaters it keeps for webhook events."""

from __future__ import annotations

import platform

import pytest

from argocd_image_updater.controller import runner
from argocd_image_updater.pipeline.records import Collected, CRState


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_malloc_trim_is_found_and_callable_on_glibc() -> None:
    trim = runner._malloc_trim()
    assert trim is not None
    assert trim(0) in (0, 1)  # 1: memory was released, 0: there was none to release
    runner._return_free_memory()


def test_the_kept_selection_lets_the_listed_statuses_and_names_go() -> None:
    listed = {"metadata": {"name": "a"}, "spec": {"applicationRefs": []}, "status": {"x": 1}}
    collected = Collected(
        crs=[CRState("argocd", "a", 1, "5", raw=listed), CRState("argocd", "b", 1, "6")],
        listed={"argocd/app"},
    )
    runner._trim_kept_selection(collected)
    assert collected.crs[0].raw == {"metadata": {"name": "a"}, "spec": {"applicationRefs": []}}
    assert listed["status"] == {"x": 1}  # the listed object itself is not changed
    assert collected.crs[1].raw == {}
    assert collected.listed == set()


def test_the_collector_is_paused_during_a_cycle_and_restored_after() -> None:
    import gc

    was = gc.isenabled()
    try:
        gc.enable()
        with runner._collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled()
        gc.disable()  # a process that turned it off keeps it off
        with runner._collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
        gc.enable()
        with pytest.raises(RuntimeError), runner._collector_paused():
            raise RuntimeError("a failed cycle")
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
