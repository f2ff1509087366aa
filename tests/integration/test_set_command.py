"""``set APP --image ALIAS=TAG`` end to end: against the Kubernetes API fake (``argocd``
method), real git over smart HTTP (``git`` method) and manifest files (local mode), in CRD mode
and legacy annotation mode; the hold it puts is what ``release`` removes and what the next
cycle respects."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf
from test_controller_argocd import app_obj, close_all, make_controller, push_tags

from argocd_image_updater.cli import hold_run, set_run
from argocd_image_updater.config.settings import Settings, resolve
from argocd_image_updater.controller.set_version import SetError
from argocd_image_updater.model.holds import HOLD_ANNOTATION, HOLD_REASON_ANNOTATION
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.git_servers import GitHttpServer, bare_repo, show
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
LEGACY = "legacy"
CRD = "crd"


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


def settings(kube: KubeApiServer, tmp_path: Path, conf: Path, **flags: Any) -> Settings:
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)
    return resolve(
        "run",
        {
            "kubeconfig": str(kubeconfig),
            "registries_conf_path": str(conf),
            "git_cache_dir": str(tmp_path / "clones"),
            "git_commit_message_path": str(tmp_path / "no-template"),
            "once": True,
            **flags,
        },
        env={},
    )


def configure(
    kube: KubeApiServer, mode: str, image: str, app: dict[str, Any], write_back: dict[str, Any]
) -> None:
    """``app`` updated by a ``web`` image: by an ImageUpdater (CRD mode) or its annotations."""
    if mode == LEGACY:
        annotations = app["metadata"].setdefault("annotations", {})
        annotations["argocd-image-updater.argoproj.io/image-list"] = f"web={image}"
        annotations["argocd-image-updater.argoproj.io/web.update-strategy"] = "semver"
        if write_back.get("method") == "git":
            annotations["argocd-image-updater.argoproj.io/write-back-method"] = "git"
            target = write_back["gitConfig"].get("writeBackTarget")
            if target:
                annotations["argocd-image-updater.argoproj.io/write-back-target"] = target
    kube.store.put(app)
    if mode == CRD:
        name = app["metadata"]["name"]
        ref = {"namePattern": name, "images": [{"alias": "web", "imageName": image}]}
        spec: dict[str, Any] = {"applicationRefs": [ref]}
        if write_back:
            spec["writeBackConfig"] = write_back
        kube.store.put(objects.image_updater(name, NS, spec))


def kustomize_tag(kube: KubeApiServer) -> str:
    [entry] = app_obj(kube, "shop")["spec"]["source"]["kustomize"]["images"]
    return str(entry).rsplit(":", 1)[1]


@pytest.mark.parametrize("mode", [CRD, LEGACY])
async def test_set_writes_an_older_tag_holds_it_and_release_lets_the_cycle_update(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, mode: str
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.1.0", "1.2.0"])
    image = f"{registry.host}/{repo}"
    app = objects.application(
        "shop", NS, images=[f"{image}:1.2.0"], kustomize_images=[f"{image}:1.2.0"]
    )
    configure(kube, mode, image, app, {})
    conf = registries_conf(tmp_path, registry)

    message = await set_run.set_version(
        settings(kube, tmp_path, conf), "shop", "", "web=1.0.0", "", ""
    )
    assert message == (f"set web of Application argocd/shop to {image}:1.0.0; held until released")
    assert kustomize_tag(kube) == "1.0.0"
    annotations = app_obj(kube, "shop")["metadata"]["annotations"]
    assert annotations[HOLD_ANNOTATION] == "web"
    assert annotations[HOLD_REASON_ANNOTATION] == "set to 1.0.0"

    synced = app_obj(kube, "shop")
    synced["status"]["summary"]["images"] = [f"{image}:1.0.0"]  # Argo CD synced it
    kube.store.put(synced)

    controller, closers = await make_controller(kube, tmp_path, conf)
    try:
        result = await controller.cycle()  # the next cycle respects the hold
        [outcome] = result.apps
        assert outcome.plan is not None
        [held] = outcome.plan.results
        assert held.reason == "held" and "set to 1.0.0" in held.message
        assert kustomize_tag(kube) == "1.0.0" and result.images_updated == 0

        released = await hold_run.release(
            "shop", NS, ["web"], str(tmp_path / "kubeconfig"), "kubernetes", "", NS, ""
        )
        assert released == "released web of Application argocd/shop"
        assert (await controller.cycle()).images_updated == 1
        assert kustomize_tag(kube) == "1.2.0"
    finally:
        await close_all(closers)


async def test_a_tag_the_registry_does_not_list_is_not_written_nor_held(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.1.0"])
    image = f"{registry.host}/{repo}"
    app = objects.application(
        "shop", NS, images=[f"{image}:1.1.0"], kustomize_images=[f"{image}:1.1.0"]
    )
    configure(kube, CRD, image, app, {})
    conf = registries_conf(tmp_path, registry)
    with pytest.raises(SetError, match=r"the registry does not list tag '0\.9\.0'"):
        await set_run.set_version(settings(kube, tmp_path, conf), "shop", NS, "web=0.9.0", "", "")
    assert kustomize_tag(kube) == "1.1.0"
    assert HOLD_ANNOTATION not in (app_obj(kube, "shop")["metadata"].get("annotations") or {})
    with pytest.raises(SetError, match="has no image with alias 'api' \\(aliases: web\\)"):
        await set_run.set_version(settings(kube, tmp_path, conf), "shop", NS, "api=1.0.0", "", "")
    with pytest.raises(hold_run.HoldError, match="Application argocd/gone not found"):
        await set_run.set_version(settings(kube, tmp_path, conf), "gone", NS, "web=1.0.0", "", "")
    kube.store.put(objects.application("other", NS, images=[f"{image}:1.1.0"]))
    with pytest.raises(SetError, match="argocd/other is not selected"):
        await set_run.set_version(settings(kube, tmp_path, conf), "other", NS, "web=1.0.0", "", "")
    for name in ("shop", "other"):
        assert HOLD_ANNOTATION not in (app_obj(kube, name)["metadata"].get("annotations") or {})


async def test_dry_run_writes_nothing_and_holds_nothing(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.1.0"])
    image = f"{registry.host}/{repo}"
    app = objects.application(
        "shop", NS, images=[f"{image}:1.1.0"], kustomize_images=[f"{image}:1.1.0"]
    )
    configure(kube, CRD, image, app, {})
    conf = registries_conf(tmp_path, registry)
    message = await set_run.set_version(
        settings(kube, tmp_path, conf, dry_run=True), "shop", NS, "web=1.0.0", "", ""
    )
    assert message == f"dry run: would set web of Application argocd/shop to {image}:1.0.0"
    assert kustomize_tag(kube) == "1.1.0"
    assert kube.request_count("patch", "applications") == 0


KUSTOMIZATION = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"


@pytest.mark.parametrize("mode", [CRD, LEGACY])
async def test_set_commits_to_git_over_smart_http(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, mode: str
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.1.0"])
    image = f"{registry.host}/{repo}"
    kustomization = KUSTOMIZATION + f"images:\n- name: {image}\n  newTag: {{tag}}\n"
    root = tmp_path / "srv"
    remote = bare_repo(
        root / "org" / "deploy.git",
        files={"app/kustomization.yaml": kustomization.format(tag="1.1.0")},
    )
    home = tmp_path / "home"
    home.mkdir()
    token = "set-t0ken"
    with GitHttpServer(root, users={"bot": token}) as git_http:
        url = git_http.url_for("org/deploy.git")
        kube.store.put(
            objects.secret(
                "repo-deploy",
                NS,
                {"url": url, "username": "bot", "password": token, "insecure": "true"},
                labels={"argocd.argoproj.io/secret-type": "repository"},
            )
        )
        app = objects.application(
            "shop",
            NS,
            images=[f"{image}:1.1.0"],
            repo_url=url,
            path="app",
            target_revision="main",
        )
        write_back = {"method": "git", "gitConfig": {"writeBackTarget": "kustomization"}}
        configure(kube, mode, image, app, write_back)
        conf = registries_conf(tmp_path, registry)
        message = await set_run.set_version(
            settings(kube, tmp_path, conf), "shop", NS, "web=1.0.0", "2099-01-01T00:00:00Z", ""
        )
    assert message.startswith(f"set web of Application argocd/shop to {image}:1.0.0")
    assert message.endswith("held until released or until 2099-01-01T00:00:00Z")
    assert show(remote, "main", "app/kustomization.yaml", home=home) == kustomization.format(
        tag="1.0.0"
    )
    annotations = app_obj(kube, "shop")["metadata"]["annotations"]
    assert annotations[HOLD_ANNOTATION] == "web=2099-01-01T00:00:00Z"


async def test_set_in_local_mode_edits_the_manifest(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    from test_holds_local import write_apps

    await push_tags(registry, repo, ["1.0.0", "1.1.0"])
    image = f"{registry.host}/{repo}"
    apps = tmp_path / "apps"
    manifest = write_apps(apps, image, "1.1.0")
    local = resolve(
        "run",
        {
            "applications_api": "local",
            "local_path": str(apps),
            "registries_conf_path": str(registries_conf(tmp_path, registry)),
            "git_cache_dir": str(tmp_path / "clones"),
            "once": True,
        },
        env={},
    )
    message = await set_run.set_version(local, "shop", "", "web=1.0.0", "", "rollback")
    assert message == f"set web of Application argocd/shop to {image}:1.0.0; held until released"
    text = manifest.read_text()
    assert f"{image}:1.0.0" in text and f"{image}:1.1.0" not in text
    assert f"{HOLD_ANNOTATION}: web" in text and f"{HOLD_REASON_ANNOTATION}: rollback" in text
    released = await hold_run.release("shop", "", ["web"], "", "local", str(apps), "", "")
    assert released.startswith("released web of Application argocd/shop")
    assert HOLD_ANNOTATION not in manifest.read_text()


def hydrator_app(image: str, url: str) -> dict[str, Any]:
    """An Application whose manifests the source hydrator renders: ``spec.sourceHydrator``
    (the Argo CD Application CRD's fields), no ``spec.source``."""
    app = objects.application("shop", NS, images=[f"{image}:1.0.0"], repo_url=url)
    del app["spec"]["source"]
    app["spec"]["sourceHydrator"] = {
        "drySource": {"repoURL": url, "path": "dry/shop", "targetRevision": "main"},
        "syncSource": {"targetBranch": "env/prod", "path": "shop"},
    }
    return app


@pytest.mark.parametrize("mode", [CRD, LEGACY])
async def test_a_hydrator_app_is_updated_in_its_dry_source(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, mode: str
) -> None:
    from test_controller_argocd import push_tags as push

    await push(registry, repo, ["1.0.0", "1.1.0"])
    image = f"{registry.host}/{repo}"
    kustomization = KUSTOMIZATION + f"images:\n- name: {image}\n  newTag: {{tag}}\n"
    root = tmp_path / "srv"
    remote = bare_repo(
        root / "org" / "deploy.git",
        files={"dry/shop/kustomization.yaml": kustomization.format(tag="1.0.0")},
    )
    home = tmp_path / "home"
    home.mkdir()
    token = "hydrator-t0ken"
    with GitHttpServer(root, users={"bot": token}) as git_http:
        url = git_http.url_for("org/deploy.git")
        kube.store.put(
            objects.secret(
                "repo-deploy",
                NS,
                {"url": url, "username": "bot", "password": token, "insecure": "true"},
                labels={"argocd.argoproj.io/secret-type": "repository"},
            )
        )
        write_back = {"method": "git", "gitConfig": {"writeBackTarget": "kustomization"}}
        configure(kube, mode, image, hydrator_app(image, url), write_back)
        controller, closers = await make_controller(
            kube,
            tmp_path,
            registries_conf(tmp_path, registry),
            git_cache_dir=str(tmp_path / "clones"),
            git_commit_message_path=str(tmp_path / "no-template"),
        )
        try:
            result = await controller.cycle()
        finally:
            await close_all(closers)
    assert result.errors == 0, [a.error for a in result.apps]
    assert result.images_updated == 1
    written = show(remote, "main", "dry/shop/kustomization.yaml", home=home)
    assert written == kustomization.format(tag="1.1.0")
    assert show(remote, "env/prod", "shop/kustomization.yaml", home=home) is None
