"""``test`` ends its process without tearing the interpreter down, with the same status and
output, and only when nothing else needs the interpreter."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from argocd_image_updater.cli import quick_exit


@pytest.mark.parametrize(
    ("code", "status"), [(None, 0), (0, 0), (3, 3), (257, 1), (True, 1), ("a message", None)]
)
def test_exit_status_is_the_interpreters(code: object, status: int | None) -> None:
    assert quick_exit.exit_status(code) == status


def test_a_message_or_another_thread_takes_the_normal_exit() -> None:
    with pytest.raises(SystemExit) as raised:
        quick_exit.leave(SystemExit("a message"))
    assert raised.value.code == "a message"
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        with pytest.raises(SystemExit) as raised:
            quick_exit.leave(SystemExit(0))
        assert raised.value.code == 0
    finally:
        release.set()
        worker.join()


_SCRIPT = """
import atexit, logging, sys
atexit.register(lambda: sys.__stdout__.write("atexit ran\\n"))
sys.argv[0] = "argocd-image-updater"
from argocd_image_updater.cli.console import main
main()
"""


def test_test_exits_with_its_status_after_its_output_and_exit_callbacks() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, "test", "not//an image"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert "invalid image reference 'not//an image'" in result.stdout + result.stderr
    assert result.stdout.endswith("atexit ran\n")
