"""TLS: verified by default, custom CAs from ca_file/ca_data, insecure only when configured."""

from __future__ import annotations

import ssl
from datetime import UTC, datetime

import pytest

from argocd_image_updater.registry.client import RegistryClient
from argocd_image_updater.registry.errors import RegistryConfigError, RegistryTLSError
from argocd_image_updater.registry.transport import http_client
from argocd_image_updater_testing.push import ImagePusher

CREATED = datetime(2024, 6, 1, tzinfo=UTC)


@pytest.fixture
async def tls_repo(tls_registry, repo):
    assert tls_registry.tls is not None and tls_registry.tls.ca is not None
    verify = ssl.create_default_context(cafile=str(tls_registry.tls.ca))
    async with ImagePusher(tls_registry.url, verify=verify) as pusher:
        await pusher.push_image(repo, "1.0", created=CREATED)
    return repo


async def test_verified_with_ca_file_over_http2(tls_registry, tls_repo, endpoint_for):
    endpoint = endpoint_for(tls_registry, ca_file=str(tls_registry.tls.ca))
    async with RegistryClient(endpoint) as client:
        await client.ping()
        assert await client.list_tags(tls_repo) == ["1.0"]
    async with http_client(endpoint) as http:
        response = await http.get(f"{tls_registry.url}/v2/")
    assert response.http_version == "HTTP/2"


async def test_verified_with_ca_data(tls_registry, tls_repo, endpoint_for):
    endpoint = endpoint_for(tls_registry, ca_data=tls_registry.tls.ca.read_text())
    async with RegistryClient(endpoint) as client:
        assert await client.list_tags(tls_repo) == ["1.0"]


async def test_unknown_ca_is_a_clear_tls_error_and_not_retried(
    tls_registry, tls_repo, endpoint_for
):
    async with RegistryClient(endpoint_for(tls_registry)) as client:
        with pytest.raises(RegistryTLSError) as err:
            await client.list_tags(tls_repo)
        assert client.stats.snapshot() == {"tags": 1}
    message = str(err.value)
    assert tls_registry.host in message
    assert "certificate" in message
    assert "ca_file" in message


async def test_insecure_skips_verification_only_when_configured(
    tls_registry, tls_repo, endpoint_for
):
    endpoint = endpoint_for(tls_registry, insecure=True, ca_file="/nonexistent/ca.pem")
    async with RegistryClient(endpoint) as client:
        assert await client.list_tags(tls_repo) == ["1.0"]


def test_missing_ca_file_names_the_field(endpoint_for, tmp_path):
    with pytest.raises(RegistryConfigError, match=r"ca_file '.*missing\.pem'.*does not exist"):
        http_client(endpoint_for("https://127.0.0.1:1", ca_file=str(tmp_path / "missing.pem")))


def test_invalid_ca_data_names_the_field(endpoint_for):
    with pytest.raises(RegistryConfigError, match=r"ca_data .* does not contain a valid PEM"):
        http_client(endpoint_for("https://127.0.0.1:1", ca_data="not a certificate"))


def test_invalid_ca_file_content_names_the_field(endpoint_for, tmp_path):
    bad = tmp_path / "bad.pem"
    bad.write_text("-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n")
    with pytest.raises(RegistryConfigError, match="does not contain a valid PEM certificate"):
        http_client(endpoint_for("https://127.0.0.1:1", ca_file=str(bad)))
