"""A Gitea (and Forgejo) pull request API stand-in, served over HTTP on ``127.0.0.1``.

It answers, under ``/api/v1`` and in the shapes of Gitea's swagger: ``GET/POST
/repos/{owner}/{repo}/pulls`` (``state``, ``page``, ``limit`` at most 50, ``Link`` and
``X-Total-Count`` headers), ``GET/PATCH /repos/{owner}/{repo}/pulls/{index}`` (an edit answers
``201 Created``), ``POST /repos/{owner}/{repo}/issues/{index}/labels`` (label IDs or names; names
the repository does not define are left out) and ``…/issues/{index}/comments``. Tokens are
accepted as ``Authorization: token …`` or ``Bearer …``. Errors are ``{"message", "url"}``: 401
``token is required``, 404 ``The target couldn't be found.``, 409 ``pull request already exists
for these targets [...]``, 422 ``[Title]: Required`` or ``There are no changes between the head
and the base``. :meth:`GiteaFake.rate_limit_next` answers like a rate-limiting proxy in front of
Gitea (429, ``Retry-After``).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Final

from aiohttp import web

from argocd_image_updater_testing.scm import JSON, _now
from argocd_image_updater_testing.scm_hosted import HostedFake, HostedPull, HostedRepo

MAX_LIMIT: Final = 50


class GiteaFake(HostedFake):
    """Gitea's pull request endpoints; repositories are ``owner/name``."""

    prefix = "/api/v1"

    def __init__(
        self,
        *,
        tokens: Collection[str] = (),
        repos: Iterable[str] = (),
        page_size_cap: int = MAX_LIMIT,
        git_root: Path | str | None = None,
    ) -> None:
        super().__init__(tokens=tokens, repos=repos, page_size_cap=page_size_cap, git_root=git_root)

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/v1"

    def error_body(self, status: int) -> JSON:
        messages = {
            401: "token is required",
            403: "user should have a permission to write to a repo",
            404: "The target couldn't be found.",
            409: "Conflict",
            422: "Unprocessable Entity",
            500: "Internal Server Error",
        }
        body: dict[str, JSON] = {
            "message": messages.get(status, "Error"),
            "url": f"{self.url}/api/swagger",
        }
        if status == 404:
            body["errors"] = []
        return body

    def _error(self, status: int, message: str | None = None) -> web.Response:
        body = self.error_body(status)
        if message is not None:
            body["message"] = message
        return self._json(status, body)

    def rate_limit_next(self, *, reset_in: int = 60) -> None:
        """Answer the next request like a rate-limiting proxy: 429 with ``Retry-After``."""
        self.fail_next(
            429,
            "429 Too Many Requests\n",
            headers={
                "Retry-After": str(reset_in),
                "X-RateLimit-Reset": str(int(time.time()) + reset_in),
            },
        )

    # --- shapes --------------------------------------------------------------------------------

    def _repo_json(self, repo: HostedRepo) -> JSON:
        owner, name = repo.path.split("/", 1)
        return {
            "id": repo.id,
            "name": name,
            "full_name": repo.path,
            "owner": {"id": repo.id, "login": owner, "username": owner},
            "html_url": f"{self.url}/{repo.path}",
            "clone_url": f"{self.url}/{repo.path}.git",
            "default_branch": "main",
        }

    def _label_json(self, repo: HostedRepo, name: str) -> JSON:
        known = repo.labels or []
        ident = known.index(name) + 1 if name in known else abs(hash(name)) % 100000
        return {
            "id": ident,
            "name": name,
            "exclusive": False,
            "is_archived": False,
            "color": "e11d21",
            "description": "",
            "url": f"{self.api_url}/repos/{repo.path}/labels/{ident}",
        }

    def _pull_json(self, repo: HostedRepo, pull: HostedPull) -> JSON:
        head_repo_id = repo.id if pull.fork is None else 10000 + repo.id
        return {
            "id": repo.id * 100000 + pull.number,
            "url": f"{self.url}/{repo.path}/pulls/{pull.number}",
            "number": pull.number,
            "user": {"id": 1, "login": "image-updater"},
            "title": pull.title,
            "body": pull.body,
            "labels": [self._label_json(repo, name) for name in pull.labels],
            "milestone": None,
            "assignees": None,
            "state": "open" if pull.state == "open" else "closed",
            "is_locked": False,
            "comments": len(pull.comments),
            "html_url": f"{self.url}/{repo.path}/pulls/{pull.number}",
            "diff_url": f"{self.url}/{repo.path}/pulls/{pull.number}.diff",
            "patch_url": f"{self.url}/{repo.path}/pulls/{pull.number}.patch",
            "mergeable": True,
            "merged": pull.state == "merged",
            "merged_at": pull.closed_at if pull.state == "merged" else None,
            "merge_commit_sha": None,
            "base": {
                "label": pull.base,
                "ref": pull.base,
                "sha": "0" * 40,
                "repo_id": repo.id,
                "repo": self._repo_json(repo),
            },
            "head": {
                "label": pull.head if pull.fork is None else f"{pull.fork}:{pull.head}",
                "ref": pull.head,
                "sha": "0" * 40,
                "repo_id": head_repo_id,
            },
            "merge_base": "0" * 40,
            "created_at": pull.created_at,
            "updated_at": pull.updated_at,
            "closed_at": pull.closed_at,
        }

    # --- routing -------------------------------------------------------------------------------

    async def _route(self, request: web.Request, segments: list[str], body: JSON) -> web.Response:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        token = value.strip() if scheme.lower() in ("token", "bearer") else ""
        if not token:
            return self._error(401)
        if token not in self.tokens:
            return self._error(401, "user does not exist [uid: 0, name: , keyid: 0]")
        if len(segments) < 4 or segments[0] != "repos":
            return self._error(404)
        repo = self.repo(f"{segments[1]}/{segments[2]}")
        if repo is None:
            return self._error(404)
        rest, method = segments[3:], request.method
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
                return self._json(200, self._pull_json(repo, pull))
            if method == "PATCH":
                return self._edit(repo, pull, body)
        elif len(rest) == 3 and rest[0] == "issues" and rest[1].isdigit():
            pull = repo.pulls.get(int(rest[1]))
            if pull is None:
                return self._error(404)
            if rest[2] == "labels" and method == "POST":
                return self._add_labels(repo, pull, body)
            if rest[2] == "comments" and method == "POST":
                return self._comment(repo, pull, body)
        return self._error(404)

    def _list(self, request: web.Request, repo: HostedRepo) -> web.Response:
        state = request.query.get("state", "open")
        pulls = [
            p
            for p in repo.pulls.values()
            if state == "all" or (p.state == "open") == (state == "open")
        ]
        pulls.sort(key=lambda p: p.number, reverse=True)
        try:
            limit = int(request.query.get("limit", 30))
            page = int(request.query.get("page", 1))
        except ValueError:
            limit, page = 30, 1
        limit, page = max(1, min(limit, self.page_size_cap)), max(1, page)
        last = max(1, -(-len(pulls) // limit))
        items = [self._pull_json(repo, p) for p in pulls[(page - 1) * limit : page * limit]]
        links = []
        if page < last:
            links.append(f'<{self._page_url(request, page + 1)}>; rel="next"')
            links.append(f'<{self._page_url(request, last)}>; rel="last"')
        if page > 1:
            links.append(f'<{self._page_url(request, 1)}>; rel="first"')
            links.append(f'<{self._page_url(request, page - 1)}>; rel="prev"')
        headers = {"X-Total-Count": str(len(pulls))}
        if links:
            headers["Link"] = ", ".join(links)
        return self._json(200, items, headers)

    def _create(self, repo: HostedRepo, body: JSON) -> web.Response:
        if not isinstance(body, Mapping):
            return self._error(422, "[Title]: Required")
        missing = [name for name in ("Title", "Head", "Base") if not body.get(name.lower())]
        if missing:
            return self._error(422, ",".join(f"[{name}]: Required" for name in missing))
        head, base = str(body["head"]), str(body["base"])
        if ":" in head:
            return self._error(404)  # forks are not served
        if self.missing_branch(repo, base, head) is not None:
            return self._error(404)
        if head == base or self.nothing_to_merge(repo, base, head):
            return self._error(
                422, "Invalid PullRequest: There are no changes between the head and the base"
            )
        existing = self.open_pull(repo, head, base)
        if existing is not None:
            return self._error(
                409,
                "pull request already exists for these targets [id: "
                f"{repo.id * 100000 + existing.number}, issue_id: {existing.number + 500}, "
                f"head_repo_id: {repo.id}, base_repo_id: {repo.id}, head_branch: {head}, "
                f"base_branch: {base}]",
            )
        pull = self.add_pull(
            repo.path, head, base, str(body["title"]), body=str(body.get("body") or "")
        )
        for label in body.get("labels") or ():
            if isinstance(label, int) and repo.labels and 0 < label <= len(repo.labels):
                pull.labels.append(repo.labels[label - 1])
        return self._json(201, self._pull_json(repo, pull))

    def _edit(self, repo: HostedRepo, pull: HostedPull, body: JSON) -> web.Response:
        if not isinstance(body, Mapping):
            return self._error(422, "Unprocessable Entity")
        state = body.get("state")
        if state is not None and state not in ("open", "closed"):
            return self._error(422, "[State]: invalid state")
        if "title" in body:
            if not body["title"]:
                return self._error(422, "[Title]: Required")
            pull.title = str(body["title"])
        if "body" in body:
            pull.body = str(body["body"] or "")
        if state == "closed" and pull.state == "open":
            pull.state, pull.closed_at = "closed", _now()
        elif state == "open" and pull.state == "closed":
            pull.state, pull.closed_at = "open", None
        pull.touch()
        return self._json(201, self._pull_json(repo, pull))

    def _add_labels(self, repo: HostedRepo, pull: HostedPull, body: JSON) -> web.Response:
        given = body.get("labels") if isinstance(body, Mapping) else None
        if not isinstance(given, list):
            return self._error(422, "[Labels]: Required")
        for item in given:
            if isinstance(item, int):
                name = (
                    repo.labels[item - 1] if repo.labels and 0 < item <= len(repo.labels) else None
                )
            else:
                name = str(item) if repo.labels is None or str(item) in repo.labels else None
            if name is not None and name not in pull.labels:
                pull.labels.append(name)
        return self._json(200, [self._label_json(repo, name) for name in pull.labels])

    def _comment(self, repo: HostedRepo, pull: HostedPull, body: JSON) -> web.Response:
        text = body.get("body") if isinstance(body, Mapping) else None
        if not isinstance(text, str) or not text:
            return self._error(422, "[Body]: Required")
        pull.comments.append(text)
        ident = pull.number * 1000 + len(pull.comments)
        now = _now()
        return self._json(
            201,
            {
                "id": ident,
                "html_url": f"{self.url}/{repo.path}/pulls/{pull.number}#issuecomment-{ident}",
                "pull_request_url": f"{self.url}/{repo.path}/pulls/{pull.number}",
                "issue_url": "",
                "user": {"id": 1, "login": "image-updater"},
                "original_author": "",
                "original_author_id": 0,
                "body": text,
                "assets": [],
                "created_at": now,
                "updated_at": now,
            },
        )
