"""When a Kubernetes API request is sent again, and after how long.

As client-go does, an answer of 429 Too Many Requests or a 5xx (500, 502, 503, 504) and a
connection reset are retried, at most :data:`ATTEMPTS` times in all and waiting at most
:data:`BUDGET` seconds in all: after a 429 or a 503 with ``Retry-After`` that many seconds,
else an exponential backoff with jitter (0.25 s doubling up to 5 s, each wait between half and
all of it). Which failures a request may be sent again after depends on what a second copy
could do:

* reads (GET, HEAD, a watch's start) and DELETE: any of them;
* writes guarded by a ``resourceVersion`` (a PUT whose body carries
  ``metadata.resourceVersion``, a JSON patch with a ``test`` or a ``replace`` of
  ``/metadata/resourceVersion``, a merge patch carrying ``metadata.resourceVersion``): any of
  them too, as a copy that comes after the first was applied fails with 409 Conflict and
  changes nothing;
* any other write (POST, unguarded PUT/PATCH): only a 429, which the API server answers before
  it does anything; never after a 5xx or a reset, when the first copy may have been applied.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from enum import Enum
from typing import Any, Final, TypeVar

import httpx

from argocd_image_updater.observe import metrics
from argocd_image_updater.observe.log import get_logger

log = get_logger("kube")
T = TypeVar("T")

ATTEMPTS: Final = 10
BUDGET: Final = 30.0
BASE_DELAY: Final = 0.25
MAX_DELAY: Final = 5.0
RETRIED_STATUSES: Final = frozenset({429, 500, 502, 503, 504})
_IDEMPOTENT: Final = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})


class Safety(Enum):
    """What may be resent: every failure (``ANY``), or only a 429 (``THROTTLED``)."""

    ANY = "any"
    THROTTLED = "throttled"


def safety(method: str, body: Any) -> Safety:
    """How safe it is to send ``method`` with the JSON ``body`` again (see the module)."""
    if method in _IDEMPOTENT:
        return Safety.ANY
    if method in ("PUT", "PATCH") and _guarded(body):
        return Safety.ANY
    return Safety.THROTTLED


def _guarded(body: Any) -> bool:
    if isinstance(body, Mapping):
        meta = body.get("metadata")
        return isinstance(meta, Mapping) and bool(meta.get("resourceVersion"))
    if isinstance(body, Sequence) and not isinstance(body, str | bytes):
        return any(
            isinstance(op, Mapping)
            and (
                op.get("op") == "test"
                or (op.get("op") == "replace" and op.get("path") == "/metadata/resourceVersion")
            )
            for op in body
        )
    return False


def is_reset(exc: BaseException) -> bool:
    """A connection closed or reset by the other side (not a refused connection, a failed TLS
    handshake or a timeout, which a second attempt would meet again or wait for as long)."""
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        return True
    if isinstance(exc, httpx.ConnectError):
        return isinstance(exc.__cause__, ConnectionResetError | BrokenPipeError)
    return isinstance(exc, ConnectionResetError | BrokenPipeError)


def retry_after(
    value: str, now: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> float | None:
    """The seconds of a ``Retry-After`` field (a number of seconds or an HTTP date)."""
    value = value.strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now()).total_seconds())


@dataclass
class RetryPolicy:
    """The limits of :mod:`.retry`; ``sleep`` and ``jitter`` can be replaced in tests."""

    attempts: int = ATTEMPTS
    budget: float = BUDGET
    base: float = BASE_DELAY
    cap: float = MAX_DELAY
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    jitter: Callable[[], float] = field(default=random.random)

    def start(self) -> Attempts:
        return Attempts(self)


class Attempts:
    """The attempts of one request: :meth:`wait` before each further one."""

    __slots__ = ("made", "policy", "waited")

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy, self.made, self.waited = policy, 1, 0.0

    def delay(self, after: float | None = None) -> float | None:
        """The wait before the next attempt (``after``: the server's ``Retry-After``), or None
        when the attempts or the time budget are spent."""
        policy = self.policy
        if self.made >= policy.attempts:
            return None
        if after is not None:
            wait = after
        else:
            backoff = min(policy.cap, policy.base * 2.0 ** (self.made - 1))
            wait = backoff * (0.5 + policy.jitter() / 2)
        if self.waited + wait > policy.budget:
            return None
        return wait

    async def wait(self, seconds: float) -> None:
        self.made += 1
        self.waited += seconds
        await self.policy.sleep(seconds)


async def retrying(
    policy: RetryPolicy,
    what: str,
    may: Safety,
    attempt: Callable[[], Awaitable[T]],
    status_of: Callable[[T], tuple[int, str]],
    discard: Callable[[T], Awaitable[None]] | None = None,
) -> T:
    """``attempt()`` until its answer is not one to retry (``status_of`` gives its status
    and ``Retry-After``; ``discard`` releases an answer that is not used), or the retry
    policy's attempts or time are spent: then the last answer or failure is the caller's."""
    attempts = policy.start()
    while True:
        try:
            answer = await attempt()
        except (httpx.HTTPError, OSError) as exc:
            if may is not Safety.ANY or not is_reset(exc):
                raise
            delay = attempts.delay()
            if delay is None:
                raise
            reason = "connection"
        else:
            status, after = status_of(answer)
            if status not in RETRIED_STATUSES or (status != 429 and may is not Safety.ANY):
                return answer
            delay = attempts.delay(retry_after(after))
            if delay is None:
                return answer
            if discard is not None:
                await discard(answer)
            reason = str(status)
        metrics.K8S_API_RETRIES.labels(reason).inc()
        log.debug("Kubernetes API: %s failed (%s); sending it again in %.2fs", what, reason, delay)
        await attempts.wait(delay)
