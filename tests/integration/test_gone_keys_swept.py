"""A sharded fleet deletes the state ConfigMap of an ImageUpdater that is gone, once it stayed
gone from one sweep to the next, and nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf
from replicas import start_replicas
from test_controller_argocd import push_tags
from test_shard_state import configmap_verbs_granted

from argocd_image_updater.controller import state_sweep
from argocd_image_updater.controller.state_objects import (
    PER_KEY,
    SHARD_KEY_ANNOTATION,
    STATE_KIND_LABEL,
    object_name,
)
from argocd_image_updater.controller.state_sweep import StateSweep
from argocd_image_updater.kube.client import KubeClient
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"


def put_managed(kube: KubeApiServer, name: str, image: str) -> dict[str, Any]:
    """An Application ``<name>-app`` running ``1.0.0`` and the ImageUpdater ``<name>-updater``
    managing it (returned)."""
    running = f"{image}:1.0.0"
    kube.store.put(
        objects.application(
            f"{name}-app", NS, source_type="Kustomize", images=[running], kustomize_images=[running]
        )
    )
    images = [{"alias": "web", "imageName": f"{image}:~1.0"}]
    spec = {"applicationRefs": [{"namePattern": f"{name}-app", "images": images}]}
    updater = objects.image_updater(f"{name}-updater", NS, spec)
    kube.store.put(updater)
    return updater


def key_configmap(key: str) -> dict[str, Any]:
    """A key's state ConfigMap as the store writes it (empty)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": object_name(key),
            "namespace": NS,
            "labels": {STATE_KIND_LABEL: PER_KEY},
            "annotations": {SHARD_KEY_ANNOTATION: key},
        },
        "data": {},
    }


def state_names(kube: KubeApiServer) -> set[str]:
    return {
        cm["metadata"]["name"]
        for cm in kube.store.list("configmaps", NS)
        if (cm["metadata"].get("labels") or {}).get(STATE_KIND_LABEL) == PER_KEY
    }


async def test_the_state_configmap_of_a_deleted_imageupdater_goes_at_the_next_sweep(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.0.1"])
    image = f"{registry.host}/{repo}"
    async with KubeApiServer(namespaces=(NS, "elsewhere")) as kube:
        for name in ("kept", "gone"):
            put_managed(kube, name, image)
        # The record of a key in a namespace this fleet does not watch: never its to delete.
        foreign = object_name("elsewhere/updater")
        kube.store.put(key_configmap("elsewhere/updater"))
        conf = registries_conf(tmp_path, registry)
        fleet = await start_replicas(2, kube, tmp_path, registries_conf_path=str(conf))
        try:
            result = await fleet.cycle()
            assert result.images_updated == 2
            kept, gone = object_name(f"{NS}/kept-updater"), object_name(f"{NS}/gone-updater")
            assert {kept, gone, foreign} <= state_names(kube)
            for controller in fleet.controllers:  # a sweep every cycle from now on
                assert controller.sweep is not None and controller.kube is not None
                controller.sweep = StateSweep(controller.kube, NS, every=0.0)

            await fleet.cycle()  # every key still there: nothing marked
            kube.store.delete("imageupdaters", NS, "gone-updater")
            await fleet.cycle()  # marked by its owner
            assert {kept, gone, foreign} <= state_names(kube)
            await fleet.cycle()  # still gone, unchanged: deleted
            assert state_names(kube) == {kept, foreign}
            assert sum(c.sweep.deleted for c in fleet.controllers if c.sweep) == 1
            await fleet.cycle()
            assert state_names(kube) == {kept, foreign}
        finally:
            await fleet.close()
        # The delete is granted by the sharded installs, as every other request on them.
        used = {verb for verb, resource in kube.requests if resource == "configmaps"}
        assert "delete" in used
        for install, granted in configmap_verbs_granted().items():
            assert used <= granted, install


async def test_a_key_that_comes_back_before_the_next_sweep_keeps_its_record(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.0.1"])
    image = f"{registry.host}/{repo}"
    async with KubeApiServer(namespaces=(NS,)) as kube:
        updater = put_managed(kube, "shop", image)
        conf = registries_conf(tmp_path, registry)
        fleet = await start_replicas(2, kube, tmp_path, registries_conf_path=str(conf))
        try:
            await fleet.cycle()
            record = object_name(f"{NS}/shop-updater")
            assert record in state_names(kube)
            for controller in fleet.controllers:
                assert controller.kube is not None
                controller.sweep = StateSweep(controller.kube, NS, every=0.0)
            kube.store.delete("imageupdaters", NS, "shop-updater")
            await fleet.cycle()  # marked
            kube.store.put(updater)  # back (an Argo CD sync replacing it)
            await fleet.cycle()
            await fleet.cycle()
            assert record in state_names(kube)
            assert not any(c.sweep.deleted for c in fleet.controllers if c.sweep)
        finally:
            await fleet.close()


async def test_a_sweep_deletes_a_bounded_number_and_leaves_the_rest_to_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state_sweep, "MAX_DELETES", 2)
    async with KubeApiServer(namespaces=(NS,)) as kube:
        for n in range(3):
            kube.store.put(key_configmap(f"{NS}/gone-{n}"))
        kube.store.put(key_configmap(f"{NS}/kept"))
        config = kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)
        async with await KubeClient.connect(str(config)) as client:
            sweep = StateSweep(client, NS, every=0.0)
            present = {f"{NS}/kept"}
            await sweep.sweep(0.0, present, lambda key: True)  # marked
            assert len(state_names(kube)) == 4
            await sweep.sweep(1.0, present, lambda key: True)
            assert len(state_names(kube)) == 2
            await sweep.sweep(2.0, present, lambda key: True)
            assert state_names(kube) == {object_name(f"{NS}/kept")}
            assert sweep.deleted == 3
