"""Local mode with the plain-manifest target (``writeBackTarget: directory``) and the app of
apps target found through the parent (``writeBackTarget: application``): the running image is
read from the repository's files (not forced), the change is committed there, and a second
cycle finds nothing to do. The real registry, real git; in CRD and legacy annotation mode."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from test_directory_writeback import files_for
from test_local_mode import START, build, checkout, run_cycles

from argocd_image_updater.plan.model import Outcome
from argocd_image_updater_testing.git_servers import bare_repo, log_subjects, show
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

MODES = ("crd", "legacy")
PREFIX = "argocd-image-updater.argoproj.io"


@pytest.fixture
async def image(registry: RegistryServer, repo: str) -> str:
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(["1.0.0", "1.0.1", "1.1.0"]):
            await pusher.push_image(repo, tag, created=START + timedelta(days=i))
    return f"{registry.host}/{repo}"


def manifest(name: str, spec: str, mode: str, image: str, target: str, labels: str = "") -> str:
    """An Application updated by the image ``web`` with the git method and ``target``: through
    its annotations (legacy mode) or an ImageUpdater in the same file (CRD mode)."""
    meta = f"metadata:\n  name: {name}\n"
    if labels:
        meta += f"  labels: {labels}\n"
    if mode == "legacy":
        meta += (
            "  annotations:\n"
            f"    {PREFIX}/image-list: web={image}\n"
            f"    {PREFIX}/write-back-method: git\n"
            f"    {PREFIX}/write-back-target: {target}\n"
            f"    {PREFIX}/web.yaml.kind: argoproj.io/Rollout\n"
            f"    {PREFIX}/web.yaml.path: spec.template.spec\n"
        )
    app = f"apiVersion: argoproj.io/v1alpha1\nkind: Application\n{meta}spec:\n{spec}"
    if mode == "legacy":
        return app
    return (
        app
        + "---\n"
        + "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\n"
        + f"kind: ImageUpdater\nmetadata:\n  name: {name}\nspec:\n"
        + "  writeBackConfig:\n    method: git\n"
        + f"    gitConfig: {{writeBackTarget: {target}}}\n"
        + f"  applicationRefs:\n  - namePattern: {name}\n    images:\n"
        + f"    - alias: web\n      imageName: {image}\n"
        + "      manifestTargets: {yaml: {kind: argoproj.io/Rollout, path: spec.template.spec}}\n"
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_directory_target_is_read_from_its_manifests(
    tmp_path: Path, registry: RegistryServer, image: str, home: Path, mode: str
) -> None:
    files = files_for(image, "manifests")
    deploy = bare_repo(tmp_path / "deploy.git", files=files)
    spec = (
        f"  source:\n    repoURL: file://{deploy}\n    targetRevision: main\n"
        "    path: manifests\n"
        "    directory: {recurse: true, exclude: '{ignored*,x/*}'}\n"
    )
    apps = checkout(
        tmp_path / "apps", {"shop.yaml": manifest("shop", spec, mode, image, "directory")}, home
    )
    controller, closers = await build(tmp_path, registry, apps)

    first, second = await run_cycles(controller, closers, 2)

    assert first.errors == 0 and first.images_updated == 1, [a.error for a in first.apps]
    [result] = [r for a in first.apps for r in a.plan.results]
    assert result.current == f"{image}:1.0.0"  # read from the manifests, not forced
    for path, text in files.items():
        new = show(deploy, "main", path, home=home)
        expected = text if "ignored" in path else text.replace(":1.0.0", ":1.1.0")
        assert new == expected, path
    [again] = [r for a in second.apps for r in a.plan.results]
    assert (again.outcome, again.current) == (Outcome.UP_TO_DATE, f"{image}:1.1.0")
    assert len(log_subjects(deploy, "main", home=home)) == 2


CHILD = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
spec:
  source:
    repoURL: {charts}
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
"""


@pytest.mark.parametrize("mode", MODES)
async def test_an_application_target_is_found_through_the_parent_in_the_manifests(
    tmp_path: Path, registry: RegistryServer, image: str, home: Path, mode: str
) -> None:
    charts = bare_repo(tmp_path / "charts.git", files={"charts/web/values.yaml": "image: {}\n"})
    child = CHILD.format(charts=f"file://{charts}", image=image)
    deploy = bare_repo(
        tmp_path / "deploy.git",
        files={"apps/team/web.yaml": child, "apps/other.yaml": "kind: ConfigMap\n"},
    )
    parent = (
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: platform\n"
        f"spec:\n  source:\n    repoURL: file://{deploy}\n    targetRevision: main\n"
        "    path: apps\n    directory: {recurse: true}\n"
    )
    # the child as Argo CD keeps it, tracked by the parent; the same source as in Git
    spec = child.partition("spec:\n")[2]
    labels = "{app.kubernetes.io/instance: platform}"
    web = manifest("web", spec, mode, image, "application", labels)
    apps = checkout(tmp_path / "apps", {"platform.yaml": parent, "web.yaml": web}, home)
    controller, closers = await build(tmp_path, registry, apps)

    first, second = await run_cycles(controller, closers, 2)

    assert first.errors == 0 and first.images_updated == 1, [a.error for a in first.apps]
    [result] = [r for a in first.apps if a.plan for r in a.plan.results]
    assert result.current == f"{image}:1.0.0"  # read from the parent's repository
    written = show(deploy, "main", "apps/team/web.yaml", home=home)
    assert written == child.replace("value: '1.0.0'", "value: '1.1.0'")
    assert log_subjects(charts, "main", home=home) == ["Initial commit"]
    assert (apps / "web.yaml").read_text() == web  # the manifests read are not the target
    [again] = [r for a in second.apps if a.plan for r in a.plan.results]
    assert (again.outcome, again.current) == (Outcome.UP_TO_DATE, f"{image}:1.1.0")


async def test_without_the_parent_among_the_manifests_nothing_is_written(
    tmp_path: Path, registry: RegistryServer, image: str, home: Path
) -> None:
    deploy = bare_repo(tmp_path / "deploy.git", files={"apps/web.yaml": CHILD})
    spec = CHILD.format(charts=f"file://{deploy}", image=image).partition("spec:\n")[2]
    labels = "{app.kubernetes.io/instance: platform}"
    web = manifest("web", spec, "crd", image, "application", labels)
    apps = checkout(tmp_path / "apps", {"web.yaml": web}, home)
    controller, closers = await build(tmp_path, registry, apps)

    [result] = await run_cycles(controller, closers, 1)

    [app] = [a for a in result.apps if a.error]
    assert "the parent Application 'argocd/platform' is not found" in (app.error or "")
    assert log_subjects(deploy, "main", home=home) == ["Initial commit"]


async def test_set_writes_a_digest_into_a_directory_target_in_local_mode(
    tmp_path: Path, registry: RegistryServer, repo: str, home: Path
) -> None:
    from fleet import registries_conf

    from argocd_image_updater.cli import set_run
    from argocd_image_updater.config.settings import resolve

    async with ImagePusher(registry.url) as pusher:
        old = await pusher.push_image(repo, "1.0.0", created=START)
        await pusher.push_image(repo, "1.1.0", created=START + timedelta(days=1))
    image = f"{registry.host}/{repo}"
    files = {k: v.replace(":1.0.0", ":1.1.0") for k, v in files_for(image, "manifests").items()}
    deploy = bare_repo(tmp_path / "deploy.git", files=files)
    spec = (
        f"  source:\n    repoURL: file://{deploy}\n    targetRevision: main\n"
        "    path: manifests\n    directory: {recurse: true, exclude: '{ignored*,x/*}'}\n"
    )
    apps = checkout(
        tmp_path / "apps", {"shop.yaml": manifest("shop", spec, "crd", image, "directory")}, home
    )
    local = resolve(
        "run",
        {
            "applications_api": "local",
            "local_path": str(apps),
            "registries_conf_path": str(registries_conf(tmp_path, registry)),
            "git_cache_dir": str(tmp_path / "clones"),
            "git_commit_message_path": str(tmp_path / "no-template"),
            "once": True,
        },
        env={},
    )

    message = await set_run.set_version(local, "shop", "", f"web={old}", "", "")

    assert message.startswith(f"set web of Application argocd/shop to {image}:1.0.0 (the tag")
    for path, text in files.items():
        expected = text if "ignored" in path else text.replace(":1.1.0", ":1.0.0")
        assert show(deploy, "main", path, home=home) == expected, path
    assert "argocd-image-updater.argoproj.io/hold: web" in (apps / "shop.yaml").read_text()
