"""The work of ``hold`` and ``release`` (:mod:`argocd_image_updater.cli.hold_cmd`).

Through the Kubernetes API the annotation is changed with one JSON patch that first tests the
annotation's current value (a concurrent change makes it fail; it is read again and retried).
In local mode the Application's manifest is edited byte-exactly (only the annotation's bytes
change; nothing is committed). ``release`` also forgets the controller's remembered write of
the released images (the ConfigMap ``argocd-image-updater-state``, or ``--state-dir``), which
ends a rollback hold. A fleet run with ``--sharding`` (found by its labelled per-key ConfigMaps)
keeps the record per shard key: the write is forgotten in every key's ConfigMap that may hold it
(the Application's own and those of the ImageUpdaters of its namespace), and in the single
ConfigMap, which the keys without a ConfigMap of their own still take theirs from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from argocd_image_updater.config.holds import (
    HoldValueError,
    check_alias,
    held_annotations,
    parse_time,
    released_annotations,
)
from argocd_image_updater.kits.yamltext import YamlPatchError, apply_patch
from argocd_image_updater.model.controller_state import app_key
from argocd_image_updater.model.holds import ALL_IMAGES
from argocd_image_updater.pipeline.ports import StateStore, StoreError

MAX_ATTEMPTS: Final = 5
LOCAL_NAMESPACE: Final = "argocd"


class HoldError(Exception):
    """The command cannot do what was asked (the message says why)."""


def _aliases(images: Sequence[str]) -> list[str]:
    try:
        return [check_alias(a.strip()) for a in images]
    except HoldValueError as err:
        raise HoldError(f"--image: {err}") from None


def _until(text: str) -> datetime | None:
    if not text:
        return None
    try:
        return parse_time(text)
    except HoldValueError as err:
        raise HoldError(f"--until: {err}") from None


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def patch_ops(
    annotations: Mapping[str, str] | None,
    changes: Mapping[str, str | None],
    resource_version: str = "",
) -> list[dict[str, Any]]:
    """The JSON patch that makes ``changes`` (None: remove), testing the values it changes
    (without annotations: the object's ``resource_version``, when given)."""
    if annotations is None:
        added = {k: v for k, v in changes.items() if v is not None}
        if not added:
            return []
        test = [{"op": "test", "path": "/metadata/resourceVersion", "value": resource_version}]
        return [
            *(test if resource_version else []),
            {"op": "add", "path": "/metadata/annotations", "value": added},
        ]
    ops: list[dict[str, Any]] = []
    for key, value in changes.items():
        path = f"/metadata/annotations/{_escape(key)}"
        if key in annotations:
            ops.append({"op": "test", "path": path, "value": annotations[key]})
            if value is None:
                ops.append({"op": "remove", "path": path})
            elif value != annotations[key]:
                ops.append({"op": "replace", "path": path, "value": value})
        elif value is not None:
            ops.append({"op": "add", "path": path, "value": value})
    return ops if any(op["op"] != "test" for op in ops) else []


def _described(aliases: Sequence[str]) -> str:
    return ", ".join(aliases) if aliases else f"every image ({ALL_IMAGES})"


async def hold(
    app: str,
    namespace: str,
    images: Sequence[str],
    kubeconfig: str,
    applications_api: str,
    local_path: str,
    until: str,
    reason: str,
) -> str:
    aliases, moment = _aliases(images), _until(until)

    def changes(annotations: Mapping[str, str]) -> dict[str, str | None]:
        return held_annotations(annotations, aliases, moment, reason)

    if applications_api == "local":
        where = _edit_manifest(local_path, namespace or LOCAL_NAMESPACE, app, changes)
    else:
        where = await _patch_application(kubeconfig, namespace, app, changes)
    return f"held {_described(aliases)} of {where}" + (
        f" until {until}" if moment is not None else ""
    )


async def release(
    app: str,
    namespace: str,
    images: Sequence[str],
    kubeconfig: str,
    applications_api: str,
    local_path: str,
    controller_namespace: str,
    state_dir: str,
) -> str:
    aliases = _aliases(images)

    def changes(annotations: Mapping[str, str]) -> dict[str, str | None]:
        return released_annotations(annotations, aliases)

    if applications_api == "local":
        namespace = namespace or LOCAL_NAMESPACE
        where = _edit_manifest(local_path, namespace, app, changes)
        store = _file_store(state_dir) if state_dir else None
        await _forget_writes(store, app_key(namespace, app), aliases)
        return f"released {_described(aliases)} of {where}"
    from argocd_image_updater.controller.state_objects import (
        is_sharded,
        key_stores,
        keys_of_application,
    )
    from argocd_image_updater.controller.state_store import ConfigMapStateStore
    from argocd_image_updater.kube.client import KubeClient, KubeError

    try:
        kube = await KubeClient.connect(kubeconfig)
    except KubeError as err:
        raise HoldError(str(err)) from None
    async with kube:
        namespace = namespace or kube.namespace
        where = await _patch_with(kube, namespace, app, changes)
        if state_dir:  # a controller keeping its record in a file
            await _forget_writes(_file_store(state_dir), app_key(namespace, app), aliases)
            return f"released {_described(aliases)} of {where}"
        home = controller_namespace or kube.namespace
        stores: list[StateStore] = [ConfigMapStateStore(kube, home)]
        try:
            if await is_sharded(kube, home):  # run --sharding: one ConfigMap per shard key
                keys = await keys_of_application(kube, namespace, app)
                stores.extend(key_stores(kube, home, keys))
        except StoreError as err:
            raise HoldError(
                f"the annotation was changed, but the rollback hold was not: {err}"
            ) from None
        for store in stores:
            await _forget_writes(store, app_key(namespace, app), aliases)
    return f"released {_described(aliases)} of {where}"


def _file_store(state_dir: str) -> StateStore:
    from argocd_image_updater.local.state_file import FileStateStore

    return FileStateStore(state_dir)


async def _forget_writes(store: StateStore | None, key: str, aliases: Sequence[str]) -> None:
    if store is None:
        return
    try:
        state = await store.load()
        state.release(key, aliases or [ALL_IMAGES])
        await store.save(state)
    except StoreError as err:
        raise HoldError(
            f"the annotation was changed, but the rollback hold was not: {err}"
        ) from None


async def _patch_application(kubeconfig: str, namespace: str, app: str, changes: Any) -> str:
    from argocd_image_updater.kube.client import KubeClient, KubeError

    try:
        kube = await KubeClient.connect(kubeconfig)
    except KubeError as err:
        raise HoldError(str(err)) from None
    async with kube:
        return await _patch_with(kube, namespace or kube.namespace, app, changes)


async def _patch_with(kube: Any, namespace: str, app: str, changes: Any) -> str:
    from argocd_image_updater.kube.client import APPLICATIONS, KubeError

    where = f"Application {namespace}/{app}"
    for _ in range(MAX_ATTEMPTS):
        try:
            obj = await kube.get_object(APPLICATIONS, namespace, app)
        except KubeError as err:
            if err.is_not_found:
                raise HoldError(f"{where} not found") from None
            raise HoldError(f"cannot read {where}: {err}") from None
        meta = obj.get("metadata") or {}
        current = meta.get("annotations")
        ops = patch_ops(current, changes(current or {}), str(meta.get("resourceVersion") or ""))
        if not ops:
            return where
        try:
            await kube.json_patch(APPLICATIONS, namespace, app, ops)
            return where
        except KubeError as err:
            if err.status not in (409, 422):
                raise HoldError(f"cannot change {where}: {err}") from None
    raise HoldError(f"cannot change {where}: it kept changing")


def _edit_manifest(local_path: str, namespace: str, app: str, changes: Any) -> str:
    from argocd_image_updater.local.manifests import load_manifests
    from argocd_image_updater.writeback.git import atomic_write

    if not local_path:
        raise HoldError("--applications-api local needs --local-path")
    root = Path(local_path)
    if not root.is_dir():
        raise HoldError(f"--local-path {local_path}: no such directory")
    found = load_manifests(root, namespace)
    manifest = next((m for m in found.applications if m.key == (namespace, app)), None)
    if manifest is None:
        raise HoldError(f"Application {namespace}/{app} not found under {local_path}")
    where = f"Application {namespace}/{app} ({manifest.path})"
    path = root / manifest.path
    text = path.read_text(encoding="utf-8")
    current = manifest.obj["metadata"].get("annotations")
    wanted = changes(current or {})
    ops = _file_ops(current, wanted)
    if not ops:
        return where
    try:
        new = apply_patch(text, ops, document=manifest.document)
    except YamlPatchError as err:
        raise HoldError(f"cannot edit {path}: {err}") from None
    if new != text:
        atomic_write(path, new)
    return where


def _file_ops(
    annotations: Mapping[str, str] | None, changes: Mapping[str, str | None]
) -> list[dict[str, Any]]:
    """The ops for the byte-exact editor: no tests (the file is read right before), and the
    whole ``annotations`` mapping removed when nothing would be left in it."""
    ops = [op for op in patch_ops(annotations, changes) if op["op"] != "test"]
    if annotations and all(changes.get(k, v) is None for k, v in annotations.items()):
        return [{"op": "remove", "path": "/metadata/annotations"}]
    return ops
