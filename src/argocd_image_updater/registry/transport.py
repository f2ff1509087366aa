"""HTTP clients for registry endpoints: TLS settings, timeouts.

TLS is verified by default against the system CAs plus the endpoint's ``ca_file``/``ca_data``;
only ``insecure: true`` turns verification off (and then no CA is loaded at all, like the original).
"""

from __future__ import annotations

import hashlib
import ssl
from dataclasses import dataclass

import httpx

from argocd_image_updater.http1 import DEFAULT_LIMITS, ProxyConfigError, async_client
from argocd_image_updater.kits.tlstrust import CABundleError, client_context
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.registry.errors import RegistryConfigError

TIMEOUT = httpx.Timeout(connect=10.0, read=30.0, write=30.0, pool=30.0)
USER_AGENT = "argocd-image-updater"


@dataclass(frozen=True, slots=True)
class TlsKey:
    """Endpoints with equal TLS settings share one HTTP client (and its connection pools)."""

    insecure: bool
    ca_file: str
    ca_data_sha256: str

    @classmethod
    def of(cls, endpoint: RegistryEndpoint) -> TlsKey:
        insecure = endpoint.insecure
        return cls(
            insecure,
            "" if insecure else endpoint.ca_file,
            "" if insecure else hashlib.sha256(endpoint.ca_data.encode()).hexdigest(),
        )


def ssl_context(endpoint: RegistryEndpoint) -> ssl.SSLContext:
    """The shared TLS context for ``endpoint``'s settings; raises :class:`RegistryConfigError`
    naming the bad field. The system CAs load at the first TLS handshake, so clients of plain-http
    registries never load them, and endpoints with the same CA bundle share one context."""
    try:
        return client_context(
            insecure=endpoint.insecure, ca_file=endpoint.ca_file, ca_data=endpoint.ca_data
        )
    except FileNotFoundError:
        raise RegistryConfigError(
            f"ca_file '{endpoint.ca_file}' of registry {endpoint.name} does not exist; fix "
            "the path in registries.conf",
            registry=endpoint.host,
        ) from None
    except CABundleError as exc:
        if exc.field == "ca_file":
            what, hint = f"ca_file '{endpoint.ca_file}'", "give a PEM CA bundle"
        else:
            what, hint = "ca_data", "give one or more PEM 'BEGIN CERTIFICATE' blocks"
        raise RegistryConfigError(
            f"{what} of registry {endpoint.name} does not contain a valid PEM certificate "
            f"({exc.detail}); {hint}",
            registry=endpoint.host,
        ) from None


def http_client(endpoint: RegistryEndpoint) -> httpx.AsyncClient:
    """A new client for endpoints with the TLS settings of ``endpoint`` (HTTP/1.1 with
    keep-alive; a proxy from the environment applies as httpx applies it)."""
    try:
        return async_client(
            ssl_context=ssl_context(endpoint),
            timeout=TIMEOUT,
            limits=DEFAULT_LIMITS,
            headers={"User-Agent": USER_AGENT},
            follow_redirects=False,
        )
    except ProxyConfigError as exc:
        raise RegistryConfigError(
            f"cannot reach registry {endpoint.name or endpoint.host}: {exc}",
            registry=endpoint.host,
        ) from None
