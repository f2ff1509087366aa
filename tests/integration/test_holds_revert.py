"""Rollback holds honour a revert of the target before the tag written ever ran (the
``argocd`` method: the Application's parameters), in CRD mode and legacy annotation mode,
each cycle a new controller process (the state from the ConfigMap): a revert before any sync,
after a failed sync, after a healthy one; a newer tag ends the hold, so does ``release``; an
app-of-apps parent resetting the Application is held, not fought, and named."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf
from test_controller_argocd import app_obj, close_all, make_controller, push_tags

from argocd_image_updater.cli import hold_run
from argocd_image_updater.pipeline.records import CycleResult
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
MODES = ["crd", "legacy", "crd-state-dir"]
"""CRD and legacy annotation mode with the state in the ConfigMap; CRD mode with --state-dir."""


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


class Cluster:
    """An Application ``shop`` (kustomize image ``web``) and what people and Argo CD do to it."""

    def __init__(self, kube: KubeApiServer, image: str, mode: str, tmp_path: Path, conf: Path):
        self.kube, self.image, self.tmp_path, self.conf = kube, image, tmp_path, conf
        self.mode, _, store = mode.partition("-")
        self.state_dir = str(tmp_path / "state") if store else ""
        annotations = (
            {
                "argocd-image-updater.argoproj.io/image-list": f"web={image}",
                "argocd-image-updater.argoproj.io/web.update-strategy": "semver",
            }
            if self.mode == "legacy"
            else {}
        )
        app = objects.application(
            "shop",
            NS,
            images=[f"{image}:1.0.0"],
            kustomize_images=[f"{image}:1.0.0"],
            annotations=annotations,
        )
        kube.store.put(app, manager="kubectl")
        if self.mode == "crd":
            kube.store.put(
                objects.image_updater(
                    "shop",
                    NS,
                    {
                        "applicationRefs": [
                            {
                                "namePattern": "shop",
                                "images": [{"alias": "web", "imageName": image}],
                            }
                        ]
                    },
                )
            )

    @property
    def target(self) -> str:
        [entry] = app_obj(self.kube, "shop")["spec"]["source"]["kustomize"]["images"]
        return str(entry).rsplit(":", 1)[1]

    def set_parameter(self, tag: str, manager: str = "kubectl") -> None:
        obj = app_obj(self.kube, "shop")
        obj["spec"]["source"]["kustomize"]["images"] = [f"{self.image}:{tag}"]
        self.kube.store.put(obj, manager=manager)

    def sync(self, tag: str, phase: str = "Succeeded") -> None:
        """What Argo CD reports after a sync: ``tag`` running (a failed sync leaves the old)."""
        obj = app_obj(self.kube, "shop")
        obj["status"]["summary"]["images"] = [f"{self.image}:{tag}"]
        obj["status"]["operationState"] = {
            "phase": phase,
            "operation": {"sync": {}},
            "startedAt": "2026-03-01T12:00:00Z",
        }
        self.kube.store.put(obj, manager="argocd-application-controller")

    async def cycle(self) -> Any:
        """One cycle of a new controller process; the result of image ``web``."""
        flags = {"state_dir": self.state_dir} if self.state_dir else {}
        controller, closers = await make_controller(self.kube, self.tmp_path, self.conf, **flags)
        try:
            result: CycleResult = await controller.cycle()
        finally:
            await close_all(closers)
        [outcome] = result.apps
        assert outcome.plan is not None
        return next(r for r in outcome.plan.results if (r.alias or r.image) == "web")

    def held_events(self) -> list[dict[str, Any]]:
        return [e for e in self.kube.store.list("events", NS) if e["reason"] == "ImageHeld"]

    def patches(self) -> int:
        return self.kube.request_count("patch", "applications")


@pytest.fixture(params=MODES)
async def cluster(
    request: pytest.FixtureRequest,
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
) -> Cluster:
    await push_tags(registry, repo, ["1.0.0", "1.1.0"])
    return Cluster(
        kube,
        f"{registry.host}/{repo}",
        request.param,
        tmp_path,
        registries_conf(tmp_path, registry),
    )


HELD = "held: rolled back from 1.1.0 to 1.0.0 by kubectl"


@pytest.mark.parametrize("sync", ["none", "failed", "healthy"])
async def test_a_revert_of_the_parameters_is_held_whether_or_not_the_tag_ran(
    cluster: Cluster, sync: str
) -> None:
    assert (await cluster.cycle()).reason == "updated"
    assert cluster.target == "1.1.0"
    if sync == "failed":
        cluster.sync("1.0.0", phase="Failed")  # the new pods never became healthy
    elif sync == "healthy":
        cluster.sync("1.1.0")
        assert (await cluster.cycle()).reason == "up-to-date"
    cluster.set_parameter("1.0.0")  # a person reverts
    if sync == "healthy":
        cluster.sync("1.0.0")
    patches = cluster.patches()

    for _ in range(2):
        web = await cluster.cycle()
        assert (web.reason, web.message) == ("held", HELD)
    assert cluster.target == "1.0.0" and cluster.patches() == patches
    [event] = cluster.held_events()  # announced once
    assert event["message"] == f"image 'web' {HELD}"


async def test_a_newer_tag_or_a_release_ends_the_hold(
    cluster: Cluster, registry: RegistryServer, repo: str
) -> None:
    await cluster.cycle()
    cluster.set_parameter("1.0.0")
    assert (await cluster.cycle()).reason == "held"
    await push_tags(registry, repo, ["1.2.0"])  # newer than the tag rolled back from
    assert (await cluster.cycle()).reason == "updated"
    assert cluster.target == "1.2.0"

    cluster.set_parameter("1.1.0")
    web = await cluster.cycle()
    assert web.message == "held: rolled back from 1.2.0 to 1.1.0 by kubectl"
    kubeconfig = str(cluster.tmp_path / "kubeconfig")
    await hold_run.release(
        "shop", NS, [], kubeconfig, "kubernetes", "", NS, state_dir=cluster.state_dir
    )
    assert (await cluster.cycle()).reason == "updated"
    assert cluster.target == "1.2.0"


async def test_an_app_of_apps_reset_is_held_not_fought_and_names_the_manager(
    cluster: Cluster,
) -> None:
    await cluster.cycle()
    for _ in range(3):  # the parent's self-heal sets the Application back after every write
        cluster.set_parameter("1.0.0", manager="argocd-controller")
        web = await cluster.cycle()
        assert web.reason == "held"
        assert web.message == "held: rolled back from 1.1.0 to 1.0.0 by argocd-controller"
    assert cluster.patches() == 1  # the first write only: no write loop
    [event] = cluster.held_events()
    assert "by argocd-controller" in event["message"]
