"""The pure parts of the cloud logins, auto-detection, a missing SDK extra, and the token refresher
(with an injected clock and a counting token source)."""

from __future__ import annotations

import asyncio
import base64
import sys
from pathlib import Path

import pytest

from argocd_image_updater.config.cloud_options import CloudKind, CloudOptions
from argocd_image_updater.config.credentials import (
    CredentialRefError,
    parse_credential_ref,
)
from argocd_image_updater.model.registry import Credentials, RegistryEndpoint
from argocd_image_updater.registry.cloud.azure import all_unavailable, exchange_form, tenant_of
from argocd_image_updater.registry.cloud.detect import detect, identity_source
from argocd_image_updater.registry.cloud.ecr import (
    decode_authorization_token,
    resolve_region,
    token_from_response,
)
from argocd_image_updater.registry.cloud.errors import CloudLoginError, Failure
from argocd_image_updater.registry.cloud.hosts import (
    EcrHost,
    cloud_of_host,
    parse_ecr_host,
    registry_host,
)
from argocd_image_updater.registry.cloud.jwt import expiry_claim, unverified_claims
from argocd_image_updater.registry.cloud.logins import CloudLogins
from argocd_image_updater.registry.cloud.refresh import CloudToken, TokenRefresher
from argocd_image_updater.registry.credentials import (
    CredentialsError,
    EndpointCredentials,
)
from argocd_image_updater_testing.cloud import fake_jwt


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Source:
    """A token source that counts calls; each call may be made to wait or fail."""

    def __init__(self, clock: Clock, lifetime: float | None = 3600.0) -> None:
        self.clock = clock
        self.lifetime = lifetime
        self.calls = 0
        self.fail: CloudLoginError | None = None
        self.gate: asyncio.Event | None = None

    async def __call__(self) -> CloudToken:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        expires = None if self.lifetime is None else self.clock.now + self.lifetime
        return CloudToken(Credentials("user", f"token-{self.calls}"), expires)


# --- hosts and references -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("123456789012.dkr.ecr.eu-west-1.amazonaws.com", EcrHost("123456789012", "eu-west-1")),
        ("123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn", EcrHost("123456789012", "cn-north-1")),
        ("123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com", EcrHost("123456789012", "us-gov-west-1")),
        ("123456789012.dkr-ecr.ap-south-1.on.aws", EcrHost("123456789012", "ap-south-1")),
        ("123456789012.dkr.ecr.eu-west-1.amazonaws.com:443", EcrHost("123456789012", "eu-west-1")),
        ("public.ecr.aws", EcrHost(region="us-east-1", public=True)),
        ("ecr.eu-west-1.amazonaws.com", None),
        ("evil.com/123456789012.dkr.ecr.eu-west-1.amazonaws.com", None),
    ],
)  # fmt: skip
def test_ecr_hosts(host: str, expected: EcrHost | None) -> None:
    assert parse_ecr_host(host) == expected


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        ("123456789012.dkr.ecr.eu-west-1.amazonaws.com", CloudKind.ECR),
        ("public.ecr.aws", CloudKind.ECR),
        ("gcr.io", CloudKind.GCP),
        ("eu.gcr.io", CloudKind.GCP),
        ("europe-west3-docker.pkg.dev", CloudKind.GCP),
        ("myregistry.azurecr.io", CloudKind.AZURE),
        ("docker.io", None),
        ("ghcr.io", None),
        ("registry.k8s.io", None),
        ("notgcr.io", None),
        ("azurecr.io.evil.com", None),
        ("127.0.0.1:5000", None),
    ],
)
def test_cloud_of_host(host: str, kind: CloudKind | None) -> None:
    assert cloud_of_host(host) is kind


def test_registry_host_prefers_the_prefix() -> None:
    assert registry_host("x.azurecr.io/team", "127.0.0.1:5000") == "x.azurecr.io"
    assert registry_host("", "127.0.0.1:5000") == "127.0.0.1:5000"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("ecr:", "ecr:"),
        ("ECR:eu-west-1", "ecr:eu-west-1"),
        ("ecr:arn:aws:iam::123456789012:role/updater", "ecr:arn:aws:iam::123456789012:role/updater"),
        ("ecr:arn:aws:iam::123456789012:role/a,us-east-2", "ecr:us-east-2,arn:aws:iam::123456789012:role/a"),
        ("gcr.io=gcp:", "gcp:"),
        ("azure:", "azure:"),
        ("azure:0A1B2C3D-0000-0000-0000-000000000000", "azure:0a1b2c3d-0000-0000-0000-000000000000"),
        # The bare words: `credentials: ecr:` is not valid YAML, `credentials: ecr` is.
        ("ecr", "ecr:"),
        (" GCP ", "gcp:"),
        ("azure", "azure:"),
        ("gcr.io=gcp", "gcp:"),
    ],
)  # fmt: skip
def test_cloud_references(text: str, key: str) -> None:
    assert parse_credential_ref(text).key == key


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("ecr:nowhere", "ecr: takes an AWS region"),
        ("ecr:eu-west-1,eu-west-2", "ecr: takes an AWS region"),
        ("ecr:arn:aws:iam::12:role/x", "IAM role ARN"),
        ("gcp:project", "gcp: takes nothing"),
        ("azure:my-identity", "client id (a GUID)"),
    ],
)
def test_invalid_cloud_references(text: str, fragment: str) -> None:
    with pytest.raises(CredentialRefError, match="invalid credential reference") as info:
        parse_credential_ref(text)
    assert fragment in str(info.value)
    assert "ecr[:<region>]" in str(info.value)


@pytest.mark.parametrize("text", ["env", "secret", "pullsecret", "ext", "ecrx", "gcp-"])
def test_only_the_cloud_words_stand_alone(text: str) -> None:
    with pytest.raises(CredentialRefError, match="no '<type>:' found"):
        parse_credential_ref(text)


def test_ecr_region_resolution() -> None:
    host = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
    ecr = CloudKind.ECR
    assert resolve_region(CloudOptions(ecr), host, {}) == "eu-west-1"
    assert resolve_region(CloudOptions(ecr, region="us-east-2"), host, {}) == "us-east-2"
    assert resolve_region(CloudOptions(ecr), "127.0.0.1:5000", {"AWS_REGION": "ca-central-1"}) == (
        "ca-central-1"
    )
    assert resolve_region(CloudOptions(ecr), "x:1", {"AWS_DEFAULT_REGION": "sa-east-1"}) == (
        "sa-east-1"
    )
    assert resolve_region(CloudOptions(ecr, region="eu-west-1"), "public.ecr.aws", {}) == (
        "us-east-1"
    )


def test_ecr_token_decoding() -> None:
    token = base64.b64encode(b"AWS:pass:with:colons").decode()
    assert decode_authorization_token(token) == Credentials("AWS", "pass:with:colons")
    for bad in ("not base64!", base64.b64encode(b"no-colon").decode()):
        with pytest.raises(ValueError, match="not base64 of <user>:<password>"):
            decode_authorization_token(bad)
    public = token_from_response({"authorizationData": {"authorizationToken": token}}, True)
    assert public.credentials.password == "pass:with:colons" and public.expires_at is None
    with pytest.raises(ValueError, match="no authorizationData"):
        token_from_response({"authorizationData": []}, False)


def test_jwt_claims_and_azure_helpers() -> None:
    token = fake_jwt({"tid": "tenant-1", "exp": 1700000000})
    assert unverified_claims(token)["tid"] == "tenant-1"
    assert expiry_claim(token) == 1700000000.0
    assert unverified_claims("opaque") == {} and expiry_claim("a.b.c") is None
    assert tenant_of(token, {}) == "tenant-1"
    assert tenant_of(token, {"AZURE_TENANT_ID": "env-tenant"}) == "env-tenant"
    assert exchange_form("r.azurecr.io", "aad", "t") == {
        "grant_type": "access_token",
        "service": "r.azurecr.io",
        "tenant": "t",
        "access_token": "aad",
    }
    assert "tenant" not in exchange_form("r.azurecr.io", "aad", "")
    unavailable = (
        "DefaultAzureCredential failed to retrieve a token from the included credentials.\n"
        "Attempted credentials:\n\tEnvironmentCredential: EnvironmentCredential authentication "
        "unavailable.\n\tManagedIdentityCredential: authentication unavailable, no response\n"
    )
    assert all_unavailable(unavailable)
    assert not all_unavailable(unavailable + "\tWorkloadIdentityCredential: AADSTS700016: denied\n")


# --- auto-detection ------------------------------------------------------------------------------


def test_identity_sources(tmp_path: Path) -> None:
    dmi = tmp_path / "dmi"
    dmi.mkdir()
    assert identity_source(CloudKind.ECR, {}, dmi) == ""
    env = {"AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/secrets/eks/token"}
    assert identity_source(CloudKind.ECR, env, dmi) == "AWS_WEB_IDENTITY_TOKEN_FILE"
    assert identity_source(CloudKind.AZURE, {"AZURE_FEDERATED_TOKEN_FILE": "/t"}, dmi) == (
        "AZURE_FEDERATED_TOKEN_FILE"
    )
    (dmi / "product_name").write_text("Google Compute Engine\n")
    assert identity_source(CloudKind.GCP, {}, dmi).startswith("Google Compute Engine machine")
    (dmi / "sys_vendor").write_text("Amazon EC2\n")
    assert identity_source(CloudKind.ECR, {}, dmi) == "EC2 instance"
    (dmi / "chassis_asset_tag").write_text("7783-7084-3265-9085-8269-3286-77\n")
    assert identity_source(CloudKind.AZURE, {}, dmi).startswith("Azure VM")
    home = tmp_path / "home"
    (home / ".config" / "gcloud").mkdir(parents=True)
    (home / ".config" / "gcloud" / "application_default_credentials.json").write_text("{}")
    assert identity_source(CloudKind.GCP, {"HOME": str(home)}, tmp_path) == (
        "gcloud application default credentials"
    )


def test_detect(tmp_path: Path) -> None:
    host = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
    found = detect(host, {"AWS_ACCESS_KEY_ID": "AKIA"}, tmp_path)
    assert found.reference == "ecr:"
    assert found.reason == (
        f"ecr (auto-detected from host {host}, region eu-west-1; identity from AWS_ACCESS_KEY_ID)"
    )
    none = detect(host, {}, tmp_path)
    assert none.reference == "" and "no ecr identity was found" in none.reason
    assert detect("ghcr.io", {"AWS_ACCESS_KEY_ID": "AKIA"}, tmp_path).reason == "none (anonymous)"


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # as if not installed
    found = detect("public.ecr.aws", {"AWS_ACCESS_KEY_ID": "AKIA"}, tmp_path)
    assert found.reference == ""
    assert "pip install 'argocd-image-updater[aws]'" in found.reason


async def test_missing_sdk_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "azure.identity", None)
    ep = RegistryEndpoint("r.azurecr.io", "ACR", "https://r.azurecr.io", credentials="azure:")
    provider = EndpointCredentials(ep, cloud_logins=CloudLogins())
    with pytest.raises(CredentialsError) as info:
        await provider.get()
    assert "azure-identity, which is not installed" in str(info.value)
    assert "pip install 'argocd-image-updater[azure]'" in str(info.value)


async def test_auto_detected_provider_falls_back_to_anonymous(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "google.auth", None)
    ep = RegistryEndpoint("gcr.io", "GCR", "https://gcr.io", credentials="gcp:")
    provider = EndpointCredentials(ep, cloud_logins=CloudLogins(), auto_detected=True)
    assert await provider.get() is None
    assert "argocd-image-updater[gcp]" in provider.last_error


# --- the refresher -------------------------------------------------------------------------------


async def test_token_reused_until_shortly_before_expiry() -> None:
    clock = Clock()
    source = Source(clock, lifetime=12 * 3600)
    refresher = TokenRefresher("test", source, clock=clock)
    first = await refresher.get()
    clock.now += 12 * 3600 - 301
    assert await refresher.get() is first
    clock.now += 2
    assert (await refresher.get()).credentials.password == "token-2"
    assert source.calls == 2


async def test_short_lived_tokens_are_refreshed_at_four_fifths() -> None:
    clock = Clock()
    source = Source(clock, lifetime=600)
    refresher = TokenRefresher("test", source, clock=clock)
    await refresher.get()
    clock.now += 479
    await refresher.get()
    assert source.calls == 1
    clock.now += 2
    await refresher.get()
    assert source.calls == 2


@pytest.mark.parametrize("lifetime", [-10 * 365 * 86400.0, 0.0, 5.0])
async def test_expiry_in_the_past_or_very_soon_causes_no_storm(lifetime: float) -> None:
    clock = Clock()
    source = Source(clock, lifetime=lifetime)
    refresher = TokenRefresher("test", source, clock=clock, min_lifetime=60)
    for _ in range(50):
        await refresher.get()
    assert source.calls == 1
    clock.now += 61
    await asyncio.gather(*(refresher.get() for _ in range(50)))
    assert source.calls == 2


async def test_unknown_expiry_is_reused_for_fifteen_minutes() -> None:
    clock = Clock()
    source = Source(clock, lifetime=None)
    refresher = TokenRefresher("test", source, clock=clock)
    await refresher.get()
    clock.now += 899
    await refresher.get()
    assert source.calls == 1


async def test_concurrent_callers_share_one_fetch_and_cancelling_one_does_not_cancel_it() -> None:
    clock = Clock()
    source = Source(clock)
    source.gate = asyncio.Event()
    refresher = TokenRefresher("test", source, clock=clock)
    waiters = [asyncio.ensure_future(refresher.get()) for _ in range(20)]
    await asyncio.sleep(0)
    waiters[0].cancel()
    source.gate.set()
    results = await asyncio.gather(*waiters[1:])
    assert {r.credentials.password for r in results} == {"token-1"}
    assert source.calls == 1


async def test_failures_back_off_and_keep_a_valid_token() -> None:
    clock = Clock()
    source = Source(clock, lifetime=600)
    refresher = TokenRefresher("test", source, clock=clock, backoff_start=5, backoff_max=300)
    await refresher.get()
    source.fail = CloudLoginError("test: endpoint down", Failure.UNREACHABLE)
    clock.now += 481  # due for refresh, not yet expired: the old token is still handed out
    assert (await refresher.get()).credentials.password == "token-1"
    clock.now += 3  # backing off (5 s): no call
    assert (await refresher.get()).credentials.password == "token-1"
    assert source.calls == 2
    clock.now += 117  # expired now: the next try fails, and so does every get while backing off
    for _ in range(3):
        with pytest.raises(CloudLoginError, match="endpoint down"):
            await refresher.get()
    assert source.calls == 3
    clock.now += 11  # the back-off doubled (10 s): one more try
    with pytest.raises(CloudLoginError):
        await refresher.get()
    assert source.calls == 4
    clock.now += 21
    source.fail = None
    assert (await refresher.get()).credentials.password == "token-5"
    assert refresher.last_error is None


async def test_permanent_failures_wait_the_longest_back_off() -> None:
    clock = Clock()
    source = Source(clock)
    source.fail = CloudLoginError("test: no identity", Failure.NO_IDENTITY)
    refresher = TokenRefresher("test", source, clock=clock, backoff_max=300)
    for _ in range(3):
        with pytest.raises(CloudLoginError):
            await refresher.get()
        clock.now += 100
    assert source.calls == 1
    clock.now += 1
    with pytest.raises(CloudLoginError):
        await refresher.get()
    assert source.calls == 2


async def test_unexpected_sdk_errors_are_reported_by_type_only() -> None:
    clock = Clock()

    async def broken() -> CloudToken:
        raise RuntimeError("secret-value-in-message")

    refresher = TokenRefresher("test", broken, clock=clock)
    with pytest.raises(CloudLoginError) as info:
        await refresher.get()
    assert str(info.value) == "test: login failed with RuntimeError"


async def test_refusal_refetches_once() -> None:
    clock = Clock()
    source = Source(clock)
    refresher = TokenRefresher("test", source, clock=clock, min_lifetime=60)
    assert refresher.invalidate(None) is False
    first = await refresher.get()
    assert refresher.invalidate(first) is True
    assert refresher.invalidate(first) is True  # a second caller refused the same token
    second = await refresher.get()
    assert source.calls == 2
    assert refresher.invalidate(first) is True  # stale refusal: the newer token is there
    assert refresher.invalidate(second) is False  # the replacement refused too, right away
    assert await refresher.get() is second
    clock.now += 61
    assert refresher.invalidate(second) is True  # a minute later it may be tried again
    await refresher.get()
    assert source.calls == 3
