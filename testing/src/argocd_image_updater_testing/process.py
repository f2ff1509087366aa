"""A local server process started by the sandbox: stopped by the PID it was started with (never
by name), its private directory removed; usable with ``with`` and ``async with``."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Self


class ManagedProcess:
    """Subclasses set ``_proc``, ``_dir`` and ``_port`` in :meth:`start`."""

    _proc: subprocess.Popen[bytes] | None
    _dir: Path | None
    _port: int

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self._port = 0
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)
