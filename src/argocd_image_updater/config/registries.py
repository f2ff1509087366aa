"""The configured registries, and which endpoint serves an image.

:class:`RegistryConfig` maps an image (registry host + repository name) to a
:class:`~argocd_image_updater.model.registry.RegistryEndpoint`: a configured one, the built-in
Docker Hub one, or one inferred from the host name. ``config.registries_conf`` reads the
configured ones from ``registries.conf``.
"""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Final

from argocd_image_updater.model.dockerhub import API_HOST, is_docker_hub_host
from argocd_image_updater.model.dockerhub import DOCKER_HUB as DOCKER_HUB_PREFIX
from argocd_image_updater.model.registry import RegistryEndpoint

DEFAULT_TLS_DIR: Final = "/app/config/tls"
"""Where registries.conf's relative certificate paths are found."""


class RegistriesConfError(ValueError):
    """registries.conf could not be used; each problem names the file, entry and key."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


INFERRED_LIMIT: Final = 20.0
DOCKER_HUB: Final = RegistryEndpoint(
    prefix=DOCKER_HUB_PREFIX,
    name="Docker Hub",
    api_url=f"https://{API_HOST}",
    default_ns="library",
    limit=10.0,
    is_default=True,
)


def is_loopback(host: str) -> bool:
    """``localhost``, ``127.0.0.0/8`` or ``::1``, with or without a port."""
    name = host.strip().lower()
    if name.startswith("["):
        name = name[1:].partition("]")[0]
    elif name.count(":") == 1:
        name = name.partition(":")[0]
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def canonical_registry(host: str) -> str:
    """The lookup spelling of a registry host: every Docker Hub alias becomes ``docker.io``."""
    host = host.strip().rstrip("/")
    first, sep, rest = host.partition("/")
    if is_docker_hub_host(first):
        return DOCKER_HUB_PREFIX + sep + rest
    return host


class RegistryConfig:
    """The known registries; immutable apart from remembering inferred endpoints.

    ``endpoints`` are the configured entries (a ``docker.io`` entry replaces the built-in Docker
    Hub one). The default registry, used for images written without a host, is the entry with
    ``default: true``, else the ``docker.io`` one.
    """

    __slots__ = ("_by_prefix", "_default", "_explicit_default", "_inferred", "_lock", "_ordered")

    def __init__(self, endpoints: Iterable[RegistryEndpoint] = ()) -> None:
        by_prefix: dict[str, RegistryEndpoint] = {}
        for endpoint in endpoints:
            prefix = canonical_registry(endpoint.prefix)
            if prefix in by_prefix:
                raise ValueError(
                    f"registry '{endpoint.name}' has the same prefix '{prefix}' as registry "
                    f"'{by_prefix[prefix].name}'; keep only one of them"
                )
            by_prefix[prefix] = replace(
                endpoint, prefix=prefix, api_url=endpoint.api_url.rstrip("/")
            )
        defaults = [e for e in by_prefix.values() if e.is_default]
        if len(defaults) > 1:
            raise ValueError(
                f"cannot set registry {defaults[1].prefix or defaults[1].name} as default - only "
                f"one default registry allowed, currently set to "
                f"{defaults[0].prefix or defaults[0].name}"
            )
        explicit = defaults[0] if defaults else None
        hub = by_prefix.get(DOCKER_HUB_PREFIX, DOCKER_HUB)
        by_prefix[DOCKER_HUB_PREFIX] = replace(hub, is_default=explicit is None or explicit is hub)
        self._by_prefix: Mapping[str, RegistryEndpoint] = by_prefix
        self._explicit_default = explicit
        self._default = explicit if explicit is not None else by_prefix[DOCKER_HUB_PREFIX]
        # Longest prefix first, so the first match is the most specific one.
        self._ordered = sorted(by_prefix.values(), key=lambda e: len(e.prefix), reverse=True)
        self._inferred: dict[str, RegistryEndpoint] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RegistryConfig(prefixes={sorted(self._by_prefix)!r})"

    @property
    def endpoints(self) -> tuple[RegistryEndpoint, ...]:
        """Configured endpoints (and the built-in Docker Hub one unless replaced)."""
        return tuple(self._by_prefix.values())

    @property
    def default_endpoint(self) -> RegistryEndpoint:
        return self._default

    def endpoint_for(self, registry: str, image_name: str) -> RegistryEndpoint:
        """The endpoint serving image ``image_name`` of registry host ``registry``.

        ``registry`` "" means the default registry. The most specific configured prefix that
        covers ``<registry>/<image_name>`` (whole path segments) wins; an unknown host gets an
        inferred endpoint ``https://<registry>`` with 20 requests/s, remembered for later calls.
        A loopback host (``localhost``, ``127.0.0.0/8``, ``::1``) falls back to plain HTTP when
        it answers in plain HTTP, as the docker CLI does.
        """
        host = registry.strip()
        if not host:
            explicit = self._explicit_default
            if explicit is not None and explicit.prefix != DOCKER_HUB_PREFIX:
                return explicit
            host = DOCKER_HUB_PREFIX
        host = canonical_registry(host)
        full = f"{host}/{image_name.strip('/')}" if image_name.strip("/") else host
        for endpoint in self._ordered:
            prefix = endpoint.prefix
            if not prefix or full == prefix or full.startswith(prefix + "/"):
                return endpoint
        with self._lock:
            inferred = self._inferred.get(host)
            if inferred is None:
                inferred = RegistryEndpoint(
                    prefix=host,
                    name=host,
                    api_url=f"https://{host}",
                    limit=INFERRED_LIMIT,
                    plain_http_fallback=is_loopback(host),
                )
                self._inferred[host] = inferred
            return inferred

    def with_overrides(
        self,
        registry: str,
        image_name: str,
        *,
        credentials: str | None = None,
        limit: float | None = None,
    ) -> RegistryConfig:
        """A copy where the endpoint serving the image uses other credentials / rate limit.

        For the ``test`` command's ``--credentials`` and ``--rate-limit``.
        """
        endpoint = self.endpoint_for(registry, image_name)
        changed = endpoint
        if credentials is not None:
            changed = replace(changed, credentials=credentials)
        if limit is not None:
            changed = replace(changed, limit=max(limit, 0.0))
        others = [e for e in self._by_prefix.values() if e.prefix != endpoint.prefix]
        return RegistryConfig([*others, changed])
