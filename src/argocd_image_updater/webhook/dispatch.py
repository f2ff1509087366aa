"""Hand accepted webhook events to the update logic, coalescing bursts per repository.

Events are keyed by :func:`~argocd_image_updater.webhook.events.repository_key` (an event without
a registry host gets its own key, so it never merges with a Docker Hub one). The first event for
a key opens a short window; every further event for that key until its handler call starts —
during the window, while waiting for a free slot, or while the previous call for the key is still
running — replaces the pending one (the latest wins) instead of adding a call. A key never has
two handler calls at once; different keys run concurrently, at most ``max_concurrency`` at a time.

The number of pending keys is bounded (``max_pending``): beyond it :meth:`EventDispatcher.submit`
refuses the event and the server answers ``503``. Metrics (in the process registry):

* ``argocd_image_updater_webhook_events_total{type,result}`` — ``accepted`` (a handler call was
  scheduled), ``coalesced`` (merged into a pending call) or ``rejected``;
* ``argocd_image_updater_webhook_rejections_total{type,reason}`` — why calls were refused;
* ``argocd_image_updater_webhook_event_handling_seconds`` — from receipt of the first event of a
  handler call to the end of that call (one observation per call).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, TypeAlias

from prometheus_client import Counter, Histogram

from argocd_image_updater.model.registry_event import RegistryEvent, repository_key
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater.webhook.registry import type_names

_P = "argocd_image_updater_"

WEBHOOK_EVENTS: Final = Counter(
    _P + "webhook_events",
    "Webhook calls by type and result (accepted, coalesced into a pending call, rejected)",
    ["type", "result"],
    registry=REGISTRY,
)
WEBHOOK_REJECTIONS: Final = Counter(
    _P + "webhook_rejections",
    "Refused webhook calls by type and reason",
    ["type", "reason"],
    registry=REGISTRY,
)
WEBHOOK_EVENT_HANDLING: Final = Histogram(
    _P + "webhook_event_handling_seconds",
    "Time from receiving a webhook event to the end of the handler call it triggered",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
    registry=REGISTRY,
)

KNOWN_TYPES: Final = frozenset(type_names())
UNKNOWN_TYPE: Final = "unknown"

Handler: TypeAlias = Callable[[RegistryEvent], Awaitable[None]]
Key: TypeAlias = tuple[str, str]

_log = get_logger("webhook.dispatch")


def metric_type(type_name: str) -> str:
    """``type_name`` as a metric label: a known webhook type, else ``unknown`` (bounded labels)."""
    return type_name if type_name in KNOWN_TYPES else UNKNOWN_TYPE


def record_rejection(type_name: str, reason: str) -> None:
    """Count one refused call in both webhook counters."""
    label = metric_type(type_name)
    WEBHOOK_EVENTS.labels(label, "rejected").inc()
    WEBHOOK_REJECTIONS.labels(label, reason).inc()


def dispatch_key(event: RegistryEvent) -> Key:
    """The coalescing key of ``event``: its canonical ``(registry, repository)``."""
    if not event.registry.strip():
        return "", event.repository.strip().strip("/")
    return repository_key(event.registry, event.repository)


@dataclass(slots=True)
class _Pending:
    event: RegistryEvent
    received: float
    """Clock time of the first event merged into this call."""
    deadline: float
    """Event loop time at which the coalescing window closes."""
    merged: int = 0


class EventDispatcher:
    """Runs ``handler`` for accepted events, one call per burst and repository.

    ``clock`` (monotonic seconds) stamps receipt times; pass the same clock's reading to
    :meth:`submit` as ``received_at`` to measure from the moment a request came in.
    """

    def __init__(
        self,
        handler: Handler,
        *,
        coalesce_window: float = 0.2,
        max_pending: int = 1000,
        max_concurrency: int = 1,
        clock: Callable[[], float] = time.monotonic,
        forward: Callable[[RegistryEvent], None] | None = None,
    ) -> None:
        if coalesce_window < 0:
            raise ValueError("coalesce_window must not be negative")
        if max_pending < 1 or max_concurrency < 1:
            raise ValueError("max_pending and max_concurrency must be at least 1")
        self._handler = handler
        self.forward = forward
        """Also called with every event accepted from a webhook call (a sharded replica passes
        it on to the others)."""
        self.coalesce_window = coalesce_window
        self.max_pending = max_pending
        self.max_concurrency = max_concurrency
        self.clock = clock
        self._pending: dict[Key, _Pending] = {}
        self._workers: dict[Key, asyncio.Task[None]] = {}
        self._slots = asyncio.Semaphore(max_concurrency)
        self._flush = asyncio.Event()
        self._closed = False
        self.calls = 0
        """Handler calls made so far (finished or failed)."""

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def pending(self) -> int:
        """Keys waiting for a handler call."""
        return len(self._pending)

    @property
    def busy(self) -> bool:
        """Whether any key is pending or being handled."""
        return bool(self._workers)

    def submit(
        self, event: RegistryEvent, *, received_at: float | None = None, forwarded: bool = False
    ) -> bool:
        """Accept ``event`` (``True``) or refuse it when closed or too many keys are pending.
        A ``forwarded`` event (passed on by another replica) is not counted as a webhook call
        nor passed on again.

        Must be called from the event loop the handler calls should run in.
        """
        if self._closed:
            self._rejected(event, "shutting-down", forwarded)
            return False
        key = dispatch_key(event)
        received = self.clock() if received_at is None else received_at
        entry = self._pending.get(key)
        if entry is not None:
            entry.event = event
            entry.merged += 1
            self._accepted(event, "coalesced", forwarded)
            _log.debug("Coalesced webhook event into a pending update", **_fields(event))
            return True
        if len(self._pending) >= self.max_pending:
            self._rejected(event, "too-many-pending", forwarded)
            _log.warning("Too many pending webhook events; refusing", **_fields(event))
            return False
        loop = asyncio.get_running_loop()
        self._pending[key] = _Pending(event, received, loop.time() + self.coalesce_window)
        self._accepted(event, "accepted", forwarded)
        if key not in self._workers:
            self._workers[key] = loop.create_task(self._work(key))
        return True

    def _accepted(self, event: RegistryEvent, result: str, forwarded: bool) -> None:
        if forwarded:
            return
        WEBHOOK_EVENTS.labels(metric_type(event.source_type), result).inc()
        if self.forward is not None:
            self.forward(event)

    def _rejected(self, event: RegistryEvent, reason: str, forwarded: bool) -> None:
        if not forwarded:
            record_rejection(event.source_type, reason)

    async def drain(self) -> None:
        """Cut every open window short and wait until all pending events have been handled."""
        self._flush.set()
        try:
            while self._workers:
                await asyncio.wait(list(self._workers.values()))
        finally:
            self._flush.clear()

    def close(self) -> None:
        """Refuse further events and cancel pending and running handler calls."""
        self._closed = True
        self._pending.clear()
        for task in list(self._workers.values()):
            task.cancel()

    async def _work(self, key: Key) -> None:
        try:
            while (entry := self._pending.get(key)) is not None:
                await self._wait_until(entry.deadline)
                async with self._slots:
                    current = self._pending.pop(key, None)
                    if current is not None:
                        await self._call(current)
        finally:
            if self._workers.get(key) is asyncio.current_task():
                del self._workers[key]

    async def _wait_until(self, deadline: float) -> None:
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining > 0 and not self._flush.is_set():
            # Not asyncio.wait_for: on 3.11 it loses a cancellation that comes as the wait ends.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._flush.wait()

    async def _call(self, entry: _Pending) -> None:
        fields = _fields(entry.event)
        _log.debug("Handling webhook event", merged=entry.merged, **fields)
        try:
            await self._handler(entry.event)
        except Exception as exc:
            _log.error("Handling the webhook event failed", exc=exc, **fields)
        finally:
            self.calls += 1
            WEBHOOK_EVENT_HANDLING.observe(max(0.0, self.clock() - entry.received))


def _fields(event: RegistryEvent) -> dict[str, str]:
    return {
        "webhook_registry": event.registry,
        "webhook_repository": event.repository,
        "webhook_tag": event.tag,
    }
