"""Verify before write, for every write-back method: an ImageUpdater that enables verification
never gets an unverified image written (``verification-failed``, Warning event, error counted,
the running tag stays), and a verified one is written pinned to the digest that was verified.

The registry is the real one; signatures are laid out as cosign lays them out, with keys made
by the test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf

from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.pipeline.records import CycleResult
from argocd_image_updater.plan.model import ImageReason, Outcome
from argocd_image_updater_testing import cosign, objects
from argocd_image_updater_testing.argocd import ArgoCDApiServer
from argocd_image_updater_testing.git_servers import bare_repo, git, log_subjects, show
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 5, 1, tzinfo=UTC)
KEY_SECRET = "cosign-key"
VERIFY = {"imagesVerification": {"cosignKey": {"secretName": KEY_SECRET, "key": "cosign.pub"}}}
KUSTOMIZATION = (
    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- deploy.yaml\n"
    "images:\n- name: {image}\n  newTag: 1.0.0\n"
)


class Images:
    """``1.0.0`` (running) and ``1.1.0`` (newer) in a fresh repository; ``sign`` signs a tag
    with the key whose public half is configured."""

    def __init__(self, registry: RegistryServer, repo: str) -> None:
        self.registry = registry
        self.repo = repo
        self.name = f"{registry.host}/{repo}"
        self.key = cosign.generate_key()
        self.pem = cosign.public_pem(self.key)
        self.digests: dict[str, str] = {}

    async def push(self) -> None:
        async with ImagePusher(self.registry.url) as pusher:
            for i, tag in enumerate(["1.0.0", "1.1.0"]):
                self.digests[tag] = await pusher.push_image(
                    self.repo, tag, created=START + timedelta(days=i)
                )

    async def sign(self, tag: str) -> None:
        digest = self.digests[tag]
        payload = cosign.simple_signing_payload(self.name, digest)
        async with ImagePusher(self.registry.url) as pusher:
            await cosign.push_signature_tag(
                pusher, self.repo, digest, [(payload, cosign.sign(self.key, payload))]
            )


@pytest.fixture
async def images(registry: RegistryServer, repo: str) -> Images:
    made = Images(registry, repo)
    await made.push()
    return made


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


def updater_spec(image: str, **spec: Any) -> dict[str, Any]:
    return {
        **VERIFY,
        **spec,
        "applicationRefs": [
            {"namePattern": "web", "images": [{"alias": "web", "imageName": image}]}
        ],
    }


def put_cluster_objects(kube: KubeApiServer, images: Images, **spec: Any) -> None:
    kube.store.put(objects.secret(KEY_SECRET, NS, {"cosign.pub": images.pem}))
    kube.store.put(objects.image_updater("web", NS, updater_spec(images.name, **spec)))


async def cycles(
    controller: Controller, closers: list[Any], between: Any = None
) -> list[CycleResult]:
    """Two cycles: unsigned newer tag, then (after ``between``) signed."""
    try:
        first = await controller.cycle()
        await between()
        second = await controller.cycle()
    finally:
        for closer in reversed(closers):
            await close_resource(closer)
    return [first, second]


def assert_refused(result: CycleResult) -> None:
    """Nothing written, the image is an error with the reason and the cause."""
    assert result.images_updated == 0 and result.errors == 1
    [app] = result.apps
    assert app.plan is not None and not app.plan.has_changes
    [image] = app.plan.results
    assert (image.outcome, image.reason) == (Outcome.ERROR, ImageReason.VERIFICATION_FAILED)
    assert "no signature found" in image.message, image.message
    assert image.current is not None and image.current.endswith(":1.0.0")


def warning_events(kube: KubeApiServer) -> list[dict[str, Any]]:
    return [e for e in kube.store.list("events", NS) if e.get("type") == "Warning"]


async def test_kubernetes_api_write_back(
    kube: KubeApiServer, images: Images, tmp_path: Path
) -> None:
    image = images.name
    kube.store.put(
        objects.application(
            "web", NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
        )
    )
    put_cluster_objects(kube, images)
    settings = resolve(
        "run",
        {
            "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
            "registries_conf_path": str(registries_conf(tmp_path, images.registry)),
            "once": True,
        },
        env={},
    )
    controller, closers = await build_controller(settings)

    async def refused_then_signed() -> None:
        assert_refused(first_result[0])
        stored = kube.store.get("applications", NS, "web")
        assert stored["spec"]["source"]["kustomize"]["images"] == [f"{image}:1.0.0"]
        [event] = warning_events(kube)
        assert event["reason"] == "VerificationFailed"
        assert "no signature found" in event["message"]
        status = kube.store.get("imageupdaters", NS, "web")["status"]
        assert "verification-failed" in str(status)
        await images.sign("1.1.0")

    first_result: list[CycleResult] = []
    try:
        first_result.append(await controller.cycle())
        await refused_then_signed()
        second = await controller.cycle()
    finally:
        for closer in reversed(closers):
            await close_resource(closer)
    assert second.images_updated == 1 and second.errors == 0
    stored = kube.store.get("applications", NS, "web")
    pinned = f"{image}:1.1.0@{images.digests['1.1.0']}"
    assert stored["spec"]["source"]["kustomize"]["images"] == [pinned]


async def test_argocd_api_write_back(kube: KubeApiServer, images: Images, tmp_path: Path) -> None:
    image = images.name
    put_cluster_objects(kube, images)
    async with ArgoCDApiServer(tokens={"argocd-token": None}) as argocd:
        argocd.store.put(
            objects.application(
                "web",
                NS,
                source_type="Helm",
                images=[f"{image}:1.0.0"],
                helm_parameters={"image.name": image, "image.tag": "1.0.0"},
            )
        )
        settings = resolve(
            "run",
            {
                "applications_api": "argocd",
                "argocd_server_addr": argocd.url.removeprefix("http://"),
                "argocd_plaintext": True,
                "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
                "registries_conf_path": str(registries_conf(tmp_path, images.registry)),
                "once": True,
            },
            env={"ARGOCD_TOKEN": "argocd-token"},
        )
        controller, closers = await build_controller(settings)

        def params() -> dict[str, str]:
            app = argocd.store.get("applications", NS, "web")
            return {p["name"]: p["value"] for p in app["spec"]["source"]["helm"]["parameters"]}

        async def check_then_sign() -> None:
            assert params() == {"image.name": image, "image.tag": "1.0.0"}
            await images.sign("1.1.0")

        first, second = await cycles(controller, closers, check_then_sign)
        assert_refused(first)
        assert [e["reason"] for e in warning_events(kube)] == ["VerificationFailed"]
        assert second.images_updated == 1 and second.errors == 0
        assert params() == {"image.name": image, "image.tag": f"1.1.0@{images.digests['1.1.0']}"}


async def test_git_write_back(kube: KubeApiServer, images: Images, tmp_path: Path) -> None:
    image = images.name
    home = tmp_path / "home"
    home.mkdir()
    remote = bare_repo(
        tmp_path / "deploy.git",
        files={"apps/web/kustomization.yaml": KUSTOMIZATION.format(image=image)},
    )
    kube.store.put(
        objects.application(
            "web",
            NS,
            images=[f"{image}:1.0.0"],
            repo_url=f"file://{remote}",
            path="apps/web",
            target_revision="main",
        )
    )
    put_cluster_objects(
        kube,
        images,
        writeBackConfig={"method": "git", "gitConfig": {"writeBackTarget": "kustomization"}},
    )
    settings = resolve(
        "run",
        {
            "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
            "registries_conf_path": str(registries_conf(tmp_path, images.registry)),
            "git_cache_dir": str(tmp_path / "clones"),
            "git_commit_message_path": str(tmp_path / "no-template"),
            "once": True,
        },
        env={},
    )
    controller, closers = await build_controller(settings)

    async def check_then_sign() -> None:
        assert log_subjects(remote, "main", home=home) == ["Initial commit"]
        await images.sign("1.1.0")

    first, second = await cycles(controller, closers, check_then_sign)
    assert_refused(first)
    assert [e["reason"] for e in warning_events(kube)] == ["VerificationFailed"]
    assert second.images_updated == 1 and second.errors == 0
    text = show(remote, "main", "apps/web/kustomization.yaml", home=home)
    assert f"digest: {images.digests['1.1.0']}" in text and "newTag: 1.1.0" in text


async def test_local_mode_write_back(images: Images, tmp_path: Path) -> None:
    image = images.name
    home = tmp_path / "home"
    home.mkdir()
    remote = bare_repo(
        tmp_path / "deploy.git",
        files={"apps/web/kustomization.yaml": KUSTOMIZATION.format(image=image)},
    )
    apps = tmp_path / "apps"
    apps.mkdir()
    (apps / "web.yaml").write_text(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n"
        f"spec:\n  source:\n    repoURL: file://{remote}\n    targetRevision: main\n"
        "    path: apps/web\n  destination:\n    namespace: web\n"
    )
    (apps / "updater.yaml").write_text(
        "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\n"
        "metadata:\n  name: web\nspec:\n"
        f"  imagesVerification:\n    cosignKey: {{secretName: {KEY_SECRET}, key: cosign.pub}}\n"
        "  writeBackConfig:\n    method: git\n"
        "    gitConfig: {writeBackTarget: kustomization}\n"
        "  applicationRefs:\n  - namePattern: web\n    images:\n"
        f"    - alias: web\n      imageName: {image}\n"
    )
    git("init", "-q", "--initial-branch=main", cwd=apps, home=home)
    secrets = tmp_path / "secrets" / NS / KEY_SECRET
    secrets.mkdir(parents=True)
    (secrets / "cosign.pub").write_bytes(images.pem)
    settings = resolve(
        "run",
        {
            "applications_api": "local",
            "local_path": str(apps),
            "secrets_dir": str(tmp_path / "secrets"),
            "registries_conf_path": str(registries_conf(tmp_path, images.registry)),
            "git_cache_dir": str(tmp_path / "clones"),
            "git_commit_message_path": str(tmp_path / "no-template"),
            "once": True,
        },
        env={},
    )
    controller, closers = await build_controller(settings)

    async def check_then_sign() -> None:
        assert log_subjects(remote, "main", home=home) == ["Initial commit"]
        await images.sign("1.1.0")

    first, second = await cycles(controller, closers, check_then_sign)
    assert_refused(first)
    assert second.images_updated == 1 and second.errors == 0
    text = show(remote, "main", "apps/web/kustomization.yaml", home=home)
    assert f"digest: {images.digests['1.1.0']}" in text


async def test_image_level_enabled_false_overrides_the_spec_level_policy(
    kube: KubeApiServer, images: Images, tmp_path: Path
) -> None:
    image = images.name
    for name in ("opted-out", "verified"):
        kube.store.put(
            objects.application(
                name, NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
            )
        )
    kube.store.put(objects.secret(KEY_SECRET, NS, {"cosign.pub": images.pem}))
    opt_out = {"alias": "web", "imageName": image, "imagesVerification": {"enabled": False}}
    kube.store.put(
        objects.image_updater(
            "web",
            NS,
            {
                **VERIFY,
                "applicationRefs": [
                    {"namePattern": "opted-out", "images": [opt_out]},
                    {"namePattern": "verified", "images": [{"alias": "web", "imageName": image}]},
                ],
            },
        )
    )
    settings = resolve(
        "run",
        {
            "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
            "registries_conf_path": str(registries_conf(tmp_path, images.registry)),
            "once": True,
        },
        env={},
    )
    controller, closers = await build_controller(settings)
    try:
        result = await controller.cycle()
    finally:
        for closer in reversed(closers):
            await close_resource(closer)
    assert result.images_updated == 1 and result.errors == 1

    def running(name: str) -> list[str]:
        app = kube.store.get("applications", NS, name)
        return list(app["spec"]["source"]["kustomize"]["images"])

    assert running("opted-out") == [f"{image}:1.1.0"]  # not verified: no digest pinned
    assert running("verified") == [f"{image}:1.0.0"]
