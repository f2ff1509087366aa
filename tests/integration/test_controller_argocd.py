"""The controller end to end with the ``argocd`` write-back method: the real Kubernetes client
library talks to the Kubernetes API fake over a socket, tags come from the real registry. The
tests that run the controller run with one replica and with three sharing the work
(``--sharding``, :mod:`replicas`)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf
from replicas import REPLICAS, Replicas, start_replicas
from waiting import eventually

from argocd_image_updater.cli.run_cmd import build_controller
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.cycle import CycleContext, run_cycle
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.controller.sources import collect
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.argocd import ArgoCDApiServer
from argocd_image_updater_testing.faulty_proxy import FaultyProxy
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 2, 1, tzinfo=UTC)
APPS = ("argoproj.io", "v1alpha1", "applications")


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS, "team-b")) as server:
        yield server


async def push_tags(registry: RegistryServer, repo: str, tags: list[str]) -> None:
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(tags):
            await pusher.push_image(repo, tag, created=START + timedelta(days=i))


async def make_controller(
    kube: KubeApiServer, tmp_path: Path, conf: Path, **flags: Any
) -> tuple[Controller, list[Any]]:
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)
    settings = resolve(
        "run",
        {"kubeconfig": str(kubeconfig), "registries_conf_path": str(conf), "once": True, **flags},
        env={},
    )
    return await build_controller(settings)


async def make_replicas(
    replicas: int, kube: KubeApiServer, tmp_path: Path, conf: Path, **flags: Any
) -> Replicas:
    """``replicas`` controllers (one: ``run --once``; more: sharded)."""
    values = {"registries_conf_path": str(conf), "once": True, **flags}
    return await start_replicas(replicas, kube, tmp_path, **values)


async def close_all(closers: list[Any]) -> None:
    for closer in reversed(closers):
        await (closer.aclose() if hasattr(closer, "aclose") else closer.close())


def app_obj(kube: KubeApiServer, name: str, namespace: str = NS) -> dict[str, Any]:
    return kube.store.get("applications", namespace, name)


@REPLICAS
async def test_cr_updates_kustomize_and_helm_apps_touching_only_their_parameters(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, replicas: int
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.0.1", "1.1.0", "2.0.0"])
    image = f"{registry.host}/{repo}"
    kube.store.put(
        objects.application(
            "shop-kustomize",
            NS,
            source_type="Kustomize",
            images=[f"{image}:1.0.0"],
            kustomize_images=[f"{image}:1.0.0", "other/sidecar:3.2"],
        )
    )
    kube.store.put(
        objects.application(
            "shop-helm",
            NS,
            source_type="Helm",
            images=[f"{image}:1.0.0"],
            helm_parameters={"replicaCount": "2", "image.name": image, "image.tag": "1.0.0"},
        )
    )
    kube.store.put(objects.application("unrelated", NS, images=["nginx:1.25"]))
    kube.store.put(
        objects.image_updater(
            "shop",
            NS,
            {
                "applicationRefs": [
                    {
                        "namePattern": "shop-*",
                        "images": [{"alias": "web", "imageName": f"{image}:~1.0"}],
                    }
                ]
            },
        )
    )
    before_unrelated = app_obj(kube, "unrelated")
    fleet = await make_replicas(replicas, kube, tmp_path, registries_conf(tmp_path, registry))
    try:
        result = await fleet.cycle()
    finally:
        await fleet.close()

    assert result.images_updated == 2 and result.errors == 0
    kustomize = app_obj(kube, "shop-kustomize")["spec"]["source"]["kustomize"]["images"]
    assert kustomize == [f"{image}:1.0.1", "other/sidecar:3.2"]
    params = app_obj(kube, "shop-helm")["spec"]["source"]["helm"]["parameters"]
    values = {p["name"]: p["value"] for p in params}
    assert values == {"replicaCount": "2", "image.name": image, "image.tag": "1.0.1"}
    assert app_obj(kube, "unrelated") == before_unrelated
    # One registry scan for the repository although two Applications use it.
    assert result.scans == 1


@REPLICAS
async def test_tag_pushed_between_cycles_is_written_by_the_next_cycle(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, replicas: int
) -> None:
    """Each cycle lists the tags at most once per replica (shared by every scan of the
    replica's cycle, here a semver and a newest-build image of the same repository, whose
    ImageUpdaters two of three replicas process). Sharded, a replica that does not list the
    repository for the fleet uses its copy while the owner vouches for it, so it writes the
    new tag in the cycle after the owner's listing that found it (test_fleet_tag_lists.py)."""
    await push_tags(registry, repo, ["1.0.0", "1.0.1"])
    proxy = await FaultyProxy(registry.url).start()
    try:
        host = proxy.url.split("://", 1)[1]
        image = f"{host}/{repo}"
        for name, strategy in (("by-version", "semver"), ("by-build", "newest-build")):
            kube.store.put(
                objects.application(
                    name, NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
                )
            )
            kube.store.put(
                objects.image_updater(
                    name,
                    NS,
                    {
                        "applicationRefs": [
                            {
                                "namePattern": name,
                                "images": [
                                    {
                                        "alias": "a",
                                        "imageName": image,
                                        "commonUpdateSettings": {"updateStrategy": strategy},
                                    }
                                ],
                            }
                        ]
                    },
                )
            )
        conf = tmp_path / "registries.conf"
        conf.write_text(f"registries:\n- name: t\n  prefix: {host}\n  api_url: {proxy.url}\n")
        fleet = await make_replicas(replicas, kube, tmp_path, conf, interval=timedelta(seconds=5))
        try:
            listing = fleet.owners({f"{NS}/by-version", f"{NS}/by-build"})
            assert len(listing) == min(replicas, 2)  # the keys spread
            first = await fleet.cycle()
            assert first.images_updated == 2 and first.scans == 2
            # Once by each replica that uses the repository, and by the member that lists it
            # for the fleet when that is another one (sharded: the third, one time in three).
            listed = proxy.counts["tags"]
            assert len(listing) <= listed <= len(listing) + (replicas > 2)
            await fleet.heard()  # the owner's word on the copies of the first cycle
            await push_tags(registry, repo, ["1.0.0", "1.0.1", "1.0.2"])
            second = await fleet.cycle()
            updated, errors, cycles = second.images_updated, second.errors, 1
            if replicas > 1 and updated < 2:  # the owner's next word names the change
                await fleet.heard()
                third = await fleet.cycle()
                updated, errors = updated + third.images_updated, errors + third.errors
                cycles += 1
        finally:
            await fleet.close()
    finally:
        await proxy.stop()
    assert updated == 2 and errors == 0
    for name in ("by-version", "by-build"):
        images = app_obj(kube, name)["spec"]["source"]["kustomize"]["images"]
        assert images == [f"{image}:1.0.2"], name
    extra = proxy.counts["tags"] - listed
    if replicas == 1:
        assert extra == listed  # as many the second time
    else:  # by the owner in each cycle, at most once a replica
        assert cycles <= extra <= cycles * replicas


async def test_malformed_cr_and_unreachable_registry_do_not_stop_the_others(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.2.0"])
    image = f"{registry.host}/{repo}"
    dead = "127.0.0.1:9/nothing/here"
    kube.store.put(
        objects.application(
            "good", NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
        )
    )
    kube.store.put(
        objects.application(
            "dead", NS, images=[f"{dead}:1.0.0"], kustomize_images=[f"{dead}:1.0.0"]
        )
    )
    kube.store.put(
        objects.image_updater(
            "good",
            NS,
            {
                "applicationRefs": [
                    {"namePattern": "good", "images": [{"alias": "web", "imageName": image}]},
                    {"namePattern": "dead", "images": [{"alias": "d", "imageName": dead}]},
                ]
            },
        )
    )
    # Accepted by the API server schema, rejected by our stricter check (a bad allowTags
    # reference would be a warning; a malformed label selector operator is an error).
    broken = objects.image_updater(
        "broken",
        NS,
        {
            "applicationRefs": [
                {"namePattern": "good-[", "images": [{"alias": "x", "imageName": "x"}]}
            ]
        },
    )
    kube.store.put(broken, validate=False)
    conf = tmp_path / "registries.conf"
    conf.write_text(
        f"registries:\n- name: test\n  prefix: {registry.host}\n  api_url: {registry.url}\n"
        "- name: dead\n  prefix: 127.0.0.1:9\n  api_url: http://127.0.0.1:9\n"
    )
    controller, closers = await make_controller(kube, tmp_path, conf)
    try:
        collected = await collect(controller.store, controller.namespaces, controller.legacy)
        result = await run_cycle(
            collected,
            CycleContext(
                controller.registries,
                controller.scanner,
                controller.credentials,
                controller.writer_for,
            ),
        )
    finally:
        await close_all(closers)
    broken_state = next(cr for cr in collected.crs if cr.name == "broken")
    assert broken_state.error and "good-[" in broken_state.error
    assert app_obj(kube, "good")["spec"]["source"]["kustomize"]["images"] == [f"{image}:1.2.0"]
    assert app_obj(kube, "dead")["spec"]["source"]["kustomize"]["images"] == [f"{dead}:1.0.0"]
    assert result.images_updated == 1
    assert result.errors == 2  # the unreachable registry's image and the unusable ImageUpdater


async def test_concurrent_edit_between_read_and_patch_is_kept(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.0.5"])
    image = f"{registry.host}/{repo}"
    kube.store.put(
        objects.application(
            "racy",
            NS,
            source_type="Helm",
            images=[f"{image}:1.0.0"],
            helm_parameters={"image.name": image, "image.tag": "1.0.0", "replicaCount": "1"},
        )
    )
    kube.store.put(
        objects.image_updater(
            "racy",
            NS,
            {
                "applicationRefs": [
                    {"namePattern": "racy", "images": [{"alias": "a", "imageName": image}]}
                ]
            },
        )
    )
    controller, closers = await make_controller(kube, tmp_path, registries_conf(tmp_path, registry))
    try:
        collected = await collect(controller.store, controller.namespaces, controller.legacy)
        # Someone else edits the Application after we read it and before we patch it.
        edited = copy.deepcopy(app_obj(kube, "racy"))
        edited["metadata"].setdefault("labels", {})["team"] = "checkout"
        for param in edited["spec"]["source"]["helm"]["parameters"]:
            if param["name"] == "replicaCount":
                param["value"] = "5"
        kube.store.put(edited)
        result = await run_cycle(
            collected,
            CycleContext(
                controller.registries,
                controller.scanner,
                controller.credentials,
                controller.writer_for,
            ),
        )
    finally:
        await close_all(closers)
    final = app_obj(kube, "racy")
    values = {p["name"]: p["value"] for p in final["spec"]["source"]["helm"]["parameters"]}
    assert values == {"image.name": image, "image.tag": "1.0.5", "replicaCount": "5"}
    assert final["metadata"]["labels"]["team"] == "checkout"
    assert result.images_updated == 1 and result.errors == 0
    assert kube.request_count("patch", "applications") == 2  # one 409, one success


@REPLICAS
async def test_legacy_annotations_and_dry_run(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, replicas: int
) -> None:
    await push_tags(registry, repo, ["0.9.0", "0.10.0"])
    image = f"{registry.host}/{repo}"
    kube.store.put(
        objects.application(
            "legacy",
            NS,
            images=[f"{image}:0.9.0"],
            kustomize_images=[f"{image}:0.9.0"],
            annotations={
                "argocd-image-updater.argoproj.io/image-list": f"app={image}",
                "argocd-image-updater.argoproj.io/app.update-strategy": "semver",
            },
        )
    )
    conf = registries_conf(tmp_path, registry)
    fleet = await make_replicas(replicas, kube, tmp_path, conf, dry_run=True)
    try:
        dry = await fleet.cycle()
    finally:
        await fleet.close()
    assert dry.images_updated == 1
    assert app_obj(kube, "legacy")["spec"]["source"]["kustomize"]["images"] == [f"{image}:0.9.0"]
    assert kube.request_count("patch", "applications") == 0

    fleet = await make_replicas(replicas, kube, tmp_path, conf)
    try:
        await fleet.cycle()
    finally:
        await fleet.close()
    assert app_obj(kube, "legacy")["spec"]["source"]["kustomize"]["images"] == [f"{image}:0.10.0"]


async def test_argocd_api_mode_updates_through_argocd_server(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["2.0.0", "2.1.0"])
    image = f"{registry.host}/{repo}"
    async with ArgoCDApiServer(tokens={"s3cret-argocd-token": None}) as argocd:
        argocd.store.put(
            objects.application(
                "via-api",
                NS,
                images=[f"{image}:2.0.0"],
                kustomize_images=[f"{image}:2.0.0"],
                annotations={"argocd-image-updater.argoproj.io/image-list": image},
            )
        )
        settings = resolve(
            "run",
            {
                "applications_api": "argocd",
                "argocd_server_addr": argocd.url.removeprefix("http://"),
                "argocd_plaintext": True,
                "disable_kubernetes": True,
                "registries_conf_path": str(registries_conf(tmp_path, registry)),
                "once": True,
            },
            env={"ARGOCD_TOKEN": "s3cret-argocd-token"},
        )
        controller, closers = await build_controller(settings)
        try:
            result = await controller.cycle()
        finally:
            await close_all(closers)
        assert result.images_updated == 1
        app = argocd.store.get("applications", NS, "via-api")
        assert app["spec"]["source"]["kustomize"]["images"] == [f"{image}:2.1.0"]


@REPLICAS
async def test_imageupdater_spec_change_starts_a_cycle_without_waiting(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, replicas: int
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.0.1", "2.0.0"])
    image = f"{registry.host}/{repo}"
    kube.store.put(
        objects.application(
            "live", NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
        )
    )
    cr = objects.image_updater(
        "live",
        NS,
        {
            "applicationRefs": [
                {"namePattern": "live", "images": [{"alias": "a", "imageName": f"{image}:~1.0"}]}
            ]
        },
    )
    kube.store.put(cr)
    fleet = await make_replicas(
        replicas, kube, tmp_path, registries_conf(tmp_path, registry), once=False
    )

    def running(tag: str) -> bool:
        assert fleet.running()
        return bool(
            app_obj(kube, "live")["spec"]["source"]["kustomize"]["images"] == [f"{image}:{tag}"]
        )

    def cycles(count: int) -> bool:
        return all(controller.cycles == count for controller in fleet.controllers)

    try:
        await fleet.settle()
        fleet.run(timedelta(hours=1))
        # The first cycle is over and the watch of ImageUpdaters is established.
        await eventually(lambda: cycles(1) and kube.store.watchers >= replicas, "cycle 1")
        assert running("1.0.1")
        current = kube.store.get("imageupdaters", NS, "live")
        current["spec"]["applicationRefs"][0]["images"][0]["imageName"] = f"{image}:^2"
        kube.store.put(current)
        # A second cycle, at once (the interval is an hour), applies the new spec.
        await eventually(lambda: cycles(2), "a cycle after the spec change")
        assert running("2.0.0")
    finally:
        await fleet.close()
    assert cycles(2)
