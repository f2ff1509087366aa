"""Credentials that change while the client runs, against the API fake over a socket: client
certificate files replaced on disk, an exec plugin's expiring certificate, the oidc auth
provider's id-token renewed at a fake issuer; impersonation fields; and the refusal of
insecure-skip-tls-verify with a CA."""

from __future__ import annotations

import base64
import json
import os
import ssl
import stat
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trustme

from argocd_image_updater.kube.client import APPLICATIONS, KubeClient, KubeError
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import Impersonation, KubeApiServer
from argocd_image_updater_testing.oidc import OidcIssuer

NS = "argocd"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig(path: Path, server: str, cluster: dict[str, Any], user: dict[str, Any]) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u", "namespace": NS}}],
        "current-context": "main",
    }
    path.write_text(json.dumps(config))
    return path


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def mtls_server(ca: trustme.CA) -> KubeApiServer:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    context.verify_mode = ssl.CERT_REQUIRED
    ca.configure_trust(context)
    server = KubeApiServer(ssl_context=context)
    server.store.put(objects.application("web", NS, images=["nginx:1"]))
    return server


def identity(ca: trustme.CA, user: str) -> tuple[bytes, bytes]:
    cert = ca.issue_cert(f"{user}.example.com", common_name=user)
    return cert.cert_chain_pems[0].bytes(), cert.private_key_pem.bytes()


async def list_apps(client: KubeClient) -> None:
    items, _ = await client.list_objects(APPLICATIONS, NS)
    assert [i["metadata"]["name"] for i in items] == ["web"]


async def test_client_certificate_files_replaced_on_disk(ca: trustme.CA, tmp_path: Path) -> None:
    def install(user: str) -> None:
        cert, key = identity(ca, user)
        for name, content in (("tls.crt", cert), ("tls.key", key)):
            (tmp_path / f"{name}.new").write_bytes(content)
            os.replace(tmp_path / f"{name}.new", tmp_path / name)  # as a rotation does

    install("first")
    async with mtls_server(ca) as server:
        config = kubeconfig(
            tmp_path / "config",
            server.url,
            {"certificate-authority-data": b64(ca.cert_pem.bytes())},
            {"client-certificate": "tls.crt", "client-key": "tls.key"},
        )
        async with await KubeClient.connect(str(config)) as client:
            await list_apps(client)
            await list_apps(client)
            assert server.client_users == ["first", "first"]
            install("second")
            await list_apps(client)
            assert server.client_users[-1] == "second"
            # Half a rotation (the certificate, not yet its key) keeps the last pair.
            cert, _ = identity(ca, "third")
            (tmp_path / "tls.crt").write_bytes(cert)
            await list_apps(client)
            assert server.client_users[-1] == "second"


def cert_plugin(tmp_path: Path, ca: trustme.CA) -> Path:
    """A plugin answering a new certificate each run: the first one already expired."""
    past = (datetime.now(UTC) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    future = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    answers = []
    for run, expires in enumerate((past, future, future)):
        cert, key = identity(ca, f"run{run + 1}")
        answers.append(
            {
                "apiVersion": "client.authentication.k8s.io/v1",
                "kind": "ExecCredential",
                "status": {
                    "token": f"tok{run + 1}",
                    "clientCertificateData": cert.decode(),
                    "clientKeyData": key.decode(),
                    "expirationTimestamp": expires,
                },
            }
        )
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    (tmp_path / "runs").write_text("0")
    plugin = tmp_path / "plugin"
    plugin.write_text(
        f"#!{sys.executable}\n"
        "import json, pathlib\n"
        f"base = pathlib.Path({str(tmp_path)!r})\n"
        "runs = int((base / 'runs').read_text())\n"
        "(base / 'runs').write_text(str(runs + 1))\n"
        "print(json.dumps(json.loads((base / 'answers.json').read_text())[runs]))\n"
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    return plugin


async def test_an_exec_plugin_certificate_is_renewed(ca: trustme.CA, tmp_path: Path) -> None:
    plugin = cert_plugin(tmp_path, ca)
    async with mtls_server(ca) as server:
        server.token = "tok2"
        config = kubeconfig(
            tmp_path / "config",
            server.url,
            {"certificate-authority-data": b64(ca.cert_pem.bytes())},
            {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}},
        )
        async with await KubeClient.connect(str(config)) as client:
            # The first certificate has expired already: the plugin ran again for a new one.
            assert (tmp_path / "runs").read_text() == "2"
            await list_apps(client)
            await list_apps(client)
            assert (tmp_path / "runs").read_text() == "2"  # kept while it is valid
            assert server.client_users == ["run2", "run2"]
            # Refused before it expires: run again after the 401, its new certificate used
            # on new connections.
            server.token = "tok3"
            await list_apps(client)
            assert (tmp_path / "runs").read_text() == "3"
            assert server.client_users[-1] == "run3"


def oidc_user(issuer: OidcIssuer, id_token: str, refresh_token: str = "r0") -> dict[str, Any]:
    config = {
        "idp-issuer-url": issuer.url,
        "client-id": "kube",
        "client-secret": "s3cret",
        "id-token": id_token,
    }
    if refresh_token:
        config["refresh-token"] = refresh_token
    return {"auth-provider": {"name": "oidc", "config": config}}


@pytest.mark.parametrize("basic_auth", [True, False])
async def test_oidc_id_tokens_are_renewed(tmp_path: Path, basic_auth: bool) -> None:
    async with KubeApiServer(token="not-yet") as server:
        server.store.put(objects.application("web", NS, images=["nginx:1"]))

        def accept(token: str) -> None:
            server.token = token

        async with OidcIssuer(
            client_id="kube",
            client_secret="s3cret",
            refresh_token="r0",
            basic_auth=basic_auth,
            on_token=accept,
        ) as issuer:
            expired = issuer.id_token(-60)
            config = kubeconfig(tmp_path / "config", server.url, {}, oidc_user(issuer, expired))
            async with await KubeClient.connect(str(config)) as client:
                await list_apps(client)  # renewed before the first request
                await list_apps(client)
                assert len(issuer.issued) == 1
                assert issuer.request_count("get", "discovery") == 1
                # The API server stops accepting it (revoked): renewed with the rotated
                # refresh token after the 401.
                server.token = "something-else"
                await list_apps(client)
                assert len(issuer.issued) == 2 and server.token == issuer.issued[-1]

            # Expired with nothing to renew it: a clear error.
            config = kubeconfig(
                tmp_path / "stale", server.url, {}, oidc_user(issuer, expired, refresh_token="")
            )
            async with await KubeClient.connect(str(config)) as client:
                with pytest.raises(KubeError, match="id-token has expired and it has no"):
                    await list_apps(client)
            # A refresh token the issuer refuses: its error is named.
            config = kubeconfig(
                tmp_path / "revoked", server.url, {}, oidc_user(issuer, expired, "gone")
            )
            async with await KubeClient.connect(str(config)) as client:
                with pytest.raises(KubeError, match=r"HTTP 400\): invalid_grant revoked"):
                    await list_apps(client)


async def test_impersonation_fields_are_sent(tmp_path: Path) -> None:
    async with KubeApiServer(token="t0ken") as server:
        server.store.put(objects.application("web", NS, images=["nginx:1"]))
        user = {
            "token": "t0ken",
            "as": "jane",
            "as-uid": "42",
            "as-groups": ["devs", "ops"],
            "as-user-extra": {"example.com/scope": ["a", "b"]},
        }
        config = kubeconfig(tmp_path / "config", server.url, {}, user)
        wanted = Impersonation("jane", ("devs", "ops"), "42", {"example.com/scope": ["a", "b"]})
        async with await KubeClient.connect(str(config)) as client:
            await list_apps(client)
            assert server.impersonations == [wanted]
            async for _ in client.watch_objects(APPLICATIONS, NS):
                break
            assert server.impersonations == [wanted, wanted]
        single = kubeconfig(tmp_path / "single", server.url, {}, {"token": "t0ken", "as": "bob"})
        async with await KubeClient.connect(str(single)) as client:
            await list_apps(client)
            assert server.impersonations[-1] == Impersonation("bob")


async def test_insecure_with_a_ca_is_refused(ca: trustme.CA, tmp_path: Path) -> None:
    cluster = {"insecure-skip-tls-verify": True, "certificate-authority-data": b64(b"x")}
    config = kubeconfig(tmp_path / "config", "https://127.0.0.1:9", cluster, {"token": "t"})
    with pytest.raises(
        KubeError, match="specifying a root certificates file with the insecure flag"
    ):
        await KubeClient.connect(str(config))
