"""A registry's request budget shared by the replicas of a sharded fleet (``run --sharding``),
instead of multiplied by their number.

* Rate: each replica paces its requests to a registry at its ``registries.conf`` ``limit``
  divided by the number of live members (of its static shard), read from the member list at
  every request, so that the fleet together stays within ``limit``.
* Back-off: a ``429`` answer tells the replica that got it to wait (``Retry-After``, or its own
  back-off); with the budget shared, every request of that replica to the registry waits as
  long, and so do the other replicas once they hear of it (``publish`` tells them; what they
  tell comes back through :meth:`FleetBudget.heard`).

Until :meth:`FleetBudget.join` is called (a single replica, leader election) nothing is shared:
the rate is the whole ``limit`` and a ``429`` delays only the request that got it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

BACKOFF_MAX_SECONDS: Final = 600.0
"""The longest shared back-off, whatever a registry or a peer asks for."""


class FleetBudget:
    """This replica's share of every registry's budget."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._clock, self._wall = clock, wall
        self._members: Callable[[], int] | None = None
        self._publish: Callable[[str, float], None] | None = None
        self._until: dict[str, float] = {}
        """Registry host → monotonic time until which its requests wait."""

    @property
    def shared(self) -> bool:
        return self._members is not None

    def join(
        self, members: Callable[[], int], publish: Callable[[str, float], None] | None = None
    ) -> None:
        """Share the budget: ``members()`` is the number of replicas sharing it (read at every
        request), ``publish(host, until)`` tells them of a back-off (``until``: wall-clock
        seconds since the epoch)."""
        self._members, self._publish = members, publish

    def share(self) -> int:
        """How many replicas share each registry's rate (1 when not shared)."""
        if self._members is None:
            return 1
        return max(1, self._members())

    def remaining(self, host: str) -> float:
        """Seconds requests to ``host`` still wait for a back-off (0: none)."""
        until = self._until.get(host)
        if until is None:
            return 0.0
        left = until - self._clock()
        if left <= 0:
            del self._until[host]
            return 0.0
        return left

    def learned(self, host: str, seconds: float) -> None:
        """``host`` answered ``429`` and this replica waits ``seconds`` before it asks again: when
        shared, its other requests to ``host`` and the other replicas wait as long."""
        if self._members is None or seconds <= 0:
            return
        seconds = min(seconds, BACKOFF_MAX_SECONDS)
        if self._extend(host, seconds) and self._publish is not None:
            self._publish(host, self._wall() + seconds)

    def heard(self, host: str, until: float) -> bool:
        """Another replica learned that ``host`` wants requests to wait until ``until``
        (wall-clock seconds since the epoch; at most :data:`BACKOFF_MAX_SECONDS` from now).
        Whether that makes this replica wait longer than it did."""
        seconds = min(until - self._wall(), BACKOFF_MAX_SECONDS)
        return seconds > 0 and self._extend(host, seconds)

    def _extend(self, host: str, seconds: float) -> bool:
        until = self._clock() + seconds
        if until <= self._until.get(host, 0.0):
            return False
        self._until[host] = until
        return True
