"""The controller hands the C heap's free pages back after each cycle (glibc's malloc_trim)."""

from __future__ import annotations

import platform

import pytest

from argocd_image_updater.controller import runner


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_malloc_trim_is_found_and_callable_on_glibc() -> None:
    trim = runner._malloc_trim()
    assert trim is not None
    assert trim(0) in (0, 1)  # 1: memory was released, 0: there was none to release
    runner._return_free_memory()
