"""HTTP clients for registry endpoints: TLS settings, HTTP/2, timeouts.

TLS is verified by default against the system CAs plus the endpoint's ``ca_file``/``ca_data``;
only ``insecure: true`` turns verification off (and then no CA is loaded at all, like the original).
"""

from __future__ import annotations

import hashlib
import ssl
from dataclasses import dataclass

import httpx

from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.registry.errors import RegistryConfigError

TIMEOUT = httpx.Timeout(connect=10.0, read=30.0, write=30.0, pool=30.0)
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20)
USER_AGENT = "argocd-image-updater"


@dataclass(frozen=True, slots=True)
class TlsKey:
    """Endpoints with equal TLS settings share one HTTP client (and its connection pools)."""

    insecure: bool
    ca_file: str
    ca_data_sha256: str
    https: bool

    @classmethod
    def of(cls, endpoint: RegistryEndpoint) -> TlsKey:
        insecure = endpoint.insecure
        return cls(
            insecure,
            "" if insecure else endpoint.ca_file,
            "" if insecure else hashlib.sha256(endpoint.ca_data.encode()).hexdigest(),
            endpoint.api_url.lower().startswith("https://"),
        )


def ssl_context(endpoint: RegistryEndpoint) -> ssl.SSLContext:
    """The TLS context for ``endpoint``; raises :class:`RegistryConfigError` naming the bad field."""
    if endpoint.insecure:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    ctx = ssl.create_default_context()
    if endpoint.ca_file:
        try:
            ctx.load_verify_locations(cafile=endpoint.ca_file)
        except FileNotFoundError:
            raise RegistryConfigError(
                f"ca_file '{endpoint.ca_file}' of registry {endpoint.name} does not exist; fix "
                "the path in registries.conf",
                registry=endpoint.host,
            ) from None
        except (ssl.SSLError, OSError) as exc:
            raise RegistryConfigError(
                f"ca_file '{endpoint.ca_file}' of registry {endpoint.name} does not contain a "
                f"valid PEM certificate ({exc}); give a PEM CA bundle",
                registry=endpoint.host,
            ) from None
    if endpoint.ca_data:
        try:
            ctx.load_verify_locations(cadata=endpoint.ca_data)
        except (ssl.SSLError, ValueError) as exc:
            raise RegistryConfigError(
                f"ca_data of registry {endpoint.name} does not contain a valid PEM certificate "
                f"({exc}); give one or more PEM 'BEGIN CERTIFICATE' blocks",
                registry=endpoint.host,
            ) from None
    return ctx


def http_client(endpoint: RegistryEndpoint) -> httpx.AsyncClient:
    """A new client for endpoints with the TLS settings of ``endpoint`` (HTTP/2 over TLS)."""
    key = TlsKey.of(endpoint)
    return httpx.AsyncClient(
        verify=ssl_context(endpoint),
        http2=key.https,
        timeout=TIMEOUT,
        limits=LIMITS,
        headers={"User-Agent": USER_AGENT},
        follow_redirects=False,
    )
