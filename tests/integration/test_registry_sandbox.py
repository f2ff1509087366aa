"""The local stand-ins themselves: registry process, storage writer, token server, proxy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from argocd_image_updater.model.registry import Credentials
from argocd_image_updater.registry.client import RegistryClient
from argocd_image_updater.registry.scanner import Scanner, ScanRequest
from argocd_image_updater_testing.push import ImagePusher, write_registry_storage
from argocd_image_updater_testing.registry import RegistryServer, RegistryServerError, TokenAuth
from argocd_image_updater_testing.token_server import TokenServer

START = datetime(2023, 1, 1, tzinfo=UTC)


async def test_prewritten_storage_is_served(tmp_path, endpoint_for, monkeypatch):
    monkeypatch.setenv("REGISTRY_HTTP_ADDR", "0.0.0.0:1")  # must not leak into the child
    layout = {
        "team/app": [(f"1.{i}", START + timedelta(days=i)) for i in range(30)],
        "other": [("latest", START)],
    }
    digests = write_registry_storage(tmp_path / "storage", layout)
    async with RegistryServer(storage=tmp_path / "storage") as server:
        assert server.host.startswith("127.0.0.1:")
        async with Scanner() as scanner:
            result = await scanner.scan(
                ScanRequest(endpoint_for(server), "team/app", metadata=True)
            )
    assert {t.name: t.digest for t in result.tags} == digests["team/app"]
    created = {t.name: t.images[0].created for t in result.tags}
    assert created == {tag: when for tag, when in layout["team/app"]}
    assert (tmp_path / "storage").is_dir()  # the caller's storage is left in place
    assert server.pid is None


def test_missing_binary_names_the_setup_step(tmp_path):
    server = RegistryServer(binary=str(tmp_path / "docker-registry"))
    with pytest.raises(RegistryServerError, match="install docker-registry: scripts/setup"):
        server.start()


def test_stop_ends_the_process_it_started():
    server = RegistryServer().start()
    url, pid = server.url, server.pid
    assert pid is not None
    assert httpx.get(f"{url}/v2/").status_code == 200
    server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/v2/")
    with pytest.raises(RegistryServerError, match="not running"):
        _ = server.url


async def test_token_server_access_token_only_and_anonymous_pull(tmp_path, endpoint_for):
    with TokenServer({"bob": "bob-secret-1"}, allow_anonymous=True, legacy_field_only=True) as ts:
        auth = TokenAuth(
            ts.realm, ts.service, ts.issuer, ts.write_rootcertbundle(tmp_path / "c.pem")
        )
        with RegistryServer(token=auth) as server:
            async with ImagePusher(
                server.url, credentials=Credentials("bob", "bob-secret-1")
            ) as pusher:
                await pusher.push_image("pub/app", "1.0", created=START)
            async with RegistryClient(endpoint_for(server)) as client:
                assert await client.list_tags("pub/app") == ["1.0"]
        assert ("", "repository:pub/app:pull") in ts.granted
        async with httpx.AsyncClient() as http:
            body = (await http.get(ts.realm, params={"service": ts.service})).json()
            assert set(body) == {"access_token", "expires_in"}
            assert (await http.get(ts.realm, params={"service": "other"})).status_code == 400
            assert (await http.get(ts.realm, auth=("bob", "wrong"))).status_code == 401


async def test_proxy_counts_requests_by_kind(registry, proxy, repo):
    p = await proxy(registry)
    async with ImagePusher(p.url) as pusher:  # uploads go through the proxy too
        digest = await pusher.push_image(repo, "1.0", created=START)
    async with httpx.AsyncClient() as http:
        await http.get(f"{p.url}/v2/")
        await http.head(f"{p.url}/v2/{repo}/manifests/{digest}")
    assert p.counts["ping"] == 1
    assert p.counts["manifest_head"] == 1
    assert p.counts["manifest_put"] == 1
    assert p.counts["blob_post"] == 2 and p.counts["blob_put"] == 2
