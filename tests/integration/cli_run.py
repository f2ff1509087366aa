"""Run the real command line in a new Python process and tell which heavy modules it loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

HEAVY: Final = ("argocd_image_updater.kube.client", "aiohttp")
_MARK: Final = "loaded-heavy-modules:"


# Runs the CLI as the console script does; at exit (also on sys.exit) it writes which of the
# heavy modules ended up in sys.modules.
def _wrapper(watched: tuple[str, ...]) -> str:
    return f"""
import atexit, sys
atexit.register(lambda: sys.__stderr__.write(
    "{_MARK}" + ",".join(m for m in {watched!r} if m in sys.modules) + "\\n"))
sys.argv[0] = "argocd-image-updater"
from argocd_image_updater.cli.console import main
main()
"""


@dataclass(frozen=True, slots=True)
class CliRun:
    returncode: int
    stdout: str
    stderr: str
    heavy: tuple[str, ...]

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_cli(
    *args: str, cwd: Path | None = None, timeout: float = 120, watched: tuple[str, ...] = HEAVY
) -> CliRun:
    """Run the command line; ``heavy`` of the result: which of ``watched`` it imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMAGE_UPDATER_")}
    result = subprocess.run(
        [sys.executable, "-c", _wrapper(watched), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd,
        check=False,
    )
    marks = [line for line in result.stderr.splitlines() if line.startswith(_MARK)]
    assert marks, f"the wrapper did not report: {result.stderr[-2000:]}"
    heavy = tuple(name for name in marks[-1].removeprefix(_MARK).split(",") if name)
    stderr = "\n".join(line for line in result.stderr.splitlines() if not line.startswith(_MARK))
    return CliRun(result.returncode, result.stdout, stderr, heavy)
