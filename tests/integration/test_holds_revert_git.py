"""Rollback holds of the ``git`` method: a commit after ours that restores the older value in
the write-back target (``git revert`` of our commit, or a plain edit) is held, whether or not
the tag ever ran; each cycle is a new controller process with a new clone cache (the state from
the ConfigMap). A newer tag ends the hold, so does ``release``."""

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
from argocd_image_updater_testing.git_servers import (
    bare_repo,
    branch_commit,
    log_subjects,
    push_files,
    revert_commit,
    show,
)
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
KUSTOMIZATION = (
    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
    "images:\n- name: {image}\n  newTag: {tag}\n"
)
FILE = "app/kustomization.yaml"


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


class Deploy:
    """A deploy repository written by the git method, and what people and Argo CD do."""

    def __init__(
        self, kube: KubeApiServer, image: str, mode: str, tmp_path: Path, conf: Path
    ) -> None:
        self.kube, self.image, self.tmp_path, self.conf = kube, image, tmp_path, conf
        self.mode, _, store = mode.partition("-")
        self.state_dir = str(tmp_path / "state") if store else ""
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.remote = bare_repo(tmp_path / "deploy.git", files={FILE: self.text("1.0.0")})
        self.cycles = 0
        legacy = {
            "argocd-image-updater.argoproj.io/image-list": f"web={image}",
            "argocd-image-updater.argoproj.io/write-back-method": "git",
            "argocd-image-updater.argoproj.io/write-back-target": "kustomization",
        }
        kube.store.put(
            objects.application(
                "shop",
                NS,
                images=[f"{image}:1.0.0"],
                repo_url=f"file://{self.remote}",
                path="app",
                target_revision="main",
                annotations=legacy if self.mode == "legacy" else {},
            )
        )
        if self.mode == "legacy":
            return
        writeback = {"method": "git", "gitConfig": {"writeBackTarget": "kustomization"}}
        kube.store.put(
            objects.image_updater(
                "shop",
                NS,
                {
                    "writeBackConfig": writeback,
                    "applicationRefs": [
                        {"namePattern": "shop", "images": [{"alias": "web", "imageName": image}]}
                    ],
                },
            )
        )

    def text(self, tag: str) -> str:
        return KUSTOMIZATION.format(image=self.image, tag=tag)

    @property
    def target(self) -> str | None:
        return show(self.remote, "main", FILE, home=self.home)

    def commits(self) -> int:
        return len(log_subjects(self.remote, "main", home=self.home))

    def sync(self, tag: str, phase: str = "Succeeded") -> None:
        obj = app_obj(self.kube, "shop")
        obj["status"]["summary"]["images"] = [f"{self.image}:{tag}"]
        obj["status"]["operationState"] = {
            "phase": phase,
            "operation": {"sync": {}},
            "startedAt": "2026-03-01T12:00:00Z",
        }
        self.kube.store.put(obj)

    async def cycle(self) -> Any:
        """One cycle of a new controller process, with a clone cache of its own."""
        self.cycles += 1
        controller, closers = await make_controller(
            self.kube,
            self.tmp_path,
            self.conf,
            git_cache_dir=str(self.tmp_path / f"clones-{self.cycles}"),
            git_commit_message_path=str(self.tmp_path / "no-template"),
            **({"state_dir": self.state_dir} if self.state_dir else {}),
        )
        try:
            result: CycleResult = await controller.cycle()
        finally:
            await close_all(closers)
        [outcome] = result.apps
        assert outcome.plan is not None
        return next(r for r in outcome.plan.results if r.alias == "web")


@pytest.fixture(params=["crd", "legacy", "crd-state-dir"])
async def deploy(
    request: pytest.FixtureRequest,
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
) -> Deploy:
    """CRD and legacy annotation mode with the state in the ConfigMap; CRD mode with
    --state-dir."""
    await push_tags(registry, repo, ["1.0.0", "1.1.0"])
    conf = registries_conf(tmp_path, registry)
    return Deploy(kube, f"{registry.host}/{repo}", request.param, tmp_path, conf)


@pytest.mark.parametrize("sync", ["none", "failed", "healthy"])
@pytest.mark.parametrize("how", ["revert", "edit"])
async def test_a_commit_restoring_the_older_value_is_held(
    deploy: Deploy, sync: str, how: str
) -> None:
    assert (await deploy.cycle()).reason == "updated"
    assert deploy.target == deploy.text("1.1.0")
    ours = branch_commit(deploy.remote, "main")
    assert ours is not None
    if sync == "failed":
        deploy.sync("1.0.0", phase="Failed")
    elif sync == "healthy":
        deploy.sync("1.1.0")
        assert (await deploy.cycle()).reason == "up-to-date"
    if how == "revert":
        revert_commit(deploy.remote, ours, home=deploy.home, author=("Jane", "jane@example.com"))
        by = "Jane <jane@example.com>"
    else:
        push_files(deploy.remote, {FILE: deploy.text("1.0.0")}, home=deploy.home)
        by = "Sandbox <sandbox@example.com>"
    if sync == "healthy":
        deploy.sync("1.0.0")
    commits = deploy.commits()

    for _ in range(2):
        web = await deploy.cycle()
        assert (web.reason, web.message) == (
            "held",
            f"held: rolled back from 1.1.0 to 1.0.0 by {by}",
        )
    assert deploy.target == deploy.text("1.0.0") and deploy.commits() == commits
    events = [e for e in deploy.kube.store.list("events", NS) if e["reason"] == "ImageHeld"]
    assert len(events) == 1


async def test_a_newer_tag_or_a_release_ends_the_hold(
    deploy: Deploy, registry: RegistryServer, repo: str
) -> None:
    await deploy.cycle()
    push_files(deploy.remote, {FILE: deploy.text("1.0.0")}, home=deploy.home)
    assert (await deploy.cycle()).reason == "held"
    await push_tags(registry, repo, ["1.2.0"])
    assert (await deploy.cycle()).reason == "updated"
    assert deploy.target == deploy.text("1.2.0")

    push_files(deploy.remote, {FILE: deploy.text("1.1.0")}, home=deploy.home)
    assert (await deploy.cycle()).message.startswith("held: rolled back from 1.2.0 to 1.1.0")
    kubeconfig = str(deploy.tmp_path / "kubeconfig")
    await hold_run.release(
        "shop", NS, ["web"], kubeconfig, "kubernetes", "", NS, state_dir=deploy.state_dir
    )
    assert (await deploy.cycle()).reason == "updated"
    assert deploy.target == deploy.text("1.2.0")
