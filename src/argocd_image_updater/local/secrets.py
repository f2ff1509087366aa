"""Secrets and ConfigMaps from a directory, for local mode (``--secrets-dir``).

The layout is the one Kubernetes uses when it mounts a Secret or ConfigMap: one file per key,
in ``<dir>/<namespace>/<name>/<key>``. So ``secret:``/``pullsecret:`` registry credentials,
``git:secret:`` references, Argo CD repository secrets (any secret with a ``url`` key in the
Argo CD namespace: the same URL by Argo CD's rules is a repository secret, otherwise the longest
matching URL prefix is used as a credential template) and the ``argocd-ssh-known-hosts-cm`` /
``argocd-tls-certs-cm`` ConfigMaps work without a cluster. Names are checked like Kubernetes
names, so a reference cannot reach outside the directory.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from argocd_image_updater.config.secrets import (
    FileSecretReader,
    SecretError,
    is_valid_namespace,
    is_valid_secret_name,
)
from argocd_image_updater.kube.errors import KubeError
from argocd_image_updater.writeback.git import SECRET_TYPE_LABEL


class DirectoryObjects:
    """:class:`~argocd_image_updater.writeback.git.credentials.ClusterObjects` over files."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.reader = FileSecretReader(self.root)

    async def read_secret(self, namespace: str, name: str) -> dict[str, bytes]:
        try:
            return dict(await self.reader.read(namespace, name))
        except SecretError as err:
            raise KubeError(404, f"{self.root}: {err}") from None

    async def read_configmap(self, namespace: str, name: str) -> dict[str, str]:
        data = await self.read_secret(namespace, name)
        return {key: value.decode("utf-8", "replace") for key, value in data.items()}

    async def list_secrets(self, namespace: str, label_selector: str = "") -> list[dict[str, Any]]:
        if not is_valid_namespace(namespace):
            return []
        names = await asyncio.to_thread(self._names, namespace)
        out: list[dict[str, Any]] = []
        for name in names:
            data = await self.read_secret(namespace, name)
            if label_selector.startswith(SECRET_TYPE_LABEL) and "url" not in data:
                continue
            for kind in ("repository", "repo-creds"):
                out.append({"name": name, "labels": {SECRET_TYPE_LABEL: kind}, "data": data})
        return out

    def _names(self, namespace: str) -> list[str]:
        directory = self.root / namespace
        if not directory.is_dir():
            return []
        return sorted(
            p.name for p in directory.iterdir() if p.is_dir() and is_valid_secret_name(p.name)
        )
