"""The pull/merge request hosts Git write-back's PR mode can talk to, as plain values (pure).

Each :class:`PullRequestHost` says which ``gitConfig.pullRequest.<key>`` selects it, how it
names its requests and links to them, which well-known hosts it serves, how the API base is
derived from the repository URL and where its token comes from. Everything else is derived from
:data:`PR_HOSTS`: the ImageUpdater CR's ``pullRequest`` fields and their "exactly one" rule
(``config.imageupdater``), the client chosen for a key (``writeback.scm.hosts``, one module per
host there), and the docs table a test keeps in step.

Adding a host: describe it here, write its client module in ``writeback/scm/`` and name it in
``writeback/scm/hosts.py``; add its field to the CRD (``config/crd/bases``, and the copies
rendered from it) and its row to docs/reference.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from argocd_image_updater.model.repo_url import RepoLocation


@dataclass(frozen=True, slots=True)
class PullRequestHost:
    """One hosting service's pull/merge request API.

    ``api_base`` is what ``--pr-api-url`` overrides: ``public_api`` for a repository on one of
    ``well_known_hosts``, else the repository's web URL (``https`` for SSH remotes, the SSH port
    dropped) followed by ``self_hosted_api_path``.
    """

    key: str
    """The field of ``gitConfig.pullRequest`` that selects this host (``github: {}``)."""
    name: str
    """How messages name the service: ``GitHub``."""
    request: str
    """What the service calls a request: ``pull request``, ``merge request``."""
    reference_prefix: str
    """``#`` for ``#12`` (GitHub), ``!`` for ``!12`` (GitLab)."""
    well_known_hosts: tuple[str, ...]
    public_api: str
    self_hosted_api_path: str
    summary: str
    """One line for the docs: which service and editions."""
    token: str
    """Where the API token comes from, for the docs and for errors."""

    def reference(self, number: int) -> str:
        """How the service's markup links to request ``number``."""
        return f"{self.reference_prefix}{number}"

    def serves(self, repo: RepoLocation) -> bool:
        """Whether ``repo`` is on one of the host's well-known (public) instances."""
        return repo.host in self.well_known_hosts

    def api_base(self, repo: RepoLocation) -> str:
        """The API base for ``repo``: the public API, or the self-hosted instance's."""
        if self.serves(repo):
            return self.public_api
        return f"{repo.web_url}{self.self_hosted_api_path}"


_HTTPS_TOKEN: Final = "the HTTPS password of the repository credentials (a token)"

GITHUB: Final = PullRequestHost(
    key="github",
    name="GitHub",
    request="pull request",
    reference_prefix="#",
    well_known_hosts=("github.com", "www.github.com"),
    public_api="https://api.github.com",
    self_hosted_api_path="/api/v3",
    summary="GitHub pull requests (github.com or GitHub Enterprise)",
    token=f"{_HTTPS_TOKEN}, or a GitHub App installation token",
)

GITLAB: Final = PullRequestHost(
    key="gitlab",
    name="GitLab",
    request="merge request",
    reference_prefix="!",
    well_known_hosts=("gitlab.com", "www.gitlab.com"),
    public_api="https://gitlab.com",
    self_hosted_api_path="",
    summary="GitLab merge requests",
    token=_HTTPS_TOKEN,
)

PR_HOSTS: Final[tuple[PullRequestHost, ...]] = (GITHUB, GITLAB)
"""Every pull request host, in the order the docs and messages list them."""

PR_HOST_KEYS: Final = tuple(host.key for host in PR_HOSTS)


def pr_host(key: str) -> PullRequestHost:
    """The host selected by ``gitConfig.pullRequest.<key>``; ValueError naming the choices."""
    for host in PR_HOSTS:
        if host.key == key:
            return host
    raise ValueError(f"unknown pull request provider '{key}': use {one_of(PR_HOST_KEYS)}")


def detect_pr_host(repo: RepoLocation) -> PullRequestHost | None:
    """The host whose well-known instance ``repo`` is on (``github.com`` → GitHub), if any."""
    return next((host for host in PR_HOSTS if host.serves(repo)), None)


def one_of(words: tuple[str, ...]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def normalize_labels(labels: Iterable[str] | None) -> tuple[str, ...]:
    """Request labels trimmed, without blanks and duplicates, in their first-seen order."""
    seen: dict[str, None] = {}
    for label in labels or ():
        text = label.strip()
        if text:
            seen.setdefault(text, None)
    return tuple(seen)
