"""The work of ``status`` (:mod:`argocd_image_updater.cli.status_cmd`): read the ImageUpdaters
with their ``status`` and the controller's remembered record, from the Kubernetes API (the
ConfigMap ``argocd-image-updater-state``) or in local mode from the manifests and
``--state-dir`` (``status.json`` and ``state.json``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from argocd_image_updater.cli.status_view import UpdaterView, select, updater_view
from argocd_image_updater.model.controller_state import ControllerState
from argocd_image_updater.pipeline.ports import StoreError

LOCAL_NAMESPACE = "argocd"


class StatusError(Exception):
    """The command cannot answer (the message says why)."""


async def gather(
    app: str,
    image_updater: str,
    namespace: str,
    all_namespaces: bool,
    kubeconfig: str,
    applications_api: str,
    local_path: str,
    controller_namespace: str,
    state_dir: str,
) -> list[UpdaterView]:
    if applications_api == "local":
        objects = _local(local_path, namespace, all_namespaces, state_dir)
        state = await _local_state(state_dir)
    else:
        objects, state = await _cluster(kubeconfig, namespace, all_namespaces, controller_namespace)
    objects.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
    views = select((updater_view(o, state) for o in objects), app, image_updater)
    if not views and (app or image_updater):
        what = f"Application {app}" if app else f"ImageUpdater {image_updater}"
        raise StatusError(f"no ImageUpdater status mentions {what}")
    return views


async def _cluster(
    kubeconfig: str, namespace: str, all_namespaces: bool, controller_namespace: str
) -> tuple[list[dict[str, Any]], ControllerState | None]:
    from argocd_image_updater.controller.state_objects import is_sharded, load_keys
    from argocd_image_updater.controller.state_store import ConfigMapStateStore
    from argocd_image_updater.kube.client import KubeClient, KubeError
    from argocd_image_updater.model.resources import IMAGE_UPDATERS

    try:
        kube = await KubeClient.connect(kubeconfig)
    except KubeError as err:
        raise StatusError(str(err)) from None
    async with kube:
        scope = None if all_namespaces else (namespace or kube.namespace)
        try:
            objects, _ = await kube.list_objects(IMAGE_UPDATERS, scope)
        except KubeError as err:
            raise StatusError(f"cannot list ImageUpdaters: {err}") from None
        home = controller_namespace or kube.namespace
        state: ControllerState | None
        try:
            if await is_sharded(kube, home):  # run --sharding: one ConfigMap per shard key
                keys = (
                    f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in objects
                )
                state = await load_keys(kube, home, keys)
            else:
                state = await ConfigMapStateStore(kube, home).load()
        except StoreError:
            state = None  # no access to the record: the status alone still answers
    return objects, state


def _local(
    local_path: str, namespace: str, all_namespaces: bool, state_dir: str
) -> list[dict[str, Any]]:
    from argocd_image_updater.local.manifests import load_manifests
    from argocd_image_updater.local.status_file import read_statuses

    if not local_path:
        raise StatusError("--applications-api local needs --local-path")
    root = Path(local_path)
    if not root.is_dir():
        raise StatusError(f"--local-path {local_path}: no such directory")
    found = load_manifests(root, namespace or LOCAL_NAMESPACE)
    try:
        statuses = read_statuses(state_dir) if state_dir else {}
    except StoreError as err:
        raise StatusError(str(err)) from None
    objects = []
    for manifest in found.image_updaters:
        ns, name = manifest.key
        if not all_namespaces and namespace and ns != namespace:
            continue
        obj = dict(manifest.obj)
        obj["metadata"] = {**obj.get("metadata", {}), "namespace": ns, "name": name}
        obj["status"] = statuses.get(f"{ns}/{name}") or obj.get("status") or {}
        objects.append(obj)
    return objects


async def _local_state(state_dir: str) -> ControllerState | None:
    from argocd_image_updater.local.state_file import FileStateStore

    if not state_dir:
        return None
    try:
        return await FileStateStore(state_dir).load()
    except StoreError as err:
        raise StatusError(str(err)) from None
