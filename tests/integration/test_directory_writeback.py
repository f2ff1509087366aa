"""Plain-manifest write-back (``writeBackTarget: directory``) and lists of targets, through the
controller against a real git server over smart HTTP: every workload image of every file
below the directory is rewritten in one commit, only the image bytes change; a target that
cannot be written leaves the others unwritten. Each in CRD and in legacy annotation mode."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fleet import git_cycle

from argocd_image_updater_testing import objects
from argocd_image_updater_testing.git_servers import (
    GitHttpServer,
    bare_repo,
    log_subjects,
    push_attempts,
    show,
)
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 4, 1, tzinfo=UTC)
TOKEN = "t0ken-for-manifests"
PREFIX = "argocd-image-updater.argoproj.io"
MODES = ("crd", "legacy")

WORKLOADS = {
    "deploy.yaml": """\
# The web front end.
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: &labels {app: web}}
x-defaults: &probe
  periodSeconds: 10   # shared
spec:
  template:
    metadata:
      labels: *labels
    spec:
      containers:
        - name: web
          image: &web "{image}:1.0.0"   # bumped by the updater
          readinessProbe:
            <<: *probe
        - name: proxy
          image: nginx:1.25   # not managed
---
apiVersion: v1
kind: Service
metadata:
  name: web
""",
    "stateful.yaml": """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  template:
    spec:
      initContainers:
      - name: migrate
        image: '{image}:1.0.0'
      containers:
      - {name: db, image: postgres:16}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  template:
    spec:
      containers:
      - name: agent
        image: {image}:1.0.0
""",
    "batch.yml": """\
apiVersion: batch/v1
kind: Job
metadata:
  name: once
spec:
  template:
    spec:
      containers:
      - name: once
        image: {image}:1.0.0 # a comment
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: nightly
            image: "{image}:1.0.0"
""",
    "pods.yaml": """\
apiVersion: v1
kind: Pod
metadata:
  name: debug
spec:
  containers:
  - name: main
    image: {image}:1.0.0
  ephemeralContainers:
  - name: shell
    image: {image}:1.0.0
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: rs
spec:
  template:
    spec:
      containers:
      - name: rs
        image: {image}:1.0.0
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
      - name: api
        image: {image}:1.0.0
""",
    "nested/more.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
spec:
  template:
    spec:
      containers:
      - name: worker
        image: {image}:1.0.0
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker2
spec:
  template:
    spec:
      containers:
      - name: worker
        image: {image}:1.0.0
""",
    "nested/rollout.yaml": """\
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: canary
spec:
  template:
    spec:
      containers:
      - name: canary
        image: {image}:1.0.0
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: last
spec:
  template:
    spec:
      containers:
      - name: last
        image: {image}:1.0.0
""",
}
"""Six files, twelve workloads (and a Service), the managed image in each."""

IGNORED = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - image: {image}:1.0.0\n"


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


@pytest.fixture
def git_root(tmp_path: Path) -> Iterator[tuple[Path, GitHttpServer]]:
    root = tmp_path / "srv"
    root.mkdir()
    with GitHttpServer(root, users={"bot": TOKEN}) as server:
        yield root, server


def files_for(image: str, *dirs: str) -> dict[str, str]:
    out = {}
    for directory in dirs:
        for name, text in WORKLOADS.items():
            out[f"{directory}/{name}"] = text.replace("{image}", image)
        out[f"{directory}/ignored-pod.yaml"] = IGNORED.replace("{image}", image)
    return out


def configure(kube: KubeApiServer, mode: str, image: str, url: str, targets: list[str]) -> None:
    kube.store.put(
        objects.secret(
            "repo-deploy",
            NS,
            {"url": url, "username": "bot", "password": TOKEN, "insecure": "true"},
            labels={"argocd.argoproj.io/secret-type": "repository"},
        )
    )
    annotations = {}
    if mode == "legacy":
        annotations = {
            f"{PREFIX}/image-list": f"web={image}",
            f"{PREFIX}/write-back-method": "git",
            f"{PREFIX}/write-back-target": ",".join(targets),
            f"{PREFIX}/web.yaml.kind": "argoproj.io/Rollout",
            f"{PREFIX}/web.yaml.path": "spec.template.spec",
        }
    app = objects.application(
        "shop",
        NS,
        source_type="Directory",
        images=[f"{image}:1.0.0"],
        repo_url=url,
        path="manifests",
        target_revision="main",
        annotations=annotations,
    )
    app["spec"]["source"]["directory"] = {"recurse": True, "exclude": "{ignored*,x/*}"}
    kube.store.put(app)
    if mode == "legacy":
        return
    web = {
        "alias": "web",
        "imageName": image,
        "manifestTargets": {"yaml": {"kind": "argoproj.io/Rollout", "path": "spec.template.spec"}},
    }
    kube.store.put(
        objects.image_updater(
            "shop",
            NS,
            {
                "writeBackConfig": {
                    "method": "git",
                    "gitConfig": {"writeBackTarget": targets[0] if len(targets) == 1 else targets},
                },
                "applicationRefs": [{"namePattern": "shop", "images": [web]}],
            },
        )
    )


@pytest.mark.parametrize("mode", MODES)
async def test_every_workload_of_every_file_in_one_commit(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    home: Path,
    git_root: tuple[Path, GitHttpServer],
    mode: str,
) -> None:
    root, server = git_root
    image = f"{registry.host}/{repo}"
    files = files_for(image, "manifests")
    remote = bare_repo(root / "deploy.git", files=files)
    configure(kube, mode, image, server.url_for("deploy.git"), ["directory"])

    result = await git_cycle(kube, registry, repo, tmp_path, START)

    assert result.errors == 0 and result.images_updated == 1, [a.error for a in result.apps]
    assert len(log_subjects(remote, "main", home=home)) == 2
    for path, text in files.items():
        new = show(remote, "main", path, home=home)
        if "ignored" in path:
            assert new == text  # excluded by spec.source.directory.exclude
        else:
            assert new == text.replace(f"{image}:1.0.0", f"{image}:1.0.1"), path
    assert text.count(f"{image}:1.0.0") >= 1
    assert kube.request_count("patch", "applications") == 0


@pytest.mark.parametrize("mode", MODES)
async def test_two_targets_share_one_commit(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    home: Path,
    git_root: tuple[Path, GitHttpServer],
    mode: str,
) -> None:
    root, server = git_root
    image = f"{registry.host}/{repo}"
    files = files_for(image, "manifests", "mirror")
    remote = bare_repo(root / "deploy.git", files=files)
    configure(kube, mode, image, server.url_for("deploy.git"), ["directory", "directory:/mirror"])

    result = await git_cycle(kube, registry, repo, tmp_path, START)

    assert result.errors == 0 and result.images_updated == 1, [a.error for a in result.apps]
    assert len(log_subjects(remote, "main", home=home)) == 2  # one commit for both
    for directory in ("manifests", "mirror"):
        text = show(remote, "main", f"{directory}/nested/rollout.yaml", home=home)
        assert text == files[f"{directory}/nested/rollout.yaml"].replace("1.0.0", "1.0.1")


@pytest.mark.parametrize("mode", MODES)
async def test_a_failing_second_target_writes_nothing(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    home: Path,
    git_root: tuple[Path, GitHttpServer],
    mode: str,
) -> None:
    root, server = git_root
    image = f"{registry.host}/{repo}"
    files = files_for(image, "manifests")
    files["elsewhere/unrelated.yaml"] = IGNORED.replace("{image}", "busybox")
    remote = bare_repo(root / "deploy.git", files=files)
    configure(
        kube, mode, image, server.url_for("deploy.git"), ["directory", "directory:/elsewhere"]
    )

    result = await git_cycle(kube, registry, repo, tmp_path, START)

    assert result.errors == 1 and result.images_updated == 0
    (app,) = result.apps
    assert "elsewhere" in (app.error or "") and "uses the image" in (app.error or "")
    assert push_attempts(remote) == 0
    assert log_subjects(remote, "main", home=home) == ["Initial commit"]
    for path, text in files.items():
        assert show(remote, "main", path, home=home) == text
