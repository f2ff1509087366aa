"""Webhook rate limits: accepted events per hour, and requests per minute from one source.

``--webhook-ratelimit-allowed N`` (0 = off) is a token bucket holding ``N`` tokens and refilled at
``N`` per hour: each accepted event takes one, so bursts of up to ``N`` pass at once and the
sustained rate is ``N`` per hour. When the bucket is empty the call is answered ``429`` with a
``Retry-After`` header. The original instead made every accepted event wait for the limiter in
its own goroutine, so a flood queued without bound; here nothing queues, and the sender (or its
retry policy) decides when to come back.

The per-source limit (requests per minute per remote address, 0 = off) is checked before the
body is read, so one noisy or hostile client cannot use up the hourly budget or the server's
time on its own. The number of tracked sources is bounded; the least recently seen are
forgotten first.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

DEFAULT_PER_SOURCE_PER_MINUTE: Final = 60
DEFAULT_MAX_SOURCES: Final = 10_000


class TokenBucket:
    """``capacity`` tokens, refilled continuously at ``per_second``; starts full."""

    __slots__ = ("_tokens", "_updated", "capacity", "per_second")

    def __init__(self, capacity: int, per_second: float, now: float) -> None:
        if capacity < 1 or per_second <= 0:
            raise ValueError("a token bucket needs a capacity of at least 1 and a positive rate")
        self.capacity = float(capacity)
        self.per_second = per_second
        self._tokens = float(capacity)
        self._updated = now

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self._updated)
        self._tokens = min(self.capacity, self._tokens + elapsed * self.per_second)
        self._updated = max(self._updated, now)

    def take(self, now: float) -> float:
        """Take one token: ``0.0`` when granted, else the seconds until one is available."""
        self._refill(now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self.per_second


def retry_after(seconds: float) -> str:
    """A ``Retry-After`` header value: whole seconds, rounded up, at least 1."""
    return str(max(1, math.ceil(seconds)))


class WebhookRateLimiter:
    """The hourly event budget and the per-source request limit of one webhook server."""

    def __init__(
        self,
        per_hour: int = 0,
        per_source_per_minute: int = DEFAULT_PER_SOURCE_PER_MINUTE,
        *,
        max_sources: int = DEFAULT_MAX_SOURCES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_hour < 0 or per_source_per_minute < 0:
            raise ValueError("webhook rate limits must not be negative (0 turns a limit off)")
        if max_sources < 1:
            raise ValueError("max_sources must be at least 1")
        self._clock = clock
        self.per_hour = per_hour
        self.per_source_per_minute = per_source_per_minute
        self._max_sources = max_sources
        self._events = TokenBucket(per_hour, per_hour / 3600.0, clock()) if per_hour else None
        self._sources: OrderedDict[str, TokenBucket] = OrderedDict()

    def admit_source(self, source: str) -> float:
        """Count one request from ``source``: ``0.0`` to go on, else seconds to wait."""
        if not self.per_source_per_minute:
            return 0.0
        now = self._clock()
        bucket = self._sources.get(source)
        if bucket is None:
            rate = self.per_source_per_minute / 60.0
            bucket = TokenBucket(self.per_source_per_minute, rate, now)
            self._sources[source] = bucket
            while len(self._sources) > self._max_sources:
                self._sources.popitem(last=False)
        else:
            self._sources.move_to_end(source)
        return bucket.take(now)

    def admit_event(self) -> float:
        """Count one accepted event against the hourly budget: ``0.0``, or seconds to wait."""
        if self._events is None:
            return 0.0
        return self._events.take(self._clock())

    @property
    def tracked_sources(self) -> int:
        return len(self._sources)
