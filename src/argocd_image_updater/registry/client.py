"""Async client for one registry endpoint (Docker Registry HTTP API v2 / OCI distribution).

Layers, from the outside in:

* credentials: on 401/403 with a :class:`CredentialProvider`, ``invalidate()`` it and retry once
  with freshly fetched credentials (when the provider says that may help);
* authorization: requests go out anonymously until the registry sends a challenge; the challenge
  is remembered, so later requests carry Basic credentials or a cached Bearer token up front;
* retries: 429/5xx/transport errors are retried with backoff, honouring ``Retry-After``;
* pacing: every HTTP request takes a slot of the endpoint's rate limit and concurrency bound,
  and is counted in the metrics and in :class:`RequestStats`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import httpx

from argocd_image_updater.model.registry import CredentialProvider, Credentials, RegistryEndpoint
from argocd_image_updater.model.retry import RETRY_STATUSES, RetryPolicy
from argocd_image_updater.observe.log import get_logger, register_secret
from argocd_image_updater.observe.metrics import (
    REGISTRY_REQUEST_DURATION,
    REGISTRY_REQUESTS,
    REGISTRY_REQUESTS_FAILED,
    REGISTRY_RESPONSES,
)
from argocd_image_updater.registry.auth import (
    Challenge,
    Token,
    TokenCache,
    TokenKey,
    TokenResponseError,
    parse_token_response,
    pick_challenge,
    token_scope,
)
from argocd_image_updater.registry.errors import (
    InvalidReference,
    ManifestNotFound,
    RegistryAuthError,
    RegistryConfigError,
    RegistryError,
    RegistryPlainHTTPError,
    RegistryProtocolError,
    RegistryTLSError,
    RegistryUnavailable,
    RepositoryNotFound,
)
from argocd_image_updater.registry.manifest import (
    MANIFEST_ACCEPT,
    OCI_INDEX,
    ImageConfig,
    Manifest,
    ManifestFormatError,
    is_digest,
    parse_config,
    parse_manifest,
    sha256_digest,
)
from argocd_image_updater.registry.ratelimit import EndpointLimits
from argocd_image_updater.registry.stats import RequestKind, RequestStats
from argocd_image_updater.registry.transport import http_client

MAX_MANIFEST_BYTES = 4 * 1024 * 1024
MAX_CONFIG_BYTES = 8 * 1024 * 1024
MAX_TAG_PAGE_BYTES = 32 * 1024 * 1024
MAX_TOKEN_BYTES = 1024 * 1024
MAX_TAG_PAGES = 10_000

# The distribution reference grammar for repository paths and tags.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_REPOSITORY = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_AUTH_CODES = frozenset({"UNAUTHORIZED", "DENIED"})


@dataclass(frozen=True, slots=True)
class Reply:
    """A finished HTTP exchange: the response (headers, status, links) and its body."""

    response: httpx.Response
    body: bytes

    @property
    def status(self) -> int:
        return self.response.status_code

    def header(self, name: str) -> str:
        return str(self.response.headers.get(name, ""))


def _error_codes(reply: Reply) -> list[tuple[str, str]]:
    """``(code, message)`` pairs of a registry error body; empty when there is none."""
    try:
        data: Any = json.loads(reply.body)
    except ValueError:
        return []
    errors = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(errors, list):
        return []
    return [
        (str(e.get("code", "")), str(e.get("message", ""))) for e in errors if isinstance(e, dict)
    ]


def _detail(reply: Reply) -> str:
    codes = _error_codes(reply)
    return "; ".join(f"{c}: {m}" if m else c for c, m in codes)


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


def _basic(credentials: Credentials) -> str:
    raw = f"{credentials.username}:{credentials.password}".encode()
    value = "Basic " + base64.b64encode(raw).decode()
    register_secret(value[len("Basic ") :])
    return value


class RegistryClient:
    """Talks to one :class:`RegistryEndpoint`. Use as ``async with`` or call :meth:`aclose`.

    ``http`` may be shared between endpoints with equal TLS settings (see
    :func:`~argocd_image_updater.registry.transport.http_client`); a client that creates its own
    closes it.
    """

    def __init__(
        self,
        endpoint: RegistryEndpoint,
        *,
        http: httpx.AsyncClient | None = None,
        limits: EndpointLimits | None = None,
        tokens: TokenCache | None = None,
        retry: RetryPolicy | None = None,
        stats: RequestStats | None = None,
    ) -> None:
        self.endpoint = endpoint
        self._api = endpoint.api_url.rstrip("/")
        if endpoint.plain_http_fallback and endpoint.host in _plain_http_hosts:
            self._api = "http://" + self._api.split("://", 1)[-1]
        api = httpx.URL(self._api)
        if api.scheme not in ("http", "https") or not api.host:
            raise RegistryConfigError(
                f"api_url '{endpoint.api_url}' of registry {endpoint.name or endpoint.prefix} is "
                "not an http:// or https:// URL (unsupported protocol scheme); fix it in "
                "registries.conf",
                registry=endpoint.host,
            )
        self._origin = httpx.URL(self._api).copy_with(path="/", query=None, fragment=None)
        self._registry = endpoint.host
        self._owns_http = http is None
        self._http = http if http is not None else http_client(endpoint)
        self._limits = limits or EndpointLimits(self._registry, endpoint.limit)
        self._tokens = tokens or TokenCache()
        self._retry = retry or RetryPolicy()
        self.stats = stats or RequestStats()
        self._challenge: Challenge | None = None
        self._log = get_logger("registry").bind(registry=self._registry)

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> RegistryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- public API ----------------------------------------------------------------------------

    async def ping(self) -> None:
        """Check that the endpoint speaks the v2 API (``GET /v2/`` answers 200 or 401)."""
        reply = await self._send("ping", "GET", httpx.URL(f"{self._api}/v2/"), {}, "")
        if reply.status == 401:
            self._challenge = pick_challenge(reply.response.headers.get_list("www-authenticate"))
            return
        if reply.status == 200:
            return
        error = RegistryUnavailable if reply.status in RETRY_STATUSES else RegistryProtocolError
        raise error(
            f"endpoint {self._api} does not seem to be a valid v2 Docker Registry API "
            f"(GET /v2/ answered HTTP {reply.status}); check 'api_url' of registry "
            f"{self.endpoint.name} in registries.conf",
            registry=self._registry,
        )

    async def list_tags(
        self, repository: str, credentials: CredentialProvider | None = None
    ) -> list[str]:
        """All tags of ``repository``, following ``Link: <…>; rel="next"`` pagination.

        A page that fails or is cut short fails the whole listing: never a partial list.
        """
        self._check_repository(repository)
        url = httpx.URL(f"{self._api}/v2/{repository}/tags/list")
        tags: list[str] = []
        seen_urls: set[str] = set()
        for _ in range(MAX_TAG_PAGES):
            seen_urls.add(str(url))
            reply = await self._request(
                "tags", "GET", url, repository, credentials, limit=MAX_TAG_PAGE_BYTES
            )
            self._raise_for(reply, repository)
            tags.extend(self._parse_tag_page(reply, repository, len(seen_urls)))
            next_url = self._next_page(reply, url, repository)
            if next_url is None:
                return list(dict.fromkeys(tags))
            if str(next_url) in seen_urls:
                raise self._protocol(
                    repository, f"tag list pagination loops back to {next_url.path}"
                )
            url = next_url
        raise self._protocol(repository, f"tag list has more than {MAX_TAG_PAGES} pages")

    async def get_manifest(
        self, repository: str, reference: str, credentials: CredentialProvider | None = None
    ) -> Manifest:
        """The manifest or index ``reference`` (a tag or ``sha256:`` digest) points to.

        The digest is the sha256 of the bytes received; for digest references it must equal the
        reference and the ``Docker-Content-Digest`` header.
        """
        return (await self.get_manifest_bytes(repository, reference, credentials))[0]

    async def get_manifest_bytes(
        self, repository: str, reference: str, credentials: CredentialProvider | None = None
    ) -> tuple[Manifest, bytes]:
        """:meth:`get_manifest` with the bytes received (signature manifests are read whole)."""
        self._check_repository(repository)
        self._check_reference(reference)
        url = httpx.URL(f"{self._api}/v2/{repository}/manifests/{reference}")
        reply = await self._request(
            "manifest", "GET", url, repository, credentials, MANIFEST_ACCEPT, MAX_MANIFEST_BYTES
        )
        self._raise_for(reply, repository, reference)
        try:
            manifest = parse_manifest(reply.body, reply.header("content-type"))
        except ManifestFormatError as exc:
            raise self._protocol(repository, f"manifest '{reference}': {exc}") from None
        if is_digest(reference):
            header = reply.header("docker-content-digest")
            if manifest.digest != reference or (
                header.startswith("sha256:") and header != manifest.digest
            ):
                raise self._protocol(
                    repository,
                    f"manifest '{reference}' has digest {manifest.digest} "
                    f"(Docker-Content-Digest: {header or 'absent'}): the content was altered",
                )
        return manifest, reply.body

    async def get_referrers(
        self,
        repository: str,
        digest: str,
        artifact_type: str,
        credentials: CredentialProvider | None = None,
    ) -> bytes | None:
        """The OCI 1.1 referrers index of ``digest`` (filtered on ``artifact_type`` where the
        registry filters; callers filter again), ``None`` when the registry has no referrers
        API (404)."""
        self._check_repository(repository)
        if not is_digest(digest):
            raise InvalidReference(
                f"digest '{digest}' is not sha256:<64 hex digits>", registry=self._registry
            )
        url = httpx.URL(f"{self._api}/v2/{repository}/referrers/{digest}").copy_merge_params(
            {"artifactType": artifact_type}
        )
        reply = await self._request(
            "manifest", "GET", url, repository, credentials, OCI_INDEX, MAX_MANIFEST_BYTES
        )
        if reply.status == 404:
            return None
        self._raise_for(reply, repository, digest, what="referrers")
        return reply.body

    async def get_blob(
        self,
        repository: str,
        digest: str,
        credentials: CredentialProvider | None = None,
        limit: int = MAX_CONFIG_BYTES,
    ) -> bytes:
        """The blob ``digest``, checked against its digest."""
        self._check_repository(repository)
        if not is_digest(digest):
            raise InvalidReference(
                f"blob digest '{digest}' is not sha256:<64 hex digits>",
                registry=self._registry,
                repository=repository,
            )
        url = httpx.URL(f"{self._api}/v2/{repository}/blobs/{digest}")
        reply = await self._request(
            "blob", "GET", url, repository, credentials, limit=limit, redirects=True
        )
        self._raise_for(reply, repository, digest, what="blob")
        if sha256_digest(reply.body) != digest:
            raise self._protocol(
                repository, f"blob {digest} has different content (digest mismatch)"
            )
        return reply.body

    async def head_digest(
        self, repository: str, tag: str, credentials: CredentialProvider | None = None
    ) -> str:
        """The current digest of ``tag`` from a HEAD request (a GET if the header is missing)."""
        self._check_repository(repository)
        self._check_reference(tag)
        url = httpx.URL(f"{self._api}/v2/{repository}/manifests/{tag}")
        reply = await self._request(
            "manifest", "HEAD", url, repository, credentials, MANIFEST_ACCEPT, 0
        )
        self._raise_for(reply, repository, tag)
        digest = reply.header("docker-content-digest")
        if is_digest(digest):
            return digest
        return (await self.get_manifest(repository, tag, credentials)).digest

    async def get_config(
        self, repository: str, digest: str, credentials: CredentialProvider | None = None
    ) -> ImageConfig:
        """The image config blob ``digest``: platform, ``created`` and ``config.Labels``."""
        self._check_repository(repository)
        if not is_digest(digest):
            raise InvalidReference(
                f"config digest '{digest}' is not sha256:<64 hex digits>",
                registry=self._registry,
                repository=repository,
            )
        url = httpx.URL(f"{self._api}/v2/{repository}/blobs/{digest}")
        reply = await self._request(
            "blob", "GET", url, repository, credentials, limit=MAX_CONFIG_BYTES, redirects=True
        )
        self._raise_for(reply, repository, digest, what="config blob")
        if sha256_digest(reply.body) != digest:
            raise self._protocol(
                repository, f"config blob {digest} has different content (digest mismatch)"
            )
        try:
            return parse_config(reply.body)
        except ManifestFormatError as exc:
            raise self._protocol(repository, f"config blob {digest}: {exc}") from None

    # --- credentials and authorization ---------------------------------------------------------

    async def _request(
        self,
        kind: RequestKind,
        method: str,
        url: httpx.URL,
        repository: str,
        credentials: CredentialProvider | None,
        accept: str = "",
        limit: int = MAX_MANIFEST_BYTES,
        redirects: bool = False,
    ) -> Reply:
        refetched = False
        while True:
            creds = await credentials.get() if credentials is not None else None
            if creds is not None:
                register_secret(creds.password)
            key = credentials.key if credentials is not None else ""
            try:
                return await self._authorized(
                    kind, method, url, repository, creds, key, accept, limit, redirects
                )
            except RegistryAuthError:
                self._tokens.forget(self._api, key)
                if credentials is None or refetched or not credentials.invalidate():
                    raise
                refetched = True
                self._log.info(
                    "Credentials were refused, fetching them again and retrying once",
                    repository=repository,
                    credentials=key,
                )

    async def _authorized(
        self,
        kind: RequestKind,
        method: str,
        url: httpx.URL,
        repository: str,
        creds: Credentials | None,
        creds_key: str,
        accept: str,
        limit: int,
        redirects: bool,
    ) -> Reply:
        headers = {"Accept": accept} if accept else {}
        auth = await self._authorization(self._challenge, repository, creds, creds_key)
        if auth:
            headers["Authorization"] = auth
        reply = await self._send(kind, method, url, headers, repository, limit, redirects)
        if reply.status == 401 and not auth:
            challenge = pick_challenge(reply.response.headers.get_list("www-authenticate"))
            if challenge is None:
                raise RegistryAuthError(
                    registry=self._registry,
                    repository=repository,
                    status=401,
                    detail="no usable WWW-Authenticate challenge",
                )
            self._challenge = challenge
            auth = await self._authorization(challenge, repository, creds, creds_key)
            if not auth:
                raise RegistryAuthError(
                    registry=self._registry,
                    repository=repository,
                    status=401,
                    detail="the registry requires credentials and none are configured",
                )
            headers["Authorization"] = auth
            reply = await self._send(kind, method, url, headers, repository, limit, redirects)
        codes = {code for code, _ in _error_codes(reply)} if reply.status >= 400 else set()
        if reply.status in (401, 403) or codes & _AUTH_CODES:
            raise RegistryAuthError(
                registry=self._registry,
                repository=repository,
                status=reply.status,
                detail=_detail(reply),
            )
        return reply

    async def _authorization(
        self,
        challenge: Challenge | None,
        repository: str,
        creds: Credentials | None,
        creds_key: str,
    ) -> str:
        if challenge is None:
            return ""
        if challenge.scheme == "basic":
            return _basic(creds) if creds is not None else ""
        scope = token_scope(self._api, repository) if repository else ""
        key = TokenKey(self._api, scope, creds_key)
        token = await self._tokens.get(
            key, lambda: self._fetch_token(challenge, scope, repository, creds)
        )
        return f"Bearer {token}"

    async def _fetch_token(
        self, challenge: Challenge, scope: str, repository: str, creds: Credentials | None
    ) -> Token:
        try:
            realm = httpx.URL(challenge.realm)
        except httpx.InvalidURL:
            realm = httpx.URL("")
        if realm.scheme not in ("http", "https") or not realm.host:
            raise self._protocol(
                repository, f"Bearer challenge has no usable realm ('{challenge.realm}')"
            )
        if creds is not None and realm.scheme == "http" and self._api.startswith("https:"):
            raise self._protocol(
                repository,
                f"token realm {realm} is plain HTTP: refusing to send credentials unencrypted",
            )
        params = {"service": challenge.service} if challenge.service else {}
        if scope:
            params["scope"] = scope
        headers = {}
        if creds is not None:
            params["account"] = creds.username
            headers["Authorization"] = _basic(creds)
        url = realm.copy_merge_params(params)
        reply = await self._send("token", "GET", url, headers, repository, MAX_TOKEN_BYTES)
        if reply.status in (401, 403):
            raise RegistryAuthError(
                registry=self._registry,
                repository=repository,
                status=reply.status,
                detail=f"the token server {realm.host} refused the credentials",
            )
        self._raise_for(reply, repository, what="token")
        try:
            token = parse_token_response(reply.body)
        except TokenResponseError as exc:
            raise self._protocol(repository, f"token server {realm.host}: {exc}") from None
        register_secret(token.value)
        return token

    # --- HTTP with retries, pacing and accounting ----------------------------------------------

    async def _send(
        self,
        kind: RequestKind,
        method: str,
        url: httpx.URL,
        headers: Mapping[str, str],
        repository: str,
        limit: int = MAX_MANIFEST_BYTES,
        redirects: bool = False,
    ) -> Reply:
        attempts = self._retry.attempts
        for attempt in range(attempts):
            last = attempt == attempts - 1
            async with self._limits.slot():
                try:
                    reply = await self._exchange(kind, method, url, headers, limit, redirects)
                except httpx.TransportError as exc:
                    plain = _plain_http_answer(exc)
                    if plain is not None:
                        # A protocol mismatch does not heal with retries.
                        if not self._fall_back_to_plain_http(url, plain):
                            raise RegistryPlainHTTPError(
                                registry=self._registry,
                                prefix=self.endpoint.prefix or self._registry,
                                repository=repository,
                                detail=plain,
                            ) from None
                        fallback = url.copy_with(scheme="http")
                        break
                    tls = _tls_failure(exc)
                    if tls is not None:
                        raise RegistryTLSError(
                            registry=self._registry, repository=repository, detail=tls
                        ) from None
                    if last:
                        raise RegistryUnavailable(
                            f"registry {self._registry} could not be reached for "
                            f"{kind} of repository '{repository}' after {attempts} attempts "
                            f"({type(exc).__name__}: {exc or 'no detail'}); check that "
                            "'api_url' is right and the registry is up, then try again",
                            registry=self._registry,
                            repository=repository,
                        ) from None
                    delay = self._retry.backoff(attempt)
                    reason = type(exc).__name__
                else:
                    if reply.status not in RETRY_STATUSES or last:
                        return reply
                    delay = self._retry.delay(attempt, reply.header("retry-after") or None)
                    reason = f"HTTP {reply.status}"
            self._log.debug(
                "Retrying registry request",
                kind=kind,
                repository=repository,
                reason=reason,
                delay=round(delay, 3),
            )
            await asyncio.sleep(delay)
        else:
            raise AssertionError("unreachable")  # pragma: no cover
        return await self._send(kind, method, fallback, headers, repository, limit, redirects)

    def _fall_back_to_plain_http(self, url: httpx.URL, detail: str) -> bool:
        """Switch to ``http://`` when the endpoint allows it and ``url`` is the registry's own."""
        own = url.copy_with(path="/", query=None, fragment=None) == self._origin
        if not (self.endpoint.plain_http_fallback and own and url.scheme == "https"):
            return False
        self._api = "http://" + self._api.split("://", 1)[-1]
        self._origin = self._origin.copy_with(scheme="http")
        if self._registry not in _plain_http_hosts:
            _plain_http_hosts.add(self._registry)
            self._log.info(
                "loopback registry answers in plain HTTP, using %s (as the docker CLI does for "
                "loopback registries; add a registries.conf entry to choose yourself)",
                self._api,
                detail=detail,
            )
        return True

    async def _exchange(
        self,
        kind: RequestKind,
        method: str,
        url: httpx.URL,
        headers: Mapping[str, str],
        limit: int,
        redirects: bool,
    ) -> Reply:
        REGISTRY_REQUESTS.labels(self._registry).inc()
        self.stats.record(kind, method)
        start = time.perf_counter()
        try:
            async with self._http.stream(
                method, url, headers=headers, follow_redirects=redirects
            ) as response:
                body = await self._read(response, limit)
        except httpx.TransportError as exc:
            REGISTRY_REQUESTS_FAILED.labels(self._registry).inc()
            REGISTRY_RESPONSES.labels(self._registry, kind, "error").inc()
            self._trace(method, url, "error", start, error=type(exc).__name__)
            raise
        finally:
            REGISTRY_REQUEST_DURATION.labels(self._registry, kind).observe(
                time.perf_counter() - start
            )
        status = response.status_code
        REGISTRY_RESPONSES.labels(self._registry, kind, str(status)).inc()
        challenge = status == 401 and "Authorization" not in headers
        if status >= 400 and not challenge:
            REGISTRY_REQUESTS_FAILED.labels(self._registry).inc()
        self._trace(method, url, status, start)
        return Reply(response, body)

    async def _read(self, response: httpx.Response, limit: int) -> bytes:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit and response.status_code < 300:
                raise RegistryProtocolError(
                    f"registry {self._registry} sent more than {limit} bytes for "
                    f"{response.request.url.path}; refusing to read further",
                    registry=self._registry,
                )
            if size <= limit:
                chunks.append(chunk)
        return b"".join(chunks)

    def _trace(
        self, method: str, url: httpx.URL, status: int | str, start: float, **fields: Any
    ) -> None:
        self._log.trace(
            "Registry HTTP request",
            method=method,
            url=str(url.copy_with(query=None)),
            status=status,
            duration_ms=round((time.perf_counter() - start) * 1000, 1),
            **fields,
        )

    # --- responses -----------------------------------------------------------------------------

    def _raise_for(
        self, reply: Reply, repository: str, reference: str = "", what: str = "manifest"
    ) -> None:
        status = reply.status
        if 200 <= status < 300:
            return
        codes = {code for code, _ in _error_codes(reply)}
        if status == 404:
            if "NAME_UNKNOWN" in codes or not reference:
                raise RepositoryNotFound(registry=self._registry, repository=repository)
            raise ManifestNotFound(
                registry=self._registry, repository=repository, reference=reference, what=what
            )
        where = f"registry {self._registry}, repository '{repository}'"
        if status in RETRY_STATUSES:
            raise RegistryUnavailable(
                f"{where}: HTTP {status} after {self._retry.attempts} attempts; the registry is "
                "overloaded or down: try again later, or lower 'limit' for it in registries.conf",
                registry=self._registry,
                repository=repository,
            )
        detail = _detail(reply)
        raise RegistryError(
            f"{where}: unexpected HTTP {status} for {reply.response.request.method} "
            f"{reply.response.request.url.path}" + (f" ({detail})" if detail else ""),
            registry=self._registry,
            repository=repository,
        )

    def _protocol(self, repository: str, problem: str) -> RegistryProtocolError:
        return RegistryProtocolError(
            f"registry {self._registry}, repository '{repository}': {problem}; the registry or "
            "a proxy in front of it sent invalid data, try again or check the registry",
            registry=self._registry,
            repository=repository,
        )

    def _parse_tag_page(self, reply: Reply, repository: str, page: int) -> list[str]:
        try:
            data = json.loads(reply.body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise self._protocol(
                repository, f"tag list page {page} is not valid JSON ({exc})"
            ) from None
        tags = data.get("tags") if isinstance(data, dict) else None
        if isinstance(data, dict) and tags is None and "tags" in data:
            return []  # a repository without tags answers "tags": null
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise self._protocol(repository, f"tag list page {page} has no 'tags' string list")
        return tags

    def _next_page(self, reply: Reply, url: httpx.URL, repository: str) -> httpx.URL | None:
        link = reply.response.links.get("next")
        if not link or not link.get("url"):
            return None
        next_url = url.join(link["url"])
        if next_url.copy_with(path="/", query=None, fragment=None) != self._origin:
            raise self._protocol(
                repository, f"tag list pagination points to another host ({next_url.host})"
            )
        return next_url

    def _check_repository(self, repository: str) -> None:
        if not _REPOSITORY.match(repository):
            raise InvalidReference(
                f"repository name '{repository}' is not valid (lower-case letters, digits and "
                "separators '.', '_', '-', '/'); fix the image name",
                registry=self._registry,
                repository=repository,
            )

    def _check_reference(self, reference: str) -> None:
        if not (is_digest(reference) or _TAG.match(reference)):
            raise InvalidReference(
                f"reference '{reference}' is neither a tag nor a sha256 digest; fix the tag",
                registry=self._registry,
            )
