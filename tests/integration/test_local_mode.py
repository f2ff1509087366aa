"""Local mode end to end: Application and ImageUpdater manifests in a directory (a Git checkout of
an app-of-apps repository), the real registry, real git repositories; no cluster at all."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trustme
from fleet import registries_conf

from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.cli.run_setup import StartupError
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.plan.model import Outcome
from argocd_image_updater_testing.git_servers import (
    GitHttpServer,
    bare_repo,
    git,
    log_subjects,
    push_files,
    reject_next_pushes,
    show,
)
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer, TlsFiles

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
    tmp_path: Path, registry: RegistryServer, apps: Path, **flags: Any
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
            **flags,
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


HELM_APP = """\
# Web frontend
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: shop
spec:
  source:
    repoURL: https://charts.example.com
    chart: web
    targetRevision: 1.2.3
    helm:
      parameters:
      - name: image.name
        value: {image}
      - name: image.tag
        value: "1.0.0"   # managed by argocd-image-updater
      - name: replicas
        value: "2"
---
# Another app in the same file, not selected
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: other
  namespace: shop
spec:
  source: {{repoURL: https://charts.example.com, chart: other, targetRevision: 1.0.0}}
"""

ARGOCD_UPDATER = """\
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata:
  name: web
  namespace: shop
spec:
  applicationRefs:
  - namePattern: web
    images:
    - alias: web
      imageName: {image}
"""


async def test_argocd_method_edits_the_manifest_and_commits_it_once(
    tmp_path: Path, registry: RegistryServer, image: str, home: Path
) -> None:
    apps = checkout(
        tmp_path / "apps",
        {
            "shop/web.yaml": HELM_APP.format(image=image),
            "shop/updater.yaml": ARGOCD_UPDATER.format(image=image),
            "README.md": "not a manifest\n",
        },
        home,
    )
    (apps / "README.md").write_text("local edit, not staged\n")  # must stay out of the commit
    controller, closers = await build(tmp_path, registry, apps)
    first, second = await run_cycles(controller, closers, 2)
    assert first.errors == 0 and first.images_updated == 1
    text = (apps / "shop" / "web.yaml").read_text()
    # Only the tag's bytes change, plus forceString as the API write-back sets it.
    assert text == HELM_APP.format(image=image).replace(
        '"1.0.0"   # managed by argocd-image-updater\n',
        '"1.1.0"   # managed by argocd-image-updater\n        forceString: true\n',
    )
    assert second.images_updated == 0 and second.errors == 0
    subjects = git("log", "--format=%s", cwd=apps, home=home).splitlines()
    assert subjects == ["build: automatic update of web", "apps"]
    changed = git("show", "--name-only", "--format=", "HEAD", cwd=apps, home=home).split()
    assert changed == ["shop/web.yaml"]
    assert git("status", "--porcelain", cwd=apps, home=home) == " M README.md\n"


async def test_argocd_method_outside_git_edits_files_only(
    tmp_path: Path, registry: RegistryServer, image: str
) -> None:
    apps = tmp_path / "apps"
    apps.mkdir()
    (apps / "web.yaml").write_text(HELM_APP.format(image=image))
    (apps / "updater.yaml").write_text(ARGOCD_UPDATER.format(image=image))
    controller, closers = await build(tmp_path, registry, apps)
    (result,) = await run_cycles(controller, closers, 1)
    assert result.errors == 0 and result.images_updated == 1
    assert 'value: "1.1.0"   # managed' in (apps / "web.yaml").read_text()


async def test_a_crlf_manifest_keeps_its_line_ends(
    tmp_path: Path, registry: RegistryServer, image: str
) -> None:
    apps = tmp_path / "apps"
    apps.mkdir()
    manifest = HELM_APP.format(image=image).replace("\n", "\r\n").encode()
    (apps / "web.yaml").write_bytes(manifest)
    (apps / "updater.yaml").write_text(ARGOCD_UPDATER.format(image=image))
    controller, closers = await build(tmp_path, registry, apps)
    (result,) = await run_cycles(controller, closers, 1)
    assert [a.error for a in result.apps if a.error] == []
    assert result.errors == 0 and result.images_updated == 1
    # Only the tag's bytes change (plus forceString), every line still ends in CRLF.
    assert (apps / "web.yaml").read_bytes() == manifest.replace(
        b'"1.0.0"   # managed by argocd-image-updater\r\n',
        b'"1.1.0"   # managed by argocd-image-updater\r\n        forceString: true\r\n',
    )


async def test_manifest_changed_during_the_cycle_is_not_overwritten(
    tmp_path: Path, registry: RegistryServer, image: str, home: Path
) -> None:
    apps = checkout(
        tmp_path / "apps",
        {"web.yaml": HELM_APP.format(image=image), "u.yaml": ARGOCD_UPDATER.format(image=image)},
        home,
    )
    controller, closers = await build(tmp_path, registry, apps)
    store = controller.store
    original_list = store.list_applications

    async def edit_after_listing(namespace: str | None) -> list[dict[str, Any]]:
        found = await original_list(namespace)
        (apps / "web.yaml").write_text((apps / "web.yaml").read_text() + "# edited by a person\n")
        return found

    store.list_applications = edit_after_listing  # type: ignore[method-assign]
    (result,) = await run_cycles(controller, closers, 1)
    assert result.images_updated == 0
    assert [a.error for a in result.apps] == [
        "web.yaml changed while shop/web was being updated; it is updated in the next cycle"
    ]
    assert '"1.0.0"' in (apps / "web.yaml").read_text()
    assert git("log", "--format=%s", cwd=apps, home=home).splitlines() == ["apps"]


async def test_failed_commit_restores_the_manifest(
    tmp_path: Path, registry: RegistryServer, image: str, home: Path
) -> None:
    apps = checkout(
        tmp_path / "apps",
        {"web.yaml": HELM_APP.format(image=image), "u.yaml": ARGOCD_UPDATER.format(image=image)},
        home,
    )
    (apps / ".git" / "index.lock").write_text("")  # another git process holds the index
    controller, closers = await build(tmp_path, registry, apps)
    (result,) = await run_cycles(controller, closers, 1)
    assert result.apps[0].error is not None
    assert result.apps[0].error.startswith("could not commit the change of shop/web")
    assert (apps / "web.yaml").read_text() == HELM_APP.format(image=image)


def _secret(root: Path, namespace: str, name: str, data: Mapping[str, str]) -> None:
    directory = root / namespace / name
    directory.mkdir(parents=True)
    for key, value in data.items():
        (directory / key).write_text(value)


async def test_secrets_dir_gives_git_credentials_and_ca_without_a_cluster(
    tmp_path: Path, registry: RegistryServer, image: str, home: Path
) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    files = TlsFiles(tmp_path / "srv.crt", tmp_path / "srv.key", tmp_path / "ca.pem")
    cert.private_key_pem.write_to_path(str(files.key))
    cert.cert_chain_pems[0].write_to_path(str(files.certificate))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    served = tmp_path / "served"
    served.mkdir()
    bare_repo(served / "deploy.git", files={"apps/web/kustomization.yaml": KUSTOMIZATION})
    secrets = tmp_path / "secrets"
    with GitHttpServer(served, users={"ci": "t0ken-Secret"}, tls=files) as server:
        url = server.url_for("deploy.git")
        _secret(
            secrets,
            "argocd",
            "deploy-repo",
            {"url": url, "username": "ci", "password": "t0ken-Secret"},
        )
        _secret(
            secrets, "argocd", "argocd-tls-certs-cm", {"127.0.0.1": ca.cert_pem.bytes().decode()}
        )
        fields = {"repoURL": url, "targetRevision": "main", "path": "apps/web"}
        apps = checkout(
            tmp_path / "apps",
            {
                "web.yaml": application("web", fields),
                "u.yaml": image_updater("web", "web", image, GIT),
            },
            home,
        )
        controller, closers = await build(tmp_path, registry, apps, secrets_dir=str(secrets))
        (result,) = await run_cycles(controller, closers, 1)
    assert result.errors == 0 and result.images_updated == 1
    text = show(served / "deploy.git", "main", "apps/web/.argocd-source-web.yaml", home=home)
    assert text == f"kustomize:\n  images:\n  - {image}:1.1.0\n"


async def test_manifests_read_from_a_remote_repository_and_pushed_back(
    tmp_path: Path, registry: RegistryServer, image: str, home: Path
) -> None:
    remote = bare_repo(
        tmp_path / "gitops.git",
        files={
            "clusters/prod/apps/web.yaml": HELM_APP.format(image=image),
            "clusters/prod/apps/updater.yaml": ARGOCD_UPDATER.format(image=image),
            "clusters/dev/apps/ignored.yaml": "kind: Application\nmetadata: {name: [\n",
        },
    )
    controller, closers = await build(
        tmp_path,
        registry,
        tmp_path / "unused",
        local_path="clusters/prod",
        local_repo=f"file://{remote}",
        local_revision="main",
    )
    store = controller.store
    listing = store.list_applications
    pushed: list[str] = []

    async def someone_pushes_after_the_read(namespace: str | None) -> list[dict[str, Any]]:
        found = await listing(namespace)
        if len(pushed) == 1:  # second cycle: an unrelated change lands before our push
            push_files(remote, {"README.md": "hello\n"}, home=home, message="Unrelated")
        pushed.append("x")
        return found

    store.list_applications = someone_pushes_after_the_read  # type: ignore[method-assign]
    reject_next_pushes(remote, 1, "protected branch")
    denied, first, second = await run_cycles(controller, closers, 3)
    assert denied.images_updated == 0
    assert denied.apps[0].error is not None and "denied by the remote" in denied.apps[0].error
    assert first.errors == 0 and first.images_updated == 1
    assert second.images_updated == 0 and second.errors == 0
    assert log_subjects(remote, "main", home=home) == [
        "build: automatic update of web",
        "Unrelated",
        "Initial commit",
    ]
    text = show(remote, "main", "clusters/prod/apps/web.yaml", home=home)
    assert text is not None and '"1.1.0"   # managed by argocd-image-updater' in text


async def test_dry_run_plans_but_writes_nothing(
    tmp_path: Path, registry: RegistryServer, image: str, home: Path
) -> None:
    apps = checkout(
        tmp_path / "apps",
        {"web.yaml": HELM_APP.format(image=image), "u.yaml": ARGOCD_UPDATER.format(image=image)},
        home,
    )
    controller, closers = await build(tmp_path, registry, apps, dry_run=True)
    (result,) = await run_cycles(controller, closers, 1)
    assert [(r.current, r.chosen) for a in result.apps for r in a.plan.results] == [
        (f"{image}:1.0.0", f"{image}:1.1.0")
    ]
    assert (apps / "web.yaml").read_text() == HELM_APP.format(image=image)
    assert git("log", "--format=%s", cwd=apps, home=home).splitlines() == ["apps"]


async def test_legacy_annotations_work_in_local_mode(
    tmp_path: Path, registry: RegistryServer, image: str, home: Path
) -> None:
    annotations = (
        f"    argocd-image-updater.argoproj.io/image-list: web={image}:~1.0\n"
        "    argocd-image-updater.argoproj.io/web.update-strategy: semver"
    )
    source = {
        "repoURL": "https://git.example.com/deploy.git",
        "path": "apps/web",
        "kustomize": f"{{images: ['{image}:1.0.0']}}",
    }
    apps = checkout(tmp_path / "apps", {"web.yaml": application("web", source, annotations)}, home)
    controller, closers = await build(tmp_path, registry, apps)
    (result,) = await run_cycles(controller, closers, 1)
    assert result.errors == 0 and result.images_updated == 1
    assert f"kustomize: {{images: ['{image}:1.0.1']}}" in (apps / "web.yaml").read_text()
