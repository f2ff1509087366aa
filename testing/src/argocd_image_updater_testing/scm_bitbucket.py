"""A Bitbucket Cloud pull request API stand-in (REST API 2.0), served over HTTP on ``127.0.0.1``.

It answers, under ``/2.0``: ``GET/POST /repositories/{workspace}/{repo_slug}/pullrequests``
(``state`` repeatable, default ``OPEN``; a BBQL ``q`` of ``field = "…"``, ``field != "…"`` and
``field ~ "…"`` terms joined by ``AND`` over ``source.branch.name``, ``destination.branch.name``,
``state``, ``title`` and ``id``; pages of ``{size, page, pagelen, next, values}`` with
``pagelen`` at most 50), ``GET/PUT …/pullrequests/{id}``, ``POST …/pullrequests/{id}/comments``
(``{"content": {"raw": …}}``) and ``POST …/pullrequests/{id}/decline``. Tokens are access tokens
(``Authorization: Bearer``) or app passwords (``Authorization: Basic`` with their user, see
``app_passwords``). Errors are ``{"type": "error", "error": {"message", "detail"?, "fields"?}}``;
a refused credential is a bare 401 with ``WWW-Authenticate``. Like Bitbucket Cloud, one pull
request is kept open per source and destination branch: a second create answers with the open
one, its title and description replaced. Pull requests have no labels.
"""

from __future__ import annotations

import base64
import binascii
import re
import time
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

from aiohttp import web
from multidict import MultiDict

from argocd_image_updater_testing.scm import JSON, _now
from argocd_image_updater_testing.scm_hosted import HostedFake, HostedPull, HostedRepo

MAX_PAGELEN: Final = 50
_STATES: Final = {"open": "OPEN", "merged": "MERGED", "closed": "DECLINED"}
_TERM: Final = re.compile(r'\s*([a-z_.]+)\s*(=|!=|~)\s*"((?:[^"\\]|\\.)*)"\s*')


def _field(pull: HostedPull, name: str) -> str:
    values = {
        "source.branch.name": pull.head,
        "destination.branch.name": pull.base,
        "state": _STATES[pull.state],
        "title": pull.title,
        "id": str(pull.number),
    }
    return values[name]


_FIELDS: Final = frozenset(
    {"source.branch.name", "destination.branch.name", "state", "title", "id"}
)


def bbql_filter(query: str) -> tuple[list[tuple[str, str, str]], str | None]:
    """The ``(field, operator, value)`` terms of a BBQL query, or the error Bitbucket answers."""
    terms: list[tuple[str, str, str]] = []
    for part in re.split(r"\s+AND\s+", query.strip()) if query.strip() else []:
        match = _TERM.fullmatch(part)
        if match is None:
            return [], f"Invalid query: {part.strip()!r}"
        name, op, value = match.groups()
        if name not in _FIELDS:
            return [], f"Invalid field name: '{name}'"
        terms.append((name, op, re.sub(r"\\(.)", r"\1", value)))
    return terms, None


def _matches(pull: HostedPull, terms: list[tuple[str, str, str]]) -> bool:
    for name, op, value in terms:
        actual = _field(pull, name)
        if op == "=" and actual != value:
            return False
        if op == "!=" and actual == value:
            return False
        if op == "~" and value.lower() not in actual.lower():
            return False
    return True


class BitbucketCloudFake(HostedFake):
    """Bitbucket Cloud's pull request endpoints; repositories are ``workspace/slug``."""

    prefix = "/2.0"

    def __init__(
        self,
        *,
        tokens: Collection[str] = (),
        app_passwords: Mapping[str, str] | None = None,
        repos: Iterable[str] = (),
        page_size_cap: int = MAX_PAGELEN,
        git_root: Path | str | None = None,
    ) -> None:
        super().__init__(tokens=tokens, repos=repos, page_size_cap=page_size_cap, git_root=git_root)
        self.app_passwords = dict(app_passwords or {})
        """Username → app password accepted as Basic credentials."""

    @property
    def api_url(self) -> str:
        return f"{self.url}/2.0"

    def error_body(self, status: int) -> JSON:
        messages = {
            400: "Bad request",
            403: "Your credentials lack one or more required privilege scopes.",
            404: "Resource not found",
            429: "Rate limit for this resource has been exceeded",
            500: "Something went wrong",
        }
        return {"type": "error", "error": {"message": messages.get(status, "Error")}}

    def _error(
        self, status: int, message: str, *, fields: Mapping[str, list[str]] | None = None
    ) -> web.Response:
        error: dict[str, Any] = {"message": message}
        if fields:
            error["fields"] = dict(fields)
        return self._json(status, {"type": "error", "error": error})

    def rate_limit_next(self, *, reset_in: int = 60) -> None:
        """Answer the next request like Bitbucket Cloud's rate limiter: 429 with the error body,
        ``Retry-After`` and the ``X-RateLimit-*`` headers."""
        self.fail_next(
            429,
            self.error_body(429),
            headers={
                "Retry-After": str(reset_in),
                "X-RateLimit-Limit": "1000",
                "X-RateLimit-Resource": "api-repository",
                "X-RateLimit-NearLimit": "true",
                "X-RateLimit-Reset": str(int(time.time()) + reset_in),
            },
        )

    # --- shapes --------------------------------------------------------------------------------

    def _ref_json(self, repo: HostedRepo, branch: str, fork: str | None = None) -> JSON:
        full = fork or repo.path
        return {
            "branch": {"name": branch},
            "commit": {"type": "commit", "hash": "0" * 12},
            "repository": {
                "type": "repository",
                "full_name": full,
                "name": full.split("/", 1)[1],
                "uuid": f"{{{repo.id:08d}-0000-4000-8000-{abs(hash(full)) % 10**12:012d}}}",
            },
        }

    def _pull_json(self, repo: HostedRepo, pull: HostedPull) -> JSON:
        api = f"{self.api_url}/repositories/{repo.path}/pullrequests/{pull.number}"
        return {
            "type": "pullrequest",
            "id": pull.number,
            "title": pull.title,
            "description": pull.body,
            "summary": {"type": "rendered", "raw": pull.body, "markup": "markdown", "html": ""},
            "state": _STATES[pull.state],
            "author": {"type": "user", "display_name": "Image Updater"},
            "source": self._ref_json(repo, pull.head, pull.fork),
            "destination": self._ref_json(repo, pull.base),
            "merge_commit": None,
            "comment_count": len(pull.comments),
            "task_count": 0,
            "close_source_branch": False,
            "closed_by": None,
            "reason": "",
            "created_on": pull.created_at,
            "updated_on": pull.updated_at,
            "reviewers": [],
            "participants": [],
            "links": {
                "self": {"href": api},
                "html": {"href": f"{self.url}/{repo.path}/pull-requests/{pull.number}"},
                "comments": {"href": f"{api}/comments"},
                "decline": {"href": f"{api}/decline"},
            },
        }

    # --- routing -------------------------------------------------------------------------------

    def _authenticated(self, request: web.Request) -> bool:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            return value.strip() in self.tokens
        if scheme.lower() == "basic":
            try:
                user, _, password = base64.b64decode(value.strip()).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return False
            return bool(user) and self.app_passwords.get(user) == password
        return False

    async def _route(self, request: web.Request, segments: list[str], body: JSON) -> web.Response:
        if not self._authenticated(request):
            return web.Response(
                status=401, headers={"WWW-Authenticate": 'Basic realm="Bitbucket.org HTTP"'}
            )
        if len(segments) < 4 or segments[0] != "repositories" or segments[3] != "pullrequests":
            return self._error(404, "Resource not found")
        repo = self.repo(f"{segments[1]}/{segments[2]}")
        if repo is None:
            return self._error(
                404,
                "You may not have access to this repository or it no longer exists in this "
                "workspace. If you think this repository exists and you have access, make sure "
                "you are authenticated.",
            )
        rest, method = segments[4:], request.method
        if not rest:
            if method == "GET":
                return self._list(request, repo)
            if method == "POST":
                return self._create(repo, body)
        elif rest[0].isdigit():
            pull = repo.pulls.get(int(rest[0]))
            if pull is None:
                return self._error(404, f"Pull request {rest[0]} not found")
            if rest[1:] == [] and method == "GET":
                return self._json(200, self._pull_json(repo, pull))
            if rest[1:] == [] and method == "PUT":
                return self._update(repo, pull, body)
            if rest[1:] == ["comments"] and method == "POST":
                return self._comment(repo, pull, body)
            if rest[1:] == ["decline"] and method == "POST":
                return self._decline(repo, pull)
        return self._error(404, "Resource not found")

    def _list(self, request: web.Request, repo: HostedRepo) -> web.Response:
        states = request.query.getall("state", ["OPEN"])
        terms, problem = bbql_filter(request.query.get("q", ""))
        if problem is not None:
            return self._error(400, problem)
        pulls = [
            p for p in repo.pulls.values() if _STATES[p.state] in states and _matches(p, terms)
        ]
        pulls.sort(key=lambda p: p.number, reverse=True)
        try:
            pagelen = int(request.query.get("pagelen", 10))
            page = int(request.query.get("page", 1))
        except ValueError:
            return self._error(400, "Invalid pagelen or page")
        pagelen, page = max(1, min(pagelen, self.page_size_cap)), max(1, page)
        values = pulls[(page - 1) * pagelen : page * pagelen]
        answer: dict[str, JSON] = {
            "size": len(pulls),
            "page": page,
            "pagelen": pagelen,
            "values": [self._pull_json(repo, p) for p in values],
        }
        if page * pagelen < len(pulls):
            query = MultiDict(request.query)
            query["page"] = str(page + 1)
            path = request.raw_path.split("?", 1)[0]
            answer["next"] = f"{self.url}{path}?{urlencode(list(query.items()))}"
        if page > 1:
            query = MultiDict(request.query)
            query["page"] = str(page - 1)
            path = request.raw_path.split("?", 1)[0]
            answer["previous"] = f"{self.url}{path}?{urlencode(list(query.items()))}"
        return self._json(200, answer)

    def _create(self, repo: HostedRepo, body: JSON) -> web.Response:
        if not isinstance(body, Mapping):
            return self._error(400, "Bad request")
        title = body.get("title")
        if not isinstance(title, str) or not title:
            return self._error(
                400, "title: This field is required.", fields={"title": ["This field is required."]}
            )
        head = (body.get("source") or {}).get("branch", {}).get("name")
        if not isinstance(head, str) or not head:
            return self._error(
                400,
                "source: This field is required.",
                fields={"source": ["This field is required."]},
            )
        base = str((body.get("destination") or {}).get("branch", {}).get("name") or "main")
        missing = self.missing_branch(repo, head, base)
        if missing is not None:
            field = "source" if missing == head else "destination"
            return self._error(
                400,
                f"{field}: Branch not found: {missing}",
                fields={field: [f"Branch not found: {missing}"]},
            )
        if head == base:
            return self._error(400, "source and destination branches must be different")
        if self.nothing_to_merge(repo, base, head):
            return self._error(400, "There are no changes to be pulled")
        existing = self.open_pull(repo, head, base)
        if existing is not None:
            existing.title = title
            existing.body = str(body.get("description") or "")
            existing.touch()
            return self._json(200, self._pull_json(repo, existing))
        pull = self.add_pull(repo.path, head, base, title, body=str(body.get("description") or ""))
        return self._json(201, self._pull_json(repo, pull))

    def _update(self, repo: HostedRepo, pull: HostedPull, body: JSON) -> web.Response:
        if not isinstance(body, Mapping):
            return self._error(400, "Bad request")
        if pull.state != "open":
            return self._error(400, "You can't edit a pull request that is not open.")
        if "title" in body:
            if not body["title"]:
                return self._error(
                    400,
                    "title: This field is required.",
                    fields={"title": ["This field is required."]},
                )
            pull.title = str(body["title"])
        if "description" in body:
            pull.body = str(body["description"] or "")
        destination = (body.get("destination") or {}).get("branch", {}).get("name")
        if isinstance(destination, str) and destination:
            pull.base = destination
        pull.touch()
        return self._json(200, self._pull_json(repo, pull))

    def _comment(self, repo: HostedRepo, pull: HostedPull, body: JSON) -> web.Response:
        content = body.get("content") if isinstance(body, Mapping) else None
        raw = content.get("raw") if isinstance(content, Mapping) else None
        if not isinstance(raw, str) or not raw:
            return self._error(
                400,
                "content: This field is required.",
                fields={"content": ["This field is required."]},
            )
        pull.comments.append(raw)
        ident = pull.number * 1000 + len(pull.comments)
        now = _now()
        api = f"{self.api_url}/repositories/{repo.path}/pullrequests/{pull.number}"
        return self._json(
            201,
            {
                "type": "pullrequest_comment",
                "id": ident,
                "content": {"type": "rendered", "raw": raw, "markup": "markdown", "html": ""},
                "created_on": now,
                "updated_on": now,
                "deleted": False,
                "pending": False,
                "user": {"type": "user", "display_name": "Image Updater"},
                "pullrequest": {"type": "pullrequest", "id": pull.number, "title": pull.title},
                "links": {"self": {"href": f"{api}/comments/{ident}"}},
            },
        )

    def _decline(self, repo: HostedRepo, pull: HostedPull) -> web.Response:
        if pull.state != "open":
            return self._error(400, "You can't decline a pull request that is not open.")
        pull.state, pull.closed_at = "closed", _now()
        pull.touch()
        return self._json(200, self._pull_json(repo, pull))
