"""TLS: verified by default, custom CAs from ca_file/ca_data, insecure only when configured."""

from __future__ import annotations

import ssl
from datetime import UTC, datetime

import pytest

from argocd_image_updater.kits.tlstrust import LazyTrustContext, default_loads
from argocd_image_updater.registry.client import RegistryClient
from argocd_image_updater.registry.errors import RegistryConfigError, RegistryTLSError
from argocd_image_updater.registry.transport import http_client, ssl_context
from argocd_image_updater_testing.push import ImagePusher

CREATED = datetime(2024, 6, 1, tzinfo=UTC)


@pytest.fixture
async def tls_repo(tls_registry, repo):
    assert tls_registry.tls is not None and tls_registry.tls.ca is not None
    verify = ssl.create_default_context(cafile=str(tls_registry.tls.ca))
    async with ImagePusher(tls_registry.url, verify=verify) as pusher:
        await pusher.push_image(repo, "1.0", created=CREATED)
    return repo


async def test_verified_with_ca_file(tls_registry, tls_repo, endpoint_for):
    endpoint = endpoint_for(tls_registry, ca_file=str(tls_registry.tls.ca))
    async with RegistryClient(endpoint) as client:
        await client.ping()
        assert await client.list_tags(tls_repo) == ["1.0"]
    async with http_client(endpoint) as http:
        response = await http.get(f"{tls_registry.url}/v2/")
    assert response.http_version == "HTTP/1.1"
    assert response.headers.get("docker-distribution-api-version") == "registry/2.0"


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


async def test_plain_http_registry_never_loads_the_trust_store(
    registry, tls_registry, repo, endpoint_for, tmp_path
):
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0", created=CREATED)
    # A CA bundle of its own gives this endpoint a context no other test shares.
    ca = tmp_path / "ca.pem"
    ca.write_bytes(tls_registry.tls.ca.read_bytes())
    endpoint = endpoint_for(registry, ca_file=str(ca))
    loads = default_loads()
    async with RegistryClient(endpoint) as client:
        assert await client.list_tags(repo) == ["1.0"]
    context = ssl_context(endpoint)
    assert isinstance(context, LazyTrustContext)
    assert not context.trust_loaded
    assert default_loads() == loads


async def test_https_clients_with_one_ca_bundle_load_the_trust_store_once(
    tls_registry, tls_repo, endpoint_for, tmp_path
):
    ca = tmp_path / "ca.pem"
    ca.write_bytes(tls_registry.tls.ca.read_bytes())
    endpoints = [endpoint_for(tls_registry, ca_file=str(ca)) for _ in range(3)]
    loads = default_loads()
    for endpoint in endpoints:
        async with RegistryClient(endpoint) as client:
            assert await client.list_tags(tls_repo) == ["1.0"]
    assert ssl_context(endpoints[0]) is ssl_context(endpoints[2])
    assert ssl_context(endpoints[0]).trust_loaded
    assert default_loads() == loads + 1


def test_a_changed_ca_file_loads_anew(tls_registry, endpoint_for, tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_bytes(tls_registry.tls.ca.read_bytes())
    endpoint = endpoint_for("https://127.0.0.1:1", ca_file=str(ca))
    first = ssl_context(endpoint)
    ca.write_text("-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n")
    with pytest.raises(RegistryConfigError, match="does not contain a valid PEM certificate"):
        ssl_context(endpoint)
    assert first is not None
