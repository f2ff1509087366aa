"""Rollback holds of the ``git`` method on ``directory`` and ``application:<file>`` targets: a
commit after ours that sets the older tag back in the manifest (``git revert``) is held, not
written again; the current value is read from the manifests (the first container naming the
image) or from the Application's own document. CRD and legacy annotation mode."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf
from test_controller_argocd import close_all, make_controller, push_tags

from argocd_image_updater.pipeline.records import CycleResult
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.git_servers import (
    bare_repo,
    branch_commit,
    log_subjects,
    revert_commit,
    show,
)
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
PREFIX = "argocd-image-updater.argoproj.io"

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
spec:
  template:
    spec:
      containers:
        - name: sidecar
          image: docker.io/library/busybox:1.36
        - name: web
          image: {image}:{tag}   # the shop
"""

CHILD = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: other
spec:
  source:
    helm:
      parameters:
        - name: image.tag
          value: "9.9.9"
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop
  namespace: argocd
spec:
  source:
    repoURL: https://git.example.com/charts
    path: charts/shop
    helm:
      parameters:
        - name: image.name
          value: {image}
          forceString: true
        - name: image.tag
          value: "{tag}"
          forceString: true
"""

CASES = {
    "directory": ("directory", "app/deploy.yaml", DEPLOYMENT),
    "application": ("application:/apps/children.yaml", "apps/children.yaml", CHILD),
}


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


class Deploy:
    def __init__(
        self, kube: KubeApiServer, image: str, case: str, mode: str, tmp_path: Path, conf: Path
    ) -> None:
        self.kube, self.image, self.tmp_path, self.conf = kube, image, tmp_path, conf
        target, self.file, self.template = CASES[case]
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.remote = bare_repo(tmp_path / "deploy.git", files={self.file: self.text("1.0.0")})
        self.cycles = 0
        legacy = {
            f"{PREFIX}/image-list": f"web={image}",
            f"{PREFIX}/write-back-method": "git",
            f"{PREFIX}/write-back-target": target,
        }
        helm = case == "application"
        kube.store.put(
            objects.application(
                "shop",
                NS,
                source_type="Helm" if helm else "Directory",
                images=[f"{image}:1.0.0"],
                helm_parameters=(
                    [
                        {"name": "image.name", "value": image, "forceString": True},
                        {"name": "image.tag", "value": "1.0.0", "forceString": True},
                    ]
                    if helm
                    else None
                ),
                repo_url=f"file://{self.remote}",
                path="charts/shop" if helm else "app",
                target_revision="main",
                annotations=legacy if mode == "legacy" else {},
            )
        )
        if mode == "legacy":
            return
        writeback = {"method": "git", "gitConfig": {"writeBackTarget": target}}
        refs = [{"namePattern": "shop", "images": [{"alias": "web", "imageName": image}]}]
        kube.store.put(
            objects.image_updater(
                "shop", NS, {"writeBackConfig": writeback, "applicationRefs": refs}
            )
        )

    def text(self, tag: str) -> str:
        return self.template.format(image=self.image, tag=tag)

    @property
    def target(self) -> str | None:
        return show(self.remote, "main", self.file, home=self.home)

    def commits(self) -> int:
        return len(log_subjects(self.remote, "main", home=self.home))

    async def cycle(self) -> Any:
        self.cycles += 1
        controller, closers = await make_controller(
            self.kube,
            self.tmp_path,
            self.conf,
            git_cache_dir=str(self.tmp_path / f"clones-{self.cycles}"),
            git_commit_message_path=str(self.tmp_path / "no-template"),
        )
        try:
            result: CycleResult = await controller.cycle()
        finally:
            await close_all(closers)
        [outcome] = result.apps
        assert outcome.plan is not None, outcome.error
        return next(r for r in outcome.plan.results if r.alias == "web")


@pytest.mark.parametrize("mode", ["crd", "legacy"])
@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_revert_of_the_manifest_is_held_not_written_again(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    case: str,
    mode: str,
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.1.0"])
    conf = registries_conf(tmp_path, registry)
    deploy = Deploy(kube, f"{registry.host}/{repo}", case, mode, tmp_path, conf)
    assert (await deploy.cycle()).reason == "updated"
    assert deploy.target == deploy.text("1.1.0")
    ours = branch_commit(deploy.remote, "main")
    assert ours is not None
    revert_commit(deploy.remote, ours, home=deploy.home, author=("Jane", "jane@example.com"))
    assert deploy.target == deploy.text("1.0.0")
    commits = deploy.commits()

    for _ in range(2):
        web = await deploy.cycle()
        assert (web.reason, web.message) == (
            "held",
            "held: rolled back from 1.1.0 to 1.0.0 by Jane <jane@example.com>",
        )
    assert deploy.target == deploy.text("1.0.0") and deploy.commits() == commits
    assert kube.request_count("patch", "applications") == 0
