"""HTTP to one registry endpoint with retries, pacing and accounting.

* retries: 429/5xx/transport errors are retried with backoff, honouring ``Retry-After`` (the
  back-off of a 429 is shared with the other replicas of a sharded fleet); a
  request that overran its deadline (registries.conf ``timeout``) is not: a registry that
  trickles its answer would only stall the image ``attempts`` times as long;
* pacing: every HTTP request takes a slot of the endpoint's rate limit and concurrency bound,
  and is counted in the metrics and in :class:`RequestStats`;
* a loopback registry that answers TLS in plain HTTP is spoken to in plain HTTP when the endpoint
  allows it (as the docker CLI does); any other TLS failure is a :class:`RegistryTLSError`.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final

import httpx

from argocd_image_updater import http1
from argocd_image_updater.config.durations import format_go_duration
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.retry import RETRY_STATUSES, RetryPolicy
from argocd_image_updater.observe.log import TRACE, get_logger
from argocd_image_updater.observe.metrics import (
    REGISTRY_REQUEST_DURATION,
    REGISTRY_REQUESTS,
    REGISTRY_REQUESTS_FAILED,
    REGISTRY_RESPONSES,
)
from argocd_image_updater.registry.errors import (
    RegistryConfigError,
    RegistryPlainHTTPError,
    RegistryProtocolError,
    RegistryTLSError,
    RegistryUnavailable,
)
from argocd_image_updater.registry.ratelimit import EndpointLimits
from argocd_image_updater.registry.replies import Reply, proxy_refused
from argocd_image_updater.registry.stats import RequestKind, RequestStats

if TYPE_CHECKING:
    from prometheus_client import Counter, Histogram
from argocd_image_updater.registry.transport import http_client

MAX_MANIFEST_BYTES = 4 * 1024 * 1024
_NAMES: Final[Mapping[str, str]] = {"tags": "tag list", "ping": "API check"}


def _tls_failure(exc: BaseException) -> str | None:
    """The certificate problem behind a connection error, if that is what it was."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return str(seen.verify_message or seen)
        if isinstance(seen, ssl.SSLError) and "CERTIFICATE" in str(seen).upper():
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    return None


_PLAIN_HTTP_SIGNS: Final = (
    "WRONG_VERSION_NUMBER",
    "RECORD_LAYER_FAILURE",
    "PACKET_LENGTH_TOO_LONG",
    "UNKNOWN_PROTOCOL",
)
_plain_http_hosts: set[str] = set()
"""Loopback registries found to speak plain HTTP (later clients start with http://)."""


def _plain_http_answer(exc: BaseException) -> str | None:
    """The TLS error saying that the server answered in plain HTTP, if that is what it was."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            text = f"{seen.reason or ''} {seen}".upper().replace(" ", "_")
            if any(sign in text for sign in _PLAIN_HTTP_SIGNS):
                return str(seen)
        seen = seen.__cause__ or seen.__context__
    return None


class EndpointHTTP:
    """Sends requests to one :class:`RegistryEndpoint`; ``api`` is its base URL (which turns to
    ``http://`` when a loopback registry answers in plain HTTP)."""

    def __init__(
        self,
        endpoint: RegistryEndpoint,
        *,
        http: httpx.AsyncClient | None,
        limits: EndpointLimits | None,
        retry: RetryPolicy | None,
        stats: RequestStats | None,
    ) -> None:
        self.endpoint = endpoint
        self.api = endpoint.api_url.rstrip("/")
        if endpoint.plain_http_fallback and endpoint.host in _plain_http_hosts:
            self.api = "http://" + self.api.split("://", 1)[-1]
        api = httpx.URL(self.api)
        if api.scheme not in ("http", "https") or not api.host:
            raise RegistryConfigError(
                f"api_url '{endpoint.api_url}' of registry {endpoint.name or endpoint.prefix} is "
                "not an http:// or https:// URL (unsupported protocol scheme); fix it in "
                "registries.conf",
                registry=endpoint.host,
            )
        self.origin = httpx.URL(self.api).copy_with(path="/", query=None, fragment=None)
        self.registry = endpoint.host
        self._owns_http = http is None
        self._http = http if http is not None else http_client(endpoint)
        self._limits = limits or EndpointLimits(self.registry, endpoint.limit)
        self.retry = retry or RetryPolicy()
        self.stats = stats or RequestStats()
        self.log = get_logger("registry").bind(registry=self.registry)
        self._requests = REGISTRY_REQUESTS.labels(self.registry)
        self._series: dict[tuple[object, ...], Any] = {}

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    def _unavailable(
        self, kind: RequestKind, repository: str, exc: httpx.TransportError
    ) -> RegistryUnavailable:
        """The error of a request that failed at the transport on its last attempt."""
        what = f"{kind} of repository '{repository}'"
        detail = f"{type(exc).__name__}: {exc or 'no detail'}"
        if isinstance(exc, httpx.RemoteProtocolError):
            # It answered, but not in valid HTTP/1.1 (or cut the answer off): not a wrong URL.
            message = (
                f"registry {self.registry} sent a malformed or cut-off answer for {what} "
                f"after {self.retry.attempts} attempts ({detail}); the registry, or a proxy in "
                "front of it, is misbehaving"
            )
        else:
            message = (
                f"registry {self.registry} could not be reached for {what} after "
                f"{self.retry.attempts} attempts ({detail}); check that 'api_url' is right and "
                "the registry is up, then try again"
            )
        return RegistryUnavailable(message, registry=self.registry, repository=repository)

    def is_own(self, url: str | httpx.URL) -> bool:
        """Whether ``url`` is on the registry's own origin."""
        return httpx.URL(url).copy_with(path="/", query=None, fragment=None) == self.origin

    async def send(
        self,
        kind: RequestKind,
        method: str,
        url: str | httpx.URL,
        headers: Mapping[str, str],
        repository: str,
        limit: int = MAX_MANIFEST_BYTES,
        redirects: bool = False,
        paced: bool = True,
    ) -> Reply:
        attempts = self.retry.attempts
        for attempt in range(attempts):
            last = attempt == attempts - 1
            async with self._limits.slot(paced=paced or attempt > 0):
                try:
                    reply = await self._exchange(kind, method, url, headers, limit, redirects)
                except http1.DeadlineExceeded as exc:
                    raise self._overran(kind, repository, exc.deadline) from None
                except httpx.TransportError as exc:
                    if isinstance(exc, httpx.ProxyError) and str(exc).startswith("407"):
                        # The tunnel was refused for want of credentials: retrying cannot help.
                        raise proxy_refused(self.registry, repository) from None
                    plain = _plain_http_answer(exc)
                    if plain is not None:
                        # A protocol mismatch does not heal with retries.
                        if not self._fall_back_to_plain_http(url, plain):
                            raise RegistryPlainHTTPError(
                                registry=self.registry,
                                prefix=self.endpoint.prefix or self.registry,
                                repository=repository,
                                detail=plain,
                            ) from None
                        fallback = httpx.URL(url).copy_with(scheme="http")
                        break
                    tls = _tls_failure(exc)
                    if tls is not None:
                        raise RegistryTLSError(
                            registry=self.registry, repository=repository, detail=tls
                        ) from None
                    if last:
                        raise self._unavailable(kind, repository, exc) from None
                    delay = self.retry.backoff(attempt)
                    reason = type(exc).__name__
                else:
                    if reply.status not in RETRY_STATUSES:
                        return reply
                    delay = self.retry.delay(attempt, reply.header("retry-after") or None)
                    if reply.status == 429:
                        self._limits.backed_off(delay)  # shared with the fleet, if it shares
                    if last:
                        return reply
                    reason = f"HTTP {reply.status}"
            self.log.debug(
                "Retrying registry request",
                kind=kind,
                repository=repository,
                reason=reason,
                delay=round(delay, 3),
            )
            await asyncio.sleep(delay)
        else:
            raise AssertionError("unreachable")  # pragma: no cover
        # The TLS attempt never reached the registry's HTTP server: no second rate-limit wait.
        return await self.send(
            kind, method, fallback, headers, repository, limit, redirects, paced=False
        )

    def _overran(self, kind: RequestKind, repository: str, deadline: float) -> RegistryUnavailable:
        shown = format_go_duration(timedelta(seconds=deadline))
        where = f" of repository '{repository}'" if repository else ""
        return RegistryUnavailable(
            f"registry {self.registry} did not answer the {_NAMES.get(kind, kind)} request{where} "
            f"within its "
            f"deadline of {shown} (it answers too slowly or not at all); if the registry is only "
            f"slow, raise 'timeout' of its entry (prefix {self.endpoint.prefix or self.registry}) "
            "in registries.conf",
            registry=self.registry,
            repository=repository,
        )

    def _fall_back_to_plain_http(self, url: str | httpx.URL, detail: str) -> bool:
        """Switch to ``http://`` when the endpoint allows it and ``url`` is the registry's own."""
        if not (
            self.endpoint.plain_http_fallback
            and self.is_own(url)
            and httpx.URL(url).scheme == "https"
        ):
            return False
        self.api = "http://" + self.api.split("://", 1)[-1]
        self.origin = self.origin.copy_with(scheme="http")
        if self.registry not in _plain_http_hosts:
            _plain_http_hosts.add(self.registry)
            self.log.info(
                "loopback registry answers in plain HTTP, using %s (as the docker CLI does for "
                "loopback registries; add a registries.conf entry to choose yourself)",
                self.api,
                detail=detail,
            )
        return True

    async def _exchange(
        self,
        kind: RequestKind,
        method: str,
        url: str | httpx.URL,
        headers: Mapping[str, str],
        limit: int,
        redirects: bool,
    ) -> Reply:
        self._requests.inc()
        self.stats.record(kind, method)
        start = time.perf_counter()
        try:
            answer = await http1.fetch(
                self._http,
                method,
                url,
                headers=headers,
                limit=limit,
                follow_redirects=redirects,
                deadline=self.endpoint.timeout,
            )
        except httpx.TransportError as exc:
            REGISTRY_REQUESTS_FAILED.labels(self.registry).inc()
            REGISTRY_RESPONSES.labels(self.registry, kind, "error").inc()
            self._trace(method, url, "error", start, error=type(exc).__name__)
            raise
        finally:
            self._series_of(REGISTRY_REQUEST_DURATION, kind).observe(time.perf_counter() - start)
        status = answer.status
        if answer.truncated and status < 300:
            raise RegistryProtocolError(
                f"registry {self.registry} sent more than {limit} bytes for {answer.path}; "
                "refusing to read further",
                registry=self.registry,
            )
        self._series_of(REGISTRY_RESPONSES, kind, str(status)).inc()
        challenge = status == 401 and "Authorization" not in headers
        if status >= 400 and not challenge:
            REGISTRY_REQUESTS_FAILED.labels(self.registry).inc()
        self._trace(method, url, status, start)
        return answer

    def _series_of(self, metric: Histogram | Counter, *values: str) -> Any:
        """The series of ``metric`` for this registry and ``values``, looked up once (the
        series of a registry are never removed)."""
        key = (metric, *values)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = metric.labels(self.registry, *values)
        return series

    def _trace(
        self, method: str, url: str | httpx.URL, status: int | str, start: float, **fields: Any
    ) -> None:
        if not self.log.is_enabled(TRACE):
            return  # the line would be dropped: spare building its URL (a parse per request)
        self.log.trace(
            "Registry HTTP request",
            method=method,
            url=str(httpx.URL(url).copy_with(query=None)),
            status=status,
            duration_ms=round((time.perf_counter() - start) * 1000, 1),
            **fields,
        )
