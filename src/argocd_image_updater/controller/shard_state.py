"""The remembered record of a sharded fleet (``run --sharding``): one ConfigMap per shard key.

Each shard key (an ImageUpdater, or an Application of the v0.x annotations) has its own
ConfigMap in the controller's namespace, ``argocd-image-updater-state-<16 hex digits of the
key's BLAKE2b hash>``, labelled as the single record's ConfigMap plus
``argocd-image-updater.argoproj.io/state: shard-key`` and annotated with the key
(``argocd-image-updater.argoproj.io/shard-key``). It holds what
:mod:`~argocd_image_updater.model.state_parts` puts in a key's part, in the single record's
format (gzip-compressed, then trimmed, when large): no object grows with the fleet.

A replica reads and writes only the objects of the keys it holds (the cycle's or webhook event's
keys, given by :meth:`ShardedStateStore.scoped` around their work): a load reads each of them
(at most :data:`MAX_CONCURRENT_REQUESTS` requests at once; an object still at its
resourceVersion is not parsed again) and merges them; a save writes only the keys whose part
changed, each a conditional replace (or create) behind the write fence. When another writer (the
``release`` command, the replica that held the key before) changed a key's object meanwhile,
only that object is read again and only that key's changes are applied to it.

Switching an existing fleet to ``--sharding`` loses nothing: a key without an object yet takes
its part from the single ConfigMap ``argocd-image-updater-state`` (read once), and its object is
written at the next save. The single ConfigMap is left as it is (a fleet switched back goes on
from it).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import hashlib
import json
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Final, TypeVar

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.controller.state_store import (
    MAX_SAVE_ATTEMPTS,
    STATE_CONFIGMAP,
    ConfigMapStateStore,
)
from argocd_image_updater.kube.client import CONFIGMAPS, KubeClient, KubeError, resource_path
from argocd_image_updater.model.controller_state import ControllerState, Operation
from argocd_image_updater.model.resources import IMAGE_UPDATERS
from argocd_image_updater.model.state_parts import (
    Layout,
    Placement,
    apps_in,
    merge,
    part_of,
    repos_in,
    same_contents,
)
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.ports import StoreError
from argocd_image_updater.pipeline.records import Collected
from argocd_image_updater.pipeline.state_scope import Layouts

log = get_logger("state")

STATE_KIND_LABEL: Final = "argocd-image-updater.argoproj.io/state"
"""On a key's state ConfigMap: :data:`PER_KEY`."""
PER_KEY: Final = "shard-key"
SHARD_KEY_ANNOTATION: Final = "argocd-image-updater.argoproj.io/shard-key"
"""On a key's state ConfigMap: the key (``namespace/name``)."""
MAX_CONCURRENT_REQUESTS: Final = 16

_T = TypeVar("_T")


def object_name(key: str) -> str:
    """The name of ``key``'s state ConfigMap."""
    return f"{STATE_CONFIGMAP}-{hashlib.blake2b(key.encode(), digest_size=8).hexdigest()}"


def key_store(kube: KubeClient, namespace: str, key: str) -> ConfigMapStateStore:
    """The store of one key's state ConfigMap."""
    return ConfigMapStateStore(
        kube,
        namespace,
        object_name(key),
        labels={STATE_KIND_LABEL: PER_KEY},
        annotations={SHARD_KEY_ANNOTATION: key},
    )


async def bounded(calls: Iterable[Callable[[], Awaitable[_T]]]) -> list[_T]:
    """The results of ``calls``, at most :data:`MAX_CONCURRENT_REQUESTS` under way at once."""
    slots = asyncio.Semaphore(MAX_CONCURRENT_REQUESTS)

    async def one(call: Callable[[], Awaitable[_T]]) -> _T:
        async with slots:
            return await call()

    return list(await asyncio.gather(*(one(call) for call in calls)))


def _token(versions: dict[str, str]) -> str:
    return json.dumps(versions, separators=(",", ":"), sort_keys=True)


def _versions(token: str) -> dict[str, str]:
    try:
        versions = json.loads(token) if token else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in versions.items()} if isinstance(versions, dict) else {}


class ShardedStateStore:
    """:class:`~argocd_image_updater.pipeline.ports.StateStore` on one ConfigMap per shard key,
    for the keys in scope (:meth:`scoped`); the record's ``token`` holds the resourceVersion of
    each key's object as read (JSON)."""

    def __init__(self, kube: KubeClient, namespace: str, registries: RegistryConfig) -> None:
        self.kube, self.namespace = kube, namespace
        self._layouts = Layouts(registries)
        self._scope: contextvars.ContextVar[Layout | None] = contextvars.ContextVar(
            "state_scope", default=None
        )
        self._stores: dict[str, ConfigMapStateStore] = {}
        self._single: ControllerState | None = None
        """The single ConfigMap of an unsharded fleet, read once (empty when there is none)."""
        self._merged: ControllerState | None = None
        """The record last loaded or saved, handed out again while every object holds."""

    @contextlib.contextmanager
    def scoped(self, collected: Collected) -> Iterator[None]:
        """Loads and saves within this block (of this task and those it starts) are of the keys
        of ``collected`` (narrowed to this replica's share)."""
        layout = self._layouts.layout(collected)
        if collected.listed:  # a full cycle: the objects of keys no longer held are let go
            self._stores = {k: s for k, s in self._stores.items() if k in layout.keys}
        reset = self._scope.set(layout)
        try:
            yield
        finally:
            self._scope.reset(reset)

    def _store(self, key: str) -> ConfigMapStateStore:
        store = self._stores.get(key)
        if store is None:
            store = self._stores[key] = key_store(self.kube, self.namespace, key)
        return store

    async def load(self) -> ControllerState:
        layout = self._scope.get()
        if layout is None:
            return ControllerState(token=_token({}))
        keys = sorted(layout.keys)
        parts = dict(zip(keys, await bounded(self._store(k).read for k in keys), strict=True))
        token = _token({key: part.token for key, part in parts.items()})
        merged = self._merged
        if merged is not None and merged.token == token:
            return merged.copy()
        missing = [key for key, part in parts.items() if not part.token]
        if missing:
            single = await self._single_record()
            inverse: dict[str, list[str]] = {}
            for app, key in layout.apps.items():
                inverse.setdefault(key, []).append(app)
            for key in missing:
                parts[key] = part_of(single, inverse.get(key, ()), layout.repos.get(key, ()))
        merged = merge([parts[key] for key in keys], token)
        self._merged = merged.copy() if not missing or not self._single_has_any() else None
        return merged

    def _single_has_any(self) -> bool:
        single = self._single
        return single is not None and any(single.contents())

    async def _single_record(self) -> ControllerState:
        if self._single is None:
            self._single = await ConfigMapStateStore(self.kube, self.namespace).load()
            if any(self._single.contents()):
                log.info(
                    "taking the remembered record of the keys without a ConfigMap of their own "
                    "from ConfigMap %s/%s",
                    self.namespace,
                    STATE_CONFIGMAP,
                )
        return self._single

    async def save(self, state: ControllerState) -> None:
        layout = self._scope.get()
        if layout is None:
            if state.changed:
                log.warning("the remembered record of no shard key is held: nothing saved")
            return
        versions = _versions(state.token)
        keys = sorted(versions)
        stored: dict[str, ControllerState] = {}
        stale: list[str] = []
        for key in keys:
            last = self._store(key).last
            if not versions[key]:
                stored[key] = ControllerState()
            elif last is not None and last.token == versions[key]:
                stored[key] = last
            else:
                stale.append(key)  # written since (by another save of this replica)
        for key, part in zip(stale, await bounded(self._store(k).read for k in stale), strict=True):
            stored[key] = part
        placement = Placement(layout, stored)
        routed, homeless = placement.route(state.operations)
        if homeless:
            log.debug("%d changes of the remembered record belong to no key held", homeless)
        dirty = [
            key
            for key in keys
            if routed.get(key) or key in stale or placement.lacks(key, stored[key], state)
        ]
        results = await bounded(
            functools.partial(
                self._write,
                key,
                stored[key],
                placement,
                routed.get(key, []),
                state,
                key not in stale,
            )
            for key in dirty
        )
        failed = [result for result in results if isinstance(result, StoreError)]
        if failed:
            self._merged = None
            raise StoreError(
                f"{failed[0]}" + (f" (and {len(failed) - 1} more keys)" if len(failed) > 1 else "")
            )
        conflicts = False
        for key, result in zip(dirty, results, strict=True):
            assert not isinstance(result, StoreError)
            conflict, versions[key] = result
            conflicts |= conflict
        token = _token(versions)
        newer = conflicts or bool(stale)  # another writer's changes came in: take them
        if newer:
            parts = [
                last
                if (last := self._store(k).last) is not None and last.token == versions[k]
                else stored[k]
                for k in keys
            ]
            state.adopt(merge(parts, token))
        state.saved(token)
        self._merged = None if newer or homeless else state.copy()

    async def _write(
        self,
        key: str,
        stored: ControllerState,
        placement: Placement,
        operations: list[Operation],
        merged: ControllerState,
        take_apps: bool,
    ) -> tuple[bool, str] | StoreError:
        """Write ``key``'s part; whether its object had changed meanwhile, and the version it is
        at now (a StoreError when it cannot be written)."""
        store = self._store(key)
        conflict = False
        try:
            for _ in range(MAX_SAVE_ATTEMPTS):
                target = placement.target(key, stored, operations, merged, take_apps=take_apps)
                if same_contents(target, stored):
                    return conflict, stored.token
                if await store.write(target):
                    return conflict, target.token
                log.debug("%s changed since it was read; applying its changes again", store.where)
                conflict, take_apps = True, False
                stored = await store.read()
        except StoreError as err:
            return err
        return StoreError(f"cannot write {store.where}: it kept changing while it was written")


# --- the commands that read or edit the record (``release``, ``status``) -----------------------


async def is_sharded(kube: KubeClient, namespace: str) -> bool:
    """Whether ``namespace`` holds a key's state ConfigMap (the record of a sharded fleet)."""
    try:
        found = await kube.request(
            "GET",
            resource_path(CONFIGMAPS, namespace),
            params={"labelSelector": f"{STATE_KIND_LABEL}={PER_KEY}", "limit": "1"},
        )
    except KubeError as err:
        raise StoreError(f"cannot list the ConfigMaps of {namespace}: {err}") from err
    return bool(found.get("items"))


async def keys_of_application(kube: KubeClient, namespace: str, app: str) -> list[str]:
    """The shard keys an Application of ``namespace`` can belong to: itself (v0.x annotations)
    and every ImageUpdater of its namespace (an ImageUpdater selects the Applications of its own
    namespace)."""
    keys = [f"{namespace}/{app}"]
    try:
        updaters, _ = await kube.list_objects(IMAGE_UPDATERS, namespace)
    except KubeError as err:
        if err.is_not_found:  # no ImageUpdater resource installed
            return keys
        raise StoreError(f"cannot list the ImageUpdaters of {namespace}: {err}") from err
    names = sorted(str((u.get("metadata") or {}).get("name") or "") for u in updaters)
    return keys + [f"{namespace}/{name}" for name in names if name]


def key_stores(kube: KubeClient, namespace: str, keys: Iterable[str]) -> list[ConfigMapStateStore]:
    """The stores of ``keys``' state ConfigMaps in ``namespace`` (a store whose ConfigMap does
    not exist loads an empty record and creates nothing until something changes)."""
    return [key_store(kube, namespace, key) for key in keys]


async def load_keys(kube: KubeClient, namespace: str, keys: Iterable[str]) -> ControllerState:
    """The record of ``keys`` merged (``status``): their ConfigMaps', then the single
    ConfigMap's for what they lack."""
    stores = key_stores(kube, namespace, keys)
    parts = await bounded(store.read for store in stores)
    single = await ConfigMapStateStore(kube, namespace).read()
    have = set().union(*(apps_in(part) for part in parts))
    rest = [app for app in apps_in(single) if app not in have]
    return merge([*parts, part_of(single, rest, repos_in(single))])
