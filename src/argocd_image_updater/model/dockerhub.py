"""Docker Hub's names: the one list of host names that mean Docker Hub (pure).

Image references, registries.conf prefixes, pull-secret keys and webhook events write Docker Hub
in several ways; every place that asks "is this Docker Hub?" uses :data:`DOCKER_HUB_HOSTS`.
Parsing an image reference is narrower on purpose: like the Docker reference grammar, only
:data:`LEGACY_HOST` is rewritten to :data:`DOCKER_HUB` there (see :mod:`.image`).
"""

from __future__ import annotations

from typing import Final

DOCKER_HUB: Final = "docker.io"
"""The canonical name of Docker Hub (registries.conf prefix, webhook events, lookups)."""
LEGACY_HOST: Final = "index.docker.io"
"""The reference grammar's legacy default domain; what ``docker login`` writes as its key."""
API_HOST: Final = "registry-1.docker.io"
"""The host that serves Docker Hub's registry API."""
DOCKER_HUB_HOSTS: Final = frozenset({DOCKER_HUB, LEGACY_HOST, API_HOST, "registry.hub.docker.com"})
"""Every host name of Docker Hub, lower case."""


def is_docker_hub_host(host: str) -> bool:
    """Whether the host name ``host`` (any case, no scheme, port or path) is Docker Hub's."""
    return host.lower() in DOCKER_HUB_HOSTS
