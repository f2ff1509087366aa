"""GCP logins: the real google-auth against a fake GCE metadata server and a fake OAuth2 token
endpoint (for a service account key file), over sockets."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.registry.cloud.logins import CloudLogins
from argocd_image_updater.registry.credentials import (
    CredentialsError,
    EndpointCredentials,
    auto_detected_credentials,
)
from argocd_image_updater_testing.cloud import GceMetadataServer, OAuthTokenEndpoint

GAR = RegistryEndpoint(
    "europe-docker.pkg.dev", "GAR", "https://europe-docker.pkg.dev", credentials="gcp:"
)
SCOPE = "https://www.googleapis.com/auth/cloud-platform"


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def gcp_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No key file, no gcloud configuration, and no real metadata server."""
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GCE_METADATA_HOST", "GCE_METADATA_IP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    return monkeypatch


def use_metadata_server(host: str, env: pytest.MonkeyPatch) -> None:
    """Point google-auth at ``host``: ``GCE_METADATA_IP`` is read on every use, but
    ``GCE_METADATA_HOST`` only when google-auth is first imported, so that copy is set too."""
    from google.auth.compute_engine import _metadata

    env.setenv("GCE_METADATA_HOST", host)
    env.setenv("GCE_METADATA_IP", host)
    env.setattr(_metadata, "_GCE_METADATA_HOST", host)


@pytest.fixture
def metadata(gcp_env: pytest.MonkeyPatch) -> Iterator[GceMetadataServer]:
    with GceMetadataServer(expires_in=3600) as server:
        use_metadata_server(server.host, gcp_env)
        yield server


@pytest.fixture
def no_metadata(gcp_env: pytest.MonkeyPatch) -> Iterator[GceMetadataServer]:
    """A metadata address that does not answer like a metadata server (not on GCE)."""
    with GceMetadataServer() as server:
        server.down = True
        use_metadata_server(server.host, gcp_env)
        yield server


def token_calls(server: GceMetadataServer) -> int:
    return sum(1 for path in server.paths() if path.endswith("/token"))


def write_key_file(path: Path, token_uri: str) -> rsa.RSAPrivateKey:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    path.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "project",
                "private_key_id": "key-1",
                "private_key": pem,
                "client_email": "updater@project.iam.gserviceaccount.com",
                "client_id": "1234",
                "token_uri": token_uri,
            }
        )
    )
    return key


async def test_metadata_server_token_is_the_password_of_oauth2accesstoken(
    metadata: GceMetadataServer,
) -> None:
    provider = EndpointCredentials(GAR, cloud_logins=CloudLogins())
    creds = await provider.get()
    assert creds is not None
    assert (creds.username, creds.password) == ("oauth2accesstoken", "gce-access-token-1")
    requests = metadata.requests
    assert all(r.header("Metadata-Flavor") == "Google" for r in requests)
    token_calls = metadata.requests_to(GceMetadataServer.TOKEN_PATH)
    assert len(token_calls) == 1
    assert token_calls[0].method == "GET"
    assert token_calls[0].query["scopes"] == [SCOPE]
    assert [(r.method, r.path) for r in requests] == [
        ("GET", "/"),  # the GCE check
        ("GET", GceMetadataServer.PROJECT_PATH),
        ("GET", GceMetadataServer.ACCOUNT_PATH),
        ("GET", GceMetadataServer.TOKEN_PATH),
    ]
    assert requests[2].query == {"recursive": ["true"]}


async def test_token_is_refreshed_early_and_rotates(metadata: GceMetadataServer) -> None:
    clock = Clock()
    provider = EndpointCredentials(GAR, cloud_logins=CloudLogins(clock=clock))
    first = await provider.get()
    clock.now += 3600 - 301  # more than 5 minutes before expiry: still the same token
    assert await provider.get() == first
    assert token_calls(metadata) == 1
    clock.now += 2  # less than 5 minutes left: a new token, before the old one expires
    second = await provider.get()
    assert second is not None and second.password == "gce-access-token-2"


async def test_concurrent_callers_share_one_refresh(metadata: GceMetadataServer) -> None:
    logins = CloudLogins()
    providers = [EndpointCredentials(GAR, cloud_logins=logins) for _ in range(8)]
    results = await asyncio.gather(*(p.get() for p in providers for _ in range(4)))
    assert {r.password for r in results if r} == {"gce-access-token-1"}
    assert token_calls(metadata) == 1


async def test_refused_token_triggers_one_refresh(metadata: GceMetadataServer) -> None:
    provider = EndpointCredentials(GAR, cloud_logins=CloudLogins())
    assert (await provider.get()) is not None
    assert provider.invalidate() is True  # the registry refused it
    assert provider.invalidate() is True  # a concurrent refusal: shares the refetch
    creds = await asyncio.gather(provider.get(), provider.get())
    assert {c.password for c in creds if c} == {"gce-access-token-2"}
    assert token_calls(metadata) == 2
    assert provider.invalidate() is True  # this task was refused the old one: retry
    assert (await provider.get()) == creds[0]  # …and gets the fresh one
    assert provider.invalidate() is False  # the fresh one refused too: report, no storm
    assert token_calls(metadata) == 2


async def test_token_endpoint_down_is_a_clear_error_and_backs_off(
    gcp_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with OAuthTokenEndpoint("sa-token", expires_in=600) as oauth:
        write_key_file(tmp_path / "key.json", f"{oauth.url}/token")
        gcp_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "key.json"))
        clock = Clock()
        provider = EndpointCredentials(GAR, cloud_logins=CloudLogins(clock=clock))
        first = await provider.get()
        assert first is not None
        oauth.down = True
        clock.now += 700  # the token has expired
        for _ in range(5):
            with pytest.raises(CredentialsError, match=r"^gcp: getting an access token failed"):
                await provider.get()
        calls = len(oauth.requests)
        assert calls <= 4  # one refresh (google-auth retries it), then backing off
        clock.now += 6
        oauth.down = False
        creds = await provider.get()
        assert creds is not None and creds.password == oauth.issued[-1] != first.password
        assert len(oauth.requests) == calls + 1


async def test_identity_missing_is_a_clear_error(no_metadata: GceMetadataServer) -> None:
    provider = EndpointCredentials(GAR, cloud_logins=CloudLogins())
    for _ in range(3):
        with pytest.raises(CredentialsError, match="gcp: no Google identity found"):
            await provider.get()
    assert provider.login is not None and provider.login.fetches == 1


async def test_auto_detected_login_falls_back_to_anonymous(
    no_metadata: GceMetadataServer,
) -> None:
    ep = RegistryEndpoint("gcr.io", "GCR", "https://gcr.io")
    provider = auto_detected_credentials(ep, cloud_logins=CloudLogins())
    assert provider is not None and provider.key == "gcp:"
    assert await provider.get() is None
    assert provider.last_error.startswith("gcp: no Google identity found")
    assert provider.invalidate() is False
    assert auto_detected_credentials(ep, enabled=False) is None


async def test_service_account_key_file(gcp_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with OAuthTokenEndpoint("sa-token", expires_in=1800) as oauth:
        key_file = tmp_path / "key.json"
        key = write_key_file(key_file, f"{oauth.url}/token")
        gcp_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
        before = time.time()
        logins = CloudLogins()
        provider = EndpointCredentials(GAR, cloud_logins=logins)
        creds = await provider.get()
        assert creds is not None and creds.username == "oauth2accesstoken"
        assert creds.password == oauth.issued[0]
        (call,) = oauth.requests
        assert (call.method, call.path) == ("POST", "/token")
        form = call.form
        assert form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
        claims = jwt.decode(
            form["assertion"],
            key.public_key(),
            algorithms=["RS256"],
            audience="https://oauth2.googleapis.com/token",  # google-auth's fixed audience
        )
        assert claims["iss"] == "updater@project.iam.gserviceaccount.com"
        assert claims["scope"] == SCOPE
        refresher = provider.login
        assert refresher is not None
        assert refresher.last_error is None
        # the expiry comes from the token response: 30 minutes
        token = await refresher.get()
        assert token.expires_at is not None
        assert before + 1800 - 5 <= token.expires_at <= time.time() + 1800 + 5
