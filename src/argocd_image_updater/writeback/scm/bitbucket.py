"""Bitbucket Cloud pull requests over the REST API 2.0 (bitbucket.org).

Endpoints (the API base is ``https://api.bitbucket.org/2.0``):
``GET/POST /repositories/{workspace}/{repo_slug}/pullrequests`` (lists filtered with a BBQL
``q`` query, paged by the ``next`` URL of each page, only on the API's own origin),
``PUT …/pullrequests/{id}``, ``POST …/pullrequests/{id}/comments`` and
``POST …/pullrequests/{id}/decline``. Pull requests have no labels. The token is sent as
``Authorization: Bearer`` (repository, project and workspace access tokens, whose git username
is ``x-token-auth``), or with the HTTPS username as ``Authorization: Basic`` (app passwords and
API tokens). Bitbucket Cloud keeps one open pull request per source and destination branch: a
second create answers with that one; an error saying it already exists is read the same way.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final

import httpx

from argocd_image_updater.model.pr_hosts import BITBUCKET
from argocd_image_updater.model.repo_url import RepoLocation
from argocd_image_updater.observe.log import register_secret
from argocd_image_updater.writeback.scm.api import (
    MAX_PAGES,
    HttpApiClient,
    TokenSource,
    api_root,
    describe,
    response_text,
)
from argocd_image_updater.writeback.scm.errors import ScmError
from argocd_image_updater.writeback.scm.host import PullRequest

PAGE_LEN: Final = 50
"""The largest ``pagelen`` Bitbucket Cloud grants for pull requests."""
TOKEN_USERNAME: Final = "x-token-auth"
"""The git username of access tokens: such a token is a Bearer token for the API."""
_STATES: Final = {"OPEN": "open", "MERGED": "merged", "DECLINED": "closed", "SUPERSEDED": "closed"}

HOST: Final = BITBUCKET


def client(
    token: TokenSource, api: str, http: httpx.AsyncClient | None, username: str = ""
) -> BitbucketClient:
    """The client for the API base ``api`` (what :mod:`~.hosts` calls for ``bitbucket``);
    ``username`` (other than ``x-token-auth``) makes the token an app password."""
    return BitbucketClient(token, api_url=api, username=username, http=http)


def bbql_string(value: str) -> str:
    """``value`` as a quoted BBQL string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _pull(data: Any) -> PullRequest:
    try:
        return PullRequest(
            number=int(data["id"]),
            url=str(data["links"]["html"]["href"]),
            head=str(data["source"]["branch"]["name"]),
            base=str(data["destination"]["branch"]["name"]),
            title=str(data.get("title") or ""),
            state=_STATES.get(str(data["state"]), str(data["state"]).lower()),
            body=str(data.get("description") or ""),
        )
    except (KeyError, TypeError, ValueError):
        raise ScmError(
            "Bitbucket Cloud API: unexpected pull request object in the answer"
        ) from None


def _repository(ref: Any) -> str:
    repo = ref.get("repository") if isinstance(ref, Mapping) else None
    name = repo.get("full_name") if isinstance(repo, Mapping) else None
    return str(name).lower() if name else ""


def _not_from_fork(data: Any) -> bool:
    source, target = _repository(data.get("source")), _repository(data.get("destination"))
    return not source or not target or source == target


class BitbucketClient(HttpApiClient):
    """Bitbucket Cloud's pull request API at ``api_url`` (``https://api.bitbucket.org/2.0``).

    With a ``username`` other than ``x-token-auth`` the token is an app password (or API token)
    sent as Basic credentials; otherwise it is a Bearer access token. ``http`` is a caller-owned
    client (else one is made and closed by :meth:`aclose`).
    """

    host = HOST

    def __init__(
        self,
        token: TokenSource,
        *,
        api_url: str,
        username: str = "",
        http: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._api = api_root(api_url, "Bitbucket API URL")
        super().__init__(token, http, timeout)
        self._username = "" if username == TOKEN_USERNAME else username

    def _repo_url(self, repo: RepoLocation) -> str:
        if "/" in repo.owner_path:
            raise ScmError(
                f"Bitbucket Cloud repositories are workspace/repository, not '{repo.full_path}'"
            )
        return f"{self._api}/repositories/{repo.owner_path}/{repo.name}"

    def _auth_headers(self, token: str) -> dict[str, str]:
        if self._username:
            basic = base64.b64encode(f"{self._username}:{token}".encode()).decode("ascii")
            register_secret(basic)
            return {"Authorization": f"Basic {basic}", "Accept": "application/json"}
        return {"Authorization": f"Bearer {token}", "Accept": "application/json"}

    async def _pages(self, url: str, query: str) -> AsyncIterator[Any]:
        params: dict[str, str | int] = {"state": "OPEN", "q": query, "pagelen": PAGE_LEN}
        response = await self._request("GET", url, params=params)
        first = response.request.url
        for _ in range(MAX_PAGES):
            page = self._json(response)
            values = page.get("values") if isinstance(page, Mapping) else None
            if not isinstance(values, list):
                raise ScmError(
                    f"Bitbucket Cloud API {describe('GET', first)}: expected a page of values"
                )
            for item in values:
                yield item
            target = self._next_page(first, page.get("next"))
            if target is None:
                return
            response = await self._request("GET", target)
        raise ScmError(f"Bitbucket Cloud API {describe('GET', first)}: more than {MAX_PAGES} pages")

    async def find_open(self, repo: RepoLocation, head: str, base: str) -> PullRequest | None:
        query = (
            f"source.branch.name = {bbql_string(head)} AND "
            f"destination.branch.name = {bbql_string(base)}"
        )
        async for item in self._pages(f"{self._repo_url(repo)}/pullrequests", query):
            pr = _pull(item)
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
            "source": {"branch": {"name": head}},
            "destination": {"branch": {"name": base}},
        }
        response = await self._request(
            "POST",
            f"{self._repo_url(repo)}/pullrequests",
            json=payload,
            passthrough=frozenset({400, 409}),
        )
        if response.status_code < 400:
            return _pull(self._json(response))
        duplicate = "already" in response_text(response).lower()
        return await self._existing(response, repo, head, base, duplicate=duplicate)

    async def update(
        self, repo: RepoLocation, pr: PullRequest, title: str, body: str, labels: Sequence[str]
    ) -> PullRequest:
        url = f"{self._repo_url(repo)}/pullrequests/{pr.number}"
        response = await self._request("PUT", url, json={"title": title, "description": body})
        return _pull(self._json(response))

    async def list_open_by_prefix(
        self, repo: RepoLocation, base: str, head_prefix: str
    ) -> list[PullRequest]:
        query = (
            f"destination.branch.name = {bbql_string(base)} AND "
            f"source.branch.name ~ {bbql_string(head_prefix)}"
        )
        found: list[PullRequest] = []
        async for item in self._pages(f"{self._repo_url(repo)}/pullrequests", query):
            pr = _pull(item)
            if (
                pr.base == base
                and pr.state == "open"
                and pr.head.startswith(head_prefix)
                and _not_from_fork(item)
            ):
                found.append(pr)
        return found

    async def close(self, repo: RepoLocation, pr: PullRequest, comment: str) -> None:
        url = f"{self._repo_url(repo)}/pullrequests/{pr.number}"
        if comment:
            await self._request("POST", f"{url}/comments", json={"content": {"raw": comment}})
        await self._request("POST", f"{url}/decline")
