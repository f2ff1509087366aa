"""Connecting to the Kubernetes API like kubectl: kubeconfig token, exec credential plugins."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from argocd_image_updater.kube.client import APPLICATIONS, KubeClient, KubeError
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer

TOKEN = "exec-plugin-t0ken"


def exec_kubeconfig(kube: KubeApiServer, tmp_path: Path, token: str) -> Path:
    plugin = tmp_path / "credential-plugin"
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": {"token": token},
    }
    plugin.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(credential))})\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": kube.url}}],
        "users": [
            {
                "name": "u",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": str(plugin),
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
        "contexts": [
            {"name": "ctx", "context": {"cluster": "c", "user": "u", "namespace": "argocd"}}
        ],
        "current-context": "ctx",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    return path


async def test_exec_credential_plugin_and_context_namespace(tmp_path: Path) -> None:
    async with KubeApiServer(token=TOKEN, namespaces=("argocd",)) as kube:
        kube.store.put(objects.application("web", "argocd", images=["nginx:1.25"]))
        client = await KubeClient.connect(str(exec_kubeconfig(kube, tmp_path, TOKEN)))
        try:
            assert client.namespace == "argocd"
            items, _ = await client.list_objects(APPLICATIONS, client.namespace)
            assert [i["metadata"]["name"] for i in items] == ["web"]
        finally:
            await client.close()


async def test_wrong_exec_token_is_a_clear_error(tmp_path: Path) -> None:
    async with KubeApiServer(token=TOKEN, namespaces=("argocd",)) as kube:
        client = await KubeClient.connect(str(exec_kubeconfig(kube, tmp_path, "wrong")))
        try:
            with pytest.raises(KubeError) as err:
                await client.list_objects(APPLICATIONS, "argocd")
            assert err.value.status == 401
        finally:
            await client.close()


async def test_missing_kubeconfig_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(KubeError, match="--kubeconfig"):
        await KubeClient.connect(str(tmp_path / "absent"))
