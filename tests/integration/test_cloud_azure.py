"""ACR logins: the real azure-identity against fake Entra ID endpoints (managed identity IMDS, and
the token endpoint used by workload identity over TLS), then the exchange for an ACR refresh token
and the registry's Bearer flow against a fake ACR, all over sockets."""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.registry.client import RegistryClient
from argocd_image_updater.registry.cloud.jwt import unverified_claims
from argocd_image_updater.registry.cloud.logins import CloudLogins
from argocd_image_updater.registry.credentials import (
    CredentialsError,
    EndpointCredentials,
)
from argocd_image_updater_testing.cloud import (
    ACR_NULL_USER,
    AcrFake,
    AzureImds,
    OAuthTokenEndpoint,
    fake_jwt,
)

CLIENT_ID = "3c2b1a00-1111-2222-3333-444455556666"
TENANT = "11111111-2222-3333-4444-555555555555"


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def azure_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Nothing of the machine's Azure setup."""
    for name in list(os.environ):
        if name.startswith(("AZURE_", "IDENTITY_", "MSI_", "IMDS_")):
            monkeypatch.delenv(name)
    return monkeypatch


@pytest.fixture
def imds(azure_env: pytest.MonkeyPatch) -> Iterator[AzureImds]:
    with AzureImds() as server:
        azure_env.setenv("AZURE_POD_IDENTITY_AUTHORITY_HOST", server.url)
        yield server


@pytest.fixture
def acr() -> Iterator[AcrFake]:
    with AcrFake({"team/app": ["1.0", "1.1"]}) as server:
        yield server


def endpoint(acr: AcrFake, credentials: str = "azure:") -> RegistryEndpoint:
    return RegistryEndpoint(acr.host, "ACR", acr.url, credentials=credentials)


async def test_managed_identity_token_is_exchanged_and_used_for_the_bearer_flow(
    imds: AzureImds, acr: AcrFake
) -> None:
    provider = EndpointCredentials(endpoint(acr), cloud_logins=CloudLogins())
    async with RegistryClient(endpoint(acr, "")) as client:
        assert await client.list_tags("team/app", provider) == ["1.0", "1.1"]
    (aad,) = imds.requests
    assert (aad.method, aad.path) == ("GET", AzureImds.TOKEN_PATH)
    assert aad.header("Metadata") == "true"
    assert aad.query["resource"] == ["https://containerregistry.azure.net"]
    assert aad.query["api-version"] == ["2018-02-01"]
    (exchange,) = acr.requests_to("/oauth2/exchange")
    assert exchange.method == "POST"
    assert exchange.header("Content-Type") == "application/x-www-form-urlencoded"
    assert exchange.form == {
        "grant_type": "access_token",
        "service": "127.0.0.1",
        "tenant": imds.tenant,  # from the token's tid claim
        "access_token": imds.issued[0],
    }
    (realm,) = acr.requests_to("/oauth2/token")
    assert realm.method == "GET"
    assert realm.query["service"] == ["127.0.0.1"]
    assert realm.query["scope"] == ["repository:team/app:pull"]
    assert realm.query["account"] == [ACR_NULL_USER]
    creds = await provider.get()
    assert creds is not None and (creds.username, creds.password) == (ACR_NULL_USER, acr.issued[0])


async def test_refresh_token_expiry_drives_the_refresh(imds: AzureImds, acr: AcrFake) -> None:
    clock = Clock()
    provider = EndpointCredentials(endpoint(acr), cloud_logins=CloudLogins(clock=clock))
    first = await provider.get()
    assert first is not None
    expiry = unverified_claims(first.password)["exp"]
    clock.now = expiry - 301
    assert await provider.get() == first
    clock.now = expiry - 299  # five minutes before the refresh token expires: a new one
    second = await provider.get()
    assert second is not None and second.password == acr.issued[1] != first.password
    assert len(acr.requests_to("/oauth2/exchange")) == 2


async def test_revoked_refresh_token_triggers_one_new_login(imds: AzureImds, acr: AcrFake) -> None:
    provider = EndpointCredentials(endpoint(acr), cloud_logins=CloudLogins())
    async with RegistryClient(endpoint(acr, "")) as client:
        assert await client.list_tags("team/app", provider) == ["1.0", "1.1"]
        acr.revoked.add(acr.issued[0])
        results = await asyncio.gather(*(client.list_tags("team/app", provider) for _ in range(5)))
        assert results == [["1.0", "1.1"]] * 5
    assert len(acr.requests_to("/oauth2/exchange")) == 2
    assert len(imds.requests) == 1  # azure-identity keeps the still valid Entra ID token


async def test_exchange_refused_is_a_clear_error_and_backs_off(
    azure_env: pytest.MonkeyPatch,
) -> None:
    with AzureImds() as imds, AcrFake({}, accepts_aad=lambda token: False) as acr:
        azure_env.setenv("AZURE_POD_IDENTITY_AUTHORITY_HOST", imds.url)
        provider = EndpointCredentials(endpoint(acr), cloud_logins=CloudLogins())
        for _ in range(5):
            with pytest.raises(CredentialsError, match="refused the Entra ID token") as info:
                await provider.get()
        assert "AcrPull" in str(info.value)
        assert imds.issued[0] not in str(info.value)
        assert len(acr.requests_to("/oauth2/exchange")) == 1


async def test_registry_down_is_a_clear_error_and_backs_off(imds: AzureImds, acr: AcrFake) -> None:
    clock = Clock()
    provider = EndpointCredentials(endpoint(acr), cloud_logins=CloudLogins(clock=clock))
    acr.down = True
    for _ in range(5):
        with pytest.raises(CredentialsError, match=r"oauth2/exchange answered HTTP 503"):
            await provider.get()
    assert len(acr.requests_to("/oauth2/exchange")) == 1
    clock.now += 6
    acr.down = False
    assert await provider.get() is not None
    assert len(acr.requests_to("/oauth2/exchange")) == 2


async def test_identity_missing_is_a_clear_error(azure_env: pytest.MonkeyPatch) -> None:
    # only workload identity (as on AKS), and its variables are not set
    azure_env.setenv("AZURE_TOKEN_CREDENTIALS", "WorkloadIdentityCredential")
    with AcrFake({}) as acr:
        provider = EndpointCredentials(endpoint(acr), cloud_logins=CloudLogins())
        for _ in range(3):
            with pytest.raises(CredentialsError, match="azure: no Azure identity found"):
                await provider.get()
        assert acr.requests == []
        assert provider.login is not None and provider.login.fetches == 1


@pytest.fixture(scope="module")
def entra_tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, Path]:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    bundle = tmp_path_factory.mktemp("entra") / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    return context, bundle


async def test_workload_identity(
    azure_env: pytest.MonkeyPatch,
    acr: AcrFake,
    tmp_path: Path,
    entra_tls: tuple[ssl.SSLContext, Path],
) -> None:
    context, bundle = entra_tls
    federated = fake_jwt({"sub": "system:serviceaccount:argocd:argocd-image-updater"})
    (tmp_path / "token").write_text(federated)
    with OAuthTokenEndpoint("entra", tls=context) as entra:
        entra.tenant = TENANT
        azure_env.setenv("REQUESTS_CA_BUNDLE", str(bundle))
        azure_env.setenv("AZURE_AUTHORITY_HOST", entra.url)
        azure_env.setenv("AZURE_TENANT_ID", TENANT)
        azure_env.setenv("AZURE_CLIENT_ID", CLIENT_ID)
        azure_env.setenv("AZURE_FEDERATED_TOKEN_FILE", str(tmp_path / "token"))
        provider = EndpointCredentials(endpoint(acr), cloud_logins=CloudLogins())
        creds = await provider.get()
        assert creds is not None and creds.password == acr.issued[0]
        (token_call,) = [r for r in entra.requests if r.method == "POST"]
        assert token_call.path == f"/{TENANT}/oauth2/v2.0/token"
        form = token_call.form
        assert form["client_id"] == CLIENT_ID
        assert form["grant_type"] == "client_credentials"
        assert form["client_assertion"] == federated
        assert form["client_assertion_type"] == (
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        )
        assert form["scope"] == "https://containerregistry.azure.net/.default"
        (exchange,) = acr.requests_to("/oauth2/exchange")
        assert exchange.form["tenant"] == TENANT
        assert exchange.form["access_token"] == entra.issued[0]
