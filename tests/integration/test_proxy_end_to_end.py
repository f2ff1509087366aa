"""Requests through a real forward proxy: registries by ``HTTP_PROXY``/``HTTPS_PROXY`` (and not
to the hosts ``NO_PROXY`` names), TLS verified end to end through a ``CONNECT`` tunnel, proxy
credentials sent and never logged, the Kubernetes client by its kubeconfig's ``proxy-url``, and
the ``test`` command behind a proxy."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import trustme

from argocd_image_updater.kube.client import APPLICATIONS, KubeClient, KubeError
from argocd_image_updater.observe.log import MASK, redact
from argocd_image_updater.registry.client import RegistryClient
from argocd_image_updater.registry.errors import RegistryConfigError, RegistryTLSError
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.forward_proxy import ForwardProxy
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

CREATED = datetime(2026, 4, 1, tzinfo=UTC)
USER, PASSWORD = "proxy-user", "pr0xy-Secret-9d1e"
_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets the proxy variables it means (before its clients are built)."""
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
async def forward_proxy() -> AsyncIterator[ForwardProxy]:
    async with ForwardProxy() as proxy:
        yield proxy


@pytest.fixture
async def plain_repo(registry: RegistryServer, repo: str) -> str:
    async with ImagePusher(registry.url) as pusher:
        for tag in ("1.0.0", "1.1.0"):
            await pusher.push_image(repo, tag, created=CREATED)
    return repo


@pytest.fixture
async def tls_repo(tls_registry: RegistryServer, repo: str) -> str:
    assert tls_registry.tls is not None and tls_registry.tls.ca is not None
    verify = ssl.create_default_context(cafile=str(tls_registry.tls.ca))
    async with ImagePusher(tls_registry.url, verify=verify) as pusher:
        await pusher.push_image(repo, "2.0.0", created=CREATED)
    return repo


def tags_url(server: RegistryServer, repo: str) -> str:
    return f"http://{server.host}/v2/{repo}/tags/list"


async def test_a_plain_http_registry_is_listed_through_http_proxy(
    registry, plain_repo, forward_proxy, endpoint_for, monkeypatch
):
    monkeypatch.setenv("HTTP_PROXY", forward_proxy.url)
    async with RegistryClient(endpoint_for(registry)) as client:
        assert sorted(await client.list_tags(plain_repo)) == ["1.0.0", "1.1.0"]
        # Again, on a new connection to the proxy (it closes after each answer).
        assert sorted(await client.list_tags(plain_repo)) == ["1.0.0", "1.1.0"]
    seen = forward_proxy.seen()
    assert [(r.method, r.target, r.refused) for r in seen if "tags" in r.target] == [
        ("GET", tags_url(registry, plain_repo), 0)
    ] * 2
    assert not any(r.authorized for r in seen)


async def test_no_proxy_naming_the_registry_host_bypasses_the_proxy(
    registry, plain_repo, forward_proxy, endpoint_for, monkeypatch
):
    monkeypatch.setenv("HTTP_PROXY", forward_proxy.url)
    monkeypatch.setenv("HTTPS_PROXY", forward_proxy.url)
    monkeypatch.setenv("NO_PROXY", f"example.com,{registry.host.split(':')[0]}")
    async with RegistryClient(endpoint_for(registry)) as client:
        assert sorted(await client.list_tags(plain_repo)) == ["1.0.0", "1.1.0"]
    assert forward_proxy.seen() == []


async def test_a_tls_registry_is_verified_end_to_end_through_a_connect_tunnel(
    tls_registry, tls_repo, forward_proxy, endpoint_for, monkeypatch
):
    monkeypatch.setenv("HTTPS_PROXY", forward_proxy.url)
    endpoint = endpoint_for(tls_registry, ca_data=tls_registry.tls.ca.read_text())
    async with RegistryClient(endpoint) as client:
        assert await client.list_tags(tls_repo) == ["2.0.0"]
    seen = forward_proxy.seen()
    assert seen, "the proxy saw no request"
    # The proxy only ever saw tunnels: the requests themselves stayed inside TLS.
    assert {(r.method, r.target, r.refused) for r in seen} == {("CONNECT", tls_registry.host, 0)}


async def test_an_untrusted_registry_certificate_fails_clearly_through_the_proxy(
    tls_registry, tls_repo, forward_proxy, endpoint_for, monkeypatch
):
    monkeypatch.setenv("HTTPS_PROXY", forward_proxy.url)
    async with RegistryClient(endpoint_for(tls_registry)) as client:
        with pytest.raises(RegistryTLSError) as err:
            await client.list_tags(tls_repo)
        assert client.stats.snapshot() == {"tags": 1}  # not retried
    message = str(err.value)
    assert f"TLS certificate of registry {tls_registry.host}" in message
    assert "could not be verified (unable to get local issuer certificate)" in message
    assert "ca_file" in message
    assert [(r.method, r.target) for r in forward_proxy.seen()] == [("CONNECT", tls_registry.host)]


async def test_proxy_credentials_from_the_proxy_url_are_sent(
    registry, plain_repo, tls_registry, tls_repo, endpoint_for, monkeypatch
):
    async with ForwardProxy(credentials=(USER, PASSWORD)) as proxy:
        # Without credentials the proxy refuses, in either form: a clear error, not retried.
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        tls_endpoint = endpoint_for(tls_registry, ca_data=tls_registry.tls.ca.read_text())
        for endpoint, repository in (
            (endpoint_for(registry), plain_repo),
            (tls_endpoint, tls_repo),
        ):
            async with RegistryClient(endpoint) as client:
                with pytest.raises(RegistryConfigError) as err:
                    await client.list_tags(repository)
                assert client.stats.snapshot() == {"tags": 1}
            assert str(err.value) == (
                f"registry {endpoint.host}, repository '{repository}': the HTTP proxy refused the "
                "request (HTTP 407 Proxy Authentication Required); give the proxy's credentials "
                "in its URL (HTTPS_PROXY/HTTP_PROXY=http://user:password@host:port)"
            )
        assert [(r.method, r.refused, r.authorized) for r in proxy.seen()] == [
            ("GET", 407, False),
            ("CONNECT", 407, False),
        ]
        proxy.clear()

        monkeypatch.setenv("HTTP_PROXY", proxy.url_with_credentials(USER, PASSWORD))
        monkeypatch.setenv("HTTPS_PROXY", proxy.url_with_credentials(USER, PASSWORD))
        async with RegistryClient(endpoint_for(registry)) as client:
            assert sorted(await client.list_tags(plain_repo)) == ["1.0.0", "1.1.0"]
        async with RegistryClient(tls_endpoint) as client:
            assert await client.list_tags(tls_repo) == ["2.0.0"]
    seen = proxy.seen()
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert {r.method for r in seen} == {"GET", "CONNECT"}
    assert all(r.proxy_authorization == f"Basic {token}" and not r.refused for r in seen)


async def test_a_proxy_url_of_an_unsupported_scheme_is_a_clear_error_without_its_credentials(
    registry, endpoint_for, tmp_path, monkeypatch
):
    monkeypatch.setenv("https_proxy", f"ftp://{USER}:{PASSWORD}@127.0.0.1:9")
    with pytest.raises(RegistryConfigError) as err:
        RegistryClient(endpoint_for(registry))
    assert str(err.value) == (
        f"cannot reach registry {registry.host}: the environment variable https_proxy names a "
        "proxy with the unsupported scheme 'ftp://'; give an http:// or https:// proxy URL "
        "(http://host:port, or http://user:password@host:port)"
    )
    monkeypatch.delenv("https_proxy")
    config = write_kubeconfig(
        tmp_path / "kubeconfig", "http://127.0.0.1:9", f"ftp://{USER}:{PASSWORD}@127.0.0.1:9"
    )
    with pytest.raises(KubeError) as kube_err:
        await KubeClient.connect(str(config))
    assert str(kube_err.value) == (
        "cannot configure the Kubernetes client: the kubeconfig's proxy-url names a proxy with "
        "the unsupported scheme 'ftp://'; give an http:// or https:// proxy URL "
        "(http://host:port, or http://user:password@host:port)"
    )


def write_kubeconfig(path: Path, server: str, proxy_url: str, **cluster_fields: str) -> Path:
    cluster = {"server": server, "proxy-url": proxy_url, **cluster_fields}
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": {"token": "kube-t0ken"}}],
                "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "main",
            }
        )
    )
    return path


async def test_the_kubernetes_client_goes_through_the_kubeconfig_proxy_url(
    forward_proxy, tmp_path, monkeypatch
):
    # An environment proxy that would refuse everything: proxy-url wins over it.
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    async with KubeApiServer(token="kube-t0ken") as server:
        server.store.put(objects.application("web", "argocd", images=["nginx:1"]))
        server.store.put(objects.application("api", "argocd", images=["nginx:1"]))
        config = write_kubeconfig(tmp_path / "kubeconfig", server.url, forward_proxy.url)
        async with await KubeClient.connect(str(config)) as client:
            items, _ = await client.list_objects(APPLICATIONS, "argocd")
    assert sorted(item["metadata"]["name"] for item in items) == ["api", "web"]
    url = f"{server.url}/apis/argoproj.io/v1alpha1/namespaces/argocd/applications"
    assert [(r.method, r.target.split("?")[0]) for r in forward_proxy.seen()] == [("GET", url)]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "argocd_image_updater", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={k: v for k, v in os.environ.items() if not k.startswith("IMAGE_UPDATER_")},
        check=False,
    )


async def test_the_test_command_lists_through_the_proxy_and_never_logs_its_credentials(
    registry, plain_repo, tmp_path, monkeypatch
):
    conf = tmp_path / "registries.conf"
    conf.write_text(
        f"registries:\n- name: test\n  prefix: {registry.host}\n  api_url: {registry.url}\n"
    )
    image = f"{registry.host}/{plain_repo}"
    async with ForwardProxy(credentials=(USER, PASSWORD)) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url_with_credentials(USER, PASSWORD))
        result = await asyncio.to_thread(
            cli, "test", image, "--registries-conf-path", str(conf), "--loglevel", "trace"
        )
    assert result.returncode == 0, result.stderr
    assert f"latest image according to constraint is {image}:1.1.0" in result.stdout
    assert any(
        r.method == "GET" and r.target == tags_url(registry, plain_repo) and r.authorized
        for r in proxy.seen()
    )
    output = result.stdout + result.stderr
    assert PASSWORD not in output
    assert base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode() not in output


async def test_proxy_passwords_are_masked_in_every_log_line(
    registry, tmp_path, endpoint_for, monkeypatch
):
    token = base64.b64encode(f"{USER}:env-{PASSWORD}".encode()).decode()
    monkeypatch.setenv("HTTPS_PROXY", f"http://{USER}:env-{PASSWORD}@127.0.0.1:9")
    async with RegistryClient(endpoint_for(registry)):
        pass
    config = write_kubeconfig(
        tmp_path / "kubeconfig", "http://127.0.0.1:9", f"http://{USER}:kube-{PASSWORD}@127.0.0.1:9"
    )
    async with await KubeClient.connect(str(config)):
        pass
    line = redact(f"env-{PASSWORD} {token} kube-{PASSWORD}")
    assert line == f"{MASK} {MASK} {MASK}"


async def test_a_tls_kubernetes_api_is_verified_by_its_tls_server_name_through_the_tunnel(
    forward_proxy, tmp_path
):
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("kube.internal").configure_cert(context)
    async with KubeApiServer(token="kube-t0ken", ssl_context=context) as server:
        server.store.put(objects.application("web", "argocd", images=["nginx:1"]))
        config = write_kubeconfig(
            tmp_path / "kubeconfig",
            server.url,
            forward_proxy.url,
            **{
                "certificate-authority-data": base64.b64encode(ca.cert_pem.bytes()).decode(),
                "tls-server-name": "kube.internal",
            },
        )
        async with await KubeClient.connect(str(config)) as client:
            items, _ = await client.list_objects(APPLICATIONS, "argocd")
    assert [item["metadata"]["name"] for item in items] == ["web"]
    assert {(r.method, r.target) for r in forward_proxy.seen()} == {
        ("CONNECT", server.url.removeprefix("https://"))
    }


def test_the_proxy_serves_from_a_thread_for_synchronous_callers(registry):
    proxy = ForwardProxy().start_in_thread()
    try:
        with httpx.Client(proxy=proxy.url, trust_env=False) as client:
            assert client.get(f"{registry.url}/v2/").status_code == 200
    finally:
        proxy.stop()
    assert [(r.method, r.target) for r in proxy.seen()] == [("GET", f"{registry.url}/v2/")]
