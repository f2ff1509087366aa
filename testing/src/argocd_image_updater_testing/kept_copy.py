"""A store of Applications and ImageUpdaters handed out as a watched copy hands them out: kept
objects, an unchanged one as the very same object, a changed one replaced by a new object (the
``CompactPage`` form of ``controller.stores.KubeStore`` while its copy is current)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable, Sequence
from typing import Any

from argocd_image_updater.pipeline.ports import CompactPage, Replaced


class _Counted(dict[str, dict[str, Any]]):
    """A dictionary that counts the entries set and deleted, and journals them."""

    def __init__(self) -> None:
        super().__init__()
        self.changes = 0
        self.journal: list[tuple[str, bool]] = []
        """Each change: the key, and whether its entry was replaced in its place."""

    def __setitem__(self, key: str, value: dict[str, Any]) -> None:
        self.journal.append((key, key in self))
        super().__setitem__(key, value)
        self.changes += 1

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.journal.append((key, False))
        self.changes += 1

    def replaced_since(self, changes: int) -> dict[tuple[str, str], dict[str, Any]] | None:
        found: dict[tuple[str, str], dict[str, Any]] = {}
        since = self.journal[changes:]
        if not all(in_place for _, in_place in since):
            return None
        for key, _ in since:
            meta = self[key]["metadata"]
            found[(meta.get("namespace", ""), meta["name"])] = self[key]
        return found


class KeptCopy:
    """``apps`` and ``updaters`` by name; replace an entry to change it, never change it. Its
    :meth:`revision` changes with every entry set or deleted (a watched copy's stamp)."""

    def __init__(self) -> None:
        self.apps = _Counted()
        self.updaters = _Counted()
        self.version = 0

    def revision(self, scopes: Sequence[str | None], image_updaters: bool) -> Hashable | None:
        return (self.apps.changes, self.updaters.changes)

    def replaced_since(
        self, stamp: Hashable, scopes: Sequence[str | None], image_updaters: bool
    ) -> Replaced | None:
        assert isinstance(stamp, tuple)
        apps = self.apps.replaced_since(stamp[0])
        updaters = self.updaters.replaced_since(stamp[1])
        return (apps, updaters) if apps is not None and updaters is not None else None

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
