"""Per-registry request pacing (``limit`` requests/second, a replica's share of it when the
budget is shared: :mod:`~argocd_image_updater.registry.fleet_budget`) and a bound on concurrent
requests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from argocd_image_updater.observe.metrics import (
    REGISTRY_RATE_LIMIT_WAIT_SECONDS,
    REGISTRY_RATE_LIMIT_WAITS,
)
from argocd_image_updater.registry.fleet_budget import FleetBudget

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
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self._burst = burst
        self._clock = clock
        self._next = clock()
        self.set_rate(rate)

    def set_rate(self, rate: float) -> None:
        """Pace the next reservations at ``rate`` requests/second (those booked stay)."""
        if rate <= 0:
            raise ValueError(f"rate limit must be positive, got {rate}")
        self._interval = 1.0 / rate
        self._tolerance = (self._burst - 1) * self._interval

    def reserve(self) -> float:
        now = self._clock()
        start = max(self._next, now)
        self._next = start + self._interval
        return max(0.0, start - self._tolerance - now)


class EndpointLimits:
    """The rate limit and the concurrency bound of one registry endpoint; with a shared
    ``budget`` (``run --sharding``) the rate is this replica's share and a back-off learned
    from a ``429``, here or by another replica, holds every request to the registry."""

    def __init__(
        self,
        registry: str,
        rate: float,
        *,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        budget: FleetBudget | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.registry = registry
        self._rate = rate
        self._limiter = RateLimiter(rate, clock=clock) if rate > 0 else None
        self._sleep = sleep
        self._slots = asyncio.Semaphore(max_concurrency)
        self._budget = budget
        self._share = 1

    def backed_off(self, seconds: float) -> None:
        """The registry answered ``429``: the request that got it waits ``seconds``."""
        if self._budget is not None:
            self._budget.learned(self.registry, seconds)

    @asynccontextmanager
    async def slot(self, *, paced: bool = True) -> AsyncIterator[None]:
        """A place among the requests in flight, after a shared back-off and the rate limit's
        wait unless not ``paced`` (a request sent again because its first try never reached the
        registry)."""
        async with self._slots:
            if self._budget is not None:
                while (pause := self._budget.remaining(self.registry)) > 0:
                    self._waited(pause)
                    await self._sleep(pause)
                share = self._budget.share()
                if share != self._share and self._limiter is not None:
                    self._share = share
                    self._limiter.set_rate(self._rate / share)
            if paced and self._limiter is not None:
                delay = self._limiter.reserve()
                if delay > 0:
                    self._waited(delay)
                    await self._sleep(delay)
            yield

    def _waited(self, seconds: float) -> None:
        REGISTRY_RATE_LIMIT_WAITS.labels(self.registry).inc()
        REGISTRY_RATE_LIMIT_WAIT_SECONDS.labels(self.registry).inc(seconds)
