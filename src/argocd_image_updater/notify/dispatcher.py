"""Sending a cycle's events to their targets, in the background.

:meth:`Notifier.submit` is all the report stage calls: it never waits for a receiver. It turns the
cycle's outcomes into events, routes each to the targets of its ImageUpdater's
``spec.notifications`` (or, without that section, to the ConfigMap default's), keeps the kinds
each target's ``on`` asks for, and queues one message per target. A failure that was already
sent is not sent again until it clears.

Each target has its own bounded queue drained by its own task, so a slow or unreachable receiver
delays only its own messages: when its queue is full the oldest waiting message is dropped (and
counted). A message is retried on transport errors, timeouts, 408, 429 and 5xx answers with
exponential backoff and jitter, waiting as long as a ``Retry-After`` header asks (capped); any
other answer is final. Receiver URLs and signing keys are read from Secrets when a message is
sent and masked in every log line.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

import httpx
from pydantic import ValidationError

from argocd_image_updater import __version__
from argocd_image_updater.config.notifications import (
    Notifications,
    NotificationTarget,
    SecretKeyRef,
)
from argocd_image_updater.config.secrets import SecretError, SecretReader, read_field
from argocd_image_updater.model.notifications import EventKind
from argocd_image_updater.model.retry import RetryPolicy
from argocd_image_updater.notify import metrics
from argocd_image_updater.notify.events import Batch, Event, cycle_events
from argocd_image_updater.notify.registry import target_types
from argocd_image_updater.notify.signing import signature_headers
from argocd_image_updater.notify.targets import Payload
from argocd_image_updater.observe.log import get_logger, register_secret
from argocd_image_updater.pipeline.records import Collected, CRState, CycleResult

log = get_logger("notify")

DEFAULT_RETRY: Final = RetryPolicy(
    attempts=5, base_delay=1.0, max_delay=60.0, max_retry_after=300.0
)
DEFAULT_TIMEOUT: Final = 10.0
"""Seconds one attempt may take, answer included."""
DEFAULT_QUEUE: Final = 100
"""Messages waiting per target."""
SHUTDOWN_GRACE: Final = 10.0
USER_AGENT: Final = f"argocd-image-updater/{__version__}"
_ANSWER_LIMIT: Final = 1024


class FailureReason(enum.StrEnum):
    """Why a message was given up (the ``reason`` label of the failed counter)."""

    SECRET = "secret"
    """The Secret or key holding the URL or signing key could not be read."""
    INVALID_URL = "invalid-url"
    """The URL is not an ``http(s)://`` URL."""
    REJECTED = "rejected"
    """The receiver answered 3xx or 4xx (other than 408 and 429): not retried."""
    RATE_LIMITED = "rate-limited"
    """429 on every attempt."""
    SERVER_ERROR = "server-error"
    """5xx or 408 on the last attempt."""
    TIMEOUT = "timeout"
    """No complete answer within the attempt's time on the last attempt."""
    UNREACHABLE = "unreachable"
    """Connection refused, reset, DNS or TLS failure on the last attempt."""


class _Undeliverable(Exception):
    def __init__(self, reason: FailureReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Route:
    """Where a message goes: ``target``, whose Secrets are read in ``namespace``; ``scope`` is
    the ImageUpdater (``<namespace>/<name>``) naming it, "" for the ConfigMap default."""

    target: NotificationTarget
    namespace: str
    scope: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.namespace, self.scope, self.target.name)

    @property
    def fields(self) -> dict[str, str]:
        """Log fields naming the target (never its URL)."""
        return {
            "target": self.target.name,
            "target_type": self.target.type,
            "scope": self.scope or "default",
        }


@dataclass(slots=True)
class _Lane:
    queue: deque[tuple[Route, Batch]] = field(default_factory=deque)
    task: asyncio.Task[None] | None = None
    sending: bool = False


Sleep = Callable[[float], Awaitable[None]]


class Notifier:
    """Routes, queues and delivers notifications; one per process, closed at exit."""

    def __init__(
        self,
        secrets: SecretReader | None,
        *,
        namespace: str,
        default: Callable[[], Notifications | None] | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        timeout: float = DEFAULT_TIMEOUT,
        max_queue: int = DEFAULT_QUEUE,
        http: httpx.AsyncClient | None = None,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``namespace``: the controller's, where the default's Secrets are read. ``sleep`` and
        ``clock`` wait between attempts and time the signatures."""
        if max_queue < 1:
            raise ValueError(f"the notification queue needs room for a message, got {max_queue}")
        self._secrets = secrets
        self._namespace = namespace
        self._default = default or (lambda: None)
        self._retry = retry
        self._timeout = timeout
        self._max_queue = max_queue
        self._http = http
        self._owns_http = http is None
        self._sleep = sleep
        self._clock = clock
        self._lanes: dict[tuple[str, str, str], _Lane] = {}
        self._failing: set[tuple[str, ...]] = set()

    # --- routing ---------------------------------------------------------------------------

    def submit(
        self, collected: Collected, result: CycleResult, *, dry_run: bool, partial: bool = False
    ) -> int:
        """Queue the messages of a cycle (``partial``: a webhook event's, which leaves the other
        failures as they were); returns how many. Never waits for a receiver."""
        return self.submit_events(
            self._fresh(cycle_events(collected, result, dry_run=dry_run), partial)
        )

    def submit_events(self, events: Sequence[tuple[CRState | None, Event]]) -> int:
        """Route, filter and queue ``events`` (each with its ImageUpdater, None for legacy
        annotations), one message per target; returns how many. Never waits for a receiver."""
        default = self._default_notifications()
        groups: dict[tuple[str, str, str], tuple[Route, list[Event]]] = {}
        for cr, event in events:
            for route in self._routes(cr, default):
                if event.kind in route.target.events:
                    groups.setdefault(route.key, (route, []))[1].append(event)
        for route, batch_events in groups.values():
            self.send(route, Batch(tuple(batch_events), self._source(route), route.scope))
        return len(groups)

    def _fresh(
        self, events: list[tuple[CRState | None, Event]], partial: bool
    ) -> list[tuple[CRState | None, Event]]:
        """The events minus failures already sent in an earlier cycle and not cleared since."""
        seen: set[tuple[str, ...]] = set()
        fresh = []
        for cr, event in events:
            if event.kind in (EventKind.FAILED, EventKind.VERIFICATION_FAILED):
                seen.add(event.failure_key)
                if event.failure_key in self._failing:
                    continue
            fresh.append((cr, event))
        self._failing = self._failing | seen if partial else seen
        return fresh

    def _default_notifications(self) -> Notifications | None:
        try:
            return self._default()
        except Exception as err:  # a broken default never stops the report
            log.error("cannot read the default notifications: %s", str(err))
            return None

    def _routes(self, cr: CRState | None, default: Notifications | None) -> list[Route]:
        """The ImageUpdater's own targets when it has a ``notifications`` section, else the
        default's (legacy annotations and unusable ImageUpdaters: the default's)."""
        if cr is not None and cr.error is None:
            own = _spec_notifications(cr)
            if own is not None:
                scope = f"{cr.namespace}/{cr.name}"
                return [Route(t, cr.namespace, scope) for t in own.targets]
        if default is None:
            return []
        return [Route(t, self._namespace, "") for t in default.targets]

    def _source(self, route: Route) -> str:
        """The CloudEvents ``source``: the ImageUpdater, or the controller's namespace."""
        if route.scope:
            namespace, _, name = route.scope.partition("/")
            return f"/argocd-image-updater/namespaces/{namespace}/imageupdaters/{name}"
        return f"/argocd-image-updater/namespaces/{self._namespace}"

    # --- queues ----------------------------------------------------------------------------

    def send(self, route: Route, batch: Batch) -> None:
        """Queue one message for ``route`` (dropping its oldest waiting one when full)."""
        lane = self._lanes.setdefault(route.key, _Lane())
        if len(lane.queue) >= self._max_queue:
            lane.queue.popleft()
            metrics.DROPPED.inc()
            log.warning(
                "notification queue full (%d messages); dropped the oldest message",
                self._max_queue,
                **route.fields,
            )
        lane.queue.append((route, batch))
        if lane.task is None or lane.task.done():
            lane.task = asyncio.get_running_loop().create_task(self._drain(route.key, lane))

    async def _drain(self, key: tuple[str, str, str], lane: _Lane) -> None:
        try:
            while lane.queue:
                route, batch = lane.queue.popleft()
                lane.sending = True
                try:
                    await self._deliver(route, batch)
                except Exception as err:  # one message never stops the queue
                    log.error(
                        "could not send a notification: %s: %s",
                        type(err).__name__,
                        str(err),
                        **route.fields,
                    )
                finally:
                    lane.sending = False
        finally:
            if self._lanes.get(key) is lane and not lane.queue:
                del self._lanes[key]

    def pending(self) -> int:
        """Messages waiting or being sent."""
        return sum(len(lane.queue) + lane.sending for lane in self._lanes.values())

    async def idle(self) -> None:
        """Wait until every queued message was sent or given up."""
        while True:
            tasks = [lane.task for lane in self._lanes.values() if lane.task is not None]
            if not tasks:
                return
            await asyncio.wait(tasks)

    async def aclose(self, grace: float = SHUTDOWN_GRACE) -> None:
        """Give queued messages ``grace`` seconds, then drop the rest (counted)."""
        try:
            async with asyncio.timeout(grace):
                await self.idle()
        except TimeoutError:
            left = self.pending()
            metrics.DROPPED.inc(left)
            log.warning("%d notification message(s) not sent at shutdown", left)
            tasks = [lane.task for lane in self._lanes.values() if lane.task is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._lanes.clear()
        if self._owns_http and self._http is not None:
            await self._http.aclose()
            self._http = None

    # --- delivery --------------------------------------------------------------------------

    async def _deliver(self, route: Route, batch: Batch) -> None:
        target = route.target
        try:
            url = (await self._secret(route, target.url_secret, "urlSecret")).decode().strip()
            register_secret(url)
            if not url.startswith(("https://", "http://")):
                raise _Undeliverable(
                    FailureReason.INVALID_URL,
                    f"the urlSecret {target.url_secret.secret_name}/{target.url_secret.key} "
                    "does not hold an http(s):// URL",
                )
            signing = None
            if target.signing_secret is not None:
                signing = await self._secret(route, target.signing_secret, "signingSecret")
                register_secret(signing.decode(errors="replace"))
        except _Undeliverable as err:
            for payload in target_types()[target.type].render(batch):
                self._given_up(route, payload, err.reason, str(err))
            return
        for payload in target_types()[target.type].render(batch):
            await self._post(route, url, signing, payload)

    async def _secret(self, route: Route, ref: SecretKeyRef, field_name: str) -> bytes:
        if self._secrets is None:
            raise _Undeliverable(FailureReason.SECRET, "no Secrets can be read in this mode")
        try:
            value = await read_field(self._secrets, route.namespace, ref.secret_name, ref.key)
        except SecretError as err:
            raise _Undeliverable(FailureReason.SECRET, f"{field_name}: {err}") from None
        if not value.strip():
            raise _Undeliverable(
                FailureReason.SECRET,
                f"{field_name}: key '{ref.key}' of secret '{route.namespace}/"
                f"{ref.secret_name}' is empty",
            )
        return value

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(follow_redirects=False)
        return self._http

    async def _post(self, route: Route, url: str, signing: bytes | None, payload: Payload) -> None:
        reason, detail = FailureReason.UNREACHABLE, ""
        for attempt in range(self._retry.attempts):
            headers = {
                "Content-Type": payload.content_type,
                "User-Agent": USER_AGENT,
                **payload.headers,
            }
            if signing is not None:
                headers |= signature_headers(signing, payload.body, int(self._clock()))
            retry_after: str | None = None
            try:
                async with asyncio.timeout(self._timeout):
                    status, answer, retry_after = await self._attempt(url, payload.body, headers)
            except TimeoutError:
                reason, detail = FailureReason.TIMEOUT, f"no answer within {self._timeout:g}s"
            except httpx.HTTPError as err:
                reason, detail = FailureReason.UNREACHABLE, str(err) or type(err).__name__
            else:
                if 200 <= status < 300:
                    for kind, count in _counts(payload.events).items():
                        metrics.SENT.labels(route.target.type, kind.value).inc(count)
                    log.debug("notification sent", events=len(payload.events), **route.fields)
                    return
                detail = f"HTTP {status}" + (f": {answer}" if answer else "")
                if status == 429:
                    reason = FailureReason.RATE_LIMITED
                elif status >= 500 or status == 408:
                    reason = FailureReason.SERVER_ERROR
                else:
                    self._given_up(route, payload, FailureReason.REJECTED, detail)
                    return
            if attempt + 1 < self._retry.attempts:
                await self._sleep(self._retry.delay(attempt, retry_after))
        self._given_up(route, payload, reason, detail)

    async def _attempt(
        self, url: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, str, str | None]:
        """POST once: the status, the start of the answer, its ``Retry-After``."""
        async with self._client().stream("POST", url, content=body, headers=headers) as response:
            answer = b""
            async for chunk in response.aiter_bytes():
                answer += chunk
                if len(answer) >= _ANSWER_LIMIT:
                    break
            text = answer[:_ANSWER_LIMIT].decode(errors="replace").strip()
            return response.status_code, text, response.headers.get("retry-after")

    def _given_up(self, route: Route, payload: Payload, reason: FailureReason, detail: str) -> None:
        metrics.FAILED.labels(route.target.type, reason.value).inc()
        log.warning(
            "notification not sent: %s",
            detail,
            reason=reason.value,
            events=len(payload.events),
            **route.fields,
        )


def _counts(events: Sequence[Event]) -> dict[EventKind, int]:
    counts: dict[EventKind, int] = {}
    for event in events:
        counts[event.kind] = counts.get(event.kind, 0) + 1
    return counts


def _spec_notifications(cr: CRState) -> Notifications | None:
    """The ImageUpdater's ``spec.notifications`` (validated with the rest of it already)."""
    spec = cr.raw.get("spec")
    raw = spec.get("notifications") if isinstance(spec, dict) else None
    if raw is None:
        return None
    try:
        return Notifications.model_validate(raw)
    except ValidationError:  # parsed with the whole resource: cannot happen, never fatal
        return None
