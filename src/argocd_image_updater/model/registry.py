"""Registry endpoints and credentials as plain values.

``config.registries_conf`` builds :class:`RegistryEndpoint` values from ``registries.conf``
(``config.registries`` infers them for unknown hosts), ``registry.credentials`` reads credential references into :class:`Credentials`, and the
``registry`` package talks HTTP to an endpoint.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import timedelta
from typing import Final, Protocol

DEFAULT_REQUEST_DEADLINE: Final = 60.0
"""Seconds a registry request may take in all (connection, response head and whole body) when
its registries.conf entry sets no ``timeout``."""


class TagSortMode(enum.StrEnum):
    """``tagsortmode`` of registries.conf: the registry already lists tags by age."""

    NONE = "none"
    LATEST_FIRST = "latest-first"
    LATEST_LAST = "latest-last"

    @property
    def is_time_sorted(self) -> bool:
        return self is not TagSortMode.NONE


@dataclass(frozen=True, slots=True)
class RegistryEndpoint:
    """Where and how to talk to one registry (one ``registries.conf`` entry, built-in or inferred)."""

    prefix: str
    name: str
    api_url: str
    credentials: str = ""
    creds_expire: timedelta = timedelta(0)
    default_ns: str = ""
    insecure: bool = False
    ca_file: str = ""
    ca_data: str = ""
    limit: float = 0.0
    """Requests per second; 0 = unlimited."""
    tag_sort_mode: TagSortMode = TagSortMode.NONE
    is_default: bool = False
    timeout: float = DEFAULT_REQUEST_DEADLINE
    """``timeout`` of registries.conf: the deadline of each request, in seconds."""
    plain_http_fallback: bool = False
    """HTTPS first, plain HTTP when the server answers the TLS handshake in plain HTTP: for
    loopback registries that no registries.conf entry covers, as the docker CLI does."""

    @property
    def host(self) -> str:
        """``host[:port]`` of the API URL (the label used in metrics and logs)."""
        rest = self.api_url.split("://", 1)[-1]
        return rest.split("/", 1)[0]

    def repository_path(self, image_name: str) -> str:
        """The repository to query for ``image_name``: ``defaultns`` is prepended to one-part names."""
        if self.default_ns and "/" not in image_name:
            return f"{self.default_ns}/{image_name}"
        return image_name


@dataclass(frozen=True, slots=True)
class Credentials:
    """A user name and password for a registry (the password is never printed)."""

    username: str
    password: str

    def __repr__(self) -> str:  # never print the password
        return f"Credentials(username={self.username!r}, password='*****')"


class CredentialProvider(Protocol):
    """Gives the credentials for one registry access, and forgets them when they stopped working.

    ``key`` identifies the source (e.g. ``env:VAR`` or ``pullsecret:ns/name``) so that caches and
    single-flight groups never share results across different credentials.
    """

    @property
    def key(self) -> str: ...

    async def get(self) -> Credentials | None: ...

    def invalidate(self) -> bool:
        """Drop cached credentials; return True if a refetch may give different ones."""
        ...
