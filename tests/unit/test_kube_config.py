"""Kubeconfig files read as kubectl reads them, and what is refused with which message (no
server is contacted)."""

from __future__ import annotations

import base64
import json
import ssl
from pathlib import Path
from typing import Any

import pytest

from argocd_image_updater.kube.auth import BasicAuth, ExecPlugin, FileToken, StaticToken
from argocd_image_updater.kube.config import (
    KubeConfigError,
    from_kubeconfig,
    impersonation,
    in_cluster,
    kubeconfig_paths,
)
from argocd_image_updater.kube.oidc import OidcProvider, token_expiry
from argocd_image_updater.kube.retry import Safety, retry_after, safety


def write(path: Path, *, cluster: dict[str, Any], user: dict[str, Any], **top: Any) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "main",
        **top,
    }
    path.write_text(json.dumps(config))
    return path


SERVER = {"server": "https://kube.example:6443/"}


async def test_each_kind_of_user(tmp_path: Path) -> None:
    cases: list[tuple[dict[str, Any], type]] = [
        ({"token": "t0ken-1"}, StaticToken),
        ({"tokenFile": "token"}, FileToken),
        ({"username": "admin", "password": "s3cret"}, BasicAuth),
        ({"auth-provider": {"name": "oidc", "config": {"id-token": "id-t0ken"}}}, OidcProvider),
    ]
    for index, (user, kind) in enumerate(cases):
        access = await from_kubeconfig([write(tmp_path / f"c{index}", cluster=SERVER, user=user)])
        assert isinstance(access.auth, kind), user
        assert access.server == "https://kube.example:6443"
        assert access.namespace == "default"
        assert access.verify.verify_mode == ssl.CERT_REQUIRED and access.verify.check_hostname
    access = await from_kubeconfig([write(tmp_path / "tf", cluster=SERVER, user=cases[1][0])])
    assert isinstance(access.auth, FileToken) and access.auth.path == tmp_path / "token"
    anonymous = await from_kubeconfig([write(tmp_path / "anon", cluster=SERVER, user={})])
    assert anonymous.auth is None


async def test_tls_settings(tmp_path: Path) -> None:
    insecure = {**SERVER, "insecure-skip-tls-verify": True}
    access = await from_kubeconfig([write(tmp_path / "i", cluster=insecure, user={})])
    assert access.verify.verify_mode == ssl.CERT_NONE
    # Only the literal true turns verification off.
    quoted = {**SERVER, "insecure-skip-tls-verify": "false"}
    access = await from_kubeconfig([write(tmp_path / "q", cluster=quoted, user={})])
    assert access.verify.verify_mode == ssl.CERT_REQUIRED
    named = {**SERVER, "tls-server-name": "api.internal", "proxy-url": "http://proxy:3128"}
    access = await from_kubeconfig([write(tmp_path / "n", cluster=named, user={})])
    assert (access.tls_server_name, access.proxy) == ("api.internal", "http://proxy:3128")


@pytest.mark.parametrize(
    ("cluster", "user", "top", "message"),
    [
        (SERVER, {}, {"current-context": ""}, "no current-context"),
        (SERVER, {}, {"current-context": "other"}, "no context 'other'"),
        ({}, {}, {}, "has no server"),
        (
            {**SERVER, "certificate-authority-data": "not base64!"},
            {},
            {},
            "certificate-authority-data is not valid base64",
        ),
        (
            {**SERVER, "certificate-authority-data": base64.b64encode(b"no pem").decode()},
            {},
            {},
            "cannot load the cluster CA",
        ),
        ({**SERVER, "certificate-authority": "absent.crt"}, {}, {}, "absent.crt does not exist"),
        (SERVER, {"auth-provider": {"name": "gcp"}}, {}, "auth provider 'gcp' is not supported"),
        (
            SERVER,
            {"client-certificate-data": base64.b64encode(b"x").decode()},
            {},
            "without client-key",
        ),
        (
            {**SERVER, "insecure-skip-tls-verify": True, "certificate-authority": "ca.crt"},
            {},
            {},
            "specifying a root certificates file with the insecure flag is not allowed",
        ),
        (
            {
                **SERVER,
                "insecure-skip-tls-verify": True,
                "certificate-authority-data": base64.b64encode(b"x").decode(),
            },
            {},
            {},
            "specifying a root certificates file with the insecure flag is not allowed",
        ),
        (SERVER, {"as-groups": ["admins"]}, {}, "set 'as' too"),
        (SERVER, {"as": "bob", "as-groups": "admins"}, {}, "as-groups is not a list"),
        (SERVER, {"as": "bob\nX-Evil: 1"}, {}, "Impersonate-User holds a control character"),
        (SERVER, {"auth-provider": {"name": "oidc", "config": {}}}, {}, "neither an id-token"),
        (
            SERVER,
            {"auth-provider": {"name": "oidc", "config": {"refresh-token": "r"}}},
            {},
            "needs idp-issuer-url and client-id",
        ),
    ],
)
async def test_refusals_name_the_field(
    tmp_path: Path, cluster: dict[str, Any], user: dict[str, Any], top: dict[str, Any], message: str
) -> None:
    path = write(tmp_path / "config", cluster=cluster, user=user, **top)
    with pytest.raises(KubeConfigError, match=message):
        await from_kubeconfig([path])


async def test_undefined_names_and_files(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(
        json.dumps(
            {
                "contexts": [{"name": "main", "context": {"cluster": "nowhere", "user": "u"}}],
                "current-context": "main",
            }
        )
    )
    with pytest.raises(KubeConfigError, match="cluster 'nowhere', which is not defined"):
        await from_kubeconfig([path])
    with pytest.raises(KubeConfigError, match="does not exist"):
        await from_kubeconfig([tmp_path / "absent"])
    (tmp_path / "bad").write_text("clusters: [unclosed")
    with pytest.raises(KubeConfigError, match="not valid YAML"):
        await from_kubeconfig([tmp_path / "bad"])


def test_exec_plugin_settings(tmp_path: Path) -> None:
    spec = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "bin/plugin",
        "args": ["get-token"],
        "env": [{"name": "A", "value": "1"}],
        "provideClusterInfo": True,
    }
    plugin = ExecPlugin.from_config(spec, tmp_path, cluster={"server": "https://x"})
    assert plugin.command == str(tmp_path / "bin/plugin")
    assert (plugin.args, plugin.env, plugin.cluster) == (
        ["get-token"],
        {"A": "1"},
        {"server": "https://x"},
    )
    on_path = ExecPlugin.from_config(
        {**spec, "command": "aws", "provideClusterInfo": False}, tmp_path
    )
    assert on_path.command == "aws" and on_path.cluster is None
    with pytest.raises(Exception, match="interactiveMode Always"):
        ExecPlugin.from_config({**spec, "interactiveMode": "Always"}, tmp_path)
    with pytest.raises(Exception, match="apiVersion"):
        ExecPlugin.from_config({**spec, "apiVersion": "v9"}, tmp_path)


def test_kubeconfig_paths() -> None:
    assert kubeconfig_paths("/a:/b", {}) == [Path("/a"), Path("/b")]
    assert kubeconfig_paths("", {"KUBECONFIG": "/c"}) == [Path("/c")]
    assert kubeconfig_paths("", {}) == [Path("~/.kube/config").expanduser()]


def test_in_cluster_needs_its_files(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(KubeConfigError, match="token"):
        in_cluster(env, tmp_path)


def test_impersonation_fields() -> None:
    user = {
        "as": "system:serviceaccount:argocd:updater",
        "as-uid": "1234",
        "as-groups": ["team-a", "team-b"],
        "as-user-extra": {"scopes": ["view", "edit"], "example.com/reason": "audit"},
    }
    assert impersonation(user) == [
        ("Impersonate-User", "system:serviceaccount:argocd:updater"),
        ("Impersonate-Uid", "1234"),
        ("Impersonate-Group", "team-a"),
        ("Impersonate-Group", "team-b"),
        ("Impersonate-Extra-scopes", "view"),
        ("Impersonate-Extra-scopes", "edit"),
        ("Impersonate-Extra-example.com%2Freason", "audit"),
    ]
    assert impersonation({}) == []


def test_which_requests_may_be_sent_again() -> None:
    assert safety("GET", None) is Safety.ANY
    assert safety("DELETE", None) is Safety.ANY
    assert safety("POST", {"metadata": {"resourceVersion": "3"}}) is Safety.THROTTLED
    assert safety("PUT", {"metadata": {"name": "a"}}) is Safety.THROTTLED
    assert safety("PUT", {"metadata": {"resourceVersion": "3"}}) is Safety.ANY
    guard = {"op": "replace", "path": "/metadata/resourceVersion", "value": "3"}
    label = {"op": "add", "path": "/metadata/labels", "value": {}}
    assert safety("PATCH", [guard, label]) is Safety.ANY
    assert safety("PATCH", [{"op": "test", "path": "/spec", "value": {}}]) is Safety.ANY
    assert safety("PATCH", [label]) is Safety.THROTTLED
    assert safety("PATCH", {"status": {}}) is Safety.THROTTLED


def test_retry_after_values() -> None:
    assert retry_after("3") == 3.0
    assert retry_after("") is None and retry_after("soon") is None
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past


def test_token_expiry_reads_the_exp_claim() -> None:
    def jwt(claims: dict[str, Any]) -> str:
        payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
        return f"eyJhbGciOiJub25lIn0.{payload}.sig"

    assert token_expiry(jwt({"exp": 1700000000})) == 1700000000.0
    assert token_expiry(jwt({"sub": "x"})) is None
    assert token_expiry("opaque") is None
    assert token_expiry("a.!!!.c") is None
