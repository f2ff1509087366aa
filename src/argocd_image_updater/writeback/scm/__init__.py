"""Pull/merge request clients for Git write-back's PR mode, one module per host.

* ``errors`` — :class:`ScmError` and its kinds;
* ``api`` — the request path every client shares (tokens, error mapping, the HTTP client);
* ``host`` — :class:`PullRequest` and the :class:`PullRequestClient` protocol;
* ``lifecycle`` — :func:`ensure_pull_request`: one open request per write branch, older ones
  closed;
* ``github``, ``gitlab`` — the hosts' clients; ``hosts`` — the client of each host of
  :data:`~argocd_image_updater.model.pr_hosts.PR_HOSTS`.

Typical use::

    repo = parse_repo_url("git@github.com:org/deploy.git")
    async with client_for("github", repo, token) as client:
        result = await ensure_pull_request(
            client, repo, head, base, title, body, labels, supersedes_prefix="image-updater-1a2b3c4d-"
        )
"""

from __future__ import annotations

from argocd_image_updater.model.pr_hosts import normalize_labels
from argocd_image_updater.model.repo_url import RepoLocation, RepoUrlError, parse_repo_url
from argocd_image_updater.writeback.scm.api import TokenSource
from argocd_image_updater.writeback.scm.errors import (
    ScmAuthError,
    ScmError,
    ScmNotFoundError,
    ScmRateLimitError,
)
from argocd_image_updater.writeback.scm.github import (
    GitHubAppTokenSource,
    GitHubClient,
    clear_app_token_cache,
    github_app_token,
)
from argocd_image_updater.writeback.scm.gitlab import GitLabClient, project_id
from argocd_image_updater.writeback.scm.host import PullRequest, PullRequestClient
from argocd_image_updater.writeback.scm.hosts import client_for
from argocd_image_updater.writeback.scm.lifecycle import (
    MAX_BODY_RUNES,
    MAX_TITLE_RUNES,
    EnsureResult,
    ensure_pull_request,
    truncate_runes,
)

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
    "github_app_token",
    "normalize_labels",
    "parse_repo_url",
    "project_id",
    "truncate_runes",
]
