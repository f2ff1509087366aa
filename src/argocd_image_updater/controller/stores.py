"""Where Applications and ImageUpdaters are read from: the Kubernetes API or Argo CD's API."""

from __future__ import annotations

from typing import Any

from argocd_image_updater.argocd.client import ArgoCDClient
from argocd_image_updater.kube.client import APPLICATIONS, IMAGE_UPDATERS, KubeClient


class KubeStore:
    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube

    async def list_applications(self, namespace: str | None) -> list[dict[str, Any]]:
        items, _ = await self.kube.list_objects(APPLICATIONS, namespace)
        return items

    async def list_image_updaters(self, namespace: str | None) -> list[dict[str, Any]]:
        items, _ = await self.kube.list_objects(IMAGE_UPDATERS, namespace)
        return items


class ArgoCDStore:
    """Applications from Argo CD's API; ImageUpdaters (if any) still from Kubernetes."""

    def __init__(
        self, client: ArgoCDClient, kube: KubeClient | None, label_selector: str = ""
    ) -> None:
        self.client = client
        self.kube = kube
        self._selector = label_selector

    async def list_applications(self, namespace: str | None) -> list[dict[str, Any]]:
        return await self.client.list_applications(self._selector, namespace or "")

    async def list_image_updaters(self, namespace: str | None) -> list[dict[str, Any]]:
        if self.kube is None:
            return []
        items, _ = await self.kube.list_objects(IMAGE_UPDATERS, namespace)
        return items
