"""App of apps (``writeBackTarget: application:<file>``, or ``application``: the file found
through the parent): a child Application whose manifest a parent syncs from Git is updated in
that manifest, through the controller against a real git
server over smart HTTP: only the changed values' bytes change, the live object is not patched
(the parent's self-heal would undo it). In CRD and in legacy annotation mode."""

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
TOKEN = "t0ken-for-apps"
PREFIX = "argocd-image-updater.argoproj.io"
MODES = ("crd", "legacy")
TARGET = "application:/apps/children.yaml"

CHILDREN = """\
# The children of the platform Application (synced with self-heal).
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: api
  namespace: argocd
spec:
  source:
    repoURL: {url}
    path: charts/api
    helm:
      parameters:
      - name: image.tag
        value: "1.0.0"   # not managed here
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
  annotations:
{annotations}
spec:
  project: default
  source:
    repoURL: {url}
    path: charts/web
    targetRevision: main
    helm:
      parameters:
        - name: image.name
          value: {image}
          forceString: true
        - name: image.tag   # bumped by the updater
          value: '1.0.0'
          forceString: true
  syncPolicy: {{automated: {{selfHeal: true}}}}
"""


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


def legacy_annotations(image: str, target: str) -> dict[str, str]:
    return {
        f"{PREFIX}/image-list": f"web={image}",
        f"{PREFIX}/write-back-method": "git",
        f"{PREFIX}/write-back-target": target,
    }


def children(mode: str, image: str, url: str, target: str = TARGET) -> str:
    notes = legacy_annotations(image, target) if mode == "legacy" else {"team": "web"}
    lines = "\n".join(f"    {key}: {value}" for key, value in notes.items())
    return CHILDREN.format(url=url, image=image, annotations=lines)


def configure(kube: KubeApiServer, mode: str, image: str, url: str, target: str = TARGET) -> None:
    kube.store.put(
        objects.secret(
            "repo-deploy",
            NS,
            {"url": url, "username": "bot", "password": TOKEN, "insecure": "true"},
            labels={"argocd.argoproj.io/secret-type": "repository"},
        )
    )
    kube.store.put(
        objects.application(
            "platform",
            NS,
            source_type="Directory",
            repo_url=url,
            path="apps",
            target_revision="main",
        )
    )
    child = objects.application(
        "web",
        NS,
        source_type="Helm",
        images=[f"{image}:1.0.0"],
        helm_parameters=[
            {"name": "image.name", "value": image, "forceString": True},
            {"name": "image.tag", "value": "1.0.0", "forceString": True},
        ],
        repo_url=url,
        path="charts/web",
        target_revision="main",
        labels={"app.kubernetes.io/instance": "platform"},
        annotations=legacy_annotations(image, target) if mode == "legacy" else None,
    )
    kube.store.put(child)
    if mode == "legacy":
        return
    kube.store.put(
        objects.image_updater(
            "web",
            NS,
            {
                "writeBackConfig": {"method": "git", "gitConfig": {"writeBackTarget": target}},
                "applicationRefs": [
                    {"namePattern": "web", "images": [{"alias": "web", "imageName": image}]}
                ],
            },
        )
    )


@pytest.mark.parametrize("mode", MODES)
async def test_the_child_manifest_is_edited_in_git_not_patched(
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
    url = server.url_for("deploy.git")
    text = children(mode, image, url)
    files = {"apps/children.yaml": text, "charts/web/values.yaml": "image: {}\n"}
    remote = bare_repo(root / "deploy.git", files=files)
    configure(kube, mode, image, url)

    result = await git_cycle(kube, registry, repo, tmp_path, START)

    assert result.errors == 0 and result.images_updated == 1, [a.error for a in result.apps]
    assert len(log_subjects(remote, "main", home=home)) == 2
    new = show(remote, "main", "apps/children.yaml", home=home)
    assert new == text.replace("value: '1.0.0'", "value: '1.0.1'")
    assert show(remote, "main", "charts/web/values.yaml", home=home) == "image: {}\n"
    assert kube.request_count("patch", "applications") == 0
    live = kube.store.get("applications", NS, "web")
    assert live["spec"]["source"]["helm"]["parameters"][1]["value"] == "1.0.0"


@pytest.mark.parametrize("mode", MODES)
async def test_a_file_without_the_child_is_an_error_and_writes_nothing(
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
    url = server.url_for("deploy.git")
    text = children(mode, image, url).replace("name: web", "name: shop")
    remote = bare_repo(root / "deploy.git", files={"apps/children.yaml": text})
    configure(kube, mode, image, url)

    result = await git_cycle(kube, registry, repo, tmp_path, START)

    assert result.errors == 1 and result.images_updated == 0
    (app,) = [a for a in result.apps if a.error]
    assert "apps/children.yaml" in (app.error or "")
    assert "no Application named 'web'" in (app.error or "")
    assert push_attempts(remote) == 0
    assert log_subjects(remote, "main", home=home) == ["Initial commit"]
    assert kube.request_count("patch", "applications") == 0


PARENT_FILES = {
    "apps/README.md": "The children.\n",
    "apps/team/other.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
}


def parented(kube: KubeApiServer, tracking: str) -> None:
    """The child tracked by the parent through the annotation (the label dropped)."""
    child = kube.store.get("applications", NS, "web")
    child["metadata"]["labels"] = {}
    child["metadata"].setdefault("annotations", {})["argocd.argoproj.io/tracking-id"] = tracking
    kube.store.put(child)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tracked", ["label", "annotation"])
async def test_the_child_manifest_is_found_through_the_parent(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    home: Path,
    git_root: tuple[Path, GitHttpServer],
    mode: str,
    tracked: str,
) -> None:
    root, server = git_root
    image = f"{registry.host}/{repo}"
    url = server.url_for("deploy.git")
    child_url = server.url_for("charts.git")
    text = children(mode, image, child_url, target="application")
    files = {**PARENT_FILES, "apps/team/children.yaml": text, "apps/skip/copy.yaml": text}
    remote = bare_repo(root / "deploy.git", files=files)
    charts = bare_repo(root / "charts.git", files={"charts/web/values.yaml": "image: {}\n"})
    configure(kube, mode, image, url, target="application")
    child = kube.store.get("applications", NS, "web")
    child["spec"]["source"]["repoURL"] = child_url
    kube.store.put(child)
    parent = kube.store.get("applications", NS, "platform")
    parent["spec"]["source"]["directory"] = {"recurse": True, "exclude": "skip/*"}
    kube.store.put(parent)
    if tracked == "annotation":
        parented(kube, "platform:argoproj.io/Application:argocd/web")

    result = await git_cycle(kube, registry, repo, tmp_path, START)

    assert result.errors == 0 and result.images_updated == 1, [a.error for a in result.apps]
    new = show(remote, "main", "apps/team/children.yaml", home=home)
    assert new == text.replace("value: '1.0.0'", "value: '1.0.1'")
    assert show(remote, "main", "apps/skip/copy.yaml", home=home) == text
    assert log_subjects(charts, "main", home=home) == ["Initial commit"]
    assert kube.request_count("patch", "applications") == 0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("untracked", "no parent Application tracks it"),
        ("no-parent", "the parent Application 'argocd/gone' is not found"),
        ("no-document", "no Application named 'web'"),
        ("twice", "is in several of the 2 YAML file(s) below 'apps'"),
    ],
)
async def test_without_exactly_one_manifest_through_the_parent_nothing_is_written(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    home: Path,
    git_root: tuple[Path, GitHttpServer],
    mode: str,
    case: str,
    expected: str,
) -> None:
    root, server = git_root
    image = f"{registry.host}/{repo}"
    url = server.url_for("deploy.git")
    text = children(mode, image, url, target="application")
    files = {"apps/children.yaml": text}
    if case == "no-document":
        files = {"apps/children.yaml": text.replace("name: web", "name: shop")}
    if case == "twice":
        files["apps/copy.yaml"] = text
    remote = bare_repo(root / "deploy.git", files=files)
    configure(kube, mode, image, url, target="application")
    child = kube.store.get("applications", NS, "web")
    if case == "untracked":
        child["metadata"]["labels"] = {}
    if case == "no-parent":
        child["metadata"]["labels"] = {"app.kubernetes.io/instance": "gone"}
    kube.store.put(child)

    result = await git_cycle(kube, registry, repo, tmp_path, START)

    assert result.errors == 1 and result.images_updated == 0
    (app,) = [a for a in result.apps if a.error]
    assert expected in (app.error or ""), app.error
    assert push_attempts(remote) == 0
    assert log_subjects(remote, "main", home=home) == ["Initial commit"]
    assert kube.request_count("patch", "applications") == 0
