"""Azure ACR: an Entra ID token from azure-identity, exchanged for an ACR refresh token.

1. ``DefaultAzureCredential`` (environment service principal, workload identity, managed
   identity; the developer tools are left out) gives a token for
   ``https://containerregistry.azure.net/.default``;
2. ``POST https://<registry>/oauth2/exchange`` with ``grant_type=access_token``, ``service``,
   ``tenant`` and ``access_token`` answers ``{"refresh_token": …}``;
3. the registry client then answers the registry's Bearer challenge with Basic credentials:
   user ``00000000-0000-0000-0000-000000000000`` and the refresh token as password (what
   ``az acr login --expose-token`` tells docker to do).

azure-identity blocks, so step 1 runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping
from typing import Any, Final

import httpx

from argocd_image_updater.config.cloud_options import CloudKind, CloudOptions
from argocd_image_updater.model.registry import Credentials, RegistryEndpoint
from argocd_image_updater.observe.log import register_secret
from argocd_image_updater.registry.cloud.errors import CloudLoginError, Failure, shorten
from argocd_image_updater.registry.cloud.hosts import hostname, registry_host
from argocd_image_updater.registry.cloud.jwt import expiry_claim, unverified_claims
from argocd_image_updater.registry.cloud.refresh import CloudToken
from argocd_image_updater.registry.cloud.sdk import require_sdk
from argocd_image_updater.registry.errors import RegistryConfigError
from argocd_image_updater.registry.transport import http_client

SCOPE: Final = "https://containerregistry.azure.net/.default"
USERNAME: Final = "00000000-0000-0000-0000-000000000000"
_MAX_BODY: Final = 256 * 1024


def exchange_form(service: str, aad_token: str, tenant: str) -> dict[str, str]:
    """The form of ``POST /oauth2/exchange``."""
    form = {"grant_type": "access_token", "service": service}
    if tenant:
        form["tenant"] = tenant
    form["access_token"] = aad_token
    return form


def tenant_of(aad_token: str, env: Mapping[str, str]) -> str:
    """``AZURE_TENANT_ID``, else the ``tid`` claim of the Entra ID token."""
    tenant = env.get("AZURE_TENANT_ID", "")
    if tenant:
        return tenant
    tid = unverified_claims(aad_token).get("tid")
    return tid if isinstance(tid, str) else ""


def all_unavailable(message: str) -> bool:
    """Whether a ``DefaultAzureCredential`` failure says that every credential it tried was
    unavailable (no identity configured), rather than that one was refused."""
    _, found, attempts = message.partition("Attempted credentials:")
    lines = [line for line in attempts.splitlines() if line.startswith("\t")]
    return bool(found) and bool(lines) and all("unavailable" in line for line in lines)


class AzureLogin:
    """ACR logins for one registry."""

    kind: Final = CloudKind.AZURE

    def __init__(self, options: CloudOptions, endpoint: RegistryEndpoint) -> None:
        self.client_id = options.client_id
        self.endpoint = endpoint
        self.service = hostname(registry_host(endpoint.prefix, endpoint.host))
        self._credential: Any = None
        self._lock = threading.Lock()

    @property
    def cache_key(self) -> tuple[str, ...]:
        return ("azure", self.client_id, self.endpoint.api_url)

    def describe(self) -> str:
        who = f"client id {self.client_id}" if self.client_id else "default identity"
        return f"azure ({who}, registry {self.service})"

    async def fetch(self) -> CloudToken:
        require_sdk(CloudKind.AZURE)
        aad_token, aad_expiry = await asyncio.to_thread(self._aad_token_blocking)
        register_secret(aad_token)
        refresh_token = await self._exchange(aad_token)
        expiry = expiry_claim(refresh_token) or aad_expiry
        return CloudToken(Credentials(USERNAME, refresh_token), expiry)

    def _aad_token_blocking(self) -> tuple[str, float]:
        import azure.core.exceptions as ax
        from azure.identity import CredentialUnavailableError, DefaultAzureCredential

        with self._lock:
            try:
                if self._credential is None:
                    client_id = self.client_id or None
                    self._credential = DefaultAzureCredential(
                        managed_identity_client_id=client_id,
                        workload_identity_client_id=client_id,
                        exclude_cli_credential=True,
                        exclude_developer_cli_credential=True,
                        exclude_powershell_credential=True,
                        exclude_visual_studio_code_credential=True,
                        exclude_shared_token_cache_credential=True,
                        exclude_interactive_browser_credential=True,
                        exclude_broker_credential=True,
                    )
                token = self._credential.get_token(SCOPE)
            except CredentialUnavailableError as exc:
                raise CloudLoginError(
                    "azure: no Azure identity found (workload identity: AZURE_CLIENT_ID, "
                    "AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE; or a managed identity): "
                    + shorten(exc.message or str(exc)),
                    Failure.NO_IDENTITY,
                ) from None
            except ax.ClientAuthenticationError as exc:
                message = exc.message or str(exc)
                if all_unavailable(message):
                    raise CloudLoginError(
                        "azure: no Azure identity found (workload identity: AZURE_CLIENT_ID, "
                        "AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE; or a managed identity): "
                        + shorten(message),
                        Failure.NO_IDENTITY,
                    ) from None
                raise CloudLoginError(
                    f"azure: getting an Entra ID token failed: {shorten(message)}",
                    Failure.DENIED,
                ) from None
            except (ax.ServiceRequestError, ax.ServiceResponseError) as exc:
                raise CloudLoginError(
                    f"azure: Entra ID could not be reached: {shorten(str(exc))}",
                    Failure.UNREACHABLE,
                ) from None
            except ValueError as exc:  # e.g. an invalid AZURE_TOKEN_CREDENTIALS
                raise CloudLoginError(f"azure: {shorten(str(exc))}", Failure.CONFIG) from None
        return str(token.token), float(token.expires_on)

    async def _exchange(self, aad_token: str) -> str:
        api = httpx.URL(self.endpoint.api_url)
        url = api.copy_with(path="/oauth2/exchange", query=None, fragment=None)
        form = exchange_form(self.service, aad_token, tenant_of(aad_token, os.environ))
        try:
            client = http_client(self.endpoint)
        except RegistryConfigError as exc:
            raise CloudLoginError(f"azure: {exc}", Failure.CONFIG) from None
        try:
            async with client:
                response = await client.post(url, data=form)
                body = response.content[:_MAX_BODY]
        except httpx.HTTPError as exc:
            raise CloudLoginError(
                f"azure: {url} could not be reached ({type(exc).__name__})", Failure.UNREACHABLE
            ) from None
        where = f"azure: POST {url}"
        if response.status_code in (401, 403):
            raise CloudLoginError(
                f"{where} refused the Entra ID token (HTTP {response.status_code}); does the "
                "identity have the AcrPull role on this registry?",
                Failure.DENIED,
            )
        if response.status_code != 200:
            failure = Failure.UNREACHABLE if response.status_code >= 500 else Failure.DENIED
            raise CloudLoginError(f"{where} answered HTTP {response.status_code}", failure)
        try:
            data = response.json() if body else {}
        except ValueError:
            data = {}
        refresh = data.get("refresh_token") if isinstance(data, dict) else None
        if not isinstance(refresh, str) or not refresh:
            raise CloudLoginError(
                f"{where}: the answer has no refresh_token", Failure.INVALID_RESPONSE
            )
        return refresh
