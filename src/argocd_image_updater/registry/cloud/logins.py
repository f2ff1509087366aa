"""Process-wide cloud logins: one :class:`TokenRefresher` per identity and target.

Registry-level credentials and per-image pull secrets that name the same login share its token:
GCP has one identity per process, ECR one per region and role, ACR one per registry.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from argocd_image_updater.config.cloud_options import CloudKind, CloudOptions
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.registry.cloud.azure import AzureLogin
from argocd_image_updater.registry.cloud.ecr import EcrLogin
from argocd_image_updater.registry.cloud.gcp import GcpLogin
from argocd_image_updater.registry.cloud.hosts import registry_host
from argocd_image_updater.registry.cloud.refresh import CloudToken, TokenRefresher


class CloudLogin(Protocol):
    @property
    def cache_key(self) -> tuple[str, ...]: ...

    def describe(self) -> str: ...

    async def fetch(self) -> CloudToken: ...


def make_login(options: CloudOptions, endpoint: RegistryEndpoint) -> CloudLogin:
    match options.kind:
        case CloudKind.ECR:
            return EcrLogin(options, registry_host(endpoint.prefix, endpoint.host))
        case CloudKind.GCP:
            return GcpLogin()
        case CloudKind.AZURE:
            return AzureLogin(options, endpoint)


class CloudLogins:
    """The refreshers of this process (or of one test), by login."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._refreshers: dict[tuple[str, ...], TokenRefresher] = {}

    def refresher(self, options: CloudOptions, endpoint: RegistryEndpoint) -> TokenRefresher:
        login = make_login(options, endpoint)
        found = self._refreshers.get(login.cache_key)
        if found is None:
            found = TokenRefresher(login.describe(), login.fetch, clock=self._clock)
            self._refreshers[login.cache_key] = found
        return found

    def clear(self) -> None:
        self._refreshers.clear()


LOGINS = CloudLogins()
"""The logins of this process."""
