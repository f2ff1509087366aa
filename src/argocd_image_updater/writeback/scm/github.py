"""GitHub pull requests over the REST API (github.com and GitHub Enterprise Server).

Endpoints: ``GET/POST /repos/{owner}/{repo}/pulls``, ``PATCH /repos/{owner}/{repo}/pulls/{n}``,
``POST /repos/{owner}/{repo}/issues/{n}/labels`` and ``…/issues/{n}/comments``; GitHub App
installation tokens from ``POST /app/installations/{id}/access_tokens``. Lists follow the
``Link: <…>; rel="next"`` header (only to the same API origin, so the token never travels
elsewhere).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

import httpx

from argocd_image_updater.model.pr_hosts import GITHUB
from argocd_image_updater.model.repo_url import RepoLocation
from argocd_image_updater.observe.log import register_secret
from argocd_image_updater.writeback.scm.api import (
    PER_PAGE,
    TokenSource,
    describe,
    parse_time,
    raise_for_status,
    response_text,
    send,
)
from argocd_image_updater.writeback.scm.errors import ScmError
from argocd_image_updater.writeback.scm.host import PullRequest
from argocd_image_updater.writeback.scm.repos_api import ReposApiClient

API_VERSION: Final = "2022-11-28"
MEDIA_TYPE: Final = "application/vnd.github+json"
APP_TOKEN_REFRESH_MARGIN: Final = 300.0
"""Installation tokens are renewed this many seconds before they expire."""
_JWT_LIFETIME: Final = 540  # GitHub accepts at most 10 minutes
_JWT_BACKDATE: Final = 60  # tolerate clock drift


def _headers(token: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {token}",
        "Accept": MEDIA_TYPE,
        "X-GitHub-Api-Version": API_VERSION,
    }


def _head_owner(data: Any) -> str:
    label = data.get("head", {}).get("label") if isinstance(data, Mapping) else None
    return str(label).split(":", 1)[0].lower() if label and ":" in str(label) else ""


HOST: Final = GITHUB


def client(
    token: TokenSource, api: str, http: httpx.AsyncClient | None, username: str = ""
) -> GitHubClient:
    """The client for the API base ``api`` (what :mod:`~.hosts` calls for ``github``; the
    username plays no part)."""
    return GitHubClient(token, api_url=api, http=http)


class GitHubClient(ReposApiClient):
    """GitHub's pull request API for one token (a fixed string or an async token source).

    ``api_url`` overrides the API base derived from each repository's host
    (:meth:`~argocd_image_updater.model.pr_hosts.PullRequestHost.api_base`); ``http`` is a caller-owned client (else one is made and closed by
    :meth:`aclose`).
    """

    host = HOST

    def __init__(
        self,
        token: TokenSource,
        *,
        api_url: str | None = None,
        http: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
    ) -> None:
        super().__init__(token, http, timeout)
        self._api_url = api_url.rstrip("/") if api_url else None

    def _api_base(self, repo: RepoLocation) -> str:
        return self._api_url or GITHUB.api_base(repo)

    merged_key = "merged_at"

    def _auth_headers(self, token: str) -> dict[str, str]:
        return _headers(token)

    async def find_open(self, repo: RepoLocation, head: str, base: str) -> PullRequest | None:
        params: dict[str, str | int] = {
            "state": "open",
            "head": f"{repo.owner_path}:{head}",
            "base": base,
            "per_page": PER_PAGE,
        }
        owner = repo.owner_path.lower()
        async for items in self._link_pages(f"{self._repo_url(repo)}/pulls", params):
            for item in items:
                pr = self._pull(item)
                if pr.head == head and pr.base == base and _head_owner(item) in ("", owner):
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
            "POST", f"{self._repo_url(repo)}/pulls", json=payload, passthrough=frozenset({422})
        )
        if response.status_code == 422:
            duplicate = "already exists" in response_text(response)
            pr = await self._existing(response, repo, head, base, duplicate=duplicate)
        else:
            pr = self._pull(self._json(response))
        return await self._add_labels(repo, pr, labels)

    def _labelled(
        self, repo: RepoLocation, pr: PullRequest, added: Sequence[str], names: tuple[str, ...]
    ) -> PullRequest:
        # the answer lists every label of the issue after the addition
        return replace(pr, labels=names or tuple(dict.fromkeys((*pr.labels, *added))))

    async def list_open_by_prefix(
        self, repo: RepoLocation, base: str, head_prefix: str
    ) -> list[PullRequest]:
        owner = repo.owner_path.lower()
        found: list[PullRequest] = []
        params: dict[str, str | int] = {"state": "open", "base": base, "per_page": PER_PAGE}
        async for items in self._link_pages(f"{self._repo_url(repo)}/pulls", params):
            for item in items:
                pr = self._pull(item)
                if (
                    pr.base == base
                    and pr.head.startswith(head_prefix)
                    and _head_owner(item) in ("", owner)
                ):
                    found.append(pr)
        return found


# --- GitHub App installation tokens -----------------------------------------------------------


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def app_jwt(app_id: int | str, private_key_pem: str, now: float) -> str:
    """An RS256 JWT identifying the GitHub App (valid 9 minutes, backdated 1 minute)."""
    # imported here: a controller that signs no GitHub App token never loads cryptography
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    try:
        key = serialization.load_pem_private_key(private_key_pem.encode(), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise ScmError("invalid GitHub App private key: expected an RSA key in PEM form") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ScmError("invalid GitHub App private key: expected an RSA key in PEM form")
    header = {"alg": "RS256", "typ": "JWT"}
    issued = int(now)
    claims = {
        "iat": issued - _JWT_BACKDATE,
        "exp": issued + _JWT_LIFETIME,
        "iss": str(app_id),
    }
    signing_input = ".".join(
        _b64url(json.dumps(part, separators=(",", ":")).encode()) for part in (header, claims)
    )
    signature = key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
    token = f"{signing_input}.{_b64url(signature)}"
    register_secret(token)
    return token


@dataclass(frozen=True, slots=True)
class _AppToken:
    token: str
    expires_at: float


_app_tokens: dict[tuple[str, str, str, str], _AppToken] = {}


def clear_app_token_cache() -> None:
    """Forget every cached installation token."""
    _app_tokens.clear()


async def github_app_token(
    app_id: int | str,
    installation_id: int | str,
    private_key_pem: str,
    api_url: str | None = None,
    *,
    http: httpx.AsyncClient | None = None,
    clock: Callable[[], float] = time.time,
) -> str:
    """An installation access token for a GitHub App, cached until 5 minutes before expiry.

    ``clock`` tells the cache the time (the App JWT always uses the real time).

    ``api_url`` is ``https://api.github.com`` by default, or the Enterprise API base
    (``https://ghe.example.com/api/v3``).
    """
    installation = str(installation_id).strip()
    if not installation.isdigit():
        raise ScmError("GitHub App installation ID must be a number")
    base = (api_url or GITHUB.public_api).rstrip("/")
    fingerprint = hashlib.sha256(private_key_pem.encode()).hexdigest()
    key = (base, str(app_id), installation, fingerprint)
    now = clock()
    cached = _app_tokens.get(key)
    if cached is not None and cached.expires_at - APP_TOKEN_REFRESH_MARGIN > now:
        return cached.token

    jwt = app_jwt(app_id, private_key_pem, time.time())
    url = f"{base}/app/installations/{installation}/access_tokens"
    own = http is None
    client = http or httpx.AsyncClient(timeout=30.0, follow_redirects=False)
    try:
        response = await send(client, "GitHub", "POST", url, headers=_headers(jwt))
    finally:
        if own:
            await client.aclose()
    raise_for_status("GitHub", response, describe("POST", response.request.url))
    try:
        data = response.json()
        token = str(data["token"])
        expires_at = parse_time(str(data["expires_at"]))
    except (ValueError, KeyError, TypeError):
        raise ScmError(
            f"GitHub API {describe('POST', response.request.url)}: unexpected answer"
        ) from None
    register_secret(token)
    _app_tokens[key] = _AppToken(token, expires_at)
    return token


class GitHubAppTokenSource:
    """A :data:`TokenSource` for :class:`GitHubClient` that renews the installation token."""

    def __init__(
        self,
        app_id: int | str,
        installation_id: int | str,
        private_key_pem: str,
        api_url: str | None = None,
        *,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self._args = (app_id, installation_id, private_key_pem, api_url)
        self._http = http

    def __repr__(self) -> str:
        return f"GitHubAppTokenSource(app_id={self._args[0]!r}, installation={self._args[1]!r})"

    async def __call__(self) -> str:
        return await github_app_token(*self._args, http=self._http)
