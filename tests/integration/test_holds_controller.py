"""Rollback-aware holds and manual holds end to end: the controller against the Kubernetes API
fake (through the real client library), tags from the real registry, git write-back to real
repositories; the ``hold`` and ``release`` commands against the fake API."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf
from test_controller_argocd import app_obj, close_all, make_controller, push_tags

from argocd_image_updater.cli import hold_run
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.controller.state_store import STATE_CONFIGMAP
from argocd_image_updater.model.holds import HOLD_ANNOTATION
from argocd_image_updater.pipeline.records import CycleResult
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.git_servers import bare_repo, log_subjects, push_files, show
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


def kustomize_app(image: str, tag: str, **extra: Any) -> dict[str, Any]:
    return objects.application(
        "shop", NS, images=[f"{image}:{tag}"], kustomize_images=[f"{image}:{tag}"], **extra
    )


def updater(image: str, **spec: Any) -> dict[str, Any]:
    return objects.image_updater(
        "shop",
        NS,
        {
            "applicationRefs": [
                {"namePattern": "shop", "images": [{"alias": "web", "imageName": image}]}
            ],
            **spec,
        },
    )


def kustomize_tag(kube: KubeApiServer) -> str:
    [entry] = app_obj(kube, "shop")["spec"]["source"]["kustomize"]["images"]
    return str(entry).rsplit(":", 1)[1]


def synced(kube: KubeApiServer, image: str, tag: str, *, spec: bool = False) -> None:
    """What Argo CD reports once it synced ``tag`` (and, with ``spec``, what a person's patch
    of the Application's parameters looks like)."""
    obj = app_obj(kube, "shop")
    obj["status"]["summary"]["images"] = [f"{image}:{tag}"]
    if spec:
        obj["spec"]["source"]["kustomize"]["images"] = [f"{image}:{tag}"]
    kube.store.put(obj)


def held_events(kube: KubeApiServer) -> list[dict[str, Any]]:
    return [e for e in kube.store.list("events", NS) if e["reason"] == "ImageHeld"]


def result_of(result: CycleResult, alias: str = "web") -> Any:
    [outcome] = result.apps
    assert outcome.plan is not None
    return next(r for r in outcome.plan.results if r.alias == alias)


async def cycles(controller: Controller, count: int = 1) -> CycleResult:
    result = await controller.cycle()
    for _ in range(count - 1):
        result = await controller.cycle()
    return result


async def test_a_rollback_of_the_parameters_is_held_until_a_newer_tag_or_a_release(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.1.0"])
    image = f"{registry.host}/{repo}"
    kube.store.put(kustomize_app(image, "1.0.0"))
    kube.store.put(updater(image))
    controller, closers = await make_controller(kube, tmp_path, registries_conf(tmp_path, registry))
    try:
        assert (await cycles(controller)).images_updated == 1
        assert kustomize_tag(kube) == "1.1.0"
        synced(kube, image, "1.1.0")
        assert (await cycles(controller)).images_updated == 0  # seen running

        synced(kube, image, "1.0.0", spec=True)  # a person rolls back
        result = await cycles(controller, 2)
        held = result_of(result)
        assert (held.reason, held.message) == ("held", "held: rolled back from 1.1.0 to 1.0.0")
        assert kustomize_tag(kube) == "1.0.0" and result.images_updated == 0
        [event] = held_events(kube)  # once, though two cycles saw the hold
        assert event["type"] == "Normal"
        assert event["involvedObject"]["name"] == "shop"
        assert "rolled back from 1.1.0 to 1.0.0" in event["message"]
        status = kube.store.get("imageupdaters", NS, "shop")["status"]
        assert "held: rolled back from 1.1.0 to 1.0.0" in json.dumps(status)

        await push_tags(registry, repo, ["1.2.0"])  # newer than the tag rolled back from
        assert (await cycles(controller)).images_updated == 1
        assert kustomize_tag(kube) == "1.2.0"

        synced(kube, image, "1.2.0")
        await cycles(controller)
        synced(kube, image, "1.1.0", spec=True)  # rolled back again, then released
        assert result_of(await cycles(controller)).reason == "held"
        kubeconfig = str(tmp_path / "kubeconfig")
        message = await hold_run.release(
            "shop", NS, [], kubeconfig, "kubernetes", "", NS, state_dir=""
        )
        assert message == "released every image (*) of Application argocd/shop"
        assert (await cycles(controller)).images_updated == 1
        assert kustomize_tag(kube) == "1.2.0"
    finally:
        await close_all(closers)


async def test_a_rollback_committed_to_the_git_target_is_held(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.0.1"])
    image = f"{registry.host}/{repo}"
    kustomization = (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"images:\n- name: {image}\n  newTag: {{tag}}\n"
    )
    remote = bare_repo(
        tmp_path / "deploy.git", files={"app/kustomization.yaml": kustomization.format(tag="1.0.0")}
    )
    home = tmp_path / "home"
    home.mkdir()
    kube.store.put(
        objects.application(
            "shop",
            NS,
            images=[f"{image}:1.0.0"],
            repo_url=f"file://{remote}",
            path="app",
            target_revision="main",
        )
    )
    kube.store.put(
        updater(
            image,
            writeBackConfig={"method": "git", "gitConfig": {"writeBackTarget": "kustomization"}},
        )
    )
    controller, closers = await make_controller(
        kube,
        tmp_path,
        registries_conf(tmp_path, registry),
        git_cache_dir=str(tmp_path / "clones"),
        git_commit_message_path=str(tmp_path / "no-template"),
    )
    try:
        assert (await cycles(controller)).images_updated == 1
        assert show(remote, "main", "app/kustomization.yaml", home=home) == kustomization.format(
            tag="1.0.1"
        )
        synced(kube, image, "1.0.1")
        await cycles(controller)

        push_files(
            remote,
            {"app/kustomization.yaml": kustomization.format(tag="1.0.0")},
            home=home,
            message="Roll back",
        )
        synced(kube, image, "1.0.0")  # Argo CD synced the older commit
        result = await cycles(controller)
        assert result_of(result).message == (
            "held: rolled back from 1.0.1 to 1.0.0 by Sandbox <sandbox@example.com>"
        )
        assert log_subjects(remote, "main", home=home)[0] == "Roll back"  # nothing committed
        assert len(held_events(kube)) == 1
    finally:
        await close_all(closers)


async def test_manual_holds_with_and_without_expiry(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.1.0"])
    image = f"{registry.host}/{repo}"
    past = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    kube.store.put(
        kustomize_app(
            image,
            "1.0.0",
            annotations={
                HOLD_ANNOTATION: "web",
                "argocd-image-updater.argoproj.io/hold-reason": "freeze",
            },
        )
    )
    kube.store.put(updater(image))
    controller, closers = await make_controller(kube, tmp_path, registries_conf(tmp_path, registry))
    try:
        held = result_of(await cycles(controller))
        assert held.reason == "held"
        assert held.message == (
            f"held: freeze (Application {NS}/shop annotation {HOLD_ANNOTATION})"
        )
        assert kustomize_tag(kube) == "1.0.0" and held_events(kube) == []

        obj = app_obj(kube, "shop")
        obj["metadata"]["annotations"] = {HOLD_ANNOTATION: f"web={past}"}  # expired
        kube.store.put(obj)
        assert (await cycles(controller)).images_updated == 1
    finally:
        await close_all(closers)


async def test_holds_of_the_image_updater_and_a_bad_one_naming_its_field(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.1.0"])
    image = f"{registry.host}/{repo}"
    future = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    kube.store.put(
        objects.application(
            "shop",
            NS,
            images=[f"{image}:1.0.0", f"{image}-api:1.0.0"],
            kustomize_images=[f"{image}:1.0.0", f"{image}-api:1.0.0"],
        )
    )
    await push_tags(registry, f"{repo}-api", ["1.0.0", "1.1.0"])
    await push_tags(registry, f"{repo}-worker", ["1.0.0"])
    spec = {
        "holds": [{"alias": "web", "until": future, "reason": "release freeze"}],
        "applicationRefs": [
            {
                "namePattern": "shop",
                "images": [
                    {"alias": "web", "imageName": image},
                    {"alias": "api", "imageName": f"{image}-api"},
                ],
            }
        ],
    }
    kube.store.put(objects.image_updater("shop", NS, spec))
    controller, closers = await make_controller(kube, tmp_path, registries_conf(tmp_path, registry))
    try:
        result = await cycles(controller)
        web, api = result_of(result, "web"), result_of(result, "api")
        assert web.message == (
            f"held: release freeze until {future} (ImageUpdater {NS}/shop field spec.holds[0])"
        )
        assert api.reason == "updated"

        # A time that cannot be read holds its image with an error naming the field
        # (the API server's schema check is bypassed, as a file in local mode would be).
        cr = kube.store.get("imageupdaters", NS, "shop")
        cr["spec"]["holds"] = [{"alias": "web", "until": "next week"}]
        kube.store.put(cr, validate=False)
        web = result_of(await cycles(controller), "web")
        assert web.outcome == "error" and web.reason == "invalid-config"
        assert (
            f"ImageUpdater {NS}/shop field spec.holds[0].until: 'next week' is not" in web.message
        )
    finally:
        await close_all(closers)


async def test_hold_and_release_commands_through_the_kubernetes_api(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    image = f"{registry.host}/{repo}"
    kube.store.put(kustomize_app(image, "1.0.0", annotations={"team": "shop"}))
    kubeconfig = str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS))
    message = await hold_run.hold(
        "shop", "", ["web"], kubeconfig, "kubernetes", "", "2030-01-01T00:00:00Z", "freeze"
    )
    assert message == "held web of Application argocd/shop until 2030-01-01T00:00:00Z"
    await hold_run.hold("shop", "", ["api"], kubeconfig, "kubernetes", "", "", "")
    annotations = app_obj(kube, "shop")["metadata"]["annotations"]
    assert annotations == {
        "team": "shop",
        HOLD_ANNOTATION: "web=2030-01-01T00:00:00Z,api",
        "argocd-image-updater.argoproj.io/hold-reason": "freeze",
    }
    await hold_run.release("shop", "", ["web"], kubeconfig, "kubernetes", "", "", "")
    assert app_obj(kube, "shop")["metadata"]["annotations"][HOLD_ANNOTATION] == "api"
    await hold_run.release("shop", "", [], kubeconfig, "kubernetes", "", "", "")
    assert app_obj(kube, "shop")["metadata"]["annotations"] == {"team": "shop"}
    # The remembered writes were released too (nothing to forget: nothing was created).
    assert (
        kube.store.list("configmaps", NS, field_selector=f"metadata.name={STATE_CONFIGMAP}") == []
    )

    bare = objects.application("bare", NS, images=[f"{image}:1.0.0"])
    bare["metadata"].pop("annotations", None)
    kube.store.put(bare)
    await hold_run.hold("bare", "", [], kubeconfig, "kubernetes", "", "", "")
    assert app_obj(kube, "bare")["metadata"]["annotations"] == {HOLD_ANNOTATION: "*"}

    with pytest.raises(hold_run.HoldError, match="Application argocd/missing not found"):
        await hold_run.hold("missing", "", [], kubeconfig, "kubernetes", "", "", "")
    with pytest.raises(hold_run.HoldError, match="--until: 'tomorrow' is not an RFC 3339 time"):
        await hold_run.hold("shop", "", [], kubeconfig, "kubernetes", "", "tomorrow", "")
    with pytest.raises(hold_run.HoldError, match="--image: 'a b' is not an image alias"):
        await hold_run.hold("shop", "", ["a b"], kubeconfig, "kubernetes", "", "", "")
