"""Parsed views of the listed Applications, kept from one cycle to the next.

Every cycle lists every Application; most have not changed since the last cycle. An object's
``metadata.resourceVersion`` changes with every change of the object (the Kubernetes API
guarantees it; local mode derives it from the manifest's digest), so a view parsed from the same
namespace, name, uid and resourceVersion is the view of equal content and is reused instead of
reading the object again. Objects without a resourceVersion are always read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from argocd_image_updater.config.app_index import AppIndex
from argocd_image_updater.config.imageupdater import ImageUpdater, parse_image_updater
from argocd_image_updater.config.selection import SelectionMemory
from argocd_image_updater.kits.json_copy import json_copy
from argocd_image_updater.model.app_object import compact_object
from argocd_image_updater.model.application import Application

_Key = tuple[str, str]
_Entry = TypeVar("_Entry")


class _KeptPerCycle(Generic[_Entry]):
    """Entries by ``namespace/name``, of which a cycle keeps the ones it met (:meth:`begin` /
    :meth:`end`), so an object deleted from the cluster is dropped after the next cycle."""

    def __init__(self) -> None:
        self._kept: dict[_Key, _Entry] = {}
        self._seen: dict[_Key, _Entry] = {}
        self.reused = 0
        """How many entries the last cycle reused (for tests and benchmarks)."""

    def begin(self) -> None:
        self._seen = {}
        self.reused = 0

    def end(self) -> None:
        self._kept, self._seen = self._seen, {}


class ApplicationViews(_KeptPerCycle[Application]):
    """Views by ``namespace/name``, kept for the Applications the last cycle listed.

    A watched copy hands out an unchanged Application as the very object it handed out last
    cycle (its kept objects are never changed, only replaced), so a view of such an object is
    found by identity (:meth:`same_object`) with its listed key: one dictionary lookup instead
    of reading the metadata, building the key and comparing versions. With the name indexes
    kept (:meth:`indexes`) and the selections' memory, selecting 5,000 Applications of 1,000
    ImageUpdaters from a watched copy takes 10-17 ms of CPU a cycle instead of 35-55
    (``benchmarks/select_fleet.py``, 2 vCPU AMD EPYC, CPython 3.11)."""

    def __init__(self) -> None:
        super().__init__()
        self._objects: dict[int, tuple[Mapping[str, Any], Application, str]] = {}
        self._objects_seen: dict[int, tuple[Mapping[str, Any], Application, str]] = {}
        self._indexes: dict[str, tuple[list[str], AppIndex]] = {}

    def begin(self) -> None:
        super().begin()
        self._objects_seen = {}

    def end(self) -> None:
        super().end()
        self._objects, self._objects_seen = self._objects_seen, {}

    def same_object(self, obj: Mapping[str, Any]) -> tuple[Application, str] | None:
        """The view of ``obj`` and its listed key (``namespace/name``) when ``obj`` is the
        very object viewed last cycle with :meth:`view`'s ``shared_as`` (an object its source
        never changes); None: view it."""
        entry = self._objects.get(id(obj))
        if entry is None or entry[0] is not obj:
            return None
        app = entry[1]
        self._seen[(app.namespace, app.name)] = app
        self._objects_seen[id(obj)] = entry
        self.reused += 1
        return app, entry[2]

    def view(
        self, obj: Mapping[str, Any], *, compact: bool = False, shared_as: str = ""
    ) -> Application:
        """The view of ``obj``: the kept one when its stamp matches, else a new one (raises
        :class:`~argocd_image_updater.model.application.ApplicationError` as
        :meth:`Application.from_object` does). ``compact``: ``obj`` is the whole object as
        listed, reduced (:func:`~argocd_image_updater.model.app_object.compact_object`) only
        when it has to be read, so an unchanged Application costs no copy. ``shared_as``: the
        listed key of ``obj``, an object its source hands out again while it is unchanged and
        never changes (a watched copy's): the next cycle finds it by :meth:`same_object`."""
        meta = obj.get("metadata") if isinstance(obj, Mapping) else None
        version = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
        if not isinstance(version, str) or not version:
            return Application.from_object(compact_object(obj) if compact else obj)
        assert isinstance(meta, Mapping)
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        kept = self._kept.get(key)
        # The kept view's own uid and resourceVersion are its stamp.
        if (
            kept is not None
            and kept.resource_version == version
            and kept.uid == (meta.get("uid") or "")
        ):
            self.reused += 1
            app = kept
        else:
            app = Application.from_object(compact_object(obj) if compact else obj)
        self._seen[key] = app
        if shared_as:
            self._objects_seen[id(obj)] = (obj, app, shared_as)
        return app

    def replaced(self, obj: Mapping[str, Any], listed: str) -> Application:
        """The view of ``obj``, a watched copy's object put in the place of another between two
        cycles, kept as if the last cycle had viewed it (raises as :meth:`view`). The object it
        replaced stays known by identity until the next cycle that views every object."""
        app = self.view(obj, shared_as=listed)
        self._kept[(app.namespace, app.name)] = self._seen.pop((app.namespace, app.name))
        self._objects[id(obj)] = self._objects_seen.pop(id(obj))
        return app

    def renewed_index(self, namespace: str, index: AppIndex) -> None:
        """``index`` (:meth:`AppIndex.renewed`) is the one of ``namespace`` from now on."""
        names, _ = self._indexes[namespace]
        self._indexes[namespace] = (names, index)

    def indexes(self, by_namespace: Mapping[str, Sequence[Application]]) -> dict[str, AppIndex]:
        """The name index of each namespace's Applications, sharing the last cycle's positions
        where a namespace holds the same names in the same order (:meth:`AppIndex.renewed`:
        its selections find their candidates where they found them last cycle)."""
        indexes: dict[str, tuple[list[str], AppIndex]] = {}
        for namespace, apps in by_namespace.items():
            names = [app.name for app in apps]
            kept = self._indexes.get(namespace)
            same = kept is not None and kept[0] == names
            index = kept[1].renewed(apps) if kept is not None and same else AppIndex(apps)
            indexes[namespace] = (names, index)
        self._indexes = indexes
        return {namespace: index for namespace, (_, index) in indexes.items()}


_ParsedImageUpdater = tuple[tuple[Any, ...], ImageUpdater, SelectionMemory]


class ImageUpdaterViews(_KeptPerCycle[_ParsedImageUpdater]):
    """Parsed ImageUpdaters by ``namespace/name``, each with the memory of its selection
    (:class:`~argocd_image_updater.config.selection.SelectionMemory`), reused while what
    parsing reads holds: uid, generation, ``apiVersion``, ``kind`` and ``spec`` (compared as
    listed; a status write changes the resourceVersion, not these). A changed ImageUpdater is
    parsed again and selects every Application afresh. Only the ImageUpdaters of the last cycle
    are kept."""

    def reparse(self, obj: Mapping[str, Any]) -> tuple[ImageUpdater, SelectionMemory]:
        """:meth:`parse` of a watched copy's object put in the place of another between two
        cycles, kept as if the last cycle had parsed it."""
        parsed, memory = self.parse(obj, shared=True)
        key = (parsed.namespace, parsed.name)
        self._kept[key] = self._seen.pop(key)
        return parsed, memory

    def parse(
        self, obj: Mapping[str, Any], *, shared: bool = False
    ) -> tuple[ImageUpdater, SelectionMemory]:
        """The parsed ``obj`` and its selection memory; raises as
        :func:`~argocd_image_updater.config.imageupdater.parse_image_updater` does.
        ``shared``: ``obj`` is a watched copy's kept object, never changed: its own spec is
        kept as the stamp, so that the next cycle's comparison of the very same object is an
        identity check instead of a walk of the spec."""
        meta = obj.get("metadata") if isinstance(obj, Mapping) else None
        if not isinstance(meta, Mapping):
            return parse_image_updater(obj), SelectionMemory()
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        stamp = (
            meta.get("uid"),
            meta.get("generation"),
            obj.get("apiVersion"),
            obj.get("kind"),
            obj.get("spec"),
        )
        kept = self._kept.get(key)
        if kept is not None and kept[0] == stamp:
            self.reused += 1
            if shared:  # the object's own parts: compared by identity next cycle
                kept = (stamp, kept[1], kept[2])
            self._seen[key] = kept
            return kept[1], kept[2]
        parsed = parse_image_updater(obj)
        memory = SelectionMemory()
        # Kept apart from ``obj`` unless shared: its lister may change it (a JSON document).
        kept_stamp = stamp if shared else tuple(json_copy(part) for part in stamp)
        self._seen[key] = (kept_stamp, parsed, memory)
        return parsed, memory
