"""Fetching registry credentials (``registry.credentials``): environment, ``ext:`` scripts,
Secrets read from a mounted-Secret directory, and the caching providers."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from argocd_image_updater.config.credentials import (
    CredentialKind,
    CredentialRef,
    CredentialRefError,
    parse_credential_ref,
)
from argocd_image_updater.config.secrets import (
    FileSecretReader,
    SecretError,
    SecretFieldNotFound,
    SecretNotFound,
    read_field,
)
from argocd_image_updater.model.registry import CredentialProvider, Credentials, RegistryEndpoint
from argocd_image_updater.observe import log
from argocd_image_updater.registry.credentials import (
    CredentialsError,
    EndpointCredentials,
    ImageCredentials,
    fetch_credentials,
)

HUB_API = "https://registry-1.docker.io"
VALID_CONFIG = '{"auths":{"https://registry-1.docker.io/v2/":{"auth":"Zm9vOmJhcg=="}}}'
NOPROTO_CONFIG = '{"auths":{"registry-1.docker.io":{"auth":"Zm9vOmJhcg=="}}}'


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def write_secret(root: Path, ns: str, name: str, fields: dict[str, str | bytes]) -> None:
    directory = root / ns / name
    directory.mkdir(parents=True, exist_ok=True)
    for field, value in fields.items():
        data = value.encode() if isinstance(value, str) else value
        (directory / field).write_bytes(data)


def write_script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def endpoint(credentials: str = "", expire: timedelta = timedelta(0)) -> RegistryEndpoint:
    return RegistryEndpoint(
        prefix="registry.example.com",
        name="Example",
        api_url="https://registry.example.com",
        credentials=credentials,
        creds_expire=expire,
    )


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- secrets ------------------------------------------------------------------------------------


async def test_file_secret_reader_reads_mounted_layout(tmp_path: Path) -> None:
    write_secret(tmp_path, "test-namespace", "test-secret", {"namespace": "argocd"})
    # the layout Kubernetes uses for a mounted secret: field -> ..data/field
    mounted = tmp_path / "test-namespace" / "mounted"
    (mounted / "..2024_01_01").mkdir(parents=True)
    (mounted / "..2024_01_01" / ".dockerconfigjson").write_text(VALID_CONFIG)
    (mounted / "..data").symlink_to("..2024_01_01")
    (mounted / ".dockerconfigjson").symlink_to("..data/.dockerconfigjson")
    reader = FileSecretReader(tmp_path)
    data = await reader.read("test-namespace", "test-secret")
    assert dict(data) == {"namespace": b"argocd"}
    assert await read_field(reader, "test-namespace", "test-secret", "namespace") == b"argocd"
    assert dict(await reader.read("test-namespace", "mounted")) == {
        ".dockerconfigjson": VALID_CONFIG.encode()
    }


async def test_file_secret_reader_errors(tmp_path: Path) -> None:
    write_secret(tmp_path, "ns", "name", {"a": "b"})
    reader = FileSecretReader(tmp_path)
    with pytest.raises(SecretFieldNotFound) as field_info:
        await read_field(reader, "ns", "name", "x")
    assert str(field_info.value) == "secret 'ns/name' does not have a field 'x'"
    with pytest.raises(SecretNotFound) as missing:
        await reader.read("ns", "missing")
    assert str(missing.value) == "secret 'ns/missing' not found"
    with pytest.raises(SecretError, match="invalid secret name"):
        await reader.read("ns", "../ns")
    with pytest.raises(SecretError, match="invalid secret namespace"):
        await reader.read("..", "name")


# --- fetching -----------------------------------------------------------------------------------


async def fetch(
    text: str,
    *,
    secrets: FileSecretReader | None = None,
    env: dict[str, str] | None = None,
    api_url: str = HUB_API,
    prefix: str = "docker.io",
    ext_timeout: float = 10.0,
) -> Credentials:
    return await fetch_credentials(
        parse_credential_ref(text),
        api_url=api_url,
        prefix=prefix,
        secrets=secrets,
        env=env,
        ext_timeout=ext_timeout,
    )


async def test_cr17_secret_field(tmp_path: Path) -> None:
    write_secret(
        tmp_path,
        "test",
        "test",
        {"username_password": "foo:bar\n", "nocolon": "foobar", "BADUTF": b"\xff:\xfe"},
    )
    reader = FileSecretReader(tmp_path)
    assert await fetch("secret:test/test#username_password", secrets=reader) == Credentials(
        "foo", "bar"
    )
    with pytest.raises(CredentialsError, match="secret 'test1/test' not found"):
        await fetch("secret:test1/test#username_password", secrets=reader)
    with pytest.raises(CredentialsError, match="no Kubernetes client given"):
        await fetch("secret:test/test#username_password", secrets=None)
    with pytest.raises(CredentialsError, match="does not have a field 'BAD'"):
        await fetch("secret:test/test#BAD", secrets=reader)
    with pytest.raises(CredentialsError) as info:
        await fetch("secret:test/test#nocolon", secrets=reader)
    assert "invalid credentials in secret 'test/test' field 'nocolon'" in str(info.value)
    assert "foobar" not in str(info.value)
    with pytest.raises(CredentialsError, match="invalid credentials in secret"):
        await fetch("secret:test/test#BADUTF", secrets=reader)


@pytest.mark.parametrize("config", [VALID_CONFIG, NOPROTO_CONFIG])
async def test_cr18_cr19_pullsecret(tmp_path: Path, config: str) -> None:
    write_secret(tmp_path, "test", "test", {".dockerconfigjson": config})
    write_secret(tmp_path, "test", "bad", {".dockerconfigjson": config.replace("auths", "BAD")})
    reader = FileSecretReader(tmp_path)
    assert await fetch("pullsecret:test/test", secrets=reader) == Credentials("foo", "bar")
    with pytest.raises(CredentialsError, match="secret 'test1/test' not found"):
        await fetch("pullsecret:test1/test", secrets=reader)
    with pytest.raises(CredentialsError, match="no credentials in image pull secret"):
        await fetch("pullsecret:test/bad", secrets=reader)
    with pytest.raises(CredentialsError, match="no Kubernetes client given"):
        await fetch("pullsecret:test/test", secrets=None)


async def test_cr20_env() -> None:
    assert await fetch("env:MY_SECRET_ENV", env={"MY_SECRET_ENV": "foo:bar"}) == Credentials(
        "foo", "bar"
    )
    assert await fetch("env:E", env={"E": "user:pa:ss"}) == Credentials("user", "pa:ss")
    with pytest.raises(CredentialsError, match="env 'MY_SECRET_ENV' is not set"):
        await fetch("env:MY_SECRET_ENV", env={"MY_SECRET_ENV": ""})
    with pytest.raises(CredentialsError, match="env 'MY_SECRET_ENV' is not set"):
        await fetch("env:MY_SECRET_ENV", env={})
    for value in ("babayaga", "foo:", ":bar", ":"):
        with pytest.raises(CredentialsError) as info:
            await fetch("env:X", env={"X": value})
        assert "<username>:<password>" in str(info.value)
        if len(value) > 3:
            assert value.strip(":") not in str(info.value)


async def test_env_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIU_TEST_CREDS", "procuser:procpass")
    assert await fetch("env:AIU_TEST_CREDS") == Credentials("procuser", "procpass")


async def test_fetched_passwords_are_masked_in_logs() -> None:
    await fetch("env:X", env={"X": "someone:masked-password-123"})
    assert "masked-password-123" not in log.redact("token masked-password-123 used")


async def test_cr21_ext_script(tmp_path: Path) -> None:
    valid = write_script(tmp_path / "valid.sh", 'echo "username:password"\n')
    invalid = write_script(tmp_path / "invalid.sh", 'echo "some gibberish foo"\n')
    two_lines = write_script(tmp_path / "two.sh", 'echo "a:b"\necho "c:d"\n')
    assert await fetch(f"ext:{valid}") == Credentials("username", "password")
    for script in (invalid, two_lines):
        with pytest.raises(CredentialsError) as info:
            await fetch(f"ext:{script}")
        assert "invalid script output, must be single line with syntax" in str(info.value)
        assert "gibberish" not in str(info.value)
    with pytest.raises(CredentialsError, match="script not found"):
        await fetch(f"ext:{tmp_path / 'get-credentials-notexist.sh'}")
    relative = CredentialRef(CredentialKind.EXT, script_path="get-credentials-notexist.sh")
    with pytest.raises(CredentialsError, match="path to script must be absolute"):
        await fetch_credentials(relative, api_url=HUB_API, prefix="", secrets=None)


async def test_ext_script_not_executable(tmp_path: Path) -> None:
    script = tmp_path / "noexec.sh"
    script.write_text("#!/bin/sh\necho a:b\n")
    with pytest.raises(CredentialsError, match="not executable"):
        await fetch(f"ext:{script}")


async def test_ext_failure_keeps_stderr_but_never_stdout(tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "fail.sh",
        'echo "leaked-user:leaked-pass"\necho "token endpoint said no" >&2\nexit 3\n',
    )
    with pytest.raises(CredentialsError) as info:
        await fetch(f"ext:{script}")
    message = str(info.value)
    assert "exit code 3" in message and "token endpoint said no" in message
    assert "leaked" not in message


async def test_ext_gets_cloud_sdk_environment_but_not_the_updaters_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r")
    monkeypatch.setenv("ARGOCD_TOKEN", "private-token")
    monkeypatch.setenv("GHCR_WEBHOOK_SECRET", "private-secret")
    script = write_script(
        tmp_path / "env.sh",
        'echo "${AWS_ROLE_ARN}:${ARGOCD_TOKEN:-none}${GHCR_WEBHOOK_SECRET:-none}"\n',
    )
    assert await fetch(f"ext:{script}") == Credentials("arn", "aws:iam::1:role/r:nonenone")


def _process_gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")  # zombie: killed, not yet reaped


async def test_ext_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = write_script(tmp_path / "hang.sh", f"sleep 60 &\necho $! > {pid_file}\nwait\n")
    started = time.monotonic()
    with pytest.raises(CredentialsError, match=r"did not finish within 0\.5s and was killed"):
        await fetch(f"ext:{script}", ext_timeout=0.5)
    assert time.monotonic() - started < 30  # killed, not waited for (the script sleeps 60 s)
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while not _process_gone(child):
        assert time.monotonic() < deadline, "the script's child process survived the timeout"
        await asyncio.sleep(0.02)


# --- providers ----------------------------------------------------------------------------------


def test_providers_implement_the_protocol() -> None:
    providers: list[CredentialProvider] = [
        EndpointCredentials(endpoint("env:X")),
        ImageCredentials("env:X", endpoint()),
    ]
    assert [p.key for p in providers] == ["env:X", "env:X"]


async def test_no_reference_means_anonymous() -> None:
    creds = EndpointCredentials(endpoint())
    assert creds.key == ""
    assert await creds.get() is None
    assert creds.invalidate() is False


async def test_cr27_endpoint_reference_is_fetched_and_cached() -> None:
    env = {"TEST_SETENDPOINT_ENV": "envuser:envpass"}
    creds = EndpointCredentials(endpoint("env:TEST_SETENDPOINT_ENV"), env=env)
    assert await creds.get() == Credentials("envuser", "envpass")
    env["TEST_SETENDPOINT_ENV"] = "other:value"
    assert await creds.get() == Credentials("envuser", "envpass")  # CR-26: served from the cache


async def test_cr32_cr33_cache_expires_after_credsexpire() -> None:
    env = {"E": "foo:bar"}
    clock = FakeClock()
    creds = EndpointCredentials(endpoint("env:E", timedelta(seconds=3)), env=env, clock=clock)
    assert await creds.get() == Credentials("foo", "bar")
    env["E"] = "bar:foo"
    clock.now += 2.9
    assert await creds.get() == Credentials("foo", "bar")
    clock.now += 300
    assert await creds.get() == Credentials("bar", "foo")


async def test_zero_expiry_caches_forever() -> None:
    env = {"E": "old:pass"}
    clock = FakeClock()
    creds = EndpointCredentials(endpoint("env:E"), env=env, clock=clock)
    assert await creds.get() == Credentials("old", "pass")
    env["E"] = "new:pass"
    clock.now += 10**9
    assert await creds.get() == Credentials("old", "pass")


async def test_cr30_invalid_endpoint_reference() -> None:
    with pytest.raises(CredentialRefError):
        EndpointCredentials(endpoint("invalid-ref"))


async def test_failed_fetch_is_not_cached() -> None:
    env: dict[str, str] = {}
    creds = EndpointCredentials(endpoint("env:LATER"), env=env)
    with pytest.raises(CredentialsError, match="env 'LATER' is not set"):
        await creds.get()
    env["LATER"] = "a:b"
    assert await creds.get() == Credentials("a", "b")


def counting_script(tmp_path: Path, output: str) -> tuple[str, Callable[[], int]]:
    runs = tmp_path / "runs"
    script = write_script(tmp_path / "creds.sh", f'echo run >> {runs}\necho "{output}"\n')
    return script, lambda: len(runs.read_text().splitlines()) if runs.exists() else 0


async def test_cr34_concurrent_fetches_run_the_script_once(tmp_path: Path) -> None:
    script, runs = counting_script(tmp_path, "AWS:mock-token-12345")
    clock = FakeClock()
    creds = EndpointCredentials(
        endpoint(f"ext:{script}", timedelta(hours=1)), clock=clock, ext_timeout=10
    )
    results = await asyncio.gather(*(creds.get() for _ in range(10)))
    assert results == [Credentials("AWS", "mock-token-12345")] * 10
    assert runs() == 1
    clock.now += 3601  # expired: the next burst fetches once more
    results = await asyncio.gather(*(creds.get() for _ in range(10)))
    assert results == [Credentials("AWS", "mock-token-12345")] * 10
    assert runs() == 2


async def test_one_caller_giving_up_does_not_cancel_the_shared_fetch(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    script = write_script(
        tmp_path / "slow.sh", f"while [ ! -e {gate} ]; do sleep 0.01; done\necho a:b\n"
    )
    creds = EndpointCredentials(endpoint(f"ext:{script}"))
    first = asyncio.ensure_future(creds.get())
    second = asyncio.ensure_future(creds.get())
    await asyncio.sleep(0)
    first.cancel()
    gate.touch()
    assert await second == Credentials("a", "b")
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_invalidate_semantics() -> None:
    env = {"E": "first:pass"}
    creds = EndpointCredentials(endpoint("env:E", timedelta(hours=1)), env=env)
    assert creds.invalidate() is False  # nothing fetched yet: a refetch cannot help
    assert await creds.get() == Credentials("first", "pass")
    env["E"] = "second:pass"
    assert creds.invalidate() is True  # cached credentials dropped
    assert creds.invalidate() is True  # another caller refused the same ones: retry too
    assert await creds.get() == Credentials("second", "pass")
    assert creds.invalidate() is True
    del env["E"]
    with pytest.raises(CredentialsError):
        await creds.get()
    assert creds.invalidate() is False  # the re-read happened and failed: report the error


async def test_cr28_cr29_image_credentials_are_not_cached_on_the_endpoint(
    tmp_path: Path,
) -> None:
    write_secret(tmp_path, "ns", "secret-a", {"creds": "userA:passA"})
    write_secret(tmp_path, "ns", "secret-b", {"creds": "userB:passB"})
    reader = FileSecretReader(tmp_path)
    ep = endpoint()
    registry_level = EndpointCredentials(ep, secrets=reader)
    a = ImageCredentials("secret:ns/secret-a#creds", ep, secrets=reader)
    assert a.key == "secret:ns/secret-a#creds"
    assert await a.get() == Credentials("userA", "passA")
    b = ImageCredentials(parse_credential_ref("secret:ns/secret-b#creds"), ep, secrets=reader)
    assert await b.get() == Credentials("userB", "passB")
    assert await registry_level.get() is None
    write_secret(tmp_path, "ns", "secret-a", {"creds": "userA2:passA2"})
    assert await a.get() == Credentials("userA", "passA")  # kept for this cycle
    assert a.invalidate() is True
    assert await a.get() == Credentials("userA2", "passA2")
    next_cycle = ImageCredentials("secret:ns/secret-a#creds", ep, secrets=reader)
    assert await next_cycle.get() == Credentials("userA2", "passA2")


async def test_cr31_image_secret_without_kubernetes() -> None:
    for ref in ("secret:foo/bar#creds", "pullsecret:foo/bar"):
        with pytest.raises(CredentialsError, match="no Kubernetes client given"):
            await ImageCredentials(ref, endpoint()).get()


async def test_pullsecret_provider_matches_the_endpoint(tmp_path: Path) -> None:
    config = json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": b64("hub:pw")}}})
    write_secret(tmp_path, "argocd", "hub", {".dockerconfigjson": config})
    hub = RegistryEndpoint("docker.io", "Docker Hub", HUB_API, credentials="pullsecret:argocd/hub")
    creds = EndpointCredentials(hub, secrets=FileSecretReader(tmp_path))
    assert await creds.get() == Credentials("hub", "pw")
    assert "pw" not in repr(await creds.get())
    assert os.fspath(tmp_path) not in repr(creds)
