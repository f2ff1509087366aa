"""Waiting for a condition in tests: poll it until it holds, with a bounded timeout.

Tests never sleep for a fixed time and never assert right after starting something
asynchronous; they wait for the observable result instead. The bound is generous (a busy
2-core machine can be slow) and only matters when the condition never holds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

WITHIN = 30.0
"""Seconds before a condition that never holds fails the test."""


async def eventually(
    condition: Callable[[], object],
    what: str = "the condition",
    *,
    within: float = WITHIN,
    interval: float = 0.02,
) -> None:
    """Return as soon as ``condition()`` is truthy; fail naming ``what`` after ``within`` s."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not met within {within:.0f}s"
        await asyncio.sleep(interval)
