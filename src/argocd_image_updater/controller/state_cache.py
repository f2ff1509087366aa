"""The watched copy of a sharded fleet's state ConfigMaps (``run --sharding``), so that a load
of the remembered record makes no request in a steady cycle.

One list and watch (:func:`~argocd_image_updater.kube.watch.follow`) of the ConfigMaps of the
controller's namespace labelled ``argocd-image-updater.argoproj.io/state`` (a key's or a
repository's), supervised like every watch of the controller (restarted after a backoff, reported
by ``/healthz`` after repeated failures: :func:`~argocd_image_updater.controller.spec_watch.
supervised`). Only the objects the replica holds are kept (:meth:`StateCache.keep`: those of its
keys and their repositories, as it read them), each at the newest version seen.

The store (:class:`~argocd_image_updater.controller.shard_state.ShardedStateStore`) asks
:meth:`StateCache.newer` whether the object changed since the version it read or wrote: no
(nothing newer watched), yes (the newer copy), or "cannot tell" — the watch is not running or
not listed yet, or the versions cannot be ordered — when it reads the object with a request.
ResourceVersions are ordered as integers (etcd's are); any other form is never ordered, so a
server whose versions are not integers costs a read per object, never a stale copy. The store
tells the cache the versions it wrote (:meth:`StateCache.wrote`), so that the watch's echo of a
cycle's own saves changes no answer and the next load hands out the record as saved.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Collection, Mapping
from typing import Any, Final

from argocd_image_updater.controller.spec_watch import Restarts, supervised
from argocd_image_updater.controller.state_objects import STATE_KIND_LABEL
from argocd_image_updater.kube.client import CONFIGMAPS, KubeClient
from argocd_image_updater.kube.watch import follow
from argocd_image_updater.observe.health import Health

UNKNOWN: Final = object()
"""What :meth:`StateCache.newer` answers when it cannot tell."""


def _version(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("resourceVersion") or "") if isinstance(meta, Mapping) else ""


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, Mapping) else ""


def _order(one: str, other: str) -> int | None:
    """-1, 0 or 1 as version ``one`` is older than, the same as or newer than ``other`` ("":
    none); None when they cannot be ordered."""
    if one == other:
        return 0
    if not other:
        return 1
    if not one:
        return -1
    if one.isdigit() and other.isdigit():
        return 1 if int(one) > int(other) else -1
    return None


class StateCache:
    """The state ConfigMaps this replica holds, as last watched; see the module."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self.kube, self.namespace = kube, namespace
        self.synced = False
        """Whether the watch runs and has listed: what it holds is current."""
        self._wanted: set[str] = set()
        self._objects: dict[str, dict[str, Any] | None] = {}
        """By name: the newest copy watched (None: seen deleted)."""
        self._listing: dict[str, dict[str, Any]] | None = None
        self.restarts = Restarts()
        self.revision = 0
        """Raised with every change of what :meth:`newer` answers (what is wanted, watched or
        current): while it holds, every answer holds."""
        self._written: dict[str, str] = {}
        """By name: the version this replica wrote last and the watch has not shown yet."""

    @property
    def where(self) -> str:
        return f"the state ConfigMaps of {self.namespace}"

    def want(self, name: str) -> None:
        """Keep ConfigMap ``name`` from now on (before it is read: no change is missed)."""
        if name not in self._wanted:
            self._wanted.add(name)
            self.revision += 1

    def keep(self, names: Collection[str]) -> None:
        """Keep only the ConfigMaps ``names`` (those held)."""
        wanted = self._wanted & set(names)
        if len(wanted) != len(self._wanted):
            self._wanted = wanted
            self._objects = {n: obj for n, obj in self._objects.items() if n in wanted}
            self._written = {n: v for n, v in self._written.items() if n in wanted}
            self.revision += 1

    def wrote(self, name: str, version: str) -> None:
        """This replica wrote ConfigMap ``name`` at ``version``: when the watch shows that very
        version, :meth:`newer` asked about it still answers None, and :attr:`revision` stays.
        Otherwise the echo of a cycle's own saves raised it, and the next load went over every
        object held to find them as written: 1.3-1.6 ms of CPU for one of three replicas in
        ``benchmarks/sharding.py``, in each cycle after one that wrote."""
        if name in self._wanted and version:
            self._written[name] = version

    def newer(self, name: str, version: str) -> object:
        """The copy of ConfigMap ``name`` watched if it is newer than ``version`` (the one the
        store read or wrote; "": there was none); None when nothing newer was watched;
        :data:`UNKNOWN` when that cannot be told (read it)."""
        if not self.synced or name not in self._wanted:
            return UNKNOWN
        if name not in self._objects:
            return None  # watched since before it was read, and unchanged since
        found = self._objects[name]
        if found is None:
            return UNKNOWN  # deleted: read it
        order = _order(_version(found), version)
        if order is None:
            return UNKNOWN
        return found if order > 0 else None

    # --- the watch -----------------------------------------------------------------------------
    def _source(self) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        async def events() -> AsyncIterator[tuple[str, dict[str, Any]]]:
            self.synced = False
            self._listing = {}
            self._written.clear()
            self.revision += 1
            try:
                async for event in follow(
                    self.kube, CONFIGMAPS, self.namespace, label_selector=STATE_KIND_LABEL
                ):
                    yield event
            finally:
                self.synced = False
                self.revision += 1

        return events()

    def _observe(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "BOOKMARK":
            if self._listing is not None:  # listed: the copy is current from now on
                self._objects = {n: o for n, o in self._listing.items() if n in self._wanted}
                self._listing = None
                self.synced = True
                self.revision += 1
            return
        name = _name(obj)
        if not name or name not in self._wanted:
            return
        if self._listing is not None:
            self._listing[name] = obj
            return
        known = self._objects.get(name)
        echo = False
        written = self._written.get(name)
        if written is not None and (_order(_version(obj), written) or 0) >= 0:
            del self._written[name]  # shown now, or passed by a newer change
            # The echo of this replica's write: asked about that version, newer still says None.
            echo = (
                kind != "DELETED" and written == _version(obj) and self.newer(name, written) is None
            )
        if kind == "DELETED":
            self._objects[name] = None
        elif known is None or (_order(_version(obj), _version(known)) or 0) >= 0:
            self._objects[name] = obj
        else:
            return
        if not echo:
            self.revision += 1

    async def run(self, stop: asyncio.Event, health: Health | None = None) -> None:
        """Follow the state ConfigMaps until ``stop`` is set."""
        task = asyncio.create_task(
            supervised(
                f"watch of {self.where}", self._source, self._observe, stop, health, self.restarts
            )
        )
        try:
            await stop.wait()
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            self.synced = False
            self.revision += 1
