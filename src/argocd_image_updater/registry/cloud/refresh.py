"""A cloud token kept until shortly before it expires, with one refresh at a time.

:class:`TokenRefresher` wraps one login (an async ``fetch``):

* the token is reused until ``refresh_margin`` before its expiry (at most a fifth of its
  lifetime early), but at least ``min_lifetime`` after it was fetched — a token whose expiry is
  already in the past (clock skew, or a test double) is reused for that long, never refetched
  on every request;
* concurrent callers share one fetch (one SDK call however many callers);
* a failed fetch is remembered and not retried before a back-off (doubling up to
  ``backoff_max``; failures that do not fix themselves, like a missing identity, wait the longest
  back-off at once); meanwhile a token that has not expired yet is still handed out;
* :meth:`invalidate` drops a token the registry refused, once: a token fetched because of a
  refusal and refused again within ``min_lifetime`` is not refetched.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from argocd_image_updater.model.registry import Credentials
from argocd_image_updater.observe.log import get_logger, register_secret
from argocd_image_updater.registry.cloud.errors import PERMANENT, CloudLoginError, Failure

DEFAULT_REFRESH_MARGIN: Final = 300.0
DEFAULT_MIN_LIFETIME: Final = 60.0
UNKNOWN_EXPIRY_LIFETIME: Final = 900.0
"""Seconds a token without an expiry is reused."""
BACKOFF_START: Final = 5.0
BACKOFF_MAX: Final = 300.0

_log = get_logger("cloud")


@dataclass(frozen=True, slots=True, eq=False)
class CloudToken:
    """Registry credentials from a cloud login; ``expires_at`` in seconds since the epoch."""

    credentials: Credentials
    expires_at: float | None = None


class TokenRefresher:
    """One cloud login's token, cached and refreshed; see the module description."""

    def __init__(
        self,
        name: str,
        fetch: Callable[[], Awaitable[CloudToken]],
        *,
        clock: Callable[[], float] = time.time,
        refresh_margin: float = DEFAULT_REFRESH_MARGIN,
        min_lifetime: float = DEFAULT_MIN_LIFETIME,
        backoff_start: float = BACKOFF_START,
        backoff_max: float = BACKOFF_MAX,
    ) -> None:
        self.name = name
        self._source = fetch
        self._clock = clock
        self._margin = refresh_margin
        self._min_lifetime = min_lifetime
        self._backoff_start = backoff_start
        self._backoff_max = backoff_max
        self._token: CloudToken | None = None
        self._fetched_at = 0.0
        self._refresh_at = -math.inf
        self._after_refusal = False
        self._refused = False
        self._inflight: asyncio.Future[CloudToken] | None = None
        self._error: CloudLoginError | None = None
        self._retry_at = -math.inf
        self._failures = 0
        self.fetches = 0
        """Logins started so far (each is one call to the provider)."""

    @property
    def last_error(self) -> CloudLoginError | None:
        """The error of the last login, None after a successful one."""
        return self._error

    def _unexpired(self, now: float) -> CloudToken | None:
        token = self._token
        if token is None or (token.expires_at is not None and now >= token.expires_at):
            return None
        return token

    async def get(self) -> CloudToken:
        """The current token, logging in when needed; raises :class:`CloudLoginError`."""
        now = self._clock()
        if self._token is not None and now < self._refresh_at:
            return self._token
        if self._error is not None and now < self._retry_at:
            token = self._unexpired(now)
            if token is not None:
                return token
            raise self._error
        inflight = self._inflight
        if inflight is None or inflight.get_loop() is not asyncio.get_running_loop():
            inflight = asyncio.ensure_future(self._fetch())
            inflight.add_done_callback(self._fetch_done)
            self._inflight = inflight
        # shield: one caller giving up must not cancel the login the others wait for
        return await asyncio.shield(inflight)

    async def _fetch(self) -> CloudToken:
        self.fetches += 1
        after_refusal, self._refused = self._refused, False
        try:
            token = await self._source()
        except CloudLoginError as exc:
            return self._failed(exc)
        except Exception as exc:  # an SDK error not mapped: report its type, never its text
            return self._failed(
                CloudLoginError(
                    f"{self.name}: login failed with {type(exc).__name__}", Failure.INVALID_RESPONSE
                )
            )
        register_secret(token.credentials.password)
        now = self._clock()
        self._token, self._fetched_at, self._after_refusal = token, now, after_refusal
        self._error, self._failures = None, 0
        self._refresh_at = self._schedule(token, now)
        return token

    def _failed(self, exc: CloudLoginError) -> CloudToken:
        now = self._clock()
        self._failures += 1
        if exc.failure in PERMANENT:
            delay = self._backoff_max
        else:
            delay = min(self._backoff_max, self._backoff_start * 2 ** (self._failures - 1))
        self._error, self._retry_at = exc, now + delay
        token = self._unexpired(now)
        if token is None:
            raise exc
        _log.warning(
            "Cloud login failed; using the current token until it expires",
            login=self.name,
            error=str(exc),
            expires_in=round((token.expires_at or now) - now),
        )
        return token

    def _schedule(self, token: CloudToken, now: float) -> float:
        if token.expires_at is None:
            return now + max(UNKNOWN_EXPIRY_LIFETIME, self._min_lifetime)
        lifetime = token.expires_at - now
        if lifetime <= self._min_lifetime:
            _log.warning(
                "Cloud token expires %s; reusing it for %gs before logging in again",
                "in the past" if lifetime <= 0 else f"in {lifetime:.0f}s",
                self._min_lifetime,
                login=self.name,
            )
        margin = min(self._margin, lifetime / 5)
        return max(now + lifetime - margin, now + self._min_lifetime)

    def _fetch_done(self, task: asyncio.Future[CloudToken]) -> None:
        if self._inflight is task:
            self._inflight = None
        if not task.cancelled():
            task.exception()  # retrieved, so that an unawaited failure is not reported

    def invalidate(self, refused: CloudToken | None) -> bool:
        """The registry refused ``refused``: drop it. True when asking again may help."""
        if refused is None:
            return False
        if self._inflight is not None:
            return True  # a login is under way: the retry waits for its token
        current = self._token
        if current is None:
            return self._refused  # another caller dropped it; its login is still to come
        if current is not refused:
            return True  # a newer token is already there
        if self._after_refusal and self._clock() - self._fetched_at < self._min_lifetime:
            return False  # the replacement of a refused token was refused too: report it
        self._token, self._refresh_at, self._refused = None, -math.inf, True
        return True
