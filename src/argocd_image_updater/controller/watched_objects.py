"""The watched copy of the Applications and ImageUpdaters (Applications from the Kubernetes API),
so that a steady cycle lists neither and decodes only what changed.

One list and watch (:func:`~argocd_image_updater.kube.watch.follow`) per kind and watched
scope (each namespace of ``--watch-namespaces``, or all), as client-go's informers keep their
store, supervised like every watch of the controller (restarted after a backoff, reported by
``/healthz`` after repeated failures: :func:`~argocd_image_updater.controller.spec_watch.
supervised`). Each object is kept at the newest version seen, in the reduced form a listing
keeps (Applications: :func:`~argocd_image_updater.model.app_object.compact_object`;
ImageUpdaters: :func:`~argocd_image_updater.config.imageupdater.compact_image_updater`), its
strings interned. A deleted object leaves the copy. The watch of ImageUpdaters also starts a
cycle early on a spec change (:class:`~argocd_image_updater.controller.spec_watch.SpecChanges`):
one watch per kind. Each change of a copy takes a new stamp (:attr:`WatchedObjects.revision`),
so that a cycle can tell that nothing it reads changed since the last one
(:class:`~argocd_image_updater.controller.kept_collection.KeptCollection`).

A copy serves the cycle (:class:`~argocd_image_updater.controller.stores.KubeStore`) only while
it is current: its watch runs and has listed (the bookmark after the listing), and every
resourceVersion seen is an integer (etcd's are), so that versions can be ordered. Otherwise —
not started (``run --once``), failing, listing again, refused — the cycle lists as it always did.

Our own writes are read back: the object a write answers (an Application's patch, an
ImageUpdater's status patch) and a fresh read of one are folded into the copy at once
(:meth:`WatchedFleet.application_written`, :meth:`WatchedFleet.image_updater_written`), so that
the next cycle never sees its own write undone because the watch event is still on its way (a
rollback hold, a status written again). The newer resourceVersion wins: an older watch event
never replaces a newer written object, and an object seen deleted is not brought back by the
answer of a write made before its deletion.

A watch the API server refuses (403: the controller's role lacks ``watch``) is said once, as a
warning naming what to grant; the cycles list every time, and the watch is tried again every
:data:`FORBIDDEN_RETRY` seconds without being reported to ``/healthz``.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools
import operator
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Final

from argocd_image_updater.config.imageupdater import compact_image_updater
from argocd_image_updater.controller.spec_watch import Restarts, SpecChanges, supervised
from argocd_image_updater.kits.interning import intern_strings
from argocd_image_updater.kube.client import APPLICATIONS, IMAGE_UPDATERS, Kind, KubeClient
from argocd_image_updater.kube.errors import KubeError
from argocd_image_updater.kube.watch import follow
from argocd_image_updater.model.app_object import compact_object
from argocd_image_updater.observe.health import Health
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.report.installed_crd import InstalledCrd

log = get_logger("controller")

FORBIDDEN_RETRY: Final = 600.0
"""Seconds before a watch the API server refused (403) is tried again."""
JOURNAL_MAX: Final = 10_000
"""How many replacements a copy journals (:meth:`WatchedObjects.replaced_since`) before it
forgets them."""
DELETIONS_KEPT: Final = 10_000
"""How many deletions a copy remembers (by key and version) to reject the answer of a write
that arrives after the object was seen deleted."""

_STAMPS: Final = itertools.count(1)
"""Each change of any copy takes the next stamp (:attr:`WatchedObjects.revision`)."""

_Key = tuple[str, str]
_FIRST: Final = operator.itemgetter(0)
_Entry = tuple[int, dict[str, Any]]
"""An object kept: its resourceVersion as an integer, and the reduced object."""
Events = AsyncIterator[tuple[str, dict[str, Any]]]


def _key(obj: Mapping[str, Any]) -> _Key:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _number(obj: Mapping[str, Any]) -> int | None:
    """The object's resourceVersion as an integer; None when it has none or another form."""
    meta = obj.get("metadata")
    version = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
    return int(version) if isinstance(version, str) and version.isdigit() else None


def reduced_application(obj: dict[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = compact_object(obj)
    intern_strings(kept)
    return kept


class WatchedObjects:
    """The objects of one kind in one scope, as last watched; see the module."""

    def __init__(
        self,
        kube: KubeClient,
        kind: Kind,
        scope: str | None,
        reduce: Callable[[dict[str, Any]], dict[str, Any]],
        what: str,
        on_event: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self.kube, self.kind, self.scope, self.what = kube, kind, scope, what
        self._reduce, self._on_event = reduce, on_event
        self.synced = False
        """Whether the watch runs and has listed: what the copy holds is current."""
        self.orderable = True
        """False once a resourceVersion that is not an integer was seen: never served."""
        self.forbidden = False
        """Whether the API server refused the watch (said once)."""
        self.forbidden_retry = FORBIDDEN_RETRY
        self._objects: dict[_Key, _Entry] = {}
        self._listing: dict[_Key, _Entry] | None = None
        self._written_while_listing: dict[_Key, _Entry] = {}
        self._deleted: dict[_Key, int] = {}
        """The version each object not kept was seen deleted at (the oldest forgotten first)."""
        self._listed_at = -1
        """The version of the last listing."""
        self.revision = next(_STAMPS)
        """A stamp taken anew whenever what :meth:`objects` hands out changes (unique across
        copies): while it holds, the very same objects are handed out."""
        self._journal: list[tuple[int, _Key]] = []
        """The objects replaced in place since :attr:`_journal_base`, with their stamps."""
        self._journal_base = self.revision
        self._stop = asyncio.Event()

    @property
    def where(self) -> str:
        return f"{self.what} in {self.scope or 'all namespaces'}"

    def objects(self) -> list[dict[str, Any]] | None:
        """The objects kept (a new list of the kept objects, shared: read them, never change
        them), or None when the copy is not current (list them)."""
        if not self.current:
            return None
        return [obj for _, obj in self._objects.values()]

    def _changed(self, replaced: _Key | None) -> None:
        """What is kept changed: a new stamp; ``replaced``: only that object, replaced in its
        place, is journaled (anything else starts the journal anew)."""
        self.revision = next(_STAMPS)
        if replaced is None or len(self._journal) >= JOURNAL_MAX:
            self._journal, self._journal_base = [], self.revision
        else:
            self._journal.append((self.revision, replaced))

    def replaced_since(self, stamp: int) -> list[tuple[str, str]] | None:
        """The keys (namespace, name) of the objects replaced in their place since the copy's
        :attr:`revision` was ``stamp``, while nothing else changed (none added, none deleted,
        not listed again); None: something else did, or it is not known."""
        if stamp < self._journal_base or not self.current:
            return None
        journal = self._journal
        return [key for _, key in journal[bisect.bisect_right(journal, stamp, key=_FIRST) :]]

    def kept(self, key: tuple[str, str]) -> dict[str, Any] | None:
        """The object kept as ``key`` (namespace, name), or None."""
        entry = self._objects.get(key)
        return entry[1] if entry is not None else None

    @property
    def current(self) -> bool:
        """Whether the copy serves: its watch runs and has listed, its versions are ordered."""
        return self.synced and self.orderable

    def __len__(self) -> int:
        return len(self._objects)

    def covers(self, namespace: str) -> bool:
        return self.scope is None or self.scope == namespace

    def written(self, obj: dict[str, Any]) -> None:
        """Fold ``obj``, the object a write of ours answered (or a fresh read of one), into
        the copy unless a newer version is kept, or it is not kept and was seen deleted since
        (or is no newer than the listing, which did not have it)."""
        if not self.synced and self._listing is None:
            return  # the copy is read again before it serves
        number = _number(obj)
        key = _key(obj)
        if number is None or not self.covers(key[0]):
            return
        entry = (number, self._reduce(obj))
        if self._listing is not None:
            known = self._written_while_listing.get(key)
            if known is None or number > known[0]:
                self._written_while_listing[key] = entry
            return
        known = self._objects.get(key)
        if known is None:
            if number > max(self._deleted.get(key, -1), self._listed_at):
                self._objects[key] = entry
                self._changed(None)
        elif number > known[0]:  # the same version is the same object: kept as it is
            self._objects[key] = entry
            self._changed(key)

    # --- the watch -----------------------------------------------------------------------------
    def _source(self) -> Events:
        async def events() -> Events:
            self._begin()
            try:
                async for event in follow(self.kube, self.kind, self.scope):
                    yield event
            except KubeError as err:
                if err.status != 403:
                    raise
                self._end()
                self._refused(err)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.forbidden_retry):
                        await self._stop.wait()
            finally:
                self._end()

        return events()

    def _watching(self) -> bool:
        """Whether the watch delivers events (not only its listing: a watch that fails right
        after each listing keeps failing, and waits ever longer before it lists again)."""
        return self._listing is None

    def _begin(self) -> None:
        self.synced = False
        self._objects, self._listing, self._written_while_listing = {}, {}, {}
        self._changed(None)

    def _end(self) -> None:
        """The watch ended: nothing kept is current any more (read again when it restarts)."""
        self.synced = False
        self._objects, self._listing, self._written_while_listing = {}, None, {}
        self._changed(None)

    def _refused(self, err: KubeError) -> None:
        if self.forbidden:
            return
        self.forbidden = True
        group, _, resource = self.kind
        log.warning(
            "cannot watch %s: %s; every cycle lists them instead. Grant the controller's "
            "role `watch` on %s.%s (the shipped manifests and Helm chart do) to read only "
            "what changed",
            self.where,
            str(err),
            resource,
            group,
        )

    def _observe(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "BOOKMARK":
            if self._listing is not None:
                version = _number(obj)
                if version is None:
                    self._unorderable()
                self._listed(version)
            return
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self._change(kind, obj)
        if self._on_event is not None:
            self._on_event(kind, obj)

    def _listed(self, version: int | None) -> None:
        """The listing is complete: it is the copy from now on, with what we wrote meanwhile
        when that is newer (or absent from the listing and newer than it)."""
        assert self._listing is not None
        objects = self._listing
        self._listed_at = version if version is not None else -1
        for key, entry in self._written_while_listing.items():
            known = objects.get(key)
            if entry[0] > (known[0] if known is not None else self._listed_at):
                objects[key] = entry
        self._objects, self._listing, self._written_while_listing = objects, None, {}
        self._deleted = {}
        self.synced = True
        self._changed(None)

    def _unorderable(self) -> None:
        if self.orderable:
            log.info(
                "the watched %s carry resourceVersions that are not integers; every cycle "
                "lists them instead",
                self.where,
            )
        self.orderable = False

    def _change(self, kind: str, obj: dict[str, Any]) -> None:
        number = _number(obj)
        if number is None:
            self._unorderable()
            return
        key = _key(obj)
        if kind == "DELETED":
            known = self._objects.get(key)
            if known is not None and known[0] <= number:
                del self._objects[key]
                self._changed(None)
            self._deleted[key] = number
            while len(self._deleted) > DELETIONS_KEPT:
                del self._deleted[next(iter(self._deleted))]
            return
        if self._listing is not None:
            self._listing[key] = (number, self._reduce(obj))
            return
        known = self._objects.get(key)
        if known is None or number > known[0]:  # the same version: the object kept already
            self._objects[key] = (number, self._reduce(obj))
            self._deleted.pop(key, None)
            self._changed(key if known is not None else None)

    async def run(
        self, stop: asyncio.Event, health: Health | None = None, restarts: Restarts | None = None
    ) -> None:
        """Keep the copy until ``stop`` is set (or the task is cancelled)."""
        self._stop = stop
        try:
            await supervised(
                f"watch of {self.where}",
                self._source,
                self._observe,
                stop,
                health,
                restarts,
                self._watching,
            )
        finally:
            self._end()


class WatchedFleet:
    """The watched copies of the Applications and (``image_updaters``) the ImageUpdaters of
    each of ``scopes`` (namespaces; None: all)."""

    def __init__(
        self,
        kube: KubeClient,
        scopes: Sequence[str] | None,
        crd: InstalledCrd | None = None,
        *,
        image_updaters: bool = True,
    ) -> None:
        self.crd = crd
        self.spec_changes = SpecChanges()
        every: list[str | None] = list(scopes) if scopes is not None else [None]
        self.applications = {
            scope: WatchedObjects(kube, APPLICATIONS, scope, reduced_application, "Applications")
            for scope in every
        }
        self.image_updaters = {
            scope: WatchedObjects(
                kube,
                IMAGE_UPDATERS,
                scope,
                self._reduced_image_updater,
                "ImageUpdaters",
                self.spec_changes,
            )
            for scope in (every if image_updaters else ())
        }

    def _reduced_image_updater(self, obj: dict[str, Any]) -> dict[str, Any]:
        keep = self.crd.keeps_applied if self.crd is not None else None
        kept: dict[str, Any] = compact_image_updater(obj, keep)
        intern_strings(kept)
        return kept

    def application_written(self, obj: dict[str, Any]) -> None:
        """Fold an Application a write of ours answered (or a fresh read) into its copy."""
        for copy in self.applications.values():
            copy.written(obj)

    def image_updater_written(self, obj: dict[str, Any]) -> None:
        """Fold an ImageUpdater a status write of ours answered (or a fresh read)."""
        for copy in self.image_updaters.values():
            copy.written(obj)

    @property
    def copies(self) -> list[WatchedObjects]:
        return [*self.applications.values(), *self.image_updaters.values()]

    def synced(self) -> bool:
        """Whether every copy is current (tests and benchmarks wait for it)."""
        return all(copy.objects() is not None for copy in self.copies)

    async def run(
        self,
        stop: asyncio.Event,
        health: Health | None = None,
        wake: asyncio.Event | None = None,
        restarts: Restarts | None = None,
    ) -> None:
        """Keep every copy until ``stop`` is set; a spec change of an ImageUpdater sets
        ``wake``."""
        self.spec_changes.wake = wake
        tasks = [asyncio.create_task(copy.run(stop, health, restarts)) for copy in self.copies]
        try:
            await stop.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
