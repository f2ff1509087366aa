"""The request path every host's client shares: tokens, authenticated requests, error
mapping (401/403/404/rate limits to :mod:`~argocd_image_updater.writeback.scm.errors`), and an
HTTP client closed by whoever made it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final, Self

import httpx

from argocd_image_updater.http1 import DEFAULT_DEADLINE
from argocd_image_updater.kits.fence import check_fence
from argocd_image_updater.model.pr_hosts import PullRequestHost
from argocd_image_updater.model.repo_url import RepoLocation
from argocd_image_updater.model.retry import parse_retry_after
from argocd_image_updater.observe.log import get_logger, register_secret
from argocd_image_updater.writeback.scm.errors import (
    ScmAuthError,
    ScmError,
    ScmNotFoundError,
    ScmRateLimitError,
)
from argocd_image_updater.writeback.scm.host import PullRequest

MAX_PAGES: Final = 100
PER_PAGE: Final = 100
MAX_ANSWER_BYTES: Final = 16 * 1024 * 1024
"""The most of one API answer read (decoded): a list page of 100 pull requests is far below it;
a host that sends more (or an endless or inflating body) fails that request."""

log = get_logger("writeback.scm")

TokenSource = str | Callable[[], Awaitable[str]]
"""A fixed token, or an async callable returning a current one (e.g. a GitHub App token)."""


async def resolve_token(source: TokenSource) -> str:
    token = source if isinstance(source, str) else await source()
    if not token:
        raise ScmAuthError("no API token available")
    register_secret(token)
    return token


def check_token_source(source: TokenSource) -> None:
    if isinstance(source, str):
        if not source:
            raise ValueError("a pull request API needs a token")
        register_secret(source)


def error_text(payload: Any) -> str:
    """The human part of a JSON error body (GitHub's ``message``/``errors``, GitLab's
    ``message`` as text, list or field map, or ``error``/``error_description``, Gitea's and
    Azure DevOps' ``message``, Bitbucket Cloud's ``error: {message, detail}``, Bitbucket Data
    Center's ``errors: [{message}]``)."""
    if not isinstance(payload, Mapping):
        return str(payload).strip()[:500] if payload not in (None, "") else ""
    parts: list[str] = []
    message = payload.get("message", payload.get("error"))
    if isinstance(message, Mapping) and "message" in message:
        parts.extend(str(message[k]) for k in ("message", "detail") if message.get(k))
    elif isinstance(message, str):
        parts.append(message)
    elif isinstance(message, list):
        parts.extend(str(m) for m in message)
    elif isinstance(message, Mapping):
        for key, value in message.items():
            items = value if isinstance(value, list) else [value]
            parts.extend(f"{key} {item}" for item in items)
    description = payload.get("error_description")
    if isinstance(description, str):
        parts.append(description)
    errors = payload.get("errors")
    if isinstance(errors, list):
        for err in errors:
            if isinstance(err, Mapping):
                text = err.get("message") or " ".join(
                    str(err[k]) for k in ("resource", "field", "code") if k in err
                )
                if text:
                    parts.append(str(text))
            elif err:
                parts.append(str(err))
    return "; ".join(p for p in parts if p)[:1000]


def response_text(response: httpx.Response) -> str:
    try:
        payload: Any = response.json()
    except ValueError:
        payload = response.text
    return error_text(payload) or response.reason_phrase


def rate_limit_wait(response: httpx.Response, now: float | None = None) -> float | None:
    """Seconds until the limit resets: ``Retry-After``, else an epoch ``*ratelimit-reset``."""
    retry_after = response.headers.get("retry-after")
    if retry_after:
        seconds = parse_retry_after(retry_after)
        if seconds is not None:
            return seconds
    for name in ("x-ratelimit-reset", "ratelimit-reset"):
        value = response.headers.get(name, "").strip()
        if value.isdigit():
            return max(0.0, float(value) - (time.time() if now is None else now))
    return None


def is_rate_limited(response: httpx.Response) -> bool:
    if response.status_code == 429:
        return True
    if response.status_code != 403:
        return False
    remaining = response.headers.get(
        "x-ratelimit-remaining", response.headers.get("ratelimit-remaining")
    )
    return remaining == "0" or "retry-after" in response.headers


def raise_for_status(provider: str, response: httpx.Response, what: str) -> None:
    """Map a failed answer to the matching :class:`ScmError`; ``what`` is ``METHOD /path``."""
    status = response.status_code
    if status < 400:
        return
    text = response_text(response)
    detail = text if text.startswith(str(status)) else f"{status} {text}"
    where = f"{provider} API {what}"
    if is_rate_limited(response):
        wait = rate_limit_wait(response)
        hint = f"; retry in {wait:.0f} s" if wait is not None else ""
        raise ScmRateLimitError(
            f"{where}: rate limit exceeded ({detail}){hint}",
            status=status,
            retry_after=wait,
        )
    if status == 401:
        raise ScmAuthError(
            f"{where}: authentication failed ({detail}); check the token", status=status
        )
    if status == 403:
        raise ScmAuthError(
            f"{where}: permission denied ({detail}); the token needs write access "
            "to pull/merge requests",
            status=status,
        )
    if status == 404:
        raise ScmNotFoundError(
            f"{where}: not found ({detail}); check the repository path and that the "
            "token can see it",
            status=status,
        )
    raise ScmError(f"{where}: {detail}", status=status)


def describe(method: str, url: httpx.URL) -> str:
    return f"{method} {url.raw_path.split(b'?', 1)[0].decode('ascii', 'replace')}"


def same_origin(a: httpx.URL, b: httpx.URL) -> bool:
    return (a.scheme, a.host, a.port) == (b.scheme, b.host, b.port)


async def send(
    http: httpx.AsyncClient,
    provider: str,
    method: str,
    url: str | httpx.URL,
    *,
    headers: Mapping[str, str],
    params: Mapping[str, str | int] | None = None,
    json: Any = None,
) -> httpx.Response:
    """One request, its answer read whole within the deadline and at most
    :data:`MAX_ANSWER_BYTES`; transport failures become :class:`ScmError` (the URL carries no
    token)."""
    request = http.build_request(method, url, params=params, json=json, headers=dict(headers))
    what = f"{provider} API {describe(method, request.url)}"
    if method not in ("GET", "HEAD"):
        check_fence(f"sending {what}")
    try:
        async with asyncio.timeout(DEFAULT_DEADLINE):  # a host that trickles fails this request
            return await _read_bounded(await http.send(request, stream=True), what)
    except TimeoutError:
        raise ScmError(f"{what}: no complete answer within {DEFAULT_DEADLINE:.0f} s") from None
    except httpx.HTTPError as exc:
        raise ScmError(f"{what}: request failed: {str(exc) or type(exc).__name__}") from None


async def _read_bounded(response: httpx.Response, what: str) -> httpx.Response:
    """``response`` with its body read, decoded, up to :data:`MAX_ANSWER_BYTES`."""
    body = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_ANSWER_BYTES:
                raise ScmError(
                    f"{what}: the answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MiB"
                )
    finally:
        await response.aclose()
    headers = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(
        response.status_code,
        headers=headers,
        content=bytes(body),
        request=response.request,
        extensions=response.extensions,
    )


def parse_time(value: str) -> float:
    """Epoch seconds of an ISO 8601 time like ``2024-01-01T00:00:00Z``."""
    when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def api_root(url: str, what: str) -> str:
    """``url`` without its trailing ``/``; ``what`` (``Gitea API URL``) names it in the error
    when it is not an ``https://`` or ``http://`` URL."""
    if not url.startswith(("https://", "http://")):
        raise ValueError(f"{what} must start with https:// or http://")
    return url.rstrip("/")


class HttpApiClient:
    """What every host's client shares: the token, authenticated requests with the host's
    error messages, and an HTTP client that is closed by :meth:`aclose` when this object made
    it (a caller-owned ``http`` is left open). A subclass sets :attr:`host`."""

    host: PullRequestHost

    @property
    def provider(self) -> str:
        return self.host.name

    def reference(self, pr: PullRequest) -> str:
        return self.host.reference(pr.number)

    def __init__(self, token: TokenSource, http: httpx.AsyncClient | None, timeout: float) -> None:
        check_token_source(token)
        self._token = token
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout, follow_redirects=False)

    def _auth_headers(self, token: str) -> dict[str, str]:
        """The headers that authenticate a request with ``token``."""
        raise NotImplementedError

    async def _request(
        self,
        method: str,
        url: str | httpx.URL,
        *,
        params: Mapping[str, str | int] | None = None,
        json: Any = None,
        passthrough: frozenset[int] = frozenset(),
    ) -> httpx.Response:
        """Send with the token; an error status (other than ``passthrough``) raises ScmError."""
        headers = self._auth_headers(await resolve_token(self._token))
        response = await send(
            self._http, self.provider, method, url, headers=headers, params=params, json=json
        )
        if response.status_code not in passthrough:
            raise_for_status(self.provider, response, describe(method, response.request.url))
        return response

    async def find_open(self, repo: RepoLocation, head: str, base: str) -> PullRequest | None:
        """The open request for ``head → base`` (each host defines it)."""
        raise NotImplementedError

    async def _existing(
        self,
        response: httpx.Response,
        repo: RepoLocation,
        head: str,
        base: str,
        *,
        duplicate: bool,
        listed: str = "open",
    ) -> PullRequest:
        """The open request a refused create names as already there: ``response`` is the
        refusal, ``duplicate`` whether it says the request exists (else it raises as any failed
        answer); a duplicate the host does not list as ``listed`` raises :class:`ScmError`."""
        if not duplicate:
            raise_for_status(self.provider, response, describe("POST", response.request.url))
        existing = await self.find_open(repo, head, base)
        if existing is None:
            raise ScmError(
                f"{self.provider} API: a {self.host.request} for {head} → {base} already exists "
                f"but is not listed as {listed} ({response_text(response)})",
                status=response.status_code,
            )
        log.debug(
            "%s for %s already exists: %s",
            self.host.request.capitalize(),
            head,
            self.reference(existing),
        )
        return existing

    def _next_page(self, first: httpx.URL, link: str | None) -> httpx.URL | None:
        """The next page a list answer links to (``None`` at the end), only on the API's own
        origin so that the token never travels elsewhere."""
        if not link:
            return None
        target = first.join(link)
        if not same_origin(first, target):
            raise ScmError(
                f"{self.provider} API {describe('GET', first)}: refusing to follow a next-page "
                "link to another origin"
            )
        return target

    async def _link_pages(
        self, url: str, params: Mapping[str, str | int]
    ) -> AsyncIterator[list[Any]]:
        """The items of a JSON list and of the pages its ``Link: <…>; rel="next"`` headers name
        (GitHub, Gitea), at most :data:`MAX_PAGES`."""
        response = await self._request("GET", url, params=params)
        first = response.request.url
        for _ in range(MAX_PAGES):
            items = self._json(response)
            if not isinstance(items, list):
                raise ScmError(f"{self.provider} API {describe('GET', first)}: expected a list")
            yield items
            target = self._next_page(first, response.links.get("next", {}).get("url"))
            if target is None:
                return
            response = await self._request("GET", target)
        raise ScmError(f"{self.provider} API {describe('GET', first)}: more than {MAX_PAGES} pages")

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            what = describe(response.request.method, response.request.url)
            raise ScmError(f"{self.provider} API {what}: the answer is not JSON") from None

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class ApiRootClient(HttpApiClient):
    """A host's client for the API base ``api_url`` (an ``https://`` or ``http://`` URL, kept
    without its trailing ``/`` in ``_api``); ``http`` is a caller-owned client (else one is
    made and closed by :meth:`aclose`)."""

    def __init__(
        self,
        token: TokenSource,
        *,
        api_url: str,
        http: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._api = api_root(api_url, f"{self.provider} API URL")
        super().__init__(token, http, timeout)
