"""The client of each pull request host of :data:`~argocd_image_updater.model.pr_hosts.PR_HOSTS`,
chosen by its ``gitConfig.pullRequest`` key: one module per host in this package
(``github.py``, ``gitlab.py``, ``gitea.py``, ``bitbucket.py``, ``bitbucket_server.py``,
``azure_devops.py``), found by itself — no list to edit."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable, Mapping
from typing import Final

import httpx

from argocd_image_updater.model.pr_hosts import (
    PR_HOST_KEYS,
    PullRequestHost,
    detect_pr_host,
    pr_host,
)
from argocd_image_updater.model.repo_url import RepoLocation
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.writeback.scm.api import TokenSource
from argocd_image_updater.writeback.scm.host import PullRequestClient

ClientFactory = Callable[[TokenSource, str, httpx.AsyncClient | None, str], PullRequestClient]
"""(token, API base, caller-owned HTTP client or None, HTTPS username) → the host's client.
The username matters only where the token form depends on it (Bitbucket Cloud app passwords)."""

_NOT_HOSTS: Final = frozenset({"api", "errors", "host", "hosts", "lifecycle", "repos_api"})


@functools.cache
def clients() -> Mapping[str, ClientFactory]:
    """The client of each host: every module of this package but the shared ones defines
    ``HOST`` (its :class:`~argocd_image_updater.model.pr_hosts.PullRequestHost`) and
    ``client(token, api, http, username)``; every host of ``PR_HOSTS`` has exactly one."""
    found: dict[str, ClientFactory] = {}
    package = importlib.import_module(__package__ or "argocd_image_updater.writeback.scm")
    for module in pkgutil.iter_modules(package.__path__):
        if module.name in _NOT_HOSTS or module.name.startswith("_"):
            continue
        loaded = importlib.import_module(f"{package.__name__}.{module.name}")
        host, factory = getattr(loaded, "HOST", None), getattr(loaded, "client", None)
        if not isinstance(host, PullRequestHost) or not callable(factory):
            raise TypeError(
                f"{loaded.__name__} defines no HOST and client(token, api, http, username)"
            )
        if host.key in found:
            raise ValueError(f"two clients for the pull request host '{host.key}'")
        found[host.key] = factory
    missing = [key for key in PR_HOST_KEYS if key not in found]
    if missing or len(found) != len(PR_HOST_KEYS):
        raise ValueError(f"pull request clients {sorted(found)} do not match {PR_HOST_KEYS}")
    return {key: found[key] for key in PR_HOST_KEYS}


log = get_logger("writeback.scm")


def client_for(
    provider: str,
    repo: RepoLocation,
    token: TokenSource,
    *,
    api_url: str | None = None,
    http: httpx.AsyncClient | None = None,
    username: str = "",
) -> PullRequestClient:
    """The client of the host selected by ``gitConfig.pullRequest.<provider>``; ``api_url``
    overrides the API base derived from ``repo`` (GitHub: the ``/api/v3`` URL; GitLab: the
    instance URL; see :meth:`~argocd_image_updater.model.pr_hosts.PullRequestHost.api_base`).
    ``username`` is the HTTPS username of the credentials holding ``token``. A repository on
    another host's well-known instance is logged as a warning; a URL the host's API rule cannot
    read raises :class:`~argocd_image_updater.model.repo_url.RepoUrlError`."""
    host = pr_host(provider)
    found = detect_pr_host(repo)
    if found is not None and found is not host and api_url is None:
        log.warning(
            "The repository is on %s (%s) but gitConfig.pullRequest selects %s: the %s will "
            "likely fail; use pullRequest: {%s: {}}, or set its apiURL",
            repo.host,
            found.name,
            host.key,
            host.request,
            found.key,
            repository=repo.full_path,
        )
    return clients()[host.key](token, api_url or host.api_base(repo), http, username)
