"""Gitea and Forgejo pull requests over the REST API v1 (self-hosted instances).

Endpoints (the API base is ``<scheme>://<host>/api/v1``): ``GET/POST /repos/{owner}/{repo}/pulls``,
``PATCH /repos/{owner}/{repo}/pulls/{index}``, ``POST /repos/{owner}/{repo}/issues/{index}/labels``
and ``…/issues/{index}/comments``. Lists are paged with ``page``/``limit`` and follow the
``Link: <…>; rel="next"`` header (only to the same API origin). The token goes in
``Authorization: token …``. A second request for the same branches is refused with
``409 pull request already exists for these targets``; labels must exist in the repository (or
its organisation) to be set, names Gitea does not know are left out (and reported as a warning).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final

import httpx

from argocd_image_updater.model.pr_hosts import GITEA
from argocd_image_updater.model.repo_url import RepoLocation
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.writeback.scm.api import (
    ApiRootClient,
    TokenSource,
    response_text,
)
from argocd_image_updater.writeback.scm.host import PullRequest
from argocd_image_updater.writeback.scm.repos_api import ReposApiClient

PAGE_LIMIT: Final = 50
"""Gitea's default ``MAX_RESPONSE_ITEMS``: larger pages are cut to it anyway."""

log = get_logger("writeback.scm.gitea")

HOST: Final = GITEA


def client(
    token: TokenSource, api: str, http: httpx.AsyncClient | None, username: str = ""
) -> GiteaClient:
    """The client for the API base ``api`` (what :mod:`~.hosts` calls for ``gitea``; the
    username plays no part)."""
    return GiteaClient(token, api_url=api, http=http)


def _not_from_fork(data: Any) -> bool:
    head, base = data.get("head") or {}, data.get("base") or {}
    return head.get("repo_id") is None or head.get("repo_id") == base.get("repo_id")


class GiteaClient(ApiRootClient, ReposApiClient):
    """The pull request API of one Gitea or Forgejo instance at ``api_url`` (``…/api/v1``);
    ``http`` is a caller-owned client (else one is made and closed by :meth:`aclose`)."""

    host = HOST

    def _api_base(self, repo: RepoLocation) -> str:
        return self._api

    merged_key = "merged"

    def _auth_headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"token {token}", "Accept": "application/json"}

    async def _open_pulls(self, repo: RepoLocation) -> list[tuple[PullRequest, Any]]:
        found: list[tuple[PullRequest, Any]] = []
        params: dict[str, str | int] = {"state": "open", "limit": PAGE_LIMIT}
        async for items in self._link_pages(f"{self._repo_url(repo)}/pulls", params):
            found.extend((self._pull(item), item) for item in items)
        return found

    async def find_open(self, repo: RepoLocation, head: str, base: str) -> PullRequest | None:
        for pr, item in await self._open_pulls(repo):
            if pr.head == head and pr.base == base and _not_from_fork(item):
                return pr
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
        payload = {"title": title, "head": head, "base": base, "body": body}
        response = await self._request(
            "POST", f"{self._repo_url(repo)}/pulls", json=payload, passthrough=frozenset({409})
        )
        if response.status_code != 409:
            return await self._add_labels(repo, self._pull(self._json(response)), labels)
        duplicate = "already exists" in response_text(response)
        return await self._existing(response, repo, head, base, duplicate=duplicate)

    def _labelled(
        self, repo: RepoLocation, pr: PullRequest, added: Sequence[str], names: tuple[str, ...]
    ) -> PullRequest:
        unknown = [label for label in added if label not in names]
        if unknown:
            log.warning(
                "Labels %s of pull request #%d do not exist in the repository: create them "
                "in Gitea to have them set",
                ",".join(unknown),
                pr.number,
                repository=repo.full_path,
            )
        # the answer lists every label of the issue after the addition
        return replace(pr, labels=names)

    async def list_open_by_prefix(
        self, repo: RepoLocation, base: str, head_prefix: str
    ) -> list[PullRequest]:
        return [
            pr
            for pr, item in await self._open_pulls(repo)
            if pr.base == base and pr.head.startswith(head_prefix) and _not_from_fork(item)
        ]
