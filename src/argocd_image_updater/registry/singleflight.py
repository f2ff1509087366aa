"""Single-flight: concurrent callers asking for the same key share one in-flight call."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _consume(task: asyncio.Task[object]) -> None:
    # Mark the outcome as retrieved even when every caller was cancelled meanwhile.
    if not task.cancelled():
        task.exception()


class SingleFlight(Generic[K, V]):
    """Runs ``fn`` once per key at a time; a failure is handed to every waiter and not kept.

    The call runs in its own task so that one caller being cancelled does not cancel the others.
    """

    def __init__(self) -> None:
        self._inflight: dict[K, asyncio.Task[V]] = {}

    def __len__(self) -> int:
        return len(self._inflight)

    async def do(self, key: K, fn: Callable[[], Awaitable[V]]) -> tuple[V, bool]:
        """Return ``(value, shared)``; ``shared`` is True when another caller's call was joined."""
        task = self._inflight.get(key)
        shared = task is not None
        if task is None:
            task = asyncio.ensure_future(fn())
            self._inflight[key] = task
            task.add_done_callback(_consume)
            task.add_done_callback(lambda t: self._forget(key, t))
        return await asyncio.shield(task), shared

    def _forget(self, key: K, task: asyncio.Task[V]) -> None:
        if self._inflight.get(key) is task:
            del self._inflight[key]
