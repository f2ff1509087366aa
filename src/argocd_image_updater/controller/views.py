"""Parsed views of the listed Applications, kept from one cycle to the next.

Every cycle lists every Application; most have not changed since the last cycle. An object's
``metadata.resourceVersion`` changes with every change of the object (the Kubernetes API
guarantees it; local mode derives it from the manifest's digest), so a view parsed from the same
namespace, name, uid and resourceVersion is the view of equal content and is reused instead of
reading the object again. Objects without a resourceVersion are always read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

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
    """Views by ``namespace/name``, kept for the Applications the last cycle listed."""

    def view(self, obj: Mapping[str, Any], *, compact: bool = False) -> Application:
        """The view of ``obj``: the kept one when its stamp matches, else a new one (raises
        :class:`~argocd_image_updater.model.application.ApplicationError` as
        :meth:`Application.from_object` does). ``compact``: ``obj`` is the whole object as
        listed, reduced (:func:`~argocd_image_updater.model.app_object.compact_object`) only
        when it has to be read, so an unchanged Application costs no copy."""
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
        return app


_ParsedImageUpdater = tuple[tuple[Any, ...], ImageUpdater, SelectionMemory]


class ImageUpdaterViews(_KeptPerCycle[_ParsedImageUpdater]):
    """Parsed ImageUpdaters by ``namespace/name``, each with the memory of its selection
    (:class:`~argocd_image_updater.config.selection.SelectionMemory`), reused while what
    parsing reads holds: uid, generation, ``apiVersion``, ``kind`` and ``spec`` (compared as
    listed; a status write changes the resourceVersion, not these). A changed ImageUpdater is
    parsed again and selects every Application afresh. Only the ImageUpdaters of the last cycle
    are kept."""

    def parse(self, obj: Mapping[str, Any]) -> tuple[ImageUpdater, SelectionMemory]:
        """The parsed ``obj`` and its selection memory; raises as
        :func:`~argocd_image_updater.config.imageupdater.parse_image_updater` does."""
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
            self._seen[key] = kept
            return kept[1], kept[2]
        parsed = parse_image_updater(obj)
        memory = SelectionMemory()
        # Kept apart from ``obj``, which its lister may change: the spec is a JSON document.
        self._seen[key] = (tuple(json_copy(part) for part in stamp), parsed, memory)
        return parsed, memory
