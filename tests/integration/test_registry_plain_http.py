"""A registry serving plain HTTP: recognised at the first TLS handshake (never retried), with the
exact fix in the message; loopback registries without a registries.conf entry fall back to plain
HTTP as the docker CLI does."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from argocd_image_updater.config.registries import RegistryConfig, is_loopback
from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater.registry.client import RegistryClient
from argocd_image_updater.registry.errors import RegistryPlainHTTPError
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

CREATED = datetime(2026, 2, 1, tzinfo=UTC)


@pytest.fixture
async def plain_repo(registry: RegistryServer, repo: str) -> str:
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0.0", created=CREATED)
        await pusher.push_image(repo, "1.1.0", created=CREATED)
    return repo


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "argocd_image_updater", "test", *args, "--loglevel", "debug"],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ},
        check=False,
    )


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost:5000", True),
        ("127.0.0.1:5000", True),
        ("127.10.0.3", True),
        ("[::1]:5000", True),
        ("::1", True),
        ("registry.example.com:5000", False),
        ("10.0.0.1:5000", False),
        ("localhost.example.com", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    endpoint = RegistryConfig().endpoint_for(host, "team/app")
    assert endpoint.api_url == f"https://{host}"  # HTTPS is always tried first
    assert endpoint.plain_http_fallback is loopback


async def test_https_endpoint_of_a_plain_http_registry_fails_at_once_saying_what_to_add(
    registry: RegistryServer, plain_repo: str, endpoint_for
) -> None:
    endpoint = endpoint_for(f"https://{registry.host}")
    async with RegistryClient(endpoint) as client:
        with pytest.raises(RegistryPlainHTTPError) as err:
            await client.list_tags(plain_repo)
        assert client.stats.snapshot() == {"tags": 1}  # not retried
    message = str(err.value)
    assert f"registry {registry.host} speaks plain HTTP, not HTTPS" in message
    assert "WRONG_VERSION_NUMBER" in message or "record layer" in message.lower()
    assert f"'api_url: http://{registry.host}'" in message
    assert "--plain-http" in message


async def test_inferred_loopback_registry_falls_back_to_plain_http(
    registry: RegistryServer, plain_repo: str
) -> None:
    endpoint = RegistryConfig().endpoint_for(registry.host, plain_repo)
    assert endpoint.limit > 0  # an inferred registry is rate limited
    async with RegistryClient(endpoint) as client:
        assert sorted(await client.list_tags(plain_repo)) == ["1.0.0", "1.1.0"]
        assert client.stats.snapshot() == {"tags": 2}  # one TLS attempt, then plain HTTP
    # The TLS attempt never reached the registry's HTTP server: the request sent again over
    # plain HTTP does not wait for a second rate-limit slot.
    waits = REGISTRY.get_sample_value(
        "argocd_image_updater_registry_rate_limit_waits_total", {"registry": registry.host}
    )
    assert not waits
    async with RegistryClient(endpoint) as again:  # remembered: no second TLS attempt
        assert sorted(await again.list_tags(plain_repo)) == ["1.0.0", "1.1.0"]
        assert again.stats.snapshot() == {"tags": 1}


async def test_a_configured_https_endpoint_never_falls_back(
    registry: RegistryServer, plain_repo: str, endpoint_for
) -> None:
    endpoint = replace(endpoint_for(f"https://{registry.host}"), plain_http_fallback=False)
    async with RegistryClient(endpoint) as client:
        with pytest.raises(RegistryPlainHTTPError):
            await client.list_tags(plain_repo)


def test_cli_without_registries_conf_reads_a_loopback_registry(
    registry: RegistryServer, plain_repo: str
) -> None:
    port = registry.host.rsplit(":", 1)[1]
    for host in (registry.host, f"localhost:{port}"):
        result = cli(f"{host}/{plain_repo}")
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"latest image according to constraint is {host}/{plain_repo}:1.1.0" in (
            result.stdout
        )
        assert "loopback registry answers in plain HTTP" in result.stdout


def test_cli_plain_http_flag_and_the_hint(
    registry: RegistryServer, plain_repo: str, tmp_path: Path
) -> None:
    conf = tmp_path / "registries.conf"
    conf.write_text(
        f"registries:\n- name: local\n  prefix: {registry.host}\n"
        f"  api_url: https://{registry.host}\n"
    )
    image = f"{registry.host}/{plain_repo}"
    failed = cli(image, "--registries-conf-path", str(conf))
    assert failed.returncode == 1
    output = failed.stdout + failed.stderr
    assert "speaks plain HTTP, not HTTPS" in output
    assert "Retrying registry request" not in output
    result = cli(image, "--registries-conf-path", str(conf), "--plain-http")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"latest image according to constraint is {image}:1.1.0" in result.stdout
