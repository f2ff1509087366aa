"""The ConfigMaps of a sharded fleet's remembered record (``run --sharding``), and the reads
of the commands that look into it (``release``, ``status``).

* one per shard key (an ImageUpdater, or an Application of the v0.x annotations),
  ``argocd-image-updater-state-<16 hex digits of the key's BLAKE2b hash>``, labelled
  ``argocd-image-updater.argoproj.io/state: shard-key`` and annotated with the key
  (``argocd-image-updater.argoproj.io/shard-key``): the write records and changes followed of
  the key's Applications;
* one per image repository (or Helm chart) a key uses,
  ``argocd-image-updater-tags-<16 hex digits of the repository's BLAKE2b hash>``, labelled
  ``argocd-image-updater.argoproj.io/state: repository`` and annotated with the repository
  (``argocd-image-updater.argoproj.io/repository``, ``<registry host>/<path>``): the first-seen
  times and digests of its tags, shared by every key (on any replica) that uses it.

Each is labelled as the single record's ConfigMap too (``app.kubernetes.io/component:
state``) and holds the single record's format (gzip-compressed, then trimmed, when large).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Iterable
from typing import Final, TypeVar

from argocd_image_updater.controller.state_store import STATE_CONFIGMAP, ConfigMapStateStore
from argocd_image_updater.kube.client import CONFIGMAPS, KubeClient, KubeError, resource_path
from argocd_image_updater.model.controller_state import ControllerState
from argocd_image_updater.model.resources import IMAGE_UPDATERS
from argocd_image_updater.model.state_parts import apps_in, key_part, merge, part_of
from argocd_image_updater.pipeline.ports import StoreError

STATE_KIND_LABEL: Final = "argocd-image-updater.argoproj.io/state"
"""On a key's state ConfigMap: :data:`PER_KEY`; on a repository's: :data:`PER_REPOSITORY`."""
PER_KEY: Final = "shard-key"
PER_REPOSITORY: Final = "repository"
SHARD_KEY_ANNOTATION: Final = "argocd-image-updater.argoproj.io/shard-key"
"""On a key's state ConfigMap: the key (``namespace/name``)."""
REPOSITORY_ANNOTATION: Final = "argocd-image-updater.argoproj.io/repository"
"""On a repository's state ConfigMap: the repository (``<registry host>/<path>``)."""
TAGS_CONFIGMAP_PREFIX: Final = "argocd-image-updater-tags"
STATE_SELECTOR: Final = f"{STATE_KIND_LABEL} in ({PER_KEY},{PER_REPOSITORY})"
"""The label selector of every state ConfigMap of a sharded fleet."""
MAX_CONCURRENT_REQUESTS: Final = 16

_T = TypeVar("_T")


def _hashed(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def object_name(key: str) -> str:
    """The name of ``key``'s state ConfigMap."""
    return f"{STATE_CONFIGMAP}-{_hashed(key)}"


def repository_object_name(repo: str) -> str:
    """The name of ``repo``'s state ConfigMap."""
    return f"{TAGS_CONFIGMAP_PREFIX}-{_hashed(repo)}"


def key_store(kube: KubeClient, namespace: str, key: str) -> ConfigMapStateStore:
    """The store of one key's state ConfigMap."""
    return ConfigMapStateStore(
        kube,
        namespace,
        object_name(key),
        labels={STATE_KIND_LABEL: PER_KEY},
        annotations={SHARD_KEY_ANNOTATION: key},
    )


def repository_store(kube: KubeClient, namespace: str, repo: str) -> ConfigMapStateStore:
    """The store of one repository's state ConfigMap."""
    return ConfigMapStateStore(
        kube,
        namespace,
        repository_object_name(repo),
        labels={STATE_KIND_LABEL: PER_REPOSITORY},
        annotations={REPOSITORY_ANNOTATION: repo},
    )


async def bounded(calls: Iterable[Callable[[], Awaitable[_T]]]) -> list[_T]:
    """The results of ``calls``, at most :data:`MAX_CONCURRENT_REQUESTS` under way at once."""
    slots = asyncio.Semaphore(MAX_CONCURRENT_REQUESTS)

    async def one(call: Callable[[], Awaitable[_T]]) -> _T:
        async with slots:
            return await call()

    return list(await asyncio.gather(*(one(call) for call in calls)))


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
    """The write records of ``keys`` merged (``status``): their ConfigMaps', then the single
    ConfigMap's for what they lack."""
    stores = key_stores(kube, namespace, keys)
    parts = [key_part(part) for part in await bounded(store.read for store in stores)]
    single = await ConfigMapStateStore(kube, namespace).read()
    have = set().union(*(apps_in(part) for part in parts))
    rest = [app for app in apps_in(single) if app not in have]
    return merge([*parts, part_of(single, rest, ())])
