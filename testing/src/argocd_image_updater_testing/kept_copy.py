"""A store of Applications and ImageUpdaters handed out as a watched copy hands them out: kept
objects, an unchanged one as the very same object, a changed one replaced by a new object (the
``CompactPage`` form of ``controller.stores.KubeStore`` while its copy is current)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from argocd_image_updater.pipeline.ports import CompactPage


class KeptCopy:
    """``apps`` and ``updaters`` by name; replace an entry to change it, never change it."""

    def __init__(self) -> None:
        self.apps: dict[str, dict[str, Any]] = {}
        self.updaters: dict[str, dict[str, Any]] = {}
        self.version = 0

    def stamped(self, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` with a new resourceVersion (and a uid and generation, as the API server
        gives them)."""
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        obj["metadata"]["uid"] = f"uid-{obj['metadata']['name']}"
        obj["metadata"].setdefault("generation", 1)
        return obj

    async def _pages(self) -> AsyncIterator[list[dict[str, Any]]]:
        yield CompactPage(self.apps.values())

    def application_pages(self, namespace: str | None) -> AsyncIterator[list[dict[str, Any]]]:
        return self._pages()

    async def list_image_updaters(self, namespace: str | None) -> list[dict[str, Any]]:
        return CompactPage(self.updaters.values())

    async def get_application(self, namespace: str, name: str) -> dict[str, Any] | None:
        return None
