"""Where a Git repository lives on its hosting service, parsed from its clone URL.

Accepted forms (a trailing ``.git`` and ``/`` are dropped, user names and passwords ignored):

* ``https://host[:port]/owner/repo`` and ``http://…`` (self-hosted instances without TLS);
* ``ssh://[user@]host[:port]/owner/repo`` (also ``git+ssh://`` and ``ssh+git://``);
* scp-style ``[user@]host:owner/repo`` as ``git`` understands it (no port in this form).

The owner may be a nested path (GitLab groups and subgroups: ``group/sub/project``). Anything
else raises :class:`RepoUrlError`, whose message never repeats a password from the URL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

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
