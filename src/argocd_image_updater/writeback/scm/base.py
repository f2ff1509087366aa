"""Pull/merge requests for Git write-back's PR mode: the provider interface and the PR lifecycle.

A :class:`PullRequestClient` talks to one hosting service (GitHub, GitLab). On top of it,
:func:`ensure_pull_request` keeps exactly one open request per write branch: it opens the request
for ``head → base`` or refreshes the open one (title, body, labels), then closes our older open
requests for the same target (heads sharing ``supersedes_prefix``) with a "Superseded by" comment.

Errors are :class:`ScmError` and its subclasses. Their messages name the provider, the method and
the API path, never a token (tokens are registered with the log redactor, and every message from
a server passes through it as well).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, NamedTuple, Protocol, Self

import httpx

from argocd_image_updater.model.repo_url import RepoLocation
from argocd_image_updater.model.retry import parse_retry_after
from argocd_image_updater.report.log import get_logger, redact, register_secret

MAX_TITLE_RUNES: Final = 255
MAX_BODY_RUNES: Final = 65536
MAX_PAGES: Final = 100
PER_PAGE: Final = 100

log = get_logger("writeback.scm")

TokenSource = str | Callable[[], Awaitable[str]]
"""A fixed token, or an async callable returning a current one (e.g. a GitHub App token)."""


class ScmError(Exception):
    """A pull/merge request API call failed; ``status`` is the HTTP status, if there was one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(redact(message))
        self.status = status


class ScmAuthError(ScmError):
    """The token was refused (401) or lacks a permission (403)."""


class ScmNotFoundError(ScmError):
    """The repository, project or request does not exist, or the token cannot see it (404)."""


class ScmRateLimitError(ScmError):
    """The API rate limit is exhausted; ``retry_after`` seconds until it resets, if known."""

    def __init__(self, message: str, *, status: int | None, retry_after: float | None) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class PullRequest:
    """An open or closed pull/merge request.

    ``number`` is GitHub's PR number or GitLab's MR ``iid``; ``url`` its web page; ``state`` is
    ``open``, ``closed`` or ``merged`` (GitLab's ``opened`` is reported as ``open``).
    """

    number: int
    url: str
    head: str
    base: str
    title: str
    state: str
    body: str = field(default="", repr=False)
    labels: tuple[str, ...] = ()


class PullRequestClient(Protocol):
    """One hosting service's pull/merge request API."""

    @property
    def provider(self) -> str:
        """``GitHub`` or ``GitLab``, for messages."""
        ...

    def reference(self, pr: PullRequest) -> str:
        """How the service's markup links to ``pr``: ``#12`` (GitHub), ``!12`` (GitLab)."""
        ...

    async def find_open(self, repo: RepoLocation, head: str, base: str) -> PullRequest | None:
        """The open request from branch ``head`` into ``base`` of ``repo`` (not from a fork)."""
        ...

    async def create(
        self,
        repo: RepoLocation,
        head: str,
        base: str,
        title: str,
        body: str,
        labels: Sequence[str],
    ) -> PullRequest:
        """Open a request; when one is already open for ``head → base``, return that one."""
        ...

    async def update(
        self, repo: RepoLocation, pr: PullRequest, title: str, body: str, labels: Sequence[str]
    ) -> PullRequest:
        """Set title and body and add the missing ``labels`` (labels added by people stay)."""
        ...

    async def list_open_by_prefix(
        self, repo: RepoLocation, base: str, head_prefix: str
    ) -> list[PullRequest]:
        """Open requests into ``base`` whose head branch (in ``repo`` itself) starts with
        ``head_prefix``, across all result pages."""
        ...

    async def close(self, repo: RepoLocation, pr: PullRequest, comment: str) -> None:
        """Comment on ``pr`` (unless ``comment`` is empty), then close it."""
        ...


class EnsureResult(NamedTuple):
    """What :func:`ensure_pull_request` did: the request, whether it is new, what it closed."""

    pr: PullRequest
    created: bool
    closed: list[PullRequest]


def truncate_runes(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` code points (Go runes)."""
    return text if len(text) <= limit else text[:limit]


def normalize_labels(labels: Iterable[str]) -> list[str]:
    """Trimmed labels without blanks and duplicates, in their first-seen order."""
    seen: dict[str, None] = {}
    for label in labels:
        text = label.strip()
        if text:
            seen.setdefault(text, None)
    return list(seen)


def _wanted(pr: PullRequest, title: str, body: str, labels: Sequence[str]) -> bool:
    return pr.title == title and pr.body == body and set(labels) <= set(pr.labels)


async def ensure_pull_request(
    client: PullRequestClient,
    repo: RepoLocation,
    head: str,
    base: str,
    title: str,
    body: str,
    labels: Sequence[str],
    supersedes_prefix: str | None = None,
) -> EnsureResult:
    """Open or refresh the request for ``head → base``; close the ones it supersedes.

    The title is cut to 255 runes and the body to 65536; labels are trimmed, blanks and duplicates
    dropped. An open request for the same branches gets the new title, body and missing labels
    (no duplicate is opened). With ``supersedes_prefix``, every other open request into ``base``
    whose head starts with it is closed with the comment ``Superseded by #<n>`` (``!<n>`` on
    GitLab); a failure to close one is logged and leaves it out of ``closed``.
    """
    title = truncate_runes(title.strip(), MAX_TITLE_RUNES)
    body = truncate_runes(body.strip(), MAX_BODY_RUNES)
    if not title:
        raise ValueError("a pull request needs a title")
    wanted_labels = normalize_labels(labels)
    plog = log.bind(repository=repo.full_path, head=head, base=base)

    created = False
    pr = await client.find_open(repo, head, base)
    if pr is None:
        pr = await client.create(repo, head, base, title, body, wanted_labels)
        # an "already exists" answer may have handed us an older request: refresh that one
        # (labels are not compared here: GitHub adds them in a second call that may fail)
        created = pr.title == title and pr.body == body
        if created:
            plog.info("Created %s %s", _kind(client), client.reference(pr), pull_request=pr.url)
    if not created and not _wanted(pr, title, body, wanted_labels):
        pr = await client.update(repo, pr, title, body, wanted_labels)
        plog.info("Updated %s %s", _kind(client), client.reference(pr), pull_request=pr.url)
    elif not created:
        plog.debug("%s %s is up to date", _kind(client), client.reference(pr))

    closed: list[PullRequest] = []
    if supersedes_prefix:
        comment = f"Superseded by {client.reference(pr)}"
        for other in await client.list_open_by_prefix(repo, base, supersedes_prefix):
            if other.number == pr.number or other.head == head:
                continue
            try:
                await client.close(repo, other, comment)
            except ScmError as exc:
                plog.warning(
                    "Could not close superseded %s %s: %s",
                    _kind(client),
                    client.reference(other),
                    exc,
                )
                continue
            plog.info(
                "Closed %s %s, superseded by %s",
                _kind(client),
                client.reference(other),
                client.reference(pr),
            )
            closed.append(other)
    return EnsureResult(pr, created, closed)


def _kind(client: PullRequestClient) -> str:
    return "merge request" if client.provider == "GitLab" else "pull request"


# --- shared HTTP plumbing of the clients ------------------------------------------------------


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
    ``message`` as text, list or field map, or ``error``/``error_description``)."""
    if not isinstance(payload, Mapping):
        return str(payload).strip()[:500] if payload not in (None, "") else ""
    parts: list[str] = []
    message = payload.get("message", payload.get("error"))
    if isinstance(message, str):
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
    """One request; transport failures become :class:`ScmError` (the URL carries no token)."""
    request = http.build_request(method, url, params=params, json=json, headers=dict(headers))
    try:
        return await http.send(request)
    except httpx.HTTPError as exc:
        detail = str(exc) or type(exc).__name__
        raise ScmError(
            f"{provider} API {describe(method, request.url)}: request failed: {detail}"
        ) from None


def parse_time(value: str) -> float:
    """Epoch seconds of an ISO 8601 time like ``2024-01-01T00:00:00Z``."""
    when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


class HttpApiClient:
    """What both providers' clients share: the token, authenticated requests with the
    provider's error messages, and an HTTP client that is closed by :meth:`aclose` when this
    object made it (a caller-owned ``http`` is left open)."""

    provider: str = ""

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
