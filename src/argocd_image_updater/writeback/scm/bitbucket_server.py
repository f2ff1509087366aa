"""Bitbucket Data Center (Server) pull requests over the REST API 1.0 (self-hosted).

Endpoints (the API base is ``<scheme>://<host>[/<context>]/rest/api/1.0``; the project key and
repository slug come from the clone URL, see
:func:`~argocd_image_updater.model.pr_hosts.bitbucket_server_location`):
``GET/POST /projects/{key}/repos/{slug}/pull-requests`` (paged by ``start``/``limit`` until
``isLastPage``), ``GET/PUT …/pull-requests/{id}`` (updates carry the request's current
``version``), ``POST …/pull-requests/{id}/comments`` and ``POST …/pull-requests/{id}/decline``.
Pull requests have no labels. The token is an HTTP access token sent as ``Authorization:
Bearer``. A second request for the same branches is refused with ``409`` and a
``DuplicatePullRequestException``; other 409 answers (the source is already in the target, an
out-of-date version) are errors.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final

import httpx

from argocd_image_updater.model.pr_hosts import BITBUCKET_SERVER, bitbucket_server_location
from argocd_image_updater.model.repo_url import RepoLocation
from argocd_image_updater.writeback.scm.api import (
    MAX_PAGES,
    PER_PAGE,
    ApiRootClient,
    TokenSource,
    describe,
)
from argocd_image_updater.writeback.scm.errors import ScmError
from argocd_image_updater.writeback.scm.host import PullRequest

DUPLICATE: Final = "DuplicatePullRequestException"
_STATES: Final = {"OPEN": "open", "MERGED": "merged", "DECLINED": "closed"}
_BRANCH: Final = "refs/heads/"

HOST: Final = BITBUCKET_SERVER


def client(
    token: TokenSource, api: str, http: httpx.AsyncClient | None, username: str = ""
) -> BitbucketServerClient:
    """The client for the API base ``api`` (what :mod:`~.hosts` calls for ``bitbucketServer``;
    the username plays no part)."""
    return BitbucketServerClient(token, api_url=api, http=http)


def _branch(ref: Any) -> str:
    ref_id = str(ref["id"])
    return ref_id[len(_BRANCH) :] if ref_id.startswith(_BRANCH) else str(ref["displayId"])


def _pull(data: Any) -> PullRequest:
    try:
        links = data.get("links", {}).get("self") or [{}]
        return PullRequest(
            number=int(data["id"]),
            url=str(links[0].get("href", "")),
            head=_branch(data["fromRef"]),
            base=_branch(data["toRef"]),
            title=str(data.get("title") or ""),
            state=_STATES.get(str(data["state"]), str(data["state"]).lower()),
            body=str(data.get("description") or ""),
        )
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        raise ScmError(
            "Bitbucket Data Center API: unexpected pull request object in the answer"
        ) from None


def _repository(ref: Any) -> tuple[str, str]:
    repo = ref.get("repository") if isinstance(ref, Mapping) else None
    if not isinstance(repo, Mapping):
        return "", ""
    project = repo.get("project")
    key = project.get("key") if isinstance(project, Mapping) else ""
    return str(key or "").lower(), str(repo.get("slug") or "").lower()


def _not_from_fork(data: Any) -> bool:
    source, target = _repository(data.get("fromRef")), _repository(data.get("toRef"))
    return source == ("", "") or target == ("", "") or source == target


class BitbucketServerClient(ApiRootClient):
    """The pull request API of one Bitbucket Data Center instance at ``api_url``
    (``…/rest/api/1.0``); ``http`` is a caller-owned client (else one is made and closed by
    :meth:`aclose`)."""

    host = HOST

    def _pulls_url(self, repo: RepoLocation, number: int | None = None) -> str:
        _, project, slug = bitbucket_server_location(repo)
        url = f"{self._api}/projects/{project}/repos/{slug}/pull-requests"
        return url if number is None else f"{url}/{number}"

    def _ref(self, repo: RepoLocation, branch: str) -> dict[str, Any]:
        _, project, slug = bitbucket_server_location(repo)
        return {
            "id": f"{_BRANCH}{branch}",
            "repository": {"slug": slug, "project": {"key": project}},
        }

    def _auth_headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}", "Accept": "application/json"}

    async def _pages(self, url: str, params: Mapping[str, str | int]) -> AsyncIterator[Any]:
        start = 0
        for _ in range(MAX_PAGES):
            response = await self._request(
                "GET", url, params={**params, "limit": PER_PAGE, "start": start}
            )
            page = self._json(response)
            values = page.get("values") if isinstance(page, Mapping) else None
            if not isinstance(values, list):
                raise ScmError(
                    f"Bitbucket Data Center API {describe('GET', response.request.url)}: "
                    "expected a page of values"
                )
            for item in values:
                yield item
            if page.get("isLastPage", True) or not isinstance(page.get("nextPageStart"), int):
                return
            start = page["nextPageStart"]
        raise ScmError(f"Bitbucket Data Center API GET {url}: more than {MAX_PAGES} pages")

    async def _open(
        self, repo: RepoLocation, direction: str, branch: str
    ) -> AsyncIterator[tuple[PullRequest, Any]]:
        params = {"state": "OPEN", "direction": direction, "at": f"{_BRANCH}{branch}"}
        async for item in self._pages(self._pulls_url(repo), params):
            yield _pull(item), item

    async def find_open(self, repo: RepoLocation, head: str, base: str) -> PullRequest | None:
        async for pr, item in self._open(repo, "OUTGOING", head):
            if pr.head == head and pr.base == base and pr.state == "open" and _not_from_fork(item):
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
        payload = {
            "title": title,
            "description": body,
            "fromRef": self._ref(repo, head),
            "toRef": self._ref(repo, base),
        }
        response = await self._request(
            "POST", self._pulls_url(repo), json=payload, passthrough=frozenset({409})
        )
        if response.status_code != 409:
            return _pull(self._json(response))
        duplicate = DUPLICATE in response.text
        return await self._existing(response, repo, head, base, duplicate=duplicate)

    async def _version(self, repo: RepoLocation, pr: PullRequest) -> int:
        """The request's current ``version``, which updates and declines must name."""
        data = self._json(await self._request("GET", self._pulls_url(repo, pr.number)))
        version = data.get("version") if isinstance(data, Mapping) else None
        if not isinstance(version, int):
            raise ScmError("Bitbucket Data Center API: the pull request has no version")
        return version

    async def update(
        self, repo: RepoLocation, pr: PullRequest, title: str, body: str, labels: Sequence[str]
    ) -> PullRequest:
        payload = {
            "version": await self._version(repo, pr),
            "title": title,
            "description": body,
        }
        response = await self._request("PUT", self._pulls_url(repo, pr.number), json=payload)
        return _pull(self._json(response))

    async def list_open_by_prefix(
        self, repo: RepoLocation, base: str, head_prefix: str
    ) -> list[PullRequest]:
        return [
            pr
            async for pr, item in self._open(repo, "INCOMING", base)
            if pr.base == base
            and pr.state == "open"
            and pr.head.startswith(head_prefix)
            and _not_from_fork(item)
        ]

    async def close(self, repo: RepoLocation, pr: PullRequest, comment: str) -> None:
        url = self._pulls_url(repo, pr.number)
        if comment:
            await self._request("POST", f"{url}/comments", json={"text": comment})
        version = await self._version(repo, pr)
        await self._request("POST", f"{url}/decline", params={"version": version})
