"""The pull/merge request hosts Git write-back's PR mode can talk to, as plain values (pure).

Each :class:`PullRequestHost` says which ``gitConfig.pullRequest.<key>`` selects it, how it
names its requests and links to them, which well-known hosts it serves, how the API base is
derived from the repository URL, where its token comes from and what its requests can hold
(labels, description length). Everything else is derived from :data:`PR_HOSTS`: the ImageUpdater
CR's ``pullRequest`` fields, their "exactly one" rule and its message (:data:`ONE_HOST_RULE`,
:data:`ONE_HOST_MESSAGE`, also in the CRD), the client chosen for a key (``writeback.scm.hosts``,
one module per host there), and the docs table a test keeps in step.

Adding a host: describe it here, write its client module in ``writeback/scm/`` (found by
itself); add its field to the CRD (``config/crd/bases``, and the copies rendered from it) and its
row to docs/reference.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from argocd_image_updater.model.repo_url import RepoLocation, RepoUrlError


@dataclass(frozen=True, slots=True)
class PullRequestHost:
    """One hosting service's pull/merge request API.

    ``api_base`` is what ``apiURL`` (or ``--pr-api-url``) overrides: ``derive_api(repo)`` when
    the host has its own rule, else ``public_api`` for a repository on one of
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
    """Host names of the public instances; ``*.example.com`` matches every subdomain."""
    public_api: str
    """The API of the public instance (``""`` for a host that is only self-hosted)."""
    self_hosted_api_path: str
    summary: str
    """One line for the docs: which service and editions."""
    token: str
    """Where the API token comes from, for the docs and for errors."""
    supports_labels: bool = True
    """Whether requests carry labels (Bitbucket's do not: ``labels`` is ignored there)."""
    max_body_runes: int = 65536
    """The longest description the service takes, in code points."""
    derive_api: Callable[[RepoLocation], str] | None = None
    """The host's own API base rule, when it is not "public API or web URL + path"."""

    def reference(self, number: int) -> str:
        """How the service's markup links to request ``number``."""
        return f"{self.reference_prefix}{number}"

    def serves(self, repo: RepoLocation) -> bool:
        """Whether ``repo`` is on one of the host's well-known (public) instances."""
        return any(
            repo.host.endswith(known[1:]) if known.startswith("*.") else repo.host == known
            for known in self.well_known_hosts
        )

    def api_base(self, repo: RepoLocation) -> str:
        """The API base for ``repo``: the host's rule, the public API, or the self-hosted
        instance's. Raises :class:`~argocd_image_updater.model.repo_url.RepoUrlError` for a URL
        the host's rule cannot read."""
        if self.derive_api is not None:
            return self.derive_api(repo)
        if self.serves(repo):
            return self.public_api
        return f"{repo.web_url}{self.self_hosted_api_path}"


# --- the repository coordinates of hosts whose URLs are not owner/name ------------------------


def bitbucket_server_location(repo: RepoLocation) -> tuple[str, str, str]:
    """``(context path, project key, repository slug)`` of a Bitbucket Data Center repository.

    HTTP clone URLs are ``<base>[/<context>]/scm/<PROJECT>/<slug>.git`` (personal repositories:
    ``~<user>`` as the project); SSH ones ``ssh://git@<host>:7999/<PROJECT>/<slug>.git``, without
    the context path. The context is ``""`` or ``/<path>``.
    """
    segments = repo.owner_path.split("/")
    if "scm" in segments[:-1]:
        at = len(segments) - 1 - segments[::-1].index("scm")
        if at == len(segments) - 2:
            context = "/".join(segments[:at])
            return (f"/{context}" if context else "", segments[-1], repo.name)
    if len(segments) == 1:
        return "", segments[0], repo.name
    raise RepoUrlError(
        f"'{repo}' is not a Bitbucket Data Center clone URL: expected "
        "https://<host>[/<context>]/scm/<project>/<repository>.git or "
        "ssh://git@<host>:<port>/<project>/<repository>.git (or set apiURL)"
    )


def _bitbucket_server_api(repo: RepoLocation) -> str:
    context, _, _ = bitbucket_server_location(repo)
    return f"{repo.web_url}{context}/rest/api/1.0"


def azure_devops_location(repo: RepoLocation) -> tuple[str, str, str]:
    """``(collection URL, project, repository)`` of an Azure DevOps repository, as written in
    its URL (percent-encoding kept).

    Azure DevOps Services: ``https://dev.azure.com/<org>/<project>/_git/<repo>``,
    ``git@ssh.dev.azure.com:v3/<org>/<project>/<repo>``,
    ``https://<org>.visualstudio.com[/DefaultCollection]/<project>/_git/<repo>`` and
    ``<org>@vs-ssh.visualstudio.com:v3/<org>/<project>/<repo>`` all give the collection
    ``https://dev.azure.com/<org>``. Azure DevOps Server:
    ``https://<host>/<collection path>/<project>/_git/<repo>``. ``…/_git/<repo>`` without a
    project names the project after the repository, as Azure DevOps does.
    """
    segments = repo.owner_path.split("/")
    services = AZURE_DEVOPS.serves(repo)
    if services and segments[0] == "v3" and len(segments) == 3:
        return f"https://dev.azure.com/{segments[1]}", segments[2], repo.name
    if segments[-1] == "_git":
        rest = segments[:-1]
        org = ""
        if repo.host == "dev.azure.com" and rest:
            org, rest = rest[0], rest[1:]
        elif services and repo.host.endswith(".visualstudio.com"):
            org = repo.host.split(".", 1)[0]
            rest = rest[1:] if rest[:1] == ["DefaultCollection"] else rest
        if org and len(rest) <= 1:
            return f"https://dev.azure.com/{org}", rest[0] if rest else repo.name, repo.name
        if not services and len(rest) >= 2:
            return f"{repo.web_url}/{'/'.join(rest[:-1])}", rest[-1], repo.name
    raise RepoUrlError(
        f"'{repo}' is not an Azure DevOps repository URL: expected "
        "https://dev.azure.com/<organization>/<project>/_git/<repository> or "
        "git@ssh.dev.azure.com:v3/<organization>/<project>/<repository> (or set apiURL)"
    )


def _azure_devops_api(repo: RepoLocation) -> str:
    collection, project, name = azure_devops_location(repo)
    return f"{collection}/{project}/_apis/git/repositories/{name}"


# --- the hosts --------------------------------------------------------------------------------

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

GITEA: Final = PullRequestHost(
    key="gitea",
    name="Gitea",
    request="pull request",
    reference_prefix="#",
    well_known_hosts=(),
    public_api="",
    self_hosted_api_path="/api/v1",
    summary="Gitea and Forgejo pull requests (self-hosted)",
    token=f"{_HTTPS_TOKEN}: an access token, sent as 'Authorization: token …'",
)

BITBUCKET_API: Final = "https://api.bitbucket.org/2.0"
"""Bitbucket Cloud's only API: every repository's, whatever host its URL names."""

BITBUCKET: Final = PullRequestHost(
    key="bitbucket",
    name="Bitbucket Cloud",
    request="pull request",
    reference_prefix="#",
    well_known_hosts=("bitbucket.org", "www.bitbucket.org"),
    public_api=BITBUCKET_API,
    self_hosted_api_path="",
    summary="Bitbucket Cloud pull requests (bitbucket.org)",
    token=(
        f"{_HTTPS_TOKEN}: an access token (Bearer; the username empty or x-token-auth), or an "
        "app password or API token with the HTTPS username (Basic)"
    ),
    supports_labels=False,
    derive_api=lambda repo: BITBUCKET_API,
)

BITBUCKET_SERVER: Final = PullRequestHost(
    key="bitbucketServer",
    name="Bitbucket Data Center",
    request="pull request",
    reference_prefix="#",
    well_known_hosts=(),
    public_api="",
    self_hosted_api_path="/rest/api/1.0",
    summary="Bitbucket Data Center (Server) pull requests (self-hosted)",
    token=f"{_HTTPS_TOKEN}: an HTTP access token (Bearer)",
    supports_labels=False,
    derive_api=_bitbucket_server_api,
)

AZURE_DEVOPS: Final = PullRequestHost(
    key="azureDevOps",
    name="Azure DevOps",
    request="pull request",
    reference_prefix="!",
    well_known_hosts=("dev.azure.com", "ssh.dev.azure.com", "*.visualstudio.com"),
    public_api="https://dev.azure.com",
    self_hosted_api_path="",
    summary="Azure DevOps Repos pull requests (dev.azure.com, *.visualstudio.com or Server)",
    token=f"{_HTTPS_TOKEN}: a personal access token (Basic, empty username)",
    max_body_runes=4000,
    derive_api=_azure_devops_api,
)

PR_HOSTS: Final[tuple[PullRequestHost, ...]] = (
    GITHUB,
    GITLAB,
    GITEA,
    BITBUCKET,
    BITBUCKET_SERVER,
    AZURE_DEVOPS,
)
"""Every pull request host, in the order the docs, the CRD and messages list them."""

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


ONE_HOST_MESSAGE: Final = f"Exactly one of {one_of(PR_HOST_KEYS)} must be set"
"""The message of the ``pullRequest`` "exactly one host" rule (CRD and model)."""

ONE_HOST_RULE: Final = " + ".join(f"(has(self.{key}) ? 1 : 0)" for key in PR_HOST_KEYS) + " == 1"
"""The CRD's CEL rule that exactly one host of ``pullRequest`` is set."""


def normalize_labels(labels: Iterable[str] | None) -> tuple[str, ...]:
    """Request labels trimmed, without blanks and duplicates, in their first-seen order."""
    seen: dict[str, None] = {}
    for label in labels or ():
        text = label.strip()
        if text:
            seen.setdefault(text, None)
    return tuple(seen)
