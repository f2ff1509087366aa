"""GitLab merge requests over the REST API v4 (gitlab.com and self-managed instances).

The project is addressed by its URL-encoded full path (``group%2Fsub%2Fproject``). Endpoints:
``GET/POST /api/v4/projects/{id}/merge_requests``, ``PUT …/merge_requests/{iid}`` and
``POST …/merge_requests/{iid}/notes``. Lists follow the ``X-Next-Page`` header. The token goes in
``PRIVATE-TOKEN`` (personal, project and group access tokens), or as ``Authorization: Bearer``
for OAuth tokens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final
from urllib.parse import quote

import httpx

from argocd_image_updater.model.pr_hosts import GITLAB
from argocd_image_updater.model.repo_url import RepoLocation
from argocd_image_updater.writeback.scm.api import (
    MAX_PAGES,
    PER_PAGE,
    HttpApiClient,
    TokenSource,
    api_root,
    describe,
    response_text,
)
from argocd_image_updater.writeback.scm.errors import ScmError
from argocd_image_updater.writeback.scm.host import PullRequest

_STATES: Final = {"opened": "open", "closed": "closed", "merged": "merged", "locked": "locked"}


def project_id(repo: RepoLocation) -> str:
    """The URL-encoded full project path GitLab accepts wherever a project ID goes."""
    return quote(repo.full_path, safe="")


def _merge_request(data: Any) -> PullRequest:
    try:
        labels = data.get("labels") or ()
        return PullRequest(
            number=int(data["iid"]),
            url=str(data["web_url"]),
            head=str(data["source_branch"]),
            base=str(data["target_branch"]),
            title=str(data.get("title") or ""),
            state=_STATES.get(str(data["state"]), str(data["state"])),
            body=str(data.get("description") or ""),
            labels=tuple(
                str(label["name"] if isinstance(label, Mapping) else label) for label in labels
            ),
        )
    except (KeyError, TypeError, ValueError):
        raise ScmError("GitLab API: unexpected merge request object in the answer") from None


def _not_from_fork(data: Any) -> bool:
    source, target = data.get("source_project_id"), data.get("target_project_id")
    return source is None or target is None or source == target


HOST: Final = GITLAB


def client(
    token: TokenSource, api: str, http: httpx.AsyncClient | None, username: str = ""
) -> GitLabClient:
    """The client for the API base ``api`` (what :mod:`~.hosts` calls for ``gitlab``; the
    username plays no part)."""
    return GitLabClient(token, base_url=api, http=http)


class GitLabClient(HttpApiClient):
    """GitLab's merge request API at ``base_url`` (e.g. ``https://gitlab.com``).

    ``oauth=True`` sends the token as ``Authorization: Bearer`` instead of ``PRIVATE-TOKEN``;
    ``http`` is a caller-owned client (else one is made and closed by :meth:`aclose`).
    """

    host = HOST

    def __init__(
        self,
        token: TokenSource,
        *,
        base_url: str,
        oauth: bool = False,
        http: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._api = f"{api_root(base_url, 'GitLab base URL')}/api/v4"
        super().__init__(token, http, timeout)
        self._oauth = oauth

    def _mr_url(self, repo: RepoLocation, iid: int | None = None) -> str:
        url = f"{self._api}/projects/{project_id(repo)}/merge_requests"
        return url if iid is None else f"{url}/{iid}"

    def _auth_headers(self, token: str) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {token}"} if self._oauth else {"PRIVATE-TOKEN": token}
        headers["Accept"] = "application/json"
        return headers

    async def _pages(self, url: str, params: Mapping[str, str | int]) -> AsyncIterator[list[Any]]:
        page = "1"
        for _ in range(MAX_PAGES):
            response = await self._request(
                "GET", url, params={**params, "per_page": PER_PAGE, "page": page}
            )
            items = self._json(response)
            if not isinstance(items, list):
                raise ScmError(
                    f"GitLab API {describe('GET', response.request.url)}: expected a list"
                )
            yield items
            page = response.headers.get("x-next-page", "").strip()
            if not page:
                return
            if not page.isdigit():
                raise ScmError(
                    f"GitLab API {describe('GET', response.request.url)}: bad X-Next-Page"
                )
        raise ScmError(f"GitLab API GET {url}: more than {MAX_PAGES} pages")

    async def find_open(self, repo: RepoLocation, head: str, base: str) -> PullRequest | None:
        params = {"state": "opened", "source_branch": head, "target_branch": base}
        async for items in self._pages(self._mr_url(repo), params):
            for item in items:
                mr = _merge_request(item)
                if mr.head == head and mr.base == base and _not_from_fork(item):
                    return mr
        return None

    async def create(
        self,
        repo: RepoLocation,
        head: str,
        base: str,
        title: str,
        body: str,
        labels: Sequence[str],
    ) -> PullRequest:
        payload: dict[str, Any] = {
            "source_branch": head,
            "target_branch": base,
            "title": title,
            "description": body,
        }
        if labels:
            payload["labels"] = ",".join(labels)
        response = await self._request(
            "POST", self._mr_url(repo), json=payload, passthrough=frozenset({409, 422})
        )
        if response.status_code not in (409, 422):
            return _merge_request(self._json(response))
        duplicate = "already exists" in response_text(response)
        return await self._existing(response, repo, head, base, duplicate=duplicate)

    async def update(
        self, repo: RepoLocation, pr: PullRequest, title: str, body: str, labels: Sequence[str]
    ) -> PullRequest:
        payload: dict[str, Any] = {"title": title, "description": body}
        missing = [label for label in labels if label not in pr.labels]
        if missing:
            payload["add_labels"] = ",".join(missing)
        response = await self._request("PUT", self._mr_url(repo, pr.number), json=payload)
        return _merge_request(self._json(response))

    async def list_open_by_prefix(
        self, repo: RepoLocation, base: str, head_prefix: str
    ) -> list[PullRequest]:
        found: list[PullRequest] = []
        params = {"state": "opened", "target_branch": base}
        async for items in self._pages(self._mr_url(repo), params):
            for item in items:
                mr = _merge_request(item)
                if mr.base == base and mr.head.startswith(head_prefix) and _not_from_fork(item):
                    found.append(mr)
        return found

    async def close(self, repo: RepoLocation, pr: PullRequest, comment: str) -> None:
        if comment:
            await self._request(
                "POST", f"{self._mr_url(repo, pr.number)}/notes", json={"body": comment}
            )
        await self._request("PUT", self._mr_url(repo, pr.number), json={"state_event": "close"})
