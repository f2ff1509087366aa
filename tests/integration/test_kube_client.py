"""The product's Kubernetes client against the Kubernetes API fake: TLS (cluster CA, client
certificates, verification off only when asked), kubeconfig lists and contexts, the in-cluster
service account and its rotated token, exec plugins run again after a 401, patches and their
conflicts, the status subresource, watches resumed from a resourceVersion and 410 Gone."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from waiting import eventually

from argocd_image_updater.kube.client import (
    APPLICATIONS,
    IMAGE_UPDATERS,
    KubeClient,
    KubeError,
)
from argocd_image_updater.kube.config import in_cluster
from argocd_image_updater.observe import metrics
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer

NS = "argocd"
TOKEN = "client-t0ken"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig(
    path: Path,
    server: str,
    *,
    cluster: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    contexts: dict[str, str] | None = None,
    current: str = "main",
) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **(cluster or {})}}],
        "users": [{"name": "u", "user": user or {}}],
        "contexts": [
            {"name": name, "context": {"cluster": "c", "user": "u", "namespace": ns}}
            for name, ns in (contexts or {"main": NS}).items()
        ],
        "current-context": current,
    }
    path.write_text(json.dumps(config))
    return path


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def server_context(ca: trustme.CA, *, client_certs: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    if client_certs:
        context.verify_mode = ssl.CERT_REQUIRED
        ca.configure_trust(context)
    return context


async def app_names(client: KubeClient) -> list[str]:
    items, _ = await client.list_objects(APPLICATIONS, NS)
    return [item["metadata"]["name"] for item in items]


@pytest.fixture
async def tls_server(ca: trustme.CA) -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(token=TOKEN, ssl_context=server_context(ca)) as server:
        server.store.put(objects.application("web", NS, images=["nginx:1"]))
        yield server


async def test_the_cluster_ca_is_trusted_and_verification_is_on_by_default(
    tls_server: KubeApiServer, ca: trustme.CA, tmp_path: Path
) -> None:
    trusted = kubeconfig(
        tmp_path / "trusted",
        tls_server.url,
        cluster={"certificate-authority-data": b64(ca.cert_pem.bytes())},
        user={"token": TOKEN},
    )
    async with await KubeClient.connect(str(trusted)) as client:
        assert await app_names(client) == ["web"]
    # A CA file relative to the kubeconfig that names it.
    ca.cert_pem.write_to_path(str(tmp_path / "ca.crt"))
    relative = kubeconfig(
        tmp_path / "relative",
        tls_server.url,
        cluster={"certificate-authority": "ca.crt"},
        user={"token": TOKEN},
    )
    async with await KubeClient.connect(str(relative)) as client:
        assert await app_names(client) == ["web"]
    # No CA: the system trust store, which does not know this server's CA.
    untrusted = kubeconfig(tmp_path / "untrusted", tls_server.url, user={"token": TOKEN})
    async with await KubeClient.connect(str(untrusted)) as client:
        with pytest.raises(KubeError, match=r"unreachable.*CERTIFICATE_VERIFY_FAILED") as err:
            await app_names(client)
        assert err.value.status == 0
    # Verification is off only when the kubeconfig says so.
    insecure = kubeconfig(
        tmp_path / "insecure",
        tls_server.url,
        cluster={"insecure-skip-tls-verify": True},
        user={"token": TOKEN},
    )
    async with await KubeClient.connect(str(insecure)) as client:
        assert await app_names(client) == ["web"]


async def test_client_certificates_from_data_and_from_files(ca: trustme.CA, tmp_path: Path) -> None:
    identity = ca.issue_cert("image-updater@example.com")
    cert_pem = identity.cert_chain_pems[0].bytes()
    key_pem = identity.private_key_pem.bytes()
    cluster = {"certificate-authority-data": b64(ca.cert_pem.bytes())}
    context = server_context(ca, client_certs=True)
    async with KubeApiServer(ssl_context=context) as server:
        server.store.put(objects.application("web", NS, images=["nginx:1"]))
        with_data = kubeconfig(
            tmp_path / "data",
            server.url,
            cluster=cluster,
            user={"client-certificate-data": b64(cert_pem), "client-key-data": b64(key_pem)},
        )
        async with await KubeClient.connect(str(with_data)) as client:
            assert await app_names(client) == ["web"]
        (tmp_path / "tls.crt").write_bytes(cert_pem)
        (tmp_path / "tls.key").write_bytes(key_pem)
        with_files = kubeconfig(
            tmp_path / "files",
            server.url,
            cluster=cluster,
            user={"client-certificate": "tls.crt", "client-key": str(tmp_path / "tls.key")},
        )
        async with await KubeClient.connect(str(with_files)) as client:
            assert await app_names(client) == ["web"]
        without = kubeconfig(tmp_path / "none", server.url, cluster=cluster)
        async with await KubeClient.connect(str(without)) as client:
            with pytest.raises(KubeError, match="unreachable"):
                await app_names(client)


async def test_a_kubeconfig_list_and_its_contexts(tmp_path: Path) -> None:
    async with KubeApiServer(token=TOKEN, namespaces=(NS, "team")) as server:
        server.store.put(objects.application("web", NS, images=["nginx:1"]))
        first = kubeconfig(
            tmp_path / "first",
            server.url,
            user={"token": TOKEN},
            contexts={"main": NS, "other": "team"},
            current="other",
        )
        # The second file's entries of the same names lose; its current-context too.
        second = kubeconfig(tmp_path / "second", "http://127.0.0.1:9", current="main")
        joined = f"{first}:{tmp_path / 'missing'}:{second}"
        async with await KubeClient.connect(joined) as client:
            assert client.namespace == "team"
            assert await app_names(client) == ["web"]
        async with await KubeClient.connect(joined, context="main") as client:
            assert client.namespace == NS
        with pytest.raises(KubeError, match=r"no context 'absent'.*--kubeconfig"):
            await KubeClient.connect(joined, context="absent")


async def test_in_cluster_reads_the_rotated_token_again(ca: trustme.CA, tmp_path: Path) -> None:
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("first-token\n")
    (account / "namespace").write_text("team\n")
    ca.cert_pem.write_to_path(str(account / "ca.crt"))
    async with KubeApiServer(
        token="first-token", namespaces=("team",), ssl_context=server_context(ca)
    ) as server:
        server.store.put(objects.application("web", "team", images=["nginx:1"]))
        env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(server.port)}
        access = in_cluster(env, account)
        assert access.namespace == "team"
        async with KubeClient(access) as client:
            items, _ = await client.list_objects(APPLICATIONS, "team")
            assert len(items) == 1
            # The kubelet rotates the token; the old one is refused from now on.
            (account / "token").write_text("second-token\n")
            server.token = "second-token"
            items, _ = await client.list_objects(APPLICATIONS, "team")
            assert len(items) == 1
    with pytest.raises(Exception, match="KUBERNETES_SERVICE_HOST"):
        in_cluster({}, account)


def exec_plugin(tmp_path: Path, tokens: list[str]) -> Path:
    """A plugin that answers the next of ``tokens`` each time it runs (and counts its runs)."""
    plugin = tmp_path / "plugin"
    state = tmp_path / "runs"
    state.write_text("0")
    plugin.write_text(
        f"#!{sys.executable}\n"
        "import json, os, pathlib\n"
        f"state = pathlib.Path({str(state)!r})\n"
        "runs = int(state.read_text())\n"
        "state.write_text(str(runs + 1))\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "assert info['spec']['interactive'] is False\n"
        f"tokens = {tokens!r}\n"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',\n"
        "    'status': {'token': tokens[min(runs, len(tokens) - 1)]}}))\n"
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    return plugin


async def test_an_exec_plugin_runs_again_after_a_401(tmp_path: Path) -> None:
    exec_plugin(tmp_path, ["first", "second"])
    async with KubeApiServer(token="first") as server:
        server.store.put(objects.application("web", NS, images=["nginx:1"]))
        config = kubeconfig(
            tmp_path / "config",
            server.url,
            user={
                "exec": {
                    "apiVersion": "client.authentication.k8s.io/v1",
                    "command": "./plugin",  # relative to the kubeconfig
                    "interactiveMode": "Never",
                }
            },
        )
        async with await KubeClient.connect(str(config)) as client:
            assert await app_names(client) == ["web"]
            assert await app_names(client) == ["web"]
            assert (tmp_path / "runs").read_text() == "1"  # the credential is kept
            server.token = "second"
            assert await app_names(client) == ["web"]
            assert (tmp_path / "runs").read_text() == "2"
            server.token = "third"  # the plugin cannot get it: the 401 is the caller's
            with pytest.raises(KubeError) as err:
                await app_names(client)
            assert err.value.status == 401


async def test_patches_conflicts_status_and_their_messages(tmp_path: Path) -> None:
    async with KubeApiServer(token=TOKEN) as server:
        server.store.put(objects.application("web", NS, images=["nginx:1"]))
        config = server.write_kubeconfig(tmp_path / "config", namespace=NS)
        async with await KubeClient.connect(str(config)) as client:
            app = await client.get_object(APPLICATIONS, NS, "web")
            version = app["metadata"]["resourceVersion"]
            guard = {"op": "replace", "path": "/metadata/resourceVersion", "value": version}
            label = {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}
            requests = metrics.K8S_API_REQUESTS._value.get()
            errors = metrics.K8S_API_ERRORS._value.get()
            patched = await client.json_patch(APPLICATIONS, NS, "web", [guard, label])
            assert patched["metadata"]["labels"] == {"a": "b"}
            with pytest.raises(KubeError) as err:
                await client.json_patch(APPLICATIONS, NS, "web", [guard, label])
            assert err.value.is_conflict
            assert str(err.value).startswith("Kubernetes API: ") and "(HTTP 409)" in str(err.value)
            with pytest.raises(KubeError) as missing:
                await client.get_object(APPLICATIONS, NS, "absent")
            assert missing.value.is_not_found and missing.value.reason == "NotFound"
            assert metrics.K8S_API_REQUESTS._value.get() == requests + 3
            assert metrics.K8S_API_ERRORS._value.get() == errors + 2

            server.store.put(objects.image_updater("iu", NS))
            status = {"status": {"lastCheckedAt": "2026-01-01T00:00:00Z"}}
            result = await client.merge_patch_status(IMAGE_UPDATERS, NS, "iu", status)
            assert result["status"]["lastCheckedAt"] == "2026-01-01T00:00:00Z"
            secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
            secret["data"] = {"k": b64(b"v\x00")}
            await client.request("POST", f"/api/v1/namespaces/{NS}/secrets", body=secret)
            assert await client.read_secret(NS, "s") == {"k": b"v\x00"}


async def test_a_watch_resumes_from_its_version_and_a_compacted_one_is_410(
    tmp_path: Path,
) -> None:
    async with KubeApiServer(token=TOKEN) as server:
        server.store.put(objects.application("one", NS, images=["nginx:1"]))
        config = server.write_kubeconfig(tmp_path / "config", namespace=NS)
        async with await KubeClient.connect(str(config)) as client:
            _, version = await client.list_objects(APPLICATIONS, NS)
            server.store.put(objects.application("two", NS, images=["nginx:1"]))
            seen: list[tuple[str, str]] = []

            async def follow(since: str) -> None:
                async for kind, obj in client.watch_objects(APPLICATIONS, NS, since, 30):
                    if kind != "BOOKMARK":  # the watch was accepted (and the server's own)
                        seen.append((kind, obj["metadata"]["name"]))

            task = asyncio.create_task(follow(version))
            try:
                await eventually(lambda: seen == [("ADDED", "two")], "the event after the list")
                server.store.put(objects.application("three", NS, images=["nginx:1"]))
                await eventually(lambda: seen[-1:] == [("ADDED", "three")], "a live event")
            finally:
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            server.store.compact()
            with pytest.raises(KubeError) as gone:
                await follow(version)
            assert gone.value.status == 410 and "(HTTP 410)" in str(gone.value)


async def test_tls_server_name_is_the_name_checked(ca: trustme.CA, tmp_path: Path) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("kube.internal").configure_cert(context)
    async with KubeApiServer(token=TOKEN, ssl_context=context) as server:
        server.store.put(objects.application("web", NS, images=["nginx:1"]))
        cluster = {"certificate-authority-data": b64(ca.cert_pem.bytes())}
        named = kubeconfig(
            tmp_path / "named",
            server.url,
            cluster={**cluster, "tls-server-name": "kube.internal"},
            user={"token": TOKEN},
        )
        async with await KubeClient.connect(str(named)) as client:
            assert await app_names(client) == ["web"]
        plain = kubeconfig(tmp_path / "plain", server.url, cluster=cluster, user={"token": TOKEN})
        async with await KubeClient.connect(str(plain)) as client:
            with pytest.raises(KubeError, match="unreachable"):
                await app_names(client)
