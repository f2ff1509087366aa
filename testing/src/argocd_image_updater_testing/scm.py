"""GitHub and GitLab pull/merge request API stand-ins, served over HTTP on ``127.0.0.1``.

They answer the REST endpoints the PR mode uses, with in-memory repositories and requests, in the
shapes the services document: objects, status codes, error bodies, pagination headers and rate
limit headers. Both are async context managers (``async with GitHubFake(...) as github``).

:class:`GitHubFake`
    ``GET/POST /repos/{o}/{r}/pulls``, ``GET/PATCH /repos/{o}/{r}/pulls/{n}``,
    ``POST /repos/{o}/{r}/issues/{n}/labels``, ``POST /repos/{o}/{r}/issues/{n}/comments`` and
    ``POST /app/installations/{id}/access_tokens`` (RS256 App JWTs checked against the App's public
    key). ``enterprise=True`` serves them under ``/api/v3`` like GitHub Enterprise Server. Lists
    are paged with ``Link`` headers.
:class:`GitLabFake`
    ``GET/POST /api/v4/projects/{id}/merge_requests``, ``GET/PUT …/merge_requests/{iid}`` and
    ``POST …/merge_requests/{iid}/notes``; the project is its numeric ID or URL-encoded path.
    Lists are paged with ``X-Next-Page`` (and friends) headers.

Every request is recorded in ``requests``; :meth:`fail_next` and :meth:`rate_limit_next` force the
answer of the next (matching) request.

Backed by real repositories (``git_root``: ``<root>/<path>.git``, the layout of the sandbox git
servers), the fakes keep the services' answers that depend on the branches: GitHub refuses a pull
request whose head branch is missing (422 ``PullRequest head invalid``) or has no commit the base
lacks (422 ``No commits between <base> and <head>``); GitLab, like the real one, opens a merge
request anyway. :meth:`GitHubFake.merge_pull` and :meth:`GitLabFake.merge_merge_request` press
the merge button (merge commit or squash, optionally deleting the head branch).
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import socket
import time
import zlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path
from typing import Any, Final, Self
from urllib.parse import unquote, urlencode

from aiohttp import web
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from multidict import MultiDict

from argocd_image_updater_testing.git_servers import (
    branch_commit,
    commits_between,
    delete_branch,
    merge_branch,
)

JSON = Any
_GITHUB_DOCS: Final = "https://docs.github.com/rest"
_GITHUB_VERSIONS: Final = frozenset({"2022-11-28", "2026-03-10"})


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as received: ``path`` is the raw path (percent-encoding kept)."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: JSON


@dataclass(slots=True)
class _Forced:
    status: int
    body: JSON
    headers: dict[str, str]
    path_contains: str | None
    method: str | None
    times: int


class _ScmFake:
    """Lifecycle, request log and forced answers shared by both fakes."""

    prefix = ""

    def __init__(
        self, tokens: Collection[str], page_size_cap: int, git_root: Path | str | None = None
    ) -> None:
        self.git_root = Path(git_root) if git_root is not None else None
        """Where the repositories behind the fake live (``<root>/<path>.git``), if anywhere."""
        self.tokens: set[str] = set(tokens)
        self.page_size_cap = page_size_cap
        """Largest page size granted whatever ``per_page`` asks (the services cap it at 100)."""
        self.requests: list[RecordedRequest] = []
        self._forced: list[_Forced] = []
        self._runner: web.AppRunner | None = None
        self._port = 0

    # --- lifecycle -----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError("the fake is not running: use 'async with' or start()")
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (the host's web URL)."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._port = 0

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- programming ---------------------------------------------------------------------------

    def fail_next(
        self,
        status: int,
        body: JSON = None,
        *,
        headers: Mapping[str, str] | None = None,
        path_contains: str | None = None,
        method: str | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` requests (whose raw path contains ``path_contains`` and whose
        method is ``method``, when given) with ``status``; a ``str``/``bytes`` body is sent as
        text, anything else as JSON (default: the service's error body for that status)."""
        self._forced.append(
            _Forced(status, body, dict(headers or {}), path_contains, method, times)
        )

    def _git_dir(self, path: str, given: Path | str | None) -> Path | None:
        if given is not None:
            return Path(given)
        if self.git_root is not None and (self.git_root / f"{path}.git").is_dir():
            return self.git_root / f"{path}.git"
        return None

    def calls(self, method: str | None = None, path_contains: str = "") -> list[RecordedRequest]:
        """Recorded requests, optionally only one method and paths containing a substring."""
        return [
            r
            for r in self.requests
            if (method is None or r.method == method) and path_contains in r.path
        ]

    def error_body(self, status: int) -> JSON:
        raise NotImplementedError

    # --- handling ------------------------------------------------------------------------------

    def _take_forced(self, method: str, path: str) -> _Forced | None:
        for forced in self._forced:
            if (forced.path_contains is None or forced.path_contains in path) and (
                forced.method is None or forced.method == method
            ):
                forced.times -= 1
                if forced.times <= 0:
                    self._forced.remove(forced)
                return forced
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw_path = request.raw_path.split("?", 1)[0]
        body: JSON = None
        if request.can_read_body:
            data = await request.read()
            if request.content_type == "application/x-www-form-urlencoded":
                body = dict((await request.post()).items())
            elif data:
                try:
                    body = json.loads(data)
                except ValueError:
                    return self._json(400, self._bad_json())
        self.requests.append(
            RecordedRequest(
                request.method,
                raw_path,
                dict(request.query.items()),
                dict(request.headers.items()),
                body,
            )
        )
        forced = self._take_forced(request.method, raw_path)
        if forced is not None:
            if isinstance(forced.body, str | bytes):
                return web.Response(
                    status=forced.status,
                    body=forced.body,
                    headers={"Content-Type": "text/plain", **forced.headers},
                )
            payload = forced.body if forced.body is not None else self.error_body(forced.status)
            return self._json(forced.status, payload, forced.headers)
        if self.prefix:
            if not raw_path.startswith(self.prefix + "/"):
                return self._json(404, self.error_body(404))
            raw_path = raw_path[len(self.prefix) :]
        segments = [unquote(s) for s in raw_path.split("/")[1:]]
        return await self._route(request, segments, body)

    async def _route(self, request: web.Request, segments: list[str], body: JSON) -> web.Response:
        raise NotImplementedError

    def _bad_json(self) -> JSON:
        return {"message": "Problems parsing JSON"}

    def _json(
        self, status: int, payload: JSON, headers: Mapping[str, str] | None = None
    ) -> web.Response:
        return web.json_response(payload, status=status, headers=dict(headers or {}))

    def _page(
        self, request: web.Request, items: list[JSON], default: int
    ) -> tuple[list[JSON], int, int, int]:
        """``(page items, page, per_page, last page)`` for 1-based ``page``/``per_page``."""
        try:
            per_page = int(request.query.get("per_page", default))
            page = int(request.query.get("page", 1))
        except ValueError:
            per_page, page = default, 1
        per_page = max(1, min(per_page, self.page_size_cap))
        page = max(1, page)
        last = max(1, -(-len(items) // per_page))
        return items[(page - 1) * per_page : page * per_page], page, per_page, last

    def _page_url(self, request: web.Request, page: int) -> str:
        query = MultiDict(request.query)
        query["page"] = str(page)
        return f"{self.url}{request.raw_path.split('?', 1)[0]}?{urlencode(list(query.items()))}"


# --- GitHub ------------------------------------------------------------------------------------


@dataclass(slots=True)
class FakePull:
    """A pull request of :class:`GitHubFake` (``labels`` in the order they were added)."""

    repo: str
    number: int
    title: str
    body: str
    head: str
    head_owner: str
    base: str
    state: str = "open"
    labels: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    closed_at: str | None = None


@dataclass(slots=True)
class _GitHubRepo:
    full_name: str
    id: int
    branches: set[str] | None
    pulls: dict[int, FakePull] = field(default_factory=dict)
    next_number: int = 1
    git_dir: Path | None = None


class GitHubFake(_ScmFake):
    """GitHub's pull request endpoints over HTTP.

    ``tokens`` are accepted as ``Authorization: Bearer`` (or ``token``); ``repos`` are
    ``owner/name`` (more with :meth:`add_repo`); ``apps`` maps a GitHub App ID to its public key
    (PEM) and ``installations`` an installation ID to its App, for installation tokens that live
    ``app_token_ttl`` seconds. ``enterprise=True`` serves the API under ``/api/v3``.
    ``git_root`` holds the repositories (``<root>/<owner>/<name>.git``) whose branches decide
    whether a pull request can be opened.
    """

    def __init__(
        self,
        *,
        tokens: Collection[str] = (),
        repos: Iterable[str] = (),
        apps: Mapping[int, str] | None = None,
        installations: Mapping[int, int] | None = None,
        app_token_ttl: int = 3600,
        enterprise: bool = False,
        page_size_cap: int = 100,
        git_root: Path | str | None = None,
    ) -> None:
        super().__init__(tokens, page_size_cap, git_root)
        self.prefix = "/api/v3" if enterprise else ""
        self._repos: dict[str, _GitHubRepo] = {}
        self._apps: dict[str, rsa.RSAPublicKey] = {}
        for app_id, pem in (apps or {}).items():
            key = serialization.load_pem_public_key(pem.encode())
            if not isinstance(key, rsa.RSAPublicKey):
                raise ValueError("a GitHub App key must be RSA")
            self._apps[str(app_id)] = key
        self.installations = dict(installations or {})
        self.app_token_ttl = app_token_ttl
        self.issued_tokens: list[str] = []
        """Installation tokens handed out, in order."""
        self.rate_remaining = 5000
        for name in repos:
            self.add_repo(name)

    @property
    def api_url(self) -> str:
        """The API base a client needs (``…/api/v3`` for an enterprise fake)."""
        return f"{self.url}{self.prefix}"

    def add_repo(
        self,
        full_name: str,
        *,
        branches: Iterable[str] | None = None,
        git_dir: Path | str | None = None,
    ) -> None:
        """Add ``owner/name``; with ``branches``, heads and bases must be among them; with a
        ``git_dir`` (or one under ``git_root``), its branches decide."""
        self._repos[full_name.lower()] = _GitHubRepo(
            full_name,
            len(self._repos) + 1,
            set(branches) if branches is not None else None,
            git_dir=self._git_dir(full_name, git_dir),
        )

    def merge_pull(
        self, full_name: str, number: int, *, squash: bool = False, delete_head: bool = False
    ) -> FakePull:
        """Merge an open pull request as its "Merge" (or "Squash and merge") button does, in
        the repository's git directory; ``delete_head`` also deletes the head branch."""
        repo = self._repos[full_name.lower()]
        pull = repo.pulls[number]
        if pull.state != "open" or repo.git_dir is None:
            raise ValueError(f"pull request #{number} is not open or has no git repository")
        message = (
            f"{pull.title} (#{number})"
            if squash
            else f"Merge pull request #{number} from {pull.head_owner}/{pull.head}"
        )
        merge_branch(repo.git_dir, pull.base, pull.head, message=message, squash=squash)
        if delete_head:
            delete_branch(repo.git_dir, pull.head)
        pull.state, pull.closed_at = "merged", _now()
        pull.updated_at = pull.closed_at
        return pull

    def pulls(self, full_name: str) -> list[FakePull]:
        """Every pull request of a repository, oldest first."""
        return list(self._repos[full_name.lower()].pulls.values())

    def pull(self, full_name: str, number: int) -> FakePull:
        return self._repos[full_name.lower()].pulls[number]

    def add_pull(
        self,
        full_name: str,
        head: str,
        base: str,
        title: str,
        *,
        body: str = "",
        labels: Iterable[str] = (),
        head_owner: str | None = None,
        state: str = "open",
    ) -> FakePull:
        """Seed a pull request (``head_owner`` other than the repository owner: from a fork)."""
        repo = self._repos[full_name.lower()]
        owner = repo.full_name.split("/", 1)[0]
        pull = FakePull(
            repo.full_name,
            repo.next_number,
            title,
            body,
            head,
            head_owner or owner,
            base,
            state=state,
            labels=list(labels),
        )
        repo.pulls[pull.number] = pull
        repo.next_number += 1
        return pull

    def error_body(self, status: int) -> JSON:
        messages = {
            401: "Bad credentials",
            403: "Forbidden",
            404: "Not Found",
            422: "Validation Failed",
            500: "Server Error",
            502: "Server Error",
            503: "Service Unavailable",
        }
        return {
            "message": messages.get(status, "Error"),
            "documentation_url": _GITHUB_DOCS,
            "status": str(status),
        }

    def rate_limit_next(self, *, reset_in: int = 60, secondary: bool = False) -> None:
        """Answer the next request like an exhausted primary rate limit (403,
        ``x-ratelimit-remaining: 0``) or a secondary one (403 with ``retry-after``)."""
        reset = int(time.time()) + reset_in
        if secondary:
            headers = {"retry-after": str(reset_in)}
            message = (
                "You have exceeded a secondary rate limit. Please wait a few minutes before "
                "you try again."
            )
        else:
            headers = {
                "x-ratelimit-limit": "5000",
                "x-ratelimit-remaining": "0",
                "x-ratelimit-used": "5000",
                "x-ratelimit-reset": str(reset),
                "x-ratelimit-resource": "core",
            }
            message = "API rate limit exceeded for user ID 1."
        body = {
            "message": message,
            "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
            "status": "403",
        }
        self.fail_next(403, body, headers=headers)

    def _json(
        self, status: int, payload: JSON, headers: Mapping[str, str] | None = None
    ) -> web.Response:
        merged = {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": str(self.rate_remaining),
            "x-ratelimit-resource": "core",
            "x-github-api-version-selected": "2022-11-28",
            **(headers or {}),
        }
        return web.json_response(payload, status=status, headers=merged)

    def _error(self, status: int, message: str | None = None, **extra: JSON) -> web.Response:
        body = self.error_body(status)
        if message is not None:
            body["message"] = message
        body.update(extra)
        return self._json(status, body)

    def _validation(self, errors: list[JSON], doc: str = "") -> web.Response:
        return self._json(
            422,
            {
                "message": "Validation Failed",
                "errors": errors,
                "documentation_url": doc or _GITHUB_DOCS,
                "status": "422",
            },
        )

    def _pull_json(self, pull: FakePull) -> JSON:
        repo = self._repos[pull.repo.lower()]
        api = f"{self.api_url}/repos/{repo.full_name}"
        owner = repo.full_name.split("/", 1)[0]
        return {
            "url": f"{api}/pulls/{pull.number}",
            "id": repo.id * 100000 + pull.number,
            "node_id": base64.b64encode(f"PR_{repo.id}_{pull.number}".encode()).decode(),
            "html_url": f"{self.url}/{repo.full_name}/pull/{pull.number}",
            "issue_url": f"{api}/issues/{pull.number}",
            "number": pull.number,
            "state": "closed" if pull.state != "open" else "open",
            "locked": False,
            "title": pull.title,
            "user": {"login": "image-updater", "id": 1, "type": "User"},
            "body": pull.body or None,
            "labels": [self._label_json(repo, name) for name in pull.labels],
            "created_at": pull.created_at,
            "updated_at": pull.updated_at,
            "closed_at": pull.closed_at,
            "merged_at": pull.closed_at if pull.state == "merged" else None,
            "draft": False,
            "head": {
                "label": f"{pull.head_owner}:{pull.head}",
                "ref": pull.head,
                "sha": "0" * 40,
                "user": {"login": pull.head_owner},
                "repo": {"full_name": f"{pull.head_owner}/{repo.full_name.split('/', 1)[1]}"},
            },
            "base": {
                "label": f"{owner}:{pull.base}",
                "ref": pull.base,
                "sha": "0" * 40,
                "user": {"login": owner},
                "repo": {"full_name": repo.full_name},
            },
        }

    @staticmethod
    def _label_json(repo: _GitHubRepo, name: str) -> JSON:
        return {
            "id": zlib.crc32(f"{repo.full_name}/{name}".encode()),
            "node_id": base64.b64encode(f"LA_{name}".encode()).decode(),
            "url": f"/repos/{repo.full_name}/labels/{name}",
            "name": name,
            "color": "ededed",
            "default": False,
            "description": None,
        }

    def _token(self, request: web.Request) -> str | None:
        auth = request.headers.get("Authorization", "")
        scheme, _, value = auth.partition(" ")
        return value.strip() if scheme.lower() in ("bearer", "token") and value.strip() else None

    async def _route(self, request: web.Request, segments: list[str], body: JSON) -> web.Response:
        version = request.headers.get("X-GitHub-Api-Version")
        if version is not None and version not in _GITHUB_VERSIONS:
            return self._error(400, f"API version '{version}' is not supported.")
        method = request.method
        if segments[:2] == ["app", "installations"] and len(segments) == 4:
            if segments[3] == "access_tokens" and method == "POST":
                return self._access_token(request, segments[2])
            return self._error(404)
        token = self._token(request)
        if token is None:
            return self._error(401, "Requires authentication")
        if token not in self.tokens:
            return self._error(401)
        self.rate_remaining = max(0, self.rate_remaining - 1)
        if len(segments) < 4 or segments[0] != "repos":
            return self._error(404)
        repo = self._repos.get(f"{segments[1]}/{segments[2]}".lower())
        if repo is None:
            return self._error(404)
        rest = segments[3:]
        if rest == ["pulls"]:
            if method == "GET":
                return self._list(request, repo)
            if method == "POST":
                return self._create(repo, body)
        elif len(rest) == 2 and rest[0] == "pulls" and rest[1].isdigit():
            pull = repo.pulls.get(int(rest[1]))
            if pull is None:
                return self._error(404)
            if method == "GET":
                return self._json(200, self._pull_json(pull))
            if method == "PATCH":
                return self._patch(repo, pull, body)
        elif len(rest) == 3 and rest[0] == "issues" and rest[1].isdigit():
            pull = repo.pulls.get(int(rest[1]))
            if pull is None:
                return self._error(404)
            if rest[2] == "labels" and method == "POST":
                return self._add_labels(repo, pull, body)
            if rest[2] == "comments" and method == "POST":
                return self._comment(repo, pull, body)
        return self._error(404)

    def _list(self, request: web.Request, repo: _GitHubRepo) -> web.Response:
        state = request.query.get("state", "open")
        head = request.query.get("head")
        base = request.query.get("base")
        pulls = [
            p
            for p in repo.pulls.values()
            if (state == "all" or (p.state == "open") == (state == "open"))
            and (head is None or f"{p.head_owner}:{p.head}".lower() == head.lower())
            and (base is None or p.base == base)
        ]
        ascending = request.query.get("direction") == "asc"
        pulls.sort(key=lambda p: p.number, reverse=not ascending)
        items, page, _, last = self._page(request, [self._pull_json(p) for p in pulls], 30)
        links = []
        if page < last:
            links.append(f'<{self._page_url(request, page + 1)}>; rel="next"')
            links.append(f'<{self._page_url(request, last)}>; rel="last"')
        if page > 1:
            links.append(f'<{self._page_url(request, 1)}>; rel="first"')
            links.append(f'<{self._page_url(request, page - 1)}>; rel="prev"')
        return self._json(200, items, {"Link": ", ".join(links)} if links else None)

    def _create(self, repo: _GitHubRepo, body: JSON) -> web.Response:
        doc = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
        if not isinstance(body, Mapping):
            return self._error(400, "Problems parsing JSON")
        for name in ("head", "base"):
            if not isinstance(body.get(name), str) or not body[name]:
                return self._validation(
                    [{"resource": "PullRequest", "field": name, "code": "missing_field"}], doc
                )
        if not isinstance(body.get("title"), str) or not body["title"]:
            return self._validation(
                [{"resource": "Issue", "field": "title", "code": "missing_field"}], doc
            )
        owner = repo.full_name.split("/", 1)[0]
        head_owner, _, head = str(body["head"]).rpartition(":")
        head_owner = head_owner or owner
        base = str(body["base"])
        if repo.branches is not None:
            for name, branch in (("head", head), ("base", base)):
                if branch not in repo.branches:
                    return self._validation(
                        [{"resource": "PullRequest", "field": name, "code": "invalid"}], doc
                    )
        if repo.git_dir is not None and head_owner.lower() == owner.lower():
            for name, branch in (("base", base), ("head", head)):
                if branch_commit(repo.git_dir, branch) is None:
                    return self._validation(
                        [{"resource": "PullRequest", "field": name, "code": "invalid"}], doc
                    )
        same = head == base and head_owner.lower() == owner.lower()
        if same or (
            repo.git_dir is not None
            and head_owner.lower() == owner.lower()
            and commits_between(repo.git_dir, base, head) == 0
        ):
            return self._validation(
                [
                    {
                        "resource": "PullRequest",
                        "code": "custom",
                        "message": f"No commits between {base} and {head}",
                    }
                ],
                doc,
            )
        for pull in repo.pulls.values():
            if (
                pull.state == "open"
                and pull.head == head
                and pull.head_owner.lower() == head_owner.lower()
                and pull.base == base
            ):
                message = f"A pull request already exists for {head_owner}:{head}."
                return self._validation(
                    [{"resource": "PullRequest", "code": "custom", "message": message}], doc
                )
        pull = self.add_pull(
            repo.full_name,
            head,
            base,
            str(body["title"]),
            body=str(body.get("body") or ""),
            head_owner=head_owner,
        )
        return self._json(201, self._pull_json(pull))

    def _patch(self, repo: _GitHubRepo, pull: FakePull, body: JSON) -> web.Response:
        if not isinstance(body, Mapping):
            return self._error(400, "Problems parsing JSON")
        state = body.get("state")
        if state is not None and state not in ("open", "closed"):
            return self._validation(
                [{"resource": "PullRequest", "field": "state", "code": "invalid"}]
            )
        if "title" in body:
            pull.title = str(body["title"] or "")
        if "body" in body:
            pull.body = str(body["body"] or "")
        if "base" in body and isinstance(body["base"], str):
            pull.base = body["base"]
        if state == "closed" and pull.state == "open":
            pull.state, pull.closed_at = "closed", _now()
        elif state == "open" and pull.state == "closed":
            pull.state, pull.closed_at = "open", None
        pull.updated_at = _now()
        return self._json(200, self._pull_json(pull))

    def _add_labels(self, repo: _GitHubRepo, pull: FakePull, body: JSON) -> web.Response:
        names = body.get("labels") if isinstance(body, Mapping) else body
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return self._validation([{"resource": "Label", "field": "labels", "code": "invalid"}])
        for name in names:
            if not name.strip():
                return self._validation(
                    [{"resource": "Label", "field": "name", "code": "missing_field"}]
                )
            if name not in pull.labels:
                pull.labels.append(name)
        return self._json(200, [self._label_json(repo, name) for name in pull.labels])

    def _comment(self, repo: _GitHubRepo, pull: FakePull, body: JSON) -> web.Response:
        text = body.get("body") if isinstance(body, Mapping) else None
        if not isinstance(text, str) or not text:
            return self._validation(
                [{"resource": "IssueComment", "field": "body", "code": "missing_field"}]
            )
        pull.comments.append(text)
        comment_id = len(pull.comments) + pull.number * 1000
        now = _now()
        return self._json(
            201,
            {
                "id": comment_id,
                "node_id": base64.b64encode(f"IC_{comment_id}".encode()).decode(),
                "url": f"{self.api_url}/repos/{repo.full_name}/issues/comments/{comment_id}",
                "html_url": f"{self.url}/{repo.full_name}/pull/{pull.number}#issuecomment-{comment_id}",
                "body": text,
                "user": {"login": "image-updater", "id": 1, "type": "User"},
                "created_at": now,
                "updated_at": now,
            },
        )

    def _access_token(self, request: web.Request, installation: str) -> web.Response:
        jwt = self._token(request)
        if jwt is None:
            return self._error(401, "A JSON web token could not be decoded")
        problem = self._check_jwt(jwt)
        if problem is not None:
            return self._error(401, problem)
        app_id = self._jwt_claims(jwt).get("iss")
        if not installation.isdigit() or str(self.installations.get(int(installation))) != str(
            app_id
        ):
            return self._error(404)
        token = f"ghs_{secrets.token_hex(18)}"
        self.tokens.add(token)
        self.issued_tokens.append(token)
        expires = datetime.fromtimestamp(time.time() + self.app_token_ttl, UTC)
        return self._json(
            201,
            {
                "token": token,
                "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "permissions": {"contents": "write", "pull_requests": "write", "issues": "write"},
                "repository_selection": "all",
            },
        )

    @staticmethod
    def _b64decode(part: str) -> bytes:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))

    def _jwt_claims(self, jwt: str) -> dict[str, Any]:
        claims = json.loads(self._b64decode(jwt.split(".")[1]))
        return claims if isinstance(claims, dict) else {}

    def _check_jwt(self, jwt: str) -> str | None:
        """Why the App JWT is refused, or None when it is valid."""
        parts = jwt.split(".")
        if len(parts) != 3:
            return "A JSON web token could not be decoded"
        try:
            header = json.loads(self._b64decode(parts[0]))
            claims = json.loads(self._b64decode(parts[1]))
            signature = self._b64decode(parts[2])
        except (ValueError, binascii.Error):
            return "A JSON web token could not be decoded"
        if not isinstance(header, dict) or header.get("alg") != "RS256":
            return "A JSON web token could not be decoded"
        if not isinstance(claims, dict):
            return "A JSON web token could not be decoded"
        key = self._apps.get(str(claims.get("iss")))
        if key is None:
            return "'Issuer' claim ('iss') must be an Integer"
        try:
            key.verify(
                signature, f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
        except InvalidSignature:
            return "A JSON web token could not be decoded"
        now = time.time()
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or iat > now + 60:
            return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued."
        if not isinstance(exp, int) or exp <= now:
            return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires."
        if exp - iat > 660:
            return "'Expiration time' claim ('exp') is too far in the future."
        return None


# --- GitLab ------------------------------------------------------------------------------------


@dataclass(slots=True)
class FakeMergeRequest:
    """A merge request of :class:`GitLabFake` (``state``: opened, closed, merged)."""

    project_id: int
    iid: int
    title: str
    description: str
    source_branch: str
    target_branch: str
    source_project_id: int
    state: str = "opened"
    labels: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    closed_at: str | None = None


@dataclass(slots=True)
class _GitLabProject:
    id: int
    path: str
    mrs: dict[int, FakeMergeRequest] = field(default_factory=dict)
    next_iid: int = 1
    git_dir: Path | None = None


def _label_list(value: JSON) -> list[str]:
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else []
    result: list[str] = []
    for item in items:
        text = str(item).strip()
        if text and text not in result:
            result.append(text)
    return result


class GitLabFake(_ScmFake):
    """GitLab's merge request endpoints over HTTP.

    ``tokens`` are accepted in ``PRIVATE-TOKEN`` or as ``Authorization: Bearer``; ``projects`` are
    full paths (``group/sub/project``), more with :meth:`add_project`. ``git_root`` holds their
    repositories (``<root>/<path>.git``), for :meth:`merge_merge_request`. Like GitLab, a merge
    request is opened whatever its branches hold (an empty one too).
    """

    def __init__(
        self,
        *,
        tokens: Collection[str] = (),
        projects: Iterable[str] = (),
        page_size_cap: int = 100,
        git_root: Path | str | None = None,
    ) -> None:
        super().__init__(tokens, page_size_cap, git_root)
        self._projects: dict[int, _GitLabProject] = {}
        for path in projects:
            self.add_project(path)

    def add_project(self, path: str, *, git_dir: Path | str | None = None) -> int:
        """Add a project by full path; returns its numeric ID."""
        project_id = 1000 + len(self._projects) + 1
        self._projects[project_id] = _GitLabProject(
            project_id, path, git_dir=self._git_dir(path, git_dir)
        )
        return project_id

    def merge_merge_request(
        self, path: str, iid: int, *, squash: bool = False, remove_source_branch: bool = False
    ) -> FakeMergeRequest:
        """Merge an open merge request in the project's git directory (merge commit, or one
        squashed commit), optionally deleting the source branch."""
        project = self._project(path)
        if project is None:
            raise KeyError(path)
        mr = project.mrs[iid]
        if mr.state != "opened" or project.git_dir is None:
            raise ValueError(f"merge request !{iid} is not open or has no git repository")
        message = (
            mr.title
            if squash
            else f"Merge branch '{mr.source_branch}' into '{mr.target_branch}'\n\n"
            f"See merge request {project.path}!{iid}"
        )
        merge_branch(
            project.git_dir, mr.target_branch, mr.source_branch, message=message, squash=squash
        )
        if remove_source_branch:
            delete_branch(project.git_dir, mr.source_branch)
        mr.state, mr.closed_at = "merged", _now()
        mr.updated_at = mr.closed_at
        return mr

    def _project(self, ref: str) -> _GitLabProject | None:
        if ref.isdigit():
            return self._projects.get(int(ref))
        for project in self._projects.values():
            if project.path.lower() == ref.lower():
                return project
        return None

    def merge_requests(self, path: str) -> list[FakeMergeRequest]:
        """Every merge request of a project, oldest first."""
        project = self._project(path)
        if project is None:
            raise KeyError(path)
        return list(project.mrs.values())

    def merge_request(self, path: str, iid: int) -> FakeMergeRequest:
        project = self._project(path)
        if project is None:
            raise KeyError(path)
        return project.mrs[iid]

    def add_merge_request(
        self,
        path: str,
        source_branch: str,
        target_branch: str,
        title: str,
        *,
        description: str = "",
        labels: Iterable[str] = (),
        source_project_id: int | None = None,
        state: str = "opened",
    ) -> FakeMergeRequest:
        """Seed a merge request (another ``source_project_id``: from a fork)."""
        project = self._project(path)
        if project is None:
            raise KeyError(path)
        mr = FakeMergeRequest(
            project.id,
            project.next_iid,
            title,
            description,
            source_branch,
            target_branch,
            source_project_id or project.id,
            state=state,
            labels=list(labels),
        )
        project.mrs[mr.iid] = mr
        project.next_iid += 1
        return mr

    def error_body(self, status: int) -> JSON:
        messages = {
            400: "400 Bad request",
            401: "401 Unauthorized",
            403: "403 Forbidden",
            404: "404 Not found",
            409: "409 Conflict",
            500: "500 Internal Server Error",
            502: "502 Bad Gateway",
            503: "503 Service Unavailable",
        }
        return {"message": messages.get(status, f"{status} Error")}

    def _bad_json(self) -> JSON:
        return {"error": "400 Bad request - JSON body could not be parsed"}

    def rate_limit_next(self, *, reset_in: int = 60) -> None:
        """Answer the next request like GitLab's rate limiter: 429, ``RateLimit-*`` headers,
        ``Retry-After`` and the plain-text body ``Retry later``."""
        reset = int(time.time()) + reset_in
        headers = {
            "RateLimit-Name": "throttle_authenticated_api",
            "RateLimit-Limit": "60",
            "RateLimit-Observed": "61",
            "RateLimit-Remaining": "0",
            "RateLimit-Reset": str(reset),
            "RateLimit-ResetTime": format_datetime(datetime.fromtimestamp(reset, UTC), usegmt=True),
            "Retry-After": str(reset_in),
        }
        self.fail_next(429, "Retry later\n", headers=headers)

    def _mr_json(self, project: _GitLabProject, mr: FakeMergeRequest) -> JSON:
        return {
            "id": project.id * 100000 + mr.iid,
            "iid": mr.iid,
            "project_id": project.id,
            "title": mr.title,
            "description": mr.description,
            "state": mr.state,
            "created_at": mr.created_at,
            "updated_at": mr.updated_at,
            "merged_at": mr.closed_at if mr.state == "merged" else None,
            "closed_at": mr.closed_at if mr.state == "closed" else None,
            "target_branch": mr.target_branch,
            "source_branch": mr.source_branch,
            "source_project_id": mr.source_project_id,
            "target_project_id": project.id,
            "labels": list(mr.labels),
            "draft": False,
            "work_in_progress": False,
            "author": {"id": 1, "username": "image-updater", "name": "Image Updater"},
            "sha": "0" * 40,
            "merge_status": "can_be_merged",
            "detailed_merge_status": "mergeable",
            "web_url": f"{self.url}/{project.path}/-/merge_requests/{mr.iid}",
            "references": {
                "short": f"!{mr.iid}",
                "relative": f"!{mr.iid}",
                "full": f"{project.path}!{mr.iid}",
            },
        }

    def _error(self, status: int, message: JSON = None) -> web.Response:
        return self._json(
            status, {"message": message} if message is not None else self.error_body(status)
        )

    async def _route(self, request: web.Request, segments: list[str], body: JSON) -> web.Response:
        auth = request.headers.get("PRIVATE-TOKEN")
        if auth is None:
            scheme, _, value = request.headers.get("Authorization", "").partition(" ")
            auth = value.strip() if scheme.lower() == "bearer" else None
        if not auth or auth not in self.tokens:
            return self._error(401)
        if segments[:3] != ["api", "v4", "projects"] or len(segments) < 5:
            return self._error(404, "404 Not Found")
        project = self._project(segments[3])
        if project is None:
            return self._error(404, "404 Project Not Found")
        rest = segments[4:]
        method = request.method
        if rest == ["merge_requests"]:
            if method == "GET":
                return self._list(request, project)
            if method == "POST":
                return self._create(project, body)
        elif len(rest) >= 2 and rest[0] == "merge_requests" and rest[1].isdigit():
            mr = project.mrs.get(int(rest[1]))
            if mr is None:
                return self._error(404, "404 Not found")
            if len(rest) == 2 and method == "GET":
                return self._json(200, self._mr_json(project, mr))
            if len(rest) == 2 and method == "PUT":
                return self._update(project, mr, body)
            if rest[2:] == ["notes"] and method == "POST":
                return self._note(project, mr, body)
        return self._error(404, "404 Not Found")

    def _list(self, request: web.Request, project: _GitLabProject) -> web.Response:
        state = request.query.get("state", "all")
        source = request.query.get("source_branch")
        target = request.query.get("target_branch")
        mrs = [
            mr
            for mr in project.mrs.values()
            if (state == "all" or mr.state == state)
            and (source is None or mr.source_branch == source)
            and (target is None or mr.target_branch == target)
        ]
        mrs.sort(key=lambda mr: mr.iid, reverse=request.query.get("sort", "desc") != "asc")
        items, page, per_page, last = self._page(
            request, [self._mr_json(project, mr) for mr in mrs], 20
        )
        headers = {
            "X-Page": str(page),
            "X-Per-Page": str(per_page),
            "X-Total": str(len(mrs)),
            "X-Total-Pages": str(last),
            "X-Next-Page": str(page + 1) if page < last else "",
            "X-Prev-Page": str(page - 1) if page > 1 else "",
        }
        links = []
        if page < last:
            links.append(f'<{self._page_url(request, page + 1)}>; rel="next"')
        links.append(f'<{self._page_url(request, 1)}>; rel="first"')
        links.append(f'<{self._page_url(request, last)}>; rel="last"')
        headers["Link"] = ", ".join(links)
        return self._json(200, items, headers)

    def _create(self, project: _GitLabProject, body: JSON) -> web.Response:
        if not isinstance(body, Mapping):
            return self._json(
                400,
                {"error": "source_branch is missing, target_branch is missing, title is missing"},
            )
        missing = [
            name
            for name in ("source_branch", "target_branch", "title")
            if not isinstance(body.get(name), str) or not body[name]
        ]
        if missing:
            return self._json(400, {"error": ", ".join(f"{name} is missing" for name in missing)})
        source, target = str(body["source_branch"]), str(body["target_branch"])
        if source == target:
            return self._json(
                422,
                {"message": ["You can't use same project/branch for source and target"]},
            )
        for mr in project.mrs.values():
            if mr.state == "opened" and mr.source_branch == source and mr.target_branch == target:
                return self._json(
                    409,
                    {
                        "message": [
                            "Another open merge request already exists for this source branch: "
                            f"!{mr.iid}"
                        ]
                    },
                )
        mr = self.add_merge_request(
            project.path,
            source,
            target,
            str(body["title"]),
            description=str(body.get("description") or ""),
            labels=_label_list(body.get("labels")),
        )
        return self._json(201, self._mr_json(project, mr))

    def _update(self, project: _GitLabProject, mr: FakeMergeRequest, body: JSON) -> web.Response:
        if not isinstance(body, Mapping):
            return self._json(400, self._bad_json())
        known = (
            "title",
            "description",
            "labels",
            "add_labels",
            "remove_labels",
            "state_event",
            "target_branch",
        )
        if not any(name in body for name in known):
            return self._json(
                400,
                {
                    "error": f"{', '.join(known)} are missing, at least one parameter must be provided"
                },
            )
        event = body.get("state_event")
        if event is not None and event not in ("close", "reopen"):
            return self._json(400, {"error": "state_event does not have a valid value"})
        if "title" in body:
            mr.title = str(body["title"] or "")
        if "description" in body:
            mr.description = str(body["description"] or "")
        if "target_branch" in body:
            mr.target_branch = str(body["target_branch"])
        if "labels" in body:
            mr.labels = _label_list(body["labels"])
        for name in _label_list(body.get("add_labels")):
            if name not in mr.labels:
                mr.labels.append(name)
        removed = set(_label_list(body.get("remove_labels")))
        mr.labels = [name for name in mr.labels if name not in removed]
        if event == "close" and mr.state == "opened":
            mr.state, mr.closed_at = "closed", _now()
        elif event == "reopen" and mr.state == "closed":
            mr.state, mr.closed_at = "opened", None
        mr.updated_at = _now()
        return self._json(200, self._mr_json(project, mr))

    def _note(self, project: _GitLabProject, mr: FakeMergeRequest, body: JSON) -> web.Response:
        text = body.get("body") if isinstance(body, Mapping) else None
        if not isinstance(text, str) or not text:
            return self._json(400, {"error": "body is missing"})
        mr.notes.append(text)
        note_id = project.id * 100000 + mr.iid * 100 + len(mr.notes)
        now = _now()
        return self._json(
            201,
            {
                "id": note_id,
                "type": None,
                "body": text,
                "author": {"id": 1, "username": "image-updater", "name": "Image Updater"},
                "created_at": now,
                "updated_at": now,
                "system": False,
                "noteable_id": project.id * 100000 + mr.iid,
                "noteable_type": "MergeRequest",
                "noteable_iid": mr.iid,
                "project_id": project.id,
                "resolvable": False,
                "internal": False,
            },
        )
