"""Per-registry request pacing (``limit`` requests/second) and a bound on concurrent requests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from argocd_image_updater.observe.metrics import (
    REGISTRY_RATE_LIMIT_WAIT_SECONDS,
    REGISTRY_RATE_LIMIT_WAITS,
)

DEFAULT_MAX_CONCURRENCY = 10
"""Requests in flight per registry (the original allows 10 connections per host)."""


class RateLimiter:
    """Token bucket in its "generic cell rate" form: one slot every ``1/rate`` seconds.

    ``reserve()`` books the next free slot and returns how long to wait for it, so concurrent
    callers are spaced evenly without a lock (there is no ``await`` between reading and booking).
    ``burst`` requests may go out back to back after an idle period.
    """

    def __init__(
        self, rate: float, *, burst: int = 1, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0:
            raise ValueError(f"rate limit must be positive, got {rate}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self._interval = 1.0 / rate
        self._tolerance = (burst - 1) * self._interval
        self._clock = clock
        self._next = clock()

    def reserve(self) -> float:
        now = self._clock()
        start = max(self._next, now)
        self._next = start + self._interval
        return max(0.0, start - self._tolerance - now)


class EndpointLimits:
    """The rate limit and the concurrency bound of one registry endpoint."""

    def __init__(
        self, registry: str, rate: float, *, max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    ) -> None:
        self.registry = registry
        self._limiter = RateLimiter(rate) if rate > 0 else None
        self._slots = asyncio.Semaphore(max_concurrency)

    @asynccontextmanager
    async def slot(self, *, paced: bool = True) -> AsyncIterator[None]:
        """A place among the requests in flight, after the rate limit's wait unless not
        ``paced`` (a request sent again because its first try never reached the registry)."""
        async with self._slots:
            if paced and self._limiter is not None:
                delay = self._limiter.reserve()
                if delay > 0:
                    REGISTRY_RATE_LIMIT_WAITS.labels(self.registry).inc()
                    REGISTRY_RATE_LIMIT_WAIT_SECONDS.labels(self.registry).inc(delay)
                    await asyncio.sleep(delay)
            yield
