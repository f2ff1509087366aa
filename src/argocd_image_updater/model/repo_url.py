"""Git repository URLs: every rule that compares or takes apart one (pure).

The rules differ because the purposes do; each function names its purpose:

* :func:`normalize_git_url` / :func:`same_repository` — is this the same repository? Argo CD's
  ``NormalizeGitURL`` and ``SameURL``: the whole URL lower-cased and trimmed, the scp-like form
  ``user@host:path`` read as ``user@host/path`` (so it equals ``ssh://user@host/path``), the
  ``ssh://`` scheme dropped, a ``.git`` suffix dropped. User names stay part of the URL, ports
  too. One deviation: trailing ``/`` are ignored (git ignores them; ``repo/`` and ``repo`` are
  one repository). Used to find an Argo CD repository Secret, to group the changes of one cycle
  into one commit per repository and to read one repository once in local mode.
* :func:`template_covers` — does an Argo CD credential template (``repo-creds``) apply? Its
  normalised URL is a string prefix of the repository's (Argo CD's rule); a template ending in
  ``/`` covers the repositories below that path and the path itself.
* :func:`parse_repo_url` / :func:`owner_and_name` — where does the repository live on its
  hosting service (host, owner or group path, name), for pull/merge request APIs. Accepted forms
  (a trailing ``.git`` and ``/`` are dropped, user names and passwords ignored, the host
  lower-cased, the path's case kept):

  * ``https://host[:port]/owner/repo`` and ``http://…`` (self-hosted instances without TLS);
  * ``ssh://[user@]host[:port]/owner/repo`` (also ``git+ssh://`` and ``ssh+git://``);
  * scp-style ``[user@]host:owner/repo`` as ``git`` understands it (no port in this form).

  The owner may be a nested path (GitLab groups and subgroups: ``group/sub/project``). Anything
  else raises :class:`RepoUrlError`, whose message never repeats a password from the URL.
* :func:`is_ssh_url` and :func:`host_of` — which kind of credentials a URL takes (an SSH key or
  HTTPS), and the host whose custom CA applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit, urlunsplit

_SSH_SCHEMES: Final = frozenset({"ssh", "git+ssh", "ssh+git"})
_HTTP_SCHEMES: Final = frozenset({"https", "http"})
_SCP: Final = re.compile(r"^(?:(?P<user>[^@/:\s]+)@)?(?P<host>[^@/:\s\[\]]+):(?P<path>[^\s]*)$")
_HOST: Final = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$|^\[[0-9a-f:.]+\]$")
_SEGMENT: Final = re.compile(r"^[^\s/?#\\]+$")


class RepoUrlError(ValueError):
    """The text is not a repository URL a pull/merge request API can be derived from."""


@dataclass(frozen=True, slots=True)
class RepoLocation:
    """A repository on a hosting service.

    ``host`` is the lower-case host name without port; ``scheme`` is ``https``, ``http`` or
    ``ssh``; ``owner_path`` is the owner or the full group path (``group/sub``); ``name`` has no
    ``.git`` suffix. ``port`` is the URL's port, if any (for ``ssh`` it is the SSH port).
    """

    host: str
    scheme: str
    owner_path: str
    name: str
    port: int | None = None

    @property
    def full_path(self) -> str:
        """``owner_path/name``: GitHub's ``owner/repo``, GitLab's project path."""
        return f"{self.owner_path}/{self.name}"

    @property
    def web_url(self) -> str:
        """The web base of the host: the URL's own scheme and port, ``https`` for SSH remotes."""
        if self.scheme == "ssh":
            return f"https://{self.host}"
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.scheme}://{self.host}{port}"

    def __str__(self) -> str:
        return f"{self.web_url}/{self.full_path}"


def _safe(url: str) -> str:
    """``url`` without the password of a ``user:password@`` part, for error messages."""
    return re.sub(r"(://[^/@:\s]*):[^/@\s]*@", r"\1:*****@", url)


def _split_path(path: str, url: str) -> tuple[str, str]:
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")].rstrip("/")
    segments = path.split("/") if path else []
    if len(segments) < 2:
        raise RepoUrlError(
            f"repository URL '{_safe(url)}' has no owner/repository path "
            "(expected e.g. https://host/owner/repo.git)"
        )
    for segment in segments:
        if not _SEGMENT.match(segment) or segment in (".", ".."):
            raise RepoUrlError(
                f"repository URL '{_safe(url)}' has an invalid path segment '{segment}'"
            )
    return "/".join(segments[:-1]), segments[-1]


def _check_host(host: str, url: str) -> str:
    host = host.lower()
    if not _HOST.match(host):
        raise RepoUrlError(f"repository URL '{_safe(url)}' has an invalid host '{host}'")
    return host


def parse_repo_url(url: str) -> RepoLocation:
    """Parse an HTTPS, ``ssh://`` or scp-style clone URL; raise :class:`RepoUrlError` otherwise."""
    text = url.strip()
    if not text:
        raise RepoUrlError("repository URL is empty")
    if "://" in text:
        scheme = text.split("://", 1)[0].lower()
        if scheme not in _HTTP_SCHEMES and scheme not in _SSH_SCHEMES:
            raise RepoUrlError(
                f"unsupported repository URL '{_safe(text)}': use https://, ssh:// "
                "or the scp-like form user@host:owner/repo.git"
            )
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError as exc:
            raise RepoUrlError(f"invalid repository URL '{_safe(text)}': {exc}") from None
        if parts.query or parts.fragment:
            raise RepoUrlError(
                f"repository URL '{_safe(text)}' must not have a query or a fragment"
            )
        if not parts.hostname:
            raise RepoUrlError(f"repository URL '{_safe(text)}' has no host")
        hostname = parts.hostname
        if ":" in hostname:  # urlsplit drops the brackets of IPv6 literals
            hostname = f"[{hostname}]"
        host = _check_host(hostname, text)
        owner, name = _split_path(parts.path, text)
        kind = "ssh" if scheme in _SSH_SCHEMES else scheme
        return RepoLocation(host=host, scheme=kind, owner_path=owner, name=name, port=port)
    match = _SCP.match(text)
    if match is None:
        raise RepoUrlError(
            f"unsupported repository URL '{_safe(text)}': use https://, ssh:// "
            "or the scp-like form user@host:owner/repo.git"
        )
    host = _check_host(match["host"], text)
    owner, name = _split_path(match["path"], text)
    return RepoLocation(host=host, scheme="ssh", owner_path=owner, name=name)


def owner_and_name(url: str) -> tuple[str, str]:
    """``(owner or group path, repository name)`` of a clone URL, e.g. ``("group/sub", "app")``
    for ``git@gitlab.com:group/sub/app.git``; raises :class:`RepoUrlError` like
    :func:`parse_repo_url`."""
    location = parse_repo_url(url)
    return location.owner_path, location.name


# --- the same repository (Argo CD's rules) ---------------------------------------------------

_ARGOCD_SSH: Final = re.compile(r"^(ssh://)?([^/:]*?)@[^@]+$")


def normalize_git_url(url: str) -> str:
    """Argo CD's ``NormalizeGitURL``, trailing ``/`` ignored; ``""`` for an unparsable URL.

    ``git@GitHub.com:Org/Repo.git`` → ``git@github.com/org/repo``;
    ``ssh://git@github.com/org/repo`` → ``git@github.com/org/repo``;
    ``https://github.com/org/repo.git/`` → ``https://github.com/org/repo``.
    """
    text = url.strip().lower().rstrip("/")
    if _ARGOCD_SSH.match(text) and not text.startswith("ssh://"):
        text = "ssh://" + text.replace(":", "/", 1)
    text = text.removesuffix(".git").rstrip("/")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - an invalid port makes the URL invalid, as in Go's url.Parse
    except ValueError:
        return ""
    return urlunsplit(parts).removeprefix("ssh://")


def repository_key(url: str) -> str:
    """The key under which :func:`same_repository` URLs are equal: :func:`normalize_git_url`,
    or the trimmed URL as written when it cannot be parsed."""
    return normalize_git_url(url) or url.strip()


def same_repository(a: str, b: str) -> bool:
    """Argo CD's ``SameURL``: both URLs normalise (:func:`normalize_git_url`) to the same text.
    An unparsable URL is compared as written."""
    left, right = repository_key(a), repository_key(b)
    return bool(left) and left == right


def template_covers(template_url: str, repo_url: str) -> bool:
    """Whether an Argo CD credential template for ``template_url`` applies to ``repo_url``:
    the normalised template is a prefix of the normalised repository URL (Argo CD's rule; the
    longest such template wins). A template ending in ``/`` covers the repositories below that
    path and the path itself, not ``<path>-other``."""
    template, repo = normalize_git_url(template_url), normalize_git_url(repo_url)
    if not template or not repo:
        return False
    if template_url.strip().endswith("/"):
        return (repo + "/").startswith(template + "/")
    return repo.startswith(template)


# --- which credentials a URL takes --------------------------------------------------------------


def is_ssh_url(url: str) -> bool:
    """``ssh://…`` or the scp-like ``user@host:path``: the URL takes an SSH key."""
    return url.startswith("ssh://") or ("@" in url.split("/", 1)[0] and "://" not in url)


def host_of(url: str) -> str:
    """The host name of a repository URL (no user, no port), as written."""
    if "://" in url:
        rest = url.split("://", 1)[1]
        host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
        return host.split(":", 1)[0]
    return url.split("@", 1)[-1].split(":", 1)[0]
