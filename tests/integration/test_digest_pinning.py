"""Digest pinning (``pinDigest``) end to end: the real registry (multi-arch indexes, a tag pushed
again), the Kubernetes API fake for the argocd method, real git repositories for the git method
and local mode. The digest written is the index's, asked for with one ``HEAD`` per chosen tag."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf

from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.model.platform import Platform
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.faulty_proxy import FaultyProxy
from argocd_image_updater_testing.git_servers import bare_repo, git, log_subjects, show
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 5, 1, tzinfo=UTC)
AMD64 = Platform("linux", "amd64")
ARM64 = Platform("linux", "arm64")
P = "argocd-image-updater.argoproj.io"


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


async def push_index(registry: RegistryServer, repo: str, tag: str, day: int) -> str:
    """A multi-arch tag (amd64 and arm64 images built on ``day``); its index digest."""
    when = START + timedelta(days=day)
    async with ImagePusher(registry.url) as pusher:
        return await pusher.push_index(repo, tag, [(AMD64, when), (ARM64, when)], oci=True)


async def push_fleet(registry: RegistryServer, repo: str) -> str:
    """``1.0.0`` and ``2.0.0`` single images, ``1.1.0`` multi-arch; the digest of ``1.1.0``."""
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0.0", created=START)
        await pusher.push_image(repo, "2.0.0", created=START + timedelta(days=9))
    return await push_index(registry, repo, "1.1.0", 1)


async def controller_for(
    tmp_path: Path, conf: Path, kube: KubeApiServer | None = None, **flags: Any
) -> tuple[Controller, list[Any]]:
    values: dict[str, Any] = {
        "registries_conf_path": str(conf),
        "git_cache_dir": str(tmp_path / "clones"),
        "git_commit_message_path": str(tmp_path / "no-template"),
        "once": True,
        **flags,
    }
    if kube is not None:
        values["kubeconfig"] = str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS))
    return await build_controller(resolve("run", values, env={}))


async def close_all(closers: list[Any]) -> None:
    for closer in reversed(closers):
        await close_resource(closer)


def sync(kube: KubeApiServer, name: str, images: list[str]) -> None:
    """What Argo CD does after a sync: the running images are the written ones."""
    app = kube.store.get("applications", NS, name)
    app["status"]["summary"] = {"images": images}
    kube.store.put(app)


def tag_moved(kube: KubeApiServer) -> list[dict[str, Any]]:
    return [e for e in kube.store.list("events", NS) if e["reason"] == "TagMoved"]


def messages(result: Any) -> list[str]:
    return [r.message for app in result.apps if app.plan for r in app.plan.results]


async def test_semver_pins_the_index_digest_with_one_head_and_follows_a_moved_tag(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    first_digest = await push_fleet(registry, repo)
    proxy = await FaultyProxy(registry.url).start()
    try:
        host = proxy.url.split("://", 1)[1]
        image = f"{host}/{repo}"
        kube.store.put(
            objects.application(
                "shop-kustomize",
                NS,
                images=[f"{image}:1.0.0"],
                kustomize_images=[f"{image}:1.0.0", "other/sidecar:3.2"],
            )
        )
        kube.store.put(
            objects.application(
                "shop-helm",
                NS,
                source_type="Helm",
                images=[f"{image}:1.0.0"],
                helm_parameters={"image.name": image, "image.tag": "1.0.0"},
            )
        )
        kube.store.put(
            objects.image_updater(
                "shop",
                NS,
                {
                    "commonUpdateSettings": {"pinDigest": True},
                    "applicationRefs": [
                        {
                            "namePattern": "shop-*",
                            "images": [{"alias": "web", "imageName": f"{image}:1.x"}],
                        }
                    ],
                },
            )
        )
        conf = tmp_path / "registries.conf"
        conf.write_text(f"registries:\n- name: t\n  prefix: {host}\n  api_url: {proxy.url}\n")
        controller, closers = await controller_for(tmp_path, conf, kube, interval="5s")
        try:
            first = await controller.cycle()
            # Two Applications, one chosen tag: one HEAD, no manifest GET (semver reads names).
            assert proxy.counts["manifest_head"] == 1 and proxy.counts["manifest"] == 0
            pinned = f"1.1.0@{first_digest}"
            assert first.errors == 0 and first.images_updated == 2
            kustomize = kube.store.get("applications", NS, "shop-kustomize")["spec"]["source"]
            assert kustomize["kustomize"]["images"] == [f"{image}:{pinned}", "other/sidecar:3.2"]
            helm = kube.store.get("applications", NS, "shop-helm")["spec"]["source"]["helm"]
            assert {p["name"]: p["value"] for p in helm["parameters"]} == {
                "image.name": image,
                "image.tag": pinned,
            }

            for name in ("shop-kustomize", "shop-helm"):
                sync(kube, name, [f"{image}:{pinned}"])
            patches = kube.request_count("patch", "applications")
            second = await controller.cycle()
            assert second.errors == 0 and second.images_updated == 0
            assert kube.request_count("patch", "applications") == patches

            moved_digest = await push_index(registry, repo, "1.1.0", 2)
            assert moved_digest != first_digest
            third = await controller.cycle()
            assert third.errors == 0 and third.images_updated == 2
            moved = f"1.1.0@{moved_digest}"
            kustomize = kube.store.get("applications", NS, "shop-kustomize")["spec"]["source"]
            assert kustomize["kustomize"]["images"] == [f"{image}:{moved}", "other/sidecar:3.2"]
            assert all(m.endswith("tag '1.1.0' moved to another digest") for m in messages(third))
            moved_events = tag_moved(kube)
            assert sorted(e["involvedObject"]["name"] for e in moved_events) == [
                "shop-helm",
                "shop-kustomize",
            ]
            assert {e["type"] for e in moved_events} == {"Warning"}
            assert moved_events[0]["message"] == (
                f"tag '1.1.0' of {host}/{repo} moved to another digest: it was {first_digest} "
                f"when last seen, it is {moved_digest} now"
            )

            for name in ("shop-kustomize", "shop-helm"):
                sync(kube, name, [f"{image}:{moved}"])
            patches = kube.request_count("patch", "applications")
            fourth = await controller.cycle()
            assert fourth.errors == 0 and fourth.images_updated == 0
            assert kube.request_count("patch", "applications") == patches
            assert len(tag_moved(kube)) == 2
        finally:
            await close_all(closers)
    finally:
        await proxy.stop()


async def test_legacy_annotation_newest_build_pins_the_index_not_the_platform_image(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    """The index digest, whichever platforms the image wants (the same on amd64 and arm64); the
    newest-build scan already asked about the chosen tag, so pinning adds no request."""
    await push_fleet(registry, repo)
    newest = await push_index(registry, repo, "3.0.0", 20)
    proxy = await FaultyProxy(registry.url).start()
    try:
        host = proxy.url.split("://", 1)[1]
        image = f"{host}/{repo}"
        for name, platform in (("on-amd64", "linux/amd64"), ("on-arm64", "linux/arm64")):
            kube.store.put(
                objects.application(
                    name,
                    NS,
                    images=[f"{image}:1.0.0"],
                    kustomize_images=[f"{image}:1.0.0"],
                    annotations={
                        f"{P}/image-list": f"web={image}",
                        f"{P}/web.update-strategy": "newest-build",
                        f"{P}/web.platforms": platform,
                        f"{P}/web.pin-digest": "true",
                    },
                )
            )
        conf = tmp_path / "registries.conf"
        conf.write_text(f"registries:\n- name: t\n  prefix: {host}\n  api_url: {proxy.url}\n")
        controller, closers = await controller_for(tmp_path, conf, kube)
        try:
            result = await controller.cycle()
        finally:
            await close_all(closers)
        assert proxy.counts["manifest_head"] == 0
    finally:
        await proxy.stop()
    assert result.errors == 0 and result.images_updated == 2
    for name in ("on-amd64", "on-arm64"):
        source = kube.store.get("applications", NS, name)["spec"]["source"]
        assert source["kustomize"]["images"] == [f"{image}:3.0.0@{newest}"], name


async def test_tag_moved_without_pinning_is_a_warning_once_across_a_restart(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    """newest-build reads digests anyway: a tag pushed again is reported (the tag name did not
    change, so nothing is written), once, also by a controller started after the first one."""
    await push_fleet(registry, repo)
    image = f"{registry.host}/{repo}"
    kube.store.put(
        objects.application(
            "web",
            NS,
            images=[f"{image}:2.0.0"],
            kustomize_images=[f"{image}:2.0.0"],
            annotations={
                f"{P}/image-list": f"web={image}",
                f"{P}/web.update-strategy": "newest-build",
            },
        )
    )
    conf = registries_conf(tmp_path, registry)

    async def one_cycle() -> Any:
        controller, closers = await controller_for(tmp_path, conf, kube)
        try:
            return await controller.cycle()
        finally:
            await close_all(closers)

    first = await one_cycle()
    assert first.errors == 0 and first.images_updated == 0 and tag_moved(kube) == []
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "2.0.0", created=START + timedelta(days=10))
    second = await one_cycle()  # a new process: the digests seen come from the ConfigMap
    assert second.errors == 0 and second.images_updated == 0
    [event] = tag_moved(kube)
    assert event["type"] == "Warning" and event["involvedObject"]["name"] == "web"
    assert event["message"].startswith(f"tag '2.0.0' of {image} moved to another digest")
    third = await one_cycle()
    assert third.errors == 0 and len(tag_moved(kube)) == 1


async def test_registry_failure_while_pinning_is_the_image_error_and_nothing_is_written(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_fleet(registry, repo)
    proxy = await FaultyProxy(registry.url).start()
    try:
        proxy.fail(404, kind="manifest", times=10, method="HEAD")
        host = proxy.url.split("://", 1)[1]
        image = f"{host}/{repo}"
        kube.store.put(
            objects.application(
                "web",
                NS,
                images=[f"{image}:1.0.0"],
                kustomize_images=[f"{image}:1.0.0"],
                annotations={
                    f"{P}/image-list": f"web={image}:1.x",
                    f"{P}/web.pin-digest": "true",
                },
            )
        )
        before = kube.store.get("applications", NS, "web")["spec"]
        conf = tmp_path / "registries.conf"
        conf.write_text(f"registries:\n- name: t\n  prefix: {host}\n  api_url: {proxy.url}\n")
        controller, closers = await controller_for(tmp_path, conf, kube)
        try:
            result = await controller.cycle()
        finally:
            await close_all(closers)
    finally:
        await proxy.stop()
    assert result.errors == 1 and result.images_updated == 0
    [message] = messages(result)
    assert message.startswith("Could not get the digest of tag '1.1.0' to pin it (pinDigest): ")
    assert kube.store.get("applications", NS, "web")["spec"] == before


KUSTOMIZATION = (
    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- deploy.yaml\n"
)
VALUES = "# web chart\nimage:\n  name: {image}\n  tag: 1.0.0  # bumped\nreplicas: 2\n"


@pytest.mark.parametrize(
    ("target", "files", "path", "source_type", "changed", "expected"),
    [
        (
            "kustomization",
            {
                "apps/web/kustomization.yaml": KUSTOMIZATION
                + "images:\n- name: {image}\n  newTag: 1.0.0\n"
            },
            "apps/web",
            "Kustomize",
            "apps/web/kustomization.yaml",
            KUSTOMIZATION + "images:\n- name: {image}\n  newTag: 1.1.0\n  digest: {digest}\n",
        ),
        (
            "helmvalues",
            {"charts/web/values.yaml": VALUES},
            "charts/web",
            "Helm",
            "charts/web/values.yaml",
            VALUES.replace("tag: 1.0.0", "tag: 1.1.0@{digest}"),
        ),
        (
            "",
            {"charts/web/Chart.yaml": "name: web\n"},
            "charts/web",
            "Helm",
            "charts/web/.argocd-source-web.yaml",
            "helm:\n  parameters:\n  - name: image.name\n    value: {image}\n    forcestring: true\n"
            "  - name: image.tag\n    value: 1.1.0@{digest}\n    forcestring: true\n",
        ),
    ],
)
async def test_git_method_writes_the_pinned_tag_and_the_moved_tag_with_its_reason(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    home: Path,
    target: str,
    files: dict[str, str],
    path: str,
    source_type: str,
    changed: str,
    expected: str,
) -> None:
    digest = await push_fleet(registry, repo)
    image = f"{registry.host}/{repo}"
    remote = bare_repo(
        tmp_path / "deploy.git", files={k: v.format(image=image) for k, v in files.items()}
    )
    helm = {"image.name": image, "image.tag": "1.0.0"} if source_type == "Helm" else None
    kube.store.put(
        objects.application(
            "web",
            NS,
            source_type=source_type,
            images=[f"{image}:1.0.0"],
            helm_parameters=helm,
            repo_url=f"file://{remote}",
            path=path,
            target_revision="main",
        )
    )
    git_config = {"writeBackTarget": target} if target else {}
    web: dict[str, Any] = {
        "alias": "web",
        "imageName": f"{image}:1.x",
        "commonUpdateSettings": {"pinDigest": True},
    }
    if source_type == "Helm":
        web["manifestTargets"] = {"helm": {"name": "image.name", "tag": "image.tag"}}
    kube.store.put(
        objects.image_updater(
            "web",
            NS,
            {
                "writeBackConfig": {"method": "git", "gitConfig": git_config},
                "applicationRefs": [{"namePattern": "web", "images": [web]}],
            },
        )
    )
    controller, closers = await controller_for(
        tmp_path, registries_conf(tmp_path, registry), kube, interval="5s"
    )
    try:
        first = await controller.cycle()
        assert first.errors == 0 and first.images_updated == 1, messages(first)
        assert show(remote, "main", changed, home=home) == expected.format(
            image=image, digest=digest
        )
        sync(kube, "web", [f"{image}:1.1.0@{digest}"])
        second = await controller.cycle()
        assert second.errors == 0 and second.images_updated == 0
        assert len(log_subjects(remote, "main", home=home)) == 2

        moved = await push_index(registry, repo, "1.1.0", 3)
        third = await controller.cycle()
        assert third.errors == 0 and third.images_updated == 1
        assert show(remote, "main", changed, home=home) == expected.format(
            image=image, digest=moved
        )
        body = git("log", "-1", "--format=%B", "main", cwd=remote, home=home)
        assert f"updates image {repo} tag '{digest}' to '{moved}'" in body
        assert f"tag '1.1.0' of {repo} moved to another digest" in body
    finally:
        await close_all(closers)


def local_app(name: str, image: str, repo_url: str) -> str:
    return (
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\n"
        f"metadata:\n  name: {name}\n  annotations:\n"
        f"    {P}/image-list: web={image}:1.x\n"
        f"    {P}/web.update-strategy: alphabetical\n"
        f"    {P}/web.allow-tags: regexp:^1\\.\n"
        f"    {P}/web.pin-digest: 'true'\n"
        f"    {P}/write-back-method: git\n"
        f"    {P}/write-back-target: kustomization\n"
        "spec:\n  project: default\n  source:\n"
        f"    repoURL: {repo_url}\n    targetRevision: main\n    path: apps/web\n"
        "  destination:\n    server: https://kubernetes.default.svc\n    namespace: web\n"
    )


async def test_local_mode_pins_and_a_moved_tag_is_written_once(
    registry: RegistryServer, repo: str, tmp_path: Path, home: Path
) -> None:
    """Local mode reads the running image from the target: after a write the next cycle sees
    the pinned value and writes nothing, until the tag moves."""
    digest = await push_fleet(registry, repo)
    image = f"{registry.host}/{repo}"
    kustomization = KUSTOMIZATION + f"images:\n- name: {image}\n  newTag: 1.0.0\n"
    remote = bare_repo(
        tmp_path / "deploy.git", files={"apps/web/kustomization.yaml": kustomization}
    )
    apps = tmp_path / "apps"
    apps.mkdir()
    (apps / "web.yaml").write_text(local_app("web", image, f"file://{remote}"))

    async def cycles(count: int) -> list[Any]:
        controller, closers = await controller_for(
            tmp_path,
            registries_conf(tmp_path, registry),
            applications_api="local",
            local_path=str(apps),
        )
        try:
            return [await controller.cycle() for _ in range(count)]
        finally:
            await close_all(closers)

    first, second = await cycles(2)
    assert first.errors == 0 and first.images_updated == 1, messages(first)
    assert second.errors == 0 and second.images_updated == 0, messages(second)
    pinned = KUSTOMIZATION + f"images:\n- name: {image}\n  newTag: 1.1.0\n  digest: {digest}\n"
    assert show(remote, "main", "apps/web/kustomization.yaml", home=home) == pinned

    moved = await push_index(registry, repo, "1.1.0", 4)
    third, fourth = await cycles(2)
    assert third.errors == 0 and third.images_updated == 1
    assert fourth.errors == 0 and fourth.images_updated == 0
    assert show(remote, "main", "apps/web/kustomization.yaml", home=home) == pinned.replace(
        digest, moved
    )
    assert len(log_subjects(remote, "main", home=home)) == 3


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "argocd_image_updater", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


async def test_the_test_command_prints_the_pinned_tag(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    digest = await push_fleet(registry, repo)
    image = f"{registry.host}/{repo}"
    conf = registries_conf(tmp_path, registry)
    result = run_cli(
        "test",
        image,
        "--semver-constraint",
        "1.x",
        "--registries-conf-path",
        str(conf),
        "--pin-digest",
    )
    assert result.returncode == 0, result.stderr
    assert f"latest image according to constraint is {image}:1.1.0@{digest}" in result.stdout
