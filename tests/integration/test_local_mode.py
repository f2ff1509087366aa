"""Local mode end to end: Application and ImageUpdater manifests in a directory (a Git checkout of
an app-of-apps repository), the real registry, real git repositories; no cluster at all."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf

from argocd_image_updater.cli.run_cmd import StartupError, build_controller, close_resource
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.plan.model import Outcome
from argocd_image_updater.sandbox.git_servers import bare_repo, git, log_subjects, show
from argocd_image_updater.sandbox.push import ImagePusher
from argocd_image_updater.sandbox.registry import RegistryServer

START = datetime(2026, 3, 1, tzinfo=UTC)


def application(name: str, source: Mapping[str, Any], annotations: str = "") -> str:
    lines = [
        "apiVersion: argoproj.io/v1alpha1",
        "kind: Application",
        "metadata:",
        f"  name: {name}",
    ]
    if annotations:
        lines += ["  annotations:", annotations]
    lines += ["spec:", "  project: default", "  source:"]
    for key, value in source.items():
        lines.append(f"    {key}: {value}")
    lines += ["  destination:", "    server: https://kubernetes.default.svc", "    namespace: web"]
    return "\n".join(lines) + "\n"


def image_updater(name: str, pattern: str, image: str, write_back: str) -> str:
    return (
        "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\n"
        "kind: ImageUpdater\n"
        f"metadata:\n  name: {name}\n"
        "spec:\n"
        f"{write_back}"
        "  applicationRefs:\n"
        f"  - namePattern: '{pattern}'\n"
        "    images:\n"
        f"    - alias: web\n      imageName: {image}\n"
    )


GIT = "  writeBackConfig:\n    method: git\n"


def checkout(path: Path, files: Mapping[str, str], home: Path) -> Path:
    """A local Git work tree with ``files`` committed."""
    path.mkdir(parents=True)
    git("init", "-q", "--initial-branch=main", cwd=path, home=home)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git("add", "-A", cwd=path, home=home)
    git("commit", "-q", "-m", "apps", cwd=path, home=home)
    return path


async def build(
    tmp_path: Path, registry: RegistryServer, apps: Path
) -> tuple[Controller, list[Any]]:
    settings = resolve(
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
    return await build_controller(settings)


async def run_cycles(controller: Controller, closers: list[Any], count: int) -> list[Any]:
    try:
        return [await controller.cycle() for _ in range(count)]
    finally:
        for closer in reversed(closers):
            await close_resource(closer)


@pytest.fixture
async def image(registry: RegistryServer, repo: str) -> str:
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(["1.0.0", "1.0.1", "1.1.0"]):
            await pusher.push_image(repo, tag, created=START + timedelta(days=i))
    return f"{registry.host}/{repo}"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


KUSTOMIZATION = (
    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- deploy.yaml\n"
)
VALUES = "# web chart\nimage:\n  name: {image}\n  tag: 1.0.0  # bumped\nreplicas: 2\n"


@pytest.mark.parametrize(
    ("case", "deploy_files", "source", "target", "changed_file", "expected"),
    [
        (
            "override file, kustomize app",
            {"apps/web/kustomization.yaml": KUSTOMIZATION},
            {"path": "apps/web", "kustomize": "{{images: ['{image}:1.0.0']}}"},
            "",
            "apps/web/.argocd-source-web.yaml",
            "kustomize:\n  images:\n  - {image}:1.1.0\n",
        ),
        (
            "kustomization, type detected from the files",
            {
                "apps/web/kustomization.yaml": KUSTOMIZATION
                + "images:\n- name: {image}\n  newTag: 1.0.0\n"
            },
            {"path": "apps/web"},
            "kustomization",
            "apps/web/kustomization.yaml",
            KUSTOMIZATION + "images:\n- name: {image}\n  newTag: 1.1.0\n",
        ),
        (
            "helm values, chart detected from Chart.yaml",
            {
                "charts/web/Chart.yaml": "name: web\nversion: 0.1.0\n",
                "charts/web/values.yaml": VALUES,
            },
            {"path": "charts/web"},
            "helmvalues",
            "charts/web/values.yaml",
            VALUES.replace("1.0.0", "1.1.0"),
        ),
        (
            "override file, nothing set yet: forced",
            {"charts/web/Chart.yaml": "name: web\n"},
            {"path": "charts/web"},
            "",
            "charts/web/.argocd-source-web.yaml",
            "helm:\n  parameters:\n  - name: image.name\n    value: {image}\n    forcestring: true\n"
            "  - name: image.tag\n    value: 1.1.0\n    forcestring: true\n",
        ),
    ],
)
async def test_git_write_back_from_a_directory_of_manifests(
    tmp_path: Path,
    registry: RegistryServer,
    image: str,
    home: Path,
    case: str,
    deploy_files: dict[str, str],
    source: dict[str, str],
    target: str,
    changed_file: str,
    expected: str,
) -> None:
    deploy = bare_repo(
        tmp_path / "deploy.git", files={k: v.format(image=image) for k, v in deploy_files.items()}
    )
    fields = {"repoURL": f"file://{deploy}", "targetRevision": "main"}
    fields.update({k: v.format(image=image) for k, v in source.items()})
    write_back = GIT + (f"    gitConfig:\n      writeBackTarget: {target}\n" if target else "")
    apps = checkout(
        tmp_path / "apps",
        {
            "apps/web.yaml": application("web", fields),
            "apps/updater.yaml": image_updater("web", "web", image, write_back),
        },
        home,
    )
    controller, closers = await build(tmp_path, registry, apps)
    first, second = await run_cycles(controller, closers, 2)
    assert first.errors == 0 and first.images_updated == 1, case
    assert show(deploy, "main", changed_file, home=home) == expected.format(image=image)
    # The second cycle reads the new tag back from the target: nothing more to do.
    assert second.images_updated == 0 and second.errors == 0
    assert [r.outcome for a in second.apps for r in a.plan.results] == [Outcome.UP_TO_DATE]
    assert len(log_subjects(deploy, "main", home=home)) == 2


async def test_bad_manifest_is_reported_and_other_apps_are_updated(
    tmp_path: Path, registry: RegistryServer, image: str, home: Path
) -> None:
    deploy = bare_repo(
        tmp_path / "deploy.git", files={"apps/web/kustomization.yaml": KUSTOMIZATION}
    )
    fields = {"repoURL": f"file://{deploy}", "targetRevision": "main", "path": "apps/web"}
    apps = checkout(
        tmp_path / "apps",
        {
            "web.yaml": application("web", fields),
            "broken.yaml": "kind: Application\nmetadata: {name: [\n",
            "updater.yaml": image_updater("web", "*", image, GIT),
        },
        home,
    )
    controller, closers = await build(tmp_path, registry, apps)
    (result,) = await run_cycles(controller, closers, 1)
    assert [a.app for a in result.apps] == ["argocd/web"]
    assert result.images_updated == 1
    assert show(deploy, "main", "apps/web/.argocd-source-web.yaml", home=home) is not None


async def test_missing_local_path_is_a_startup_error(
    tmp_path: Path, registry: RegistryServer
) -> None:
    with pytest.raises(StartupError, match="--local-path"):
        await build(tmp_path, registry, tmp_path / "nowhere")
