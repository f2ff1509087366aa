"""The state ConfigMaps of shard keys that are gone, deleted (``run --sharding``).

A sharded fleet keeps one ConfigMap per shard key (:mod:`.state_objects`). When an ImageUpdater
is deleted (preview environments come and go with their ImageUpdaters), its ConfigMap would stay
for good, and every replica's watch of the state ConfigMaps would list it. The single record of
an unsharded controller forgets deleted Applications in every cycle; a sharded fleet deletes the
ConfigMap of a key that is gone, once it has been gone for a while:

- every :data:`SWEEP_EVERY` a replica lists the key ConfigMaps (label
  ``argocd-image-updater.argoproj.io/state=shard-key``, by pages, after a full cycle that
  succeeded and selected without a problem);
- a ConfigMap is a candidate when its key (its ``argocd-image-updater.argoproj.io/shard-key``
  annotation) is neither an ImageUpdater nor an Application that cycle listed, the key's
  namespace is one the controller watches, and the key is this replica's by rendezvous hashing
  over its member list (so one replica in a static shard deletes it);
- a candidate of the sweep before, still at the same ``resourceVersion``, is deleted,
  conditionally on that ``resourceVersion``: a key gone for at least :data:`SWEEP_EVERY`, whose
  record nobody wrote meanwhile (a key that came back and was processed is kept); at most
  :data:`MAX_DELETES` a sweep, so that the cycle it follows stays short.

A cycle that read no ImageUpdaters (the CRD is missing) sweeps nothing: every key would look
gone. Repository ConfigMaps are not swept (another static shard's keys may use a repository
this replica's listing does not). A replica not allowed to delete ConfigMaps (an older Role)
says so once and keeps going.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Final

from argocd_image_updater.controller.state_objects import (
    PER_KEY,
    SHARD_KEY_ANNOTATION,
    STATE_KIND_LABEL,
)
from argocd_image_updater.kube.client import CONFIGMAPS, KubeClient
from argocd_image_updater.kube.errors import KubeError
from argocd_image_updater.observe.log import get_logger

log = get_logger("state")

SWEEP_EVERY: Final = 600.0
"""Seconds between two sweeps, and the least time a key is gone before its ConfigMap goes."""

MAX_DELETES: Final = 100
"""ConfigMaps deleted by one sweep at most (one request each, in the cycle): the others wait
for the next sweep."""

KeyObject = tuple[str, str, str]
"""A key's state ConfigMap: its name, its key (``namespace/name``), its resourceVersion."""


def key_object(obj: Mapping[str, Any]) -> KeyObject | None:
    """The name, key and resourceVersion of a key's state ConfigMap as listed (None: not one)."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    annotations = meta.get("annotations")
    key = annotations.get(SHARD_KEY_ANNOTATION) if isinstance(annotations, Mapping) else None
    name, version = meta.get("name"), meta.get("resourceVersion")
    if not (isinstance(key, str) and key and isinstance(name, str) and isinstance(version, str)):
        return None
    return name, key, version


def to_delete(
    objects: Iterable[KeyObject],
    present: Collection[str],
    ours: Callable[[str], bool],
    marked: Mapping[str, str],
) -> tuple[list[KeyObject], dict[str, str]]:
    """Of the key ConfigMaps ``objects``: those to delete now (candidates marked by the sweep
    before at the same version), and the candidates to mark (name → version) for the next.
    ``present``: the keys listed; ``ours``: whether a key is this replica's to sweep (in the
    namespaces watched, and its owner)."""
    now, later = [], {}
    for obj in objects:
        name, key, version = obj
        if key in present or not ours(key):
            continue
        if marked.get(name) == version:
            now.append(obj)
        else:
            later[name] = version
    return now, later


class StateSweep:
    """One replica's sweeps of the key ConfigMaps of gone keys (see the module)."""

    def __init__(self, kube: KubeClient, namespace: str, every: float = SWEEP_EVERY) -> None:
        self.kube, self.namespace, self.every = kube, namespace, every
        self._next = 0.0
        """When the next sweep is due (the clock of :meth:`due`)."""
        self._marked: dict[str, str] = {}
        self._forbidden = False
        self.deleted = 0
        """How many ConfigMaps this replica deleted (for tests)."""

    def due(self, now: float) -> bool:
        return now >= self._next

    async def sweep(
        self, now: float, present: Collection[str], ours: Callable[[str], bool]
    ) -> None:
        """List the key ConfigMaps, delete those gone since the last sweep, mark the others."""
        self._next = now + self.every
        objects: list[KeyObject] = []
        try:
            async for page in self.kube.list_pages(
                CONFIGMAPS, self.namespace, label_selector=f"{STATE_KIND_LABEL}={PER_KEY}"
            ):
                objects.extend(found for obj in page if (found := key_object(obj)) is not None)
        except KubeError as err:
            log.warning("could not list the state ConfigMaps to sweep: %s", str(err))
            return
        doomed, self._marked = to_delete(objects, present, ours, self._marked)
        for name, _, version in doomed[MAX_DELETES:]:  # the next sweep's, still marked
            self._marked[name] = version
        for name, key, version in doomed[:MAX_DELETES]:
            await self._delete(name, key, version)

    async def _delete(self, name: str, key: str, version: str) -> None:
        try:
            await self.kube.delete_unchanged(CONFIGMAPS, self.namespace, name, version)
        except KubeError as err:
            if err.status == 403 and not self._forbidden:
                self._forbidden = True
                log.warning(
                    "may not delete the state ConfigMap %s of %s, which is gone: %s; grant "
                    "delete on configmaps in %s to sweep the records of deleted ImageUpdaters",
                    name,
                    key,
                    str(err),
                    self.namespace,
                )
            elif err.status not in (403, 404, 409):
                log.warning(
                    "could not delete the state ConfigMap %s of %s: %s", name, key, str(err)
                )
            return
        self.deleted += 1
        log.info("deleted the state ConfigMap %s of %s, gone since the last sweep", name, key)
