"""Leaving a one-shot command's process without tearing the interpreter down.

When ``test`` is done, a normal exit would still free each of the some 100,000 objects its
imports created, module by module, before the process ends: a few percent of the command's
time, for memory the operating system reclaims anyway. :func:`leave` does what the exit must
do (the ``atexit`` callbacks, which flush the log handlers, and flushing standard output and
error) and ends the process with the same status. When anything else may still need the
interpreter (another thread is running, an output stream cannot be flushed) it exits normally.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def exit_status(code: object) -> int | None:
    """The process status for ``SystemExit(code)``, as the interpreter computes it; ``None`` when
    the interpreter would print ``code`` (a message) first."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    return None


def _other_threads() -> bool:
    main = threading.main_thread()
    return any(t is not main and t.is_alive() and not t.daemon for t in threading.enumerate())


def leave(exit: SystemExit) -> NoReturn:
    """End the process as ``exit`` would, without freeing the interpreter's objects."""
    status = exit_status(exit.code)
    if status is None or _other_threads():
        raise exit
    atexit._run_exitfuncs()  # callbacks run once: a normal exit after this runs none again
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        raise exit from None  # the interpreter reports it, as it would have
    os._exit(status)
