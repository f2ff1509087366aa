"""ECR logins against moto's ECR and STS (the real botocore talks to it over a socket, through a
recording proxy) and a real registry that accepts moto's token as Basic credentials."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from moto.server import ThreadedMotoServer

from argocd_image_updater.config.credentials import (
    parse_credential_ref,
)
from argocd_image_updater.model.registry import Credentials, RegistryEndpoint
from argocd_image_updater.registry.client import RegistryClient
from argocd_image_updater.registry.cloud.logins import CloudLogins
from argocd_image_updater.registry.credentials import (
    CredentialsError,
    EndpointCredentials,
    ImageCredentials,
    fetch_credentials,
)
from argocd_image_updater.registry.errors import RegistryAuthError
from argocd_image_updater_testing.cloud import AwsApiRecorder, RecordedRequest, Reply
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

pytestmark = pytest.mark.registry

ACCOUNT = "123456789012"
MOTO_PASSWORD = f"{ACCOUNT}-auth-token"
CREATED = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def ecr_registry() -> Iterator[RegistryServer]:
    """A registry whose htpasswd holds moto's ECR token (user AWS)."""
    with RegistryServer(users={"AWS": MOTO_PASSWORD}) as server:
        yield server


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """An environment with nothing of the machine's AWS setup in it."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


@pytest.fixture
def aws(aws_env: pytest.MonkeyPatch, moto_url: str) -> Iterator[AwsApiRecorder]:
    """Static test keys, and every AWS API call going to moto through a recorder."""
    httpx.post(f"{moto_url}/moto-api/reset")
    aws_env.setenv("AWS_ACCESS_KEY_ID", "testing")
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with AwsApiRecorder(moto_url) as recorder:
        aws_env.setenv("AWS_ENDPOINT_URL", recorder.url)
        yield recorder


def endpoint(server: RegistryServer | str, credentials: str = "") -> RegistryEndpoint:
    url = server if isinstance(server, str) else server.url
    host = url.split("://", 1)[1]
    return RegistryEndpoint(prefix=host, name=host, api_url=url, credentials=credentials)


def scope_region(request: RecordedRequest) -> str:
    """The region of a SigV4 signature (``Credential=<key>/<date>/<region>/<service>/…``)."""
    credential = request.header("Authorization").split("Credential=", 1)[1].split(",", 1)[0]
    return credential.split("/")[2]


async def push(server: RegistryServer, repo: str) -> None:
    async with ImagePusher(server.url, credentials=Credentials("AWS", MOTO_PASSWORD)) as pusher:
        await pusher.push_image(repo, "1.0", created=CREATED)
        await pusher.push_image(repo, "1.1", created=CREATED)


async def test_moto_token_works_as_basic_credentials_and_past_expiry_causes_no_storm(
    aws: AwsApiRecorder, ecr_registry: RegistryServer, repo: str
) -> None:
    await push(ecr_registry, repo)
    clock = Clock()
    logins = CloudLogins(clock=clock)
    provider = EndpointCredentials(endpoint(ecr_registry, "ecr:eu-west-1"), cloud_logins=logins)
    async with RegistryClient(endpoint(ecr_registry)) as client:
        assert sorted(await client.list_tags(repo, provider)) == ["1.0", "1.1"]
        # moto's token "expired" in 2015: it is still reused, not fetched for every request
        await asyncio.gather(*(client.list_tags(repo, provider) for _ in range(20)))
        await asyncio.gather(*(client.get_manifest(repo, "1.0", provider) for _ in range(5)))
        assert aws.calls() == ["GetAuthorizationToken"]
        (call,) = aws.requests
        assert call.header("X-Amz-Target") == (
            "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken"
        )
        assert scope_region(call) == "eu-west-1"
        # a minute later, one new login
        clock.now += 61
        await asyncio.gather(*(client.list_tags(repo, provider) for _ in range(10)))
        assert aws.calls() == ["GetAuthorizationToken"] * 2


async def test_region_from_host_and_aws_region(
    aws: AwsApiRecorder, aws_env: pytest.MonkeyPatch
) -> None:
    logins = CloudLogins()
    host = f"{ACCOUNT}.dkr.ecr.ap-southeast-2.amazonaws.com"
    creds = await fetch_credentials(
        parse_credential_ref("ecr:"),
        api_url=f"https://{host}",
        prefix=host,
        secrets=None,
        cloud_logins=logins,
    )
    assert (creds.username, creds.password) == ("AWS", MOTO_PASSWORD)
    aws_env.setenv("AWS_REGION", "ca-central-1")
    await fetch_credentials(
        parse_credential_ref("ecr:"),
        api_url="http://127.0.0.1:5000",
        prefix="127.0.0.1:5000",
        secrets=None,
        cloud_logins=logins,
    )
    assert [scope_region(r) for r in aws.requests] == ["ap-southeast-2", "ca-central-1"]


async def test_concurrent_callers_share_one_login(aws: AwsApiRecorder) -> None:
    logins = CloudLogins()
    ep = endpoint("http://127.0.0.1:5000", "ecr:us-west-2")
    providers = [ImageCredentials("ecr:us-west-2", ep, cloud_logins=logins) for _ in range(10)]
    results = await asyncio.gather(*(p.get() for _ in range(5) for p in providers))
    assert {r.password for r in results if r is not None} == {MOTO_PASSWORD}
    assert aws.calls() == ["GetAuthorizationToken"]


async def test_role_is_assumed_first(aws: AwsApiRecorder) -> None:
    role = "arn:aws:iam::111122223333:role/image-updater"
    provider = EndpointCredentials(
        endpoint("http://127.0.0.1:5000", f"ecr:eu-central-1,{role}"), cloud_logins=CloudLogins()
    )
    creds = await provider.get()
    assert creds is not None
    # moto answers in the account of the caller: the assumed role's
    assert creds.password == "111122223333-auth-token"
    assert aws.calls() == ["AssumeRole", "GetAuthorizationToken"]
    assume, token = aws.requests
    assert assume.form["RoleArn"] == role
    assert assume.form["RoleSessionName"] == "argocd-image-updater"
    # the token call is signed with the role's temporary keys, not the static ones
    assert "Credential=testing/" in assume.header("Authorization")
    assert "Credential=testing/" not in token.header("Authorization")
    assert token.header("X-Amz-Security-Token")


async def test_refused_token_is_refetched_once_then_reported(
    aws: AwsApiRecorder, repo: str
) -> None:
    with RegistryServer(users={"AWS": "a-password-moto-does-not-give"}) as server:
        provider = EndpointCredentials(
            endpoint(server, "ecr:eu-west-1"), cloud_logins=CloudLogins()
        )
        async with RegistryClient(endpoint(server)) as client:
            with pytest.raises(RegistryAuthError):
                await client.list_tags(repo, provider)
            assert aws.calls() == ["GetAuthorizationToken"] * 2  # refused → one refetch
            for _ in range(5):
                with pytest.raises(RegistryAuthError):
                    await client.list_tags(repo, provider)
            assert len(aws.calls()) == 2  # refused again: no refetch storm


async def test_identity_missing_is_a_clear_error_without_retries(
    aws_env: pytest.MonkeyPatch, moto_url: str
) -> None:
    with AwsApiRecorder(moto_url) as recorder:
        aws_env.setenv("AWS_ENDPOINT_URL", recorder.url)
        provider = EndpointCredentials(
            endpoint("http://127.0.0.1:5000", "ecr:eu-west-1"), cloud_logins=CloudLogins()
        )
        for _ in range(3):
            with pytest.raises(CredentialsError, match="no AWS identity found") as info:
                await provider.get()
        assert "IRSA" in str(info.value)
        assert recorder.requests == []
        assert provider.login is not None and provider.login.fetches == 1


async def test_endpoint_down_is_a_clear_error_and_backs_off(aws: AwsApiRecorder) -> None:
    clock = Clock()
    provider = EndpointCredentials(
        endpoint("http://127.0.0.1:5000", "ecr:eu-west-1"), cloud_logins=CloudLogins(clock=clock)
    )
    aws.down = True
    for _ in range(10):
        with pytest.raises(
            CredentialsError, match=r"ecr: GetAuthorizationToken failed: .*\(HTTP 503\)"
        ) as info:
            await provider.get()
    assert "testing" not in str(info.value)
    attempts = len(aws.requests)
    assert 1 <= attempts <= 2  # botocore's own retry, once; then no more calls while backing off
    clock.now += 6
    aws.down = False
    creds = await provider.get()
    assert creds is not None and creds.password == MOTO_PASSWORD
    assert len(aws.requests) == attempts + 1


async def test_unreachable_endpoint(aws_env: pytest.MonkeyPatch) -> None:
    aws_env.setenv("AWS_ACCESS_KEY_ID", "testing")
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    aws_env.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    provider = EndpointCredentials(
        endpoint("http://127.0.0.1:5000", "ecr:eu-west-1"), cloud_logins=CloudLogins()
    )
    with pytest.raises(CredentialsError, match="could not be reached"):
        await provider.get()


class EcrPublicFake(AwsApiRecorder):
    """ecr-public's GetAuthorizationToken (moto has no ecr-public)."""

    def handle(self, request: RecordedRequest) -> Reply:
        token = base64.b64encode(b"AWS:public-ecr-password").decode()
        expires = time.time() + 12 * 3600
        body = {"authorizationData": {"authorizationToken": token, "expiresAt": expires}}
        return Reply.json(body, headers={"Content-Type": "application/x-amz-json-1.1"})


async def test_public_ecr_uses_ecr_public_in_us_east_1(aws_env: pytest.MonkeyPatch) -> None:
    aws_env.setenv("AWS_ACCESS_KEY_ID", "testing")
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with EcrPublicFake("http://unused") as fake:
        aws_env.setenv("AWS_ENDPOINT_URL_ECR_PUBLIC", fake.url)
        provider = EndpointCredentials(
            RegistryEndpoint("public.ecr.aws", "ECR Public", "https://public.ecr.aws", "ecr:"),
            cloud_logins=CloudLogins(),
        )
        creds = await provider.get()
        assert creds is not None and creds.password == "public-ecr-password"
        (call,) = fake.requests
        assert call.header("X-Amz-Target") == "SpencerFrontendService.GetAuthorizationToken"
        assert scope_region(call) == "us-east-1"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real command, with this test's environment (moto behind the recorder)."""
    return subprocess.run(
        [sys.executable, "-m", "argocd_image_updater", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=dict(os.environ),
        check=False,
    )


def conf_for(tmp_path: Path, server: RegistryServer, credentials: str = "") -> str:
    path = tmp_path / "registries.conf"
    extra = f"  credentials: {credentials}\n" if credentials else ""
    path.write_text(
        f"registries:\n- name: test\n  prefix: {server.host}\n  api_url: {server.url}\n{extra}"
    )
    return str(path)


async def test_cli_explain_names_the_credential_source(
    aws: AwsApiRecorder, ecr_registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push(ecr_registry, repo)
    image = f"{ecr_registry.host}/{repo}"
    conf = conf_for(tmp_path, ecr_registry)
    done = cli(
        "test", image, "--credentials", "ecr:eu-west-1", "--explain", "--registries-conf", conf
    )
    assert done.returncode == 0, done.stderr
    assert "credentials: ecr:eu-west-1 (from --credentials)" in done.stdout
    assert f"latest image according to constraint is {image}:1.1" in done.stdout
    assert MOTO_PASSWORD not in done.stdout + done.stderr
    assert aws.calls() == ["GetAuthorizationToken"]
    conf = conf_for(tmp_path, ecr_registry, "ecr:eu-west-1")
    done = cli("test", image, "--explain", "--registries-conf", conf)
    assert "credentials: ecr:eu-west-1 (from registries.conf entry 'test')" in done.stdout


async def test_cli_explain_shows_why_a_login_failed(
    aws_env: pytest.MonkeyPatch, ecr_registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    conf = conf_for(tmp_path, ecr_registry, "ecr:eu-west-1")
    done = cli("test", f"{ecr_registry.host}/{repo}", "--explain", "--registries-conf", conf)
    assert done.returncode == 1
    assert "credentials: ecr:eu-west-1 (from registries.conf entry 'test')" in done.stdout
    assert "credentials: login failed: ecr: no AWS identity found" in done.stdout


def test_cli_explain_auto_detection(aws_env: pytest.MonkeyPatch) -> None:
    # an ECR host and an identity in the environment, but the API is unreachable: the
    # auto-detected login fails and the scan goes on anonymously (and fails at the registry)
    aws_env.setenv("AWS_ACCESS_KEY_ID", "testing")
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    aws_env.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    conf = Path(os.environ["AWS_CONFIG_FILE"]).with_name("registries.conf")
    host = f"{ACCOUNT}.dkr.ecr.eu-west-1.amazonaws.com"
    conf.write_text(
        f"registries:\n- name: ecr\n  prefix: {host}\n  api_url: http://127.0.0.1:{port}\n"
    )
    done = cli("test", f"{host}/app", "--registries-conf-path", str(conf), "--explain")
    assert done.returncode == 1
    assert (
        f"credentials: ecr (auto-detected from host {host}, region eu-west-1; "
        "identity from AWS_ACCESS_KEY_ID)" in done.stdout
    )
    assert "credentials: login failed: ecr: GetAuthorizationToken: the AWS API could not be" in (
        done.stdout
    )
    off = cli(
        "test", f"{host}/app", "--registries-conf-path", str(conf), "--explain",
        "--no-cloud-credentials-auto",
    )  # fmt: skip
    assert "credentials: none (anonymous; cloud login auto-detection is switched off)" in (
        off.stdout
    )
