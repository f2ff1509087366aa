"""The console script pauses the garbage collector while it imports, and every command runs with
it collecting again (its imports frozen)."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator

import pytest

from argocd_image_updater.cli import collector

_REPORT = """
import atexit, gc, sys
atexit.register(lambda: sys.__stderr__.write(
    f"collector:{gc.isenabled()}:{gc.get_freeze_count() > 0}\\n"))
sys.argv[0] = "argocd-image-updater"
from argocd_image_updater.cli.console import main
main()
"""


@pytest.fixture
def restored_collector() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.unfreeze()  # another test in this process may have frozen its heap (a controller's cycle)
    yield
    collector._paused = False
    gc.unfreeze()
    if enabled:
        gc.enable()


@pytest.mark.usefixtures("restored_collector")
def test_resume_freezes_and_enables_only_after_pause() -> None:
    collector.resume()  # not paused: nothing happens
    assert gc.isenabled() and gc.get_freeze_count() == 0
    collector.pause()
    assert not gc.isenabled()
    collector.resume()
    assert gc.isenabled() and gc.get_freeze_count() > 0
    gc.unfreeze()
    collector.resume()  # a second resume does nothing
    assert gc.get_freeze_count() == 0


@pytest.mark.usefixtures("restored_collector")
def test_pause_leaves_a_disabled_collector_alone() -> None:
    gc.disable()
    collector.pause()
    collector.resume()
    assert not gc.isenabled() and gc.get_freeze_count() == 0


@pytest.mark.parametrize(
    "args",
    [
        ("version",),
        ("template",),
        # fails on its argument, after its work has started
        ("test", "not//an image"),
    ],
    ids=" ".join,
)
def test_commands_run_with_the_collector_on(args: tuple[str, ...]) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _REPORT, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = [line for line in result.stderr.splitlines() if line.startswith("collector:")]
    assert report == ["collector:True:True"], result.stderr[-2000:]
