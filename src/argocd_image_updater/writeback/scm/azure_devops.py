"""Azure DevOps Repos pull requests over the REST API 7.1 (Services and Server).

The API base is the repository's: ``https://dev.azure.com/<org>/<project>/_apis/git/repositories/
<repo>`` (see :func:`~argocd_image_updater.model.pr_hosts.azure_devops_location`). Endpoints,
each with ``api-version=7.1``: ``GET/POST {base}/pullrequests`` (lists filtered with
``searchCriteria.*`` and paged with ``$top``/``$skip``), ``PATCH {base}/pullrequests/{id}``
(title and description; ``status: abandoned`` closes), ``POST …/pullrequests/{id}/labels`` and
``POST …/pullrequests/{id}/threads`` (a comment). The personal access token is sent as
``Authorization: Basic`` with an empty username. A second request for the same branches is
refused with ``409`` and ``TF401179`` (``GitPullRequestExistsException``). Descriptions hold at
most 4000 characters.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

import httpx

from argocd_image_updater.model.pr_hosts import AZURE_DEVOPS
from argocd_image_updater.model.repo_url import RepoLocation
from argocd_image_updater.observe.log import get_logger, register_secret
from argocd_image_updater.writeback.scm.api import (
    MAX_PAGES,
    PER_PAGE,
    ApiRootClient,
    TokenSource,
    describe,
)
from argocd_image_updater.writeback.scm.errors import ScmAuthError, ScmError
from argocd_image_updater.writeback.scm.host import PullRequest

API_VERSION: Final = "7.1"
EXISTS: Final = ("TF401179", "GitPullRequestExistsException")
_STATES: Final = {"active": "open", "abandoned": "closed", "completed": "merged"}
_BRANCH: Final = "refs/heads/"
_REPOSITORIES: Final = "/_apis/git/repositories/"

log = get_logger("writeback.scm.azure_devops")

HOST: Final = AZURE_DEVOPS


def client(
    token: TokenSource, api: str, http: httpx.AsyncClient | None, username: str = ""
) -> AzureDevOpsClient:
    """The client for the repository API ``api`` (what :mod:`~.hosts` calls for
    ``azureDevOps``; the username plays no part: Azure DevOps ignores it)."""
    return AzureDevOpsClient(token, api_url=api, http=http)


def _branch(ref: str) -> str:
    return ref[len(_BRANCH) :] if ref.startswith(_BRANCH) else ref


class AzureDevOpsClient(ApiRootClient):
    """The pull request API of one Azure DevOps repository at ``api_url``
    (``…/_apis/git/repositories/<repo>``); ``http`` is a caller-owned client (else one is made
    and closed by :meth:`aclose`)."""

    host = HOST

    @property
    def _web(self) -> str:
        """The repository's web page (``…/_git/<repo>``), or empty when ``_api`` names none."""
        return self._api.replace(_REPOSITORIES, "/_git/", 1) if _REPOSITORIES in self._api else ""

    def _url(self, number: int | None = None, tail: str = "") -> str:
        url = f"{self._api}/pullrequests"
        return url if number is None else f"{url}/{number}{tail}"

    def _auth_headers(self, token: str) -> dict[str, str]:
        basic = base64.b64encode(f":{token}".encode()).decode("ascii")
        register_secret(basic)
        return {"Authorization": f"Basic {basic}", "Accept": "application/json"}

    async def _send(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str | int] | None = None,
        json: Any = None,
        passthrough: frozenset[int] = frozenset(),
    ) -> httpx.Response:
        response = await self._request(
            method,
            url,
            params={**(params or {}), "api-version": API_VERSION},
            json=json,
            passthrough=passthrough,
        )
        if response.status_code == 203:
            # an unauthenticated request gets the sign-in page, not a 401
            raise ScmAuthError(
                f"{self.provider} API {describe(method, response.request.url)}: authentication "
                "failed (203 sign-in page); check the personal access token",
                status=203,
            )
        return response

    def _pull(self, data: Any) -> PullRequest:
        try:
            number = int(data["pullRequestId"])
            labels = tuple(
                str(label["name"])
                for label in data.get("labels") or ()
                if isinstance(label, Mapping) and "name" in label and label.get("active", True)
            )
            return PullRequest(
                number=number,
                url=f"{self._web}/pullrequest/{number}" if self._web else str(data["url"]),
                head=_branch(str(data["sourceRefName"])),
                base=_branch(str(data["targetRefName"])),
                title=str(data.get("title") or ""),
                state=_STATES.get(str(data["status"]), str(data["status"])),
                body=str(data.get("description") or ""),
                labels=labels,
            )
        except (KeyError, TypeError, ValueError):
            raise ScmError(
                "Azure DevOps API: unexpected pull request object in the answer"
            ) from None

    async def _active(self, criteria: Mapping[str, str]) -> AsyncIterator[tuple[PullRequest, Any]]:
        params: dict[str, str | int] = {"searchCriteria.status": "active", **criteria}
        skip = 0
        for _ in range(MAX_PAGES):
            response = await self._send(
                "GET", self._url(), params={**params, "$top": PER_PAGE, "$skip": skip}
            )
            page = self._json(response)
            values = page.get("value") if isinstance(page, Mapping) else None
            if not isinstance(values, list):
                raise ScmError(
                    f"Azure DevOps API {describe('GET', response.request.url)}: expected a value "
                    "list"
                )
            # the service may cap $top below what was asked: only an empty page ends the list
            if not values:
                return
            for item in values:
                yield self._pull(item), item
            skip += len(values)
        raise ScmError(f"Azure DevOps API GET {self._url()}: more than {MAX_PAGES} pages")

    async def find_open(self, repo: RepoLocation, head: str, base: str) -> PullRequest | None:
        criteria = {
            "searchCriteria.sourceRefName": f"{_BRANCH}{head}",
            "searchCriteria.targetRefName": f"{_BRANCH}{base}",
        }
        async for pr, item in self._active(criteria):
            if pr.head == head and pr.base == base and not item.get("forkSource"):
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
        payload: dict[str, Any] = {
            "sourceRefName": f"{_BRANCH}{head}",
            "targetRefName": f"{_BRANCH}{base}",
            "title": title,
            "description": body,
        }
        if labels:
            payload["labels"] = [{"name": label} for label in labels]
        response = await self._send("POST", self._url(), json=payload, passthrough=frozenset({409}))
        if response.status_code != 409:
            return self._pull(self._json(response))
        duplicate = any(marker in response.text for marker in EXISTS)
        return await self._existing(
            response, repo, head, base, duplicate=duplicate, listed="active"
        )

    async def update(
        self, repo: RepoLocation, pr: PullRequest, title: str, body: str, labels: Sequence[str]
    ) -> PullRequest:
        response = await self._send(
            "PATCH", self._url(pr.number), json={"title": title, "description": body}
        )
        updated = self._pull(self._json(response))
        added: list[str] = []
        for label in (label for label in labels if label not in updated.labels):
            try:
                await self._send("POST", self._url(pr.number, "/labels"), json={"name": label})
            except ScmError as exc:
                log.warning(
                    "Could not add label %s to pull request !%d: %s",
                    label,
                    pr.number,
                    exc,
                    repository=repo.full_path,
                )
                continue
            added.append(label)
        return replace(updated, labels=(*updated.labels, *added)) if added else updated

    async def list_open_by_prefix(
        self, repo: RepoLocation, base: str, head_prefix: str
    ) -> list[PullRequest]:
        criteria = {"searchCriteria.targetRefName": f"{_BRANCH}{base}"}
        return [
            pr
            async for pr, item in self._active(criteria)
            if pr.base == base and pr.head.startswith(head_prefix) and not item.get("forkSource")
        ]

    async def close(self, repo: RepoLocation, pr: PullRequest, comment: str) -> None:
        if comment:
            thread = {
                "comments": [{"parentCommentId": 0, "content": comment, "commentType": "text"}],
                "status": "closed",
            }
            await self._send("POST", self._url(pr.number, "/threads"), json=thread)
        await self._send("PATCH", self._url(pr.number), json={"status": "abandoned"})
