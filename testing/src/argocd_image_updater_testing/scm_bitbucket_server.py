"""A Bitbucket Data Center (Server) pull request API stand-in (REST API 1.0), served over HTTP
on ``127.0.0.1``.

It answers, under ``[<context>]/rest/api/1.0``: ``GET/POST
/projects/{key}/repos/{slug}/pull-requests`` (``state`` default ``OPEN``, ``direction``
``INCOMING``/``OUTGOING`` with ``at`` a ref of the target/source branch, pages of ``{size,
limit, isLastPage, start, nextPageStart, values}``), ``GET/PUT …/pull-requests/{id}`` (an
update names the current ``version``, which then goes up), ``POST …/pull-requests/{id}/comments``
(``{"text": …}``) and ``POST …/pull-requests/{id}/decline?version=…``. Tokens are HTTP access
tokens (``Authorization: Bearer``). Errors are ``{"errors": [{"context", "message",
"exceptionName"}]}``: 401 ``IncorrectPasswordAuthenticationException``, 404
``NoSuchRepositoryException``/``NoSuchPullRequestException``/``NoSuchBranchException``, 409
``DuplicatePullRequestException`` (with the ``existingPullRequest``),
``EmptyPullRequestException`` and ``PullRequestOutOfDateException``; 429 with ``Retry-After``
and ``X-RateLimit-*`` headers. Pull requests have no labels.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from aiohttp import web

from argocd_image_updater_testing.scm import JSON, _now
from argocd_image_updater_testing.scm_hosted import HostedFake, HostedPull, HostedRepo

_STATES: Final = {"open": "OPEN", "merged": "MERGED", "closed": "DECLINED"}
_EXC: Final = "com.atlassian.bitbucket"


def _branch(ref: str) -> str:
    return ref.removeprefix("refs/heads/")


class BitbucketServerFake(HostedFake):
    """Bitbucket Data Center's pull request endpoints; repositories are ``PROJECT/slug``;
    ``context`` is the instance's context path (``/bitbucket``, or ``""``)."""

    def __init__(
        self,
        *,
        tokens: Collection[str] = (),
        repos: Iterable[str] = (),
        context: str = "",
        page_size_cap: int = 1000,
        git_root: Path | str | None = None,
    ) -> None:
        super().__init__(tokens=tokens, repos=repos, page_size_cap=page_size_cap, git_root=git_root)
        self.context = context.rstrip("/")
        self.prefix = f"{self.context}/rest/api/1.0"

    @property
    def api_url(self) -> str:
        return f"{self.url}{self.prefix}"

    @staticmethod
    def errors(message: str, exception: str, **extra: JSON) -> JSON:
        return {
            "errors": [{"context": None, "message": message, "exceptionName": exception, **extra}]
        }

    def error_body(self, status: int) -> JSON:
        known = {
            400: ("Bad request", f"{_EXC}.validation.ArgumentValidationException"),
            401: (
                "Authentication failed. Please check your credentials and try again.",
                f"{_EXC}.auth.IncorrectPasswordAuthenticationException",
            ),
            403: (
                "You are not permitted to access this resource",
                f"{_EXC}.AuthorisationException",
            ),
            404: ("Resource not found", f"{_EXC}.NoSuchEntityException"),
            409: ("Conflict", f"{_EXC}.ConflictException"),
            500: ("An error occurred while processing the request.", "java.lang.RuntimeException"),
        }
        message, exception = known.get(status, ("Error", "java.lang.RuntimeException"))
        return self.errors(message, exception)

    def _error(self, status: int, message: str, exception: str, **extra: JSON) -> web.Response:
        return self._json(status, self.errors(message, exception, **extra))

    def rate_limit_next(self, *, reset_in: int = 60) -> None:
        """Answer the next request like Bitbucket's rate limiter (token bucket): 429 with
        ``Retry-After`` and ``X-RateLimit-Limit/-Interval-Seconds/-FillRate``."""
        self.fail_next(
            429,
            self.errors(
                "You have been rate limited. Please wait a moment before trying again.",
                f"{_EXC}.throttle.ThrottledException",
            ),
            headers={
                "Retry-After": str(reset_in),
                "X-RateLimit-Limit": "60",
                "X-RateLimit-Interval-Seconds": "1",
                "X-RateLimit-FillRate": "5",
            },
        )

    # --- shapes --------------------------------------------------------------------------------

    def _repo_json(self, repo: HostedRepo) -> JSON:
        key, slug = repo.path.split("/", 1)
        return {
            "slug": slug.lower(),
            "id": repo.id,
            "name": slug,
            "scmId": "git",
            "state": "AVAILABLE",
            "forkable": True,
            "public": False,
            "project": {"key": key.upper(), "id": repo.id, "name": key, "type": "NORMAL"},
        }

    def _ref_json(self, repo: HostedRepo, branch: str, fork: str | None = None) -> JSON:
        repository = self._repo_json(repo)
        if fork is not None:
            key, slug = fork.split("/", 1)
            repository = {
                **repository,
                "slug": slug.lower(),
                "id": 10000 + repo.id,
                "project": {
                    "key": key.upper(),
                    "id": 10000 + repo.id,
                    "name": key,
                    "type": "PERSONAL",
                },
            }
        return {
            "id": f"refs/heads/{branch}",
            "displayId": branch,
            "latestCommit": "0" * 40,
            "type": "BRANCH",
            "repository": repository,
        }

    def _pull_json(self, repo: HostedRepo, pull: HostedPull) -> JSON:
        key, slug = repo.path.split("/", 1)
        millis = int(time.time() * 1000)
        return {
            "id": pull.number,
            "version": pull.version,
            "title": pull.title,
            "description": pull.body,
            "state": _STATES[pull.state],
            "open": pull.state == "open",
            "closed": pull.state != "open",
            "createdDate": millis,
            "updatedDate": millis,
            "fromRef": self._ref_json(repo, pull.head, pull.fork),
            "toRef": self._ref_json(repo, pull.base),
            "locked": False,
            "author": {
                "user": {"name": "image-updater", "slug": "image-updater"},
                "role": "AUTHOR",
            },
            "reviewers": [],
            "participants": [],
            "links": {
                "self": [
                    {
                        "href": f"{self.url}{self.context}/projects/{key.upper()}/repos/"
                        f"{slug.lower()}/pull-requests/{pull.number}"
                    }
                ]
            },
        }

    # --- routing -------------------------------------------------------------------------------

    async def _route(self, request: web.Request, segments: list[str], body: JSON) -> web.Response:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or value.strip() not in self.tokens:
            return self._json(401, self.error_body(401))
        if len(segments) < 5 or segments[0] != "projects" or segments[2] != "repos":
            return self._json(404, self.error_body(404))
        repo = self.repo(f"{segments[1]}/{segments[3]}")
        if repo is None:
            return self._error(
                404,
                f"Repository {segments[3]} of project {segments[1]} does not exist.",
                f"{_EXC}.repository.NoSuchRepositoryException",
            )
        if segments[4] != "pull-requests":
            return self._json(404, self.error_body(404))
        rest, method = segments[5:], request.method
        if not rest:
            if method == "GET":
                return self._list(request, repo)
            if method == "POST":
                return self._create(repo, body)
        elif rest[0].isdigit():
            pull = repo.pulls.get(int(rest[0]))
            if pull is None:
                return self._error(
                    404,
                    f"Pull request {rest[0]} does not exist in {repo.path}.",
                    f"{_EXC}.pull.NoSuchPullRequestException",
                )
            if rest[1:] == [] and method == "GET":
                return self._json(200, self._pull_json(repo, pull))
            if rest[1:] == [] and method == "PUT":
                return self._update(repo, pull, body)
            if rest[1:] == ["comments"] and method == "POST":
                return self._comment(pull, body)
            if rest[1:] == ["decline"] and method == "POST":
                return self._decline(request, repo, pull)
        return self._json(404, self.error_body(404))

    def _list(self, request: web.Request, repo: HostedRepo) -> web.Response:
        state = request.query.get("state", "OPEN").upper()
        direction = request.query.get("direction", "INCOMING").upper()
        at = request.query.get("at")
        pulls = [
            p
            for p in repo.pulls.values()
            if (state == "ALL" or _STATES[p.state] == state)
            and (at is None or _branch(at) == (p.base if direction == "INCOMING" else p.head))
        ]
        pulls.sort(key=lambda p: p.number, reverse=True)
        try:
            limit = int(request.query.get("limit", 25))
            start = int(request.query.get("start", 0))
        except ValueError:
            return self._json(400, self.error_body(400))
        limit, start = max(1, min(limit, self.page_size_cap)), max(0, start)
        values = pulls[start : start + limit]
        last = start + limit >= len(pulls)
        page: dict[str, JSON] = {
            "size": len(values),
            "limit": limit,
            "isLastPage": last,
            "start": start,
            "values": [self._pull_json(repo, p) for p in values],
        }
        if not last:
            page["nextPageStart"] = start + limit
        return self._json(200, page)

    def _create(self, repo: HostedRepo, body: JSON) -> web.Response:
        if not isinstance(body, Mapping) or not body.get("title"):
            return self._error(
                400,
                "title must be supplied for this request",
                f"{_EXC}.validation.ArgumentValidationException",
            )
        refs: dict[str, Any] = {}
        for name in ("fromRef", "toRef"):
            ref = body.get(name)
            ref_id = ref.get("id") if isinstance(ref, Mapping) else None
            if not isinstance(ref_id, str) or not ref_id:
                return self._error(
                    400,
                    f"{name} must be supplied for this request",
                    f"{_EXC}.validation.ArgumentValidationException",
                )
            refs[name] = _branch(ref_id)
        head, base = refs["fromRef"], refs["toRef"]
        missing = self.missing_branch(repo, head, base)
        if missing is not None:
            return self._error(
                404,
                f'Repository "{repo.path.split("/", 1)[1]}" has no branch "{missing}".',
                f"{_EXC}.repository.NoSuchBranchException",
            )
        if head == base or self.nothing_to_merge(repo, base, head):
            return self._error(
                409,
                f'Repository "{repo.path}" branch "{head}" is already up-to-date with branch '
                f'"{base}" on repository "{repo.path}".',
                f"{_EXC}.pull.EmptyPullRequestException",
            )
        existing = self.open_pull(repo, head, base)
        if existing is not None:
            return self._error(
                409,
                "Only one pull request may be open for a given source and target branch",
                f"{_EXC}.pull.DuplicatePullRequestException",
                existingPullRequest=self._pull_json(repo, existing),
            )
        pull = self.add_pull(
            repo.path, head, base, str(body["title"]), body=str(body.get("description") or "")
        )
        return self._json(201, self._pull_json(repo, pull))

    def _out_of_date(self, pull: HostedPull, given: Any) -> web.Response | None:
        if not isinstance(given, int) or isinstance(given, bool):
            return self._error(
                400,
                "version must be supplied for this request",
                f"{_EXC}.validation.ArgumentValidationException",
            )
        if given != pull.version:
            return self._error(
                409,
                "You are attempting to modify a pull request based on out-of-date information.",
                f"{_EXC}.pull.PullRequestOutOfDateException",
                expectedVersion=pull.version,
            )
        return None

    def _update(self, repo: HostedRepo, pull: HostedPull, body: JSON) -> web.Response:
        if not isinstance(body, Mapping):
            return self._json(400, self.error_body(400))
        refused = self._out_of_date(pull, body.get("version"))
        if refused is not None:
            return refused
        if "title" in body:
            pull.title = str(body["title"] or "")
        if "description" in body:
            pull.body = str(body["description"] or "")
        pull.touch()
        return self._json(200, self._pull_json(repo, pull))

    def _comment(self, pull: HostedPull, body: JSON) -> web.Response:
        text = body.get("text") if isinstance(body, Mapping) else None
        if not isinstance(text, str) or not text:
            return self._error(
                400,
                "text must be supplied for this request",
                f"{_EXC}.validation.ArgumentValidationException",
            )
        pull.comments.append(text)
        millis = int(time.time() * 1000)
        return self._json(
            201,
            {
                "id": pull.number * 1000 + len(pull.comments),
                "version": 0,
                "text": text,
                "author": {"name": "image-updater", "slug": "image-updater"},
                "createdDate": millis,
                "updatedDate": millis,
                "comments": [],
                "tasks": [],
            },
        )

    def _decline(self, request: web.Request, repo: HostedRepo, pull: HostedPull) -> web.Response:
        raw = request.query.get("version", "")
        refused = self._out_of_date(pull, int(raw) if raw.lstrip("-").isdigit() else None)
        if refused is not None:
            return refused
        if pull.state != "open":
            return self._error(
                409,
                "The pull request is not open.",
                f"{_EXC}.pull.IllegalPullRequestStateException",
            )
        pull.state, pull.closed_at = "closed", _now()
        pull.touch()
        return self._json(200, self._pull_json(repo, pull))
