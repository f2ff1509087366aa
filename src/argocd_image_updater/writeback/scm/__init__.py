"""Pull/merge request clients for Git write-back's PR mode (GitHub, GitLab).

Typical use::

    repo = parse_repo_url("git@github.com:org/deploy.git")
    async with client_for("github", repo, token) as client:
        result = await ensure_pull_request(
            client, repo, head, base, title, body, labels, supersedes_prefix="image-updater-1a2b3c4d-"
        )
"""

from __future__ import annotations

from typing import Literal

import httpx

from argocd_image_updater.model.repo_url import RepoLocation, RepoUrlError, parse_repo_url
from argocd_image_updater.writeback.scm.base import (
    MAX_BODY_RUNES,
    MAX_TITLE_RUNES,
    EnsureResult,
    PullRequest,
    PullRequestClient,
    ScmAuthError,
    ScmError,
    ScmNotFoundError,
    ScmRateLimitError,
    TokenSource,
    ensure_pull_request,
    normalize_labels,
    truncate_runes,
)
from argocd_image_updater.writeback.scm.github import (
    GitHubAppTokenSource,
    GitHubClient,
    clear_app_token_cache,
    github_api_url,
    github_app_token,
)
from argocd_image_updater.writeback.scm.gitlab import GitLabClient, gitlab_base_url, project_id

__all__ = [
    "MAX_BODY_RUNES",
    "MAX_TITLE_RUNES",
    "EnsureResult",
    "GitHubAppTokenSource",
    "GitHubClient",
    "GitLabClient",
    "PullRequest",
    "PullRequestClient",
    "RepoLocation",
    "RepoUrlError",
    "ScmAuthError",
    "ScmError",
    "ScmNotFoundError",
    "ScmRateLimitError",
    "TokenSource",
    "clear_app_token_cache",
    "client_for",
    "ensure_pull_request",
    "github_api_url",
    "github_app_token",
    "gitlab_base_url",
    "normalize_labels",
    "parse_repo_url",
    "project_id",
    "truncate_runes",
]


def client_for(
    provider: Literal["github", "gitlab"],
    repo: RepoLocation,
    token: TokenSource,
    *,
    api_url: str | None = None,
    http: httpx.AsyncClient | None = None,
) -> GitHubClient | GitLabClient:
    """The client for ``provider``; ``api_url`` overrides the API base derived from ``repo``
    (GitHub: the ``/api/v3`` URL; GitLab: the instance URL)."""
    if provider == "github":
        return GitHubClient(token, api_url=api_url or github_api_url(repo), http=http)
    if provider == "gitlab":
        return GitLabClient(token, base_url=api_url or gitlab_base_url(repo), http=http)
    raise ValueError(f"unknown pull request provider '{provider}': use github or gitlab")
