"""A cycle reuses last cycle's work for what did not change, and sees every change: the
controller against the Kubernetes API fake, tags from the real registry. Each test changes one
input (a new tag, an annotation, the ImageUpdater, the remembered state, the running image) after
a cycle that reused everything, and checks the next plan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf
from test_controller_argocd import app_obj, close_all, make_controller, push_tags

from argocd_image_updater.cli import hold_run
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.model.holds import HOLD_ANNOTATION
from argocd_image_updater.pipeline.records import CycleResult
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


def kustomize_app(name: str, image: str, tag: str, **extra: Any) -> dict[str, Any]:
    return objects.application(
        name, NS, images=[f"{image}:{tag}"], kustomize_images=[f"{image}:{tag}"], **extra
    )


def updater(image: str) -> dict[str, Any]:
    ref = {"namePattern": "shop-*", "images": [{"alias": "web", "imageName": image}]}
    return objects.image_updater("shop", NS, {"applicationRefs": [ref]})


def kustomize_tag(kube: KubeApiServer, name: str) -> str:
    [entry] = app_obj(kube, name)["spec"]["source"]["kustomize"]["images"]
    return str(entry).rsplit(":", 1)[1]


def synced(kube: KubeApiServer, name: str, image: str, tag: str, *, spec: bool = False) -> None:
    """What Argo CD reports once it synced ``tag`` (with ``spec``: someone also set it)."""
    obj = app_obj(kube, name)
    obj["status"]["summary"]["images"] = [f"{image}:{tag}"]
    if spec:
        obj["spec"]["source"]["kustomize"]["images"] = [f"{image}:{tag}"]
    kube.store.put(obj)


def reasons(result: CycleResult) -> dict[str, tuple[str, str | None, str | None]]:
    """Per Application: the reason, current and chosen reference of its one image."""
    out = {}
    for outcome in result.apps:
        assert outcome.plan is not None
        [image] = outcome.plan.results
        out[outcome.app.split("/", 1)[1]] = (str(image.reason), image.current, image.chosen)
    return out


async def settled(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> tuple[Controller, list[Any], str]:
    """Two Applications up to date on 1.1.0 and a controller whose last cycle reused every
    plan (nothing changed since the one before)."""
    await push_tags(registry, repo, ["1.0.0", "1.1.0"])
    image = f"{registry.host}/{repo}"
    kube.store.put(kustomize_app("shop-a", image, "1.0.0"))
    kube.store.put(kustomize_app("shop-b", image, "1.1.0"))
    kube.store.put(updater(image))
    controller, closers = await make_controller(kube, tmp_path, registries_conf(tmp_path, registry))
    assert (await controller.cycle()).images_updated == 1  # shop-a
    synced(kube, "shop-a", image, "1.1.0")
    await controller.cycle()  # sees the written tag running (remembered)
    await controller.cycle()
    result = await controller.cycle()
    assert (controller.plans.jobs_reused, controller.plans.plans_reused) == (2, 2)
    assert reasons(result) == {
        "shop-a": ("up-to-date", f"{image}:1.1.0", f"{image}:1.1.0"),
        "shop-b": ("up-to-date", f"{image}:1.1.0", f"{image}:1.1.0"),
    }
    return controller, closers, image


async def test_nothing_changed_reuses_selection_plans_and_statuses_and_writes_nothing(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    controller, closers, image = await settled(kube, registry, repo, tmp_path)
    try:
        status_before = kube.store.get("imageupdaters", NS, "shop")
        patches = kube.requests[("patch", "applications")]
        result = await controller.cycle()
        assert controller.cr_views.reused == 1
        assert (controller.plans.jobs_reused, controller.plans.plans_reused) == (2, 2)
        assert controller.reporter is not None and controller.reporter.statuses.reused == 1
        assert result.images_updated == 0 and result.errors == 0
        assert reasons(result)["shop-b"] == ("up-to-date", f"{image}:1.1.0", f"{image}:1.1.0")
        assert kube.requests[("patch", "applications")] == patches
        after = kube.store.get("imageupdaters", NS, "shop")
        assert after["metadata"]["resourceVersion"] == status_before["metadata"]["resourceVersion"]
    finally:
        await close_all(closers)


async def test_a_new_tag_is_seen(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    controller, closers, _ = await settled(kube, registry, repo, tmp_path)
    try:
        await push_tags(registry, repo, ["1.2.0"])
        result = await controller.cycle()
        assert controller.plans.plans_reused == 0
        assert result.images_updated == 2
        assert kustomize_tag(kube, "shop-a") == kustomize_tag(kube, "shop-b") == "1.2.0"
    finally:
        await close_all(closers)


async def test_a_changed_annotation_is_seen(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    controller, closers, _ = await settled(kube, registry, repo, tmp_path)
    try:
        obj = app_obj(kube, "shop-b")
        obj["metadata"]["annotations"] = {HOLD_ANNOTATION: "web"}
        kube.store.put(obj)
        await push_tags(registry, repo, ["1.2.0"])
        result = await controller.cycle()
        assert reasons(result)["shop-b"][0] == "held"
        assert kustomize_tag(kube, "shop-b") == "1.1.0"
        assert kustomize_tag(kube, "shop-a") == "1.2.0"
        # The held plan depends on a manual hold: planned again every cycle.
        assert reasons(await controller.cycle())["shop-b"][0] == "held"
        assert controller.plans.plans_reused == 0

        obj = app_obj(kube, "shop-b")
        obj["metadata"]["annotations"] = {}
        kube.store.put(obj)
        assert (await controller.cycle()).images_updated == 1
        assert kustomize_tag(kube, "shop-b") == "1.2.0"
    finally:
        await close_all(closers)


async def test_a_changed_image_updater_is_seen(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    controller, closers, image = await settled(kube, registry, repo, tmp_path)
    try:
        cr = kube.store.get("imageupdaters", NS, "shop")
        cr["spec"]["applicationRefs"][0]["images"][0]["imageName"] = f"{image}:~1.0"
        kube.store.put(cr)
        result = await controller.cycle()
        assert controller.cr_views.reused == 0 and controller.plans.jobs_reused == 0
        # The newest tag allowed is now 1.0.0, below the running one: never a downgrade.
        assert reasons(result)["shop-a"] == (
            "would-downgrade",
            f"{image}:1.1.0",
            f"{image}:1.0.0",
        )
        assert result.images_updated == 0
    finally:
        await close_all(closers)


async def test_a_changed_running_image_is_seen(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    controller, closers, image = await settled(kube, registry, repo, tmp_path)
    try:
        synced(kube, "shop-b", image, "1.0.0")  # Argo CD runs an older tag than the spec's
        result = await controller.cycle()
        assert controller.plans.plans_reused == 1  # shop-a only
        assert reasons(result)["shop-b"] == (
            "already-set",
            f"{image}:1.0.0",
            f"{image}:1.1.0",
        )
    finally:
        await close_all(closers)


async def test_a_changed_remembered_state_is_seen(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    controller, closers, image = await settled(kube, registry, repo, tmp_path)
    try:
        synced(kube, "shop-a", image, "1.0.0", spec=True)  # a person rolls shop-a back
        for _ in range(3):  # announced once, then the same held plan
            result = await controller.cycle()
            assert reasons(result)["shop-a"][0] == "held"
        assert controller.plans.plans_reused == 2
        kubeconfig = str(tmp_path / "kubeconfig")
        await hold_run.release("shop-a", NS, [], kubeconfig, "kubernetes", "", NS, state_dir="")
        assert (await controller.cycle()).images_updated == 1
        assert kustomize_tag(kube, "shop-a") == "1.1.0"
    finally:
        await close_all(closers)
