"""Credential providers of the scan: one per registries.conf entry (cached until
``credsexpire``), one per image pull secret (read once per cycle), and auto-detected cloud
logins. Each implements :class:`~argocd_image_updater.model.registry.CredentialProvider`:
concurrent callers share one fetch (an ``ext:`` script runs once), and :meth:`invalidate` after
a refusal (HTTP 401/403) lets the next caller fetch again. Cloud logins are cached by their own
expiry instead, process-wide (:class:`~argocd_image_updater.registry.cloud.logins.CloudLogins`),
so that pull secrets and registry entries naming the same login share it.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING

from argocd_image_updater.config.credentials import (
    CLOUD_KINDS,
    CredentialRef,
    parse_credential_ref,
)
from argocd_image_updater.config.secrets import SecretReader
from argocd_image_updater.model.registry import Credentials, RegistryEndpoint
from argocd_image_updater.observe import metrics
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.registry.cloud.detect import detect
from argocd_image_updater.registry.cloud.errors import CloudLoginError
from argocd_image_updater.registry.cloud.hosts import registry_host
from argocd_image_updater.registry.cloud.refresh import CloudToken, TokenRefresher
from argocd_image_updater.registry.credentials.errors import CredentialsError
from argocd_image_updater.registry.credentials.fetch import fetch_credentials, process_logins
from argocd_image_updater.registry.credentials.scripts import DEFAULT_EXT_TIMEOUT

if TYPE_CHECKING:
    from argocd_image_updater.registry.cloud.logins import CloudLogins

_log = get_logger(__name__)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class _CachingProvider:
    """Single-flight fetching with an optional time-to-live, shared by both providers.

    Cloud login references are served by their process-wide :class:`TokenRefresher` instead
    (cached until shortly before the token expires, whatever ``credsexpire`` says). With
    ``auto_detected`` set, a failing cloud login falls back to anonymous access.
    """

    def __init__(
        self,
        ref: CredentialRef | None,
        *,
        endpoint: RegistryEndpoint,
        ttl: timedelta,
        secrets: SecretReader | None,
        env: Mapping[str, str] | None,
        clock: Callable[[], float],
        ext_timeout: float,
        cloud_logins: CloudLogins | None = None,
        auto_detected: bool = False,
    ) -> None:
        self._ref = ref
        self._endpoint = endpoint
        self._ttl = ttl.total_seconds()
        self._secrets = secrets
        self._env = env
        self._clock = clock
        self._ext_timeout = ext_timeout
        self._cached: Credentials | None = None
        self._fetched_at = 0.0
        self._inflight: asyncio.Future[Credentials] | None = None
        self._refetch_pending = False
        self._generation = 0
        self._auto = auto_detected
        self._login: TokenRefresher | None = None
        # the token each task was given: a refusal is reported by the task that used it
        self._handed_out: weakref.WeakKeyDictionary[asyncio.Task[object], CloudToken] = (
            weakref.WeakKeyDictionary()
        )
        self._last_handed_out: CloudToken | None = None
        self._warned = ""
        self.last_error = ""
        """Why the last cloud login failed (empty after a successful one)."""
        if ref is not None and ref.kind in CLOUD_KINDS:
            self._login = (cloud_logins or process_logins()).refresher(ref.cloud, endpoint)

    @property
    def login(self) -> TokenRefresher | None:
        """The cloud login behind a cloud reference."""
        return self._login

    @property
    def key(self) -> str:
        return self._ref.key if self._ref is not None else ""

    @property
    def ref(self) -> CredentialRef | None:
        return self._ref

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key={self.key!r}, registry={self._endpoint.prefix!r})"

    def _fresh(self) -> bool:
        if self._cached is None:
            return False
        return self._ttl <= 0 or self._clock() - self._fetched_at < self._ttl

    async def get(self) -> Credentials | None:
        if self._ref is None:
            return None
        if self._login is not None:
            return await self._cloud_get(self._login)
        if self._fresh():
            metrics.CACHE_HITS.labels("credentials").inc()
            return self._cached
        metrics.CACHE_MISSES.labels("credentials").inc()
        if self._inflight is None:
            task = asyncio.ensure_future(self._fetch(self._ref, self._generation))
            task.add_done_callback(self._fetch_done)
            self._inflight = task
        # shield: one caller giving up must not cancel the fetch the others wait for
        return await asyncio.shield(self._inflight)

    async def _cloud_get(self, login: TokenRefresher) -> Credentials | None:
        try:
            token = await login.get()
        except CloudLoginError as exc:
            self._remember(None)
            self.last_error = str(exc)
            if not self._auto:
                raise CredentialsError(str(exc)) from None
            if self.last_error != self._warned:
                self._warned = self.last_error
                _log.warning(
                    "Cloud login for an auto-detected registry failed; continuing anonymously",
                    registry=self._endpoint.prefix,
                    error=self.last_error,
                )
            return None
        self._remember(token)
        self.last_error = ""
        return token.credentials

    def _remember(self, token: CloudToken | None) -> None:
        self._last_handed_out = token
        task = asyncio.current_task()
        if task is not None:
            if token is None:
                self._handed_out.pop(task, None)
            else:
                self._handed_out[task] = token

    def _refused_token(self) -> CloudToken | None:
        task = asyncio.current_task() if _loop_running() else None
        if task is not None and task in self._handed_out:
            return self._handed_out[task]
        return self._last_handed_out

    async def _fetch(self, ref: CredentialRef, generation: int) -> Credentials:
        _log.debug("fetching credentials", source=ref.key, registry=self._endpoint.prefix)
        creds = await fetch_credentials(
            ref,
            api_url=self._endpoint.api_url,
            prefix=self._endpoint.prefix,
            secrets=self._secrets,
            env=self._env,
            ext_timeout=self._ext_timeout,
        )
        if generation == self._generation:
            self._cached = creds
            self._fetched_at = self._clock()
        return creds

    def _fetch_done(self, task: asyncio.Future[Credentials]) -> None:
        self._inflight = None
        self._refetch_pending = False
        if not task.cancelled():
            task.exception()  # retrieved here so that an unawaited failure is not reported

    def invalidate(self) -> bool:
        """Forget the cached credentials after the registry refused them (HTTP 401/403).

        Returns True when the next :meth:`get` reads the source again and so may get different
        credentials: when credentials were cached, and also for further callers until that
        re-read has finished (they were refused the same credentials). Returns False when there
        is nothing to re-read (no reference, or the last re-read already happened); the caller
        then reports the authentication error instead of retrying.
        """
        if self._ref is None:
            return False
        if self._login is not None:
            return self._login.invalidate(self._refused_token())
        if self._cached is not None:
            self._cached = None
            self._generation += 1
            self._refetch_pending = True
            return True
        return self._refetch_pending


class EndpointCredentials(_CachingProvider):
    """Credentials of a registries.conf entry: cached until ``credsexpire`` (0 = forever).

    Concurrent callers share one fetch (an ``ext:`` script runs once). ``clock`` returns
    seconds (monotonic) and is injectable for tests. ``auto_detected``: the reference was not
    configured but chosen by host (see :mod:`argocd_image_updater.registry.cloud.detect`); a
    failing login then means anonymous access instead of an error.
    """

    def __init__(
        self,
        endpoint: RegistryEndpoint,
        *,
        secrets: SecretReader | None = None,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        ext_timeout: float = DEFAULT_EXT_TIMEOUT,
        cloud_logins: CloudLogins | None = None,
        auto_detected: bool = False,
    ) -> None:
        ref = parse_credential_ref(endpoint.credentials) if endpoint.credentials else None
        super().__init__(
            ref,
            endpoint=endpoint,
            ttl=endpoint.creds_expire,
            secrets=secrets,
            env=env,
            clock=clock,
            ext_timeout=ext_timeout,
            cloud_logins=cloud_logins,
            auto_detected=auto_detected,
        )


class ImageCredentials(_CachingProvider):
    """Credentials of a per-image pull secret; they override the registry-level ones.

    Create one per image and update cycle: the source is read on first use in that cycle and
    kept only by this object, never on the endpoint, so the next cycle reads it again.
    """

    def __init__(
        self,
        ref: CredentialRef | str,
        endpoint: RegistryEndpoint,
        *,
        secrets: SecretReader | None = None,
        env: Mapping[str, str] | None = None,
        ext_timeout: float = DEFAULT_EXT_TIMEOUT,
        cloud_logins: CloudLogins | None = None,
    ) -> None:
        parsed = parse_credential_ref(ref) if isinstance(ref, str) else ref
        super().__init__(
            parsed,
            endpoint=endpoint,
            ttl=timedelta(0),
            secrets=secrets,
            env=env,
            clock=time.monotonic,
            ext_timeout=ext_timeout,
            cloud_logins=cloud_logins,
        )


def auto_detected_credentials(
    endpoint: RegistryEndpoint,
    *,
    enabled: bool = True,
    cloud_logins: CloudLogins | None = None,
) -> EndpointCredentials | None:
    """A cloud login for a registry without ``credentials`` whose host names a cloud registry
    (when enabled, the SDK is installed and an identity is found); None means anonymous."""
    if endpoint.credentials or not enabled:
        return None
    found = detect(registry_host(endpoint.prefix, endpoint.host))
    if not found.reference:
        return None
    _log.debug("using an auto-detected cloud login", registry=endpoint.prefix, login=found.reason)
    return EndpointCredentials(
        replace(endpoint, credentials=found.reference),
        cloud_logins=cloud_logins,
        auto_detected=True,
    )
