"""``set APP --image ALIAS=TAG@DIGEST`` and ``ALIAS=DIGEST`` end to end, against the real
registry: the tag is written pinned to the digest only while it points there; a digest alone is
written as the tag that has it (with the digest when the image pins digests); signature
verification still applies. Through the Kubernetes API fake (``argocd`` method), real git over
smart HTTP (``git`` method) and manifest files (local mode), in CRD and annotation mode."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf
from test_controller_argocd import START, app_obj
from test_set_command import CRD, KUSTOMIZATION, LEGACY, NS, configure, kustomize_tag, settings
from test_verify_writeback import KEY_SECRET, VERIFY, Images

from argocd_image_updater.cli import set_run
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.set_version import SetError
from argocd_image_updater.model.holds import HOLD_ANNOTATION, HOLD_REASON_ANNOTATION
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.git_servers import GitHttpServer, bare_repo, show
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NONE = "sha256:" + "0" * 64
"""A digest no tag has."""


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


async def push(registry: RegistryServer, repo: str, builds: dict[str, int]) -> dict[str, str]:
    """Push each tag as the build of its day (tags of one day share one manifest and digest);
    the digest of each tag."""
    async with ImagePusher(registry.url) as pusher:
        return {
            tag: await pusher.push_image(repo, tag, created=START + timedelta(days=day))
            for tag, day in builds.items()
        }


BUILDS = {"1.0.0": 0, "1.1.0": 1, "stable": 1, "1.2.0": 2, "latest": 2}


def held(kube: KubeApiServer) -> dict[str, str]:
    annotations = app_obj(kube, "shop")["metadata"].get("annotations") or {}
    keys = (HOLD_ANNOTATION, HOLD_REASON_ANNOTATION)
    return {k: v for k, v in annotations.items() if k in keys}


def shop(image: str, tag: str = "1.2.0") -> dict[str, Any]:
    return objects.application(
        "shop", NS, images=[f"{image}:{tag}"], kustomize_images=[f"{image}:{tag}"]
    )


@pytest.mark.parametrize("mode", [CRD, LEGACY])
async def test_a_digest_sets_the_tag_that_has_it(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, mode: str
) -> None:
    digests = await push(registry, repo, BUILDS)
    image = f"{registry.host}/{repo}"
    configure(kube, mode, image, shop(image), {})
    conf = registries_conf(tmp_path, registry)
    digest = digests["1.1.0"]
    assert digests["stable"] == digest  # two tags: the semver image's strategy ranks 1.1.0

    message = await set_run.set_version(
        settings(kube, tmp_path, conf), "shop", "", f"web={digest}", "", ""
    )

    assert message == (
        f"set web of Application argocd/shop to {image}:1.1.0 (the tag of {digest}); "
        "held until released"
    )
    assert kustomize_tag(kube) == "1.1.0"  # a semver image without pinDigest: the tag alone
    assert held(kube) == {HOLD_ANNOTATION: "web", HOLD_REASON_ANNOTATION: f"set to {digest}"}


async def test_an_image_that_pins_digests_gets_the_tag_with_the_digest(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    digests = await push(registry, repo, BUILDS)
    image = f"{registry.host}/{repo}"
    app = objects.application(
        "shop",
        NS,
        source_type="Helm",
        images=[f"{image}:1.2.0"],
        helm_parameters={"image.name": image, "image.tag": "1.2.0"},
    )
    kube.store.put(app)
    ref = {
        "namePattern": "shop",
        "images": [
            {
                "alias": "web",
                "imageName": f"{image}:~1",
                "commonUpdateSettings": {"pinDigest": True},
            }
        ],
    }
    kube.store.put(objects.image_updater("shop", NS, {"applicationRefs": [ref]}))
    conf = registries_conf(tmp_path, registry)

    message = await set_run.set_version(
        settings(kube, tmp_path, conf), "shop", NS, f"web={digests['1.0.0']}", "", ""
    )

    pinned = f"1.0.0@{digests['1.0.0']}"
    assert message.startswith(f"set web of Application argocd/shop to {image}:{pinned} ")
    parameters = app_obj(kube, "shop")["spec"]["source"]["helm"]["parameters"]
    assert {p["name"]: p["value"] for p in parameters}["image.tag"] == pinned


async def test_the_digest_strategy_writes_the_tag_with_the_digest(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    digests = await push(registry, repo, BUILDS)
    image = f"{registry.host}/{repo}"
    configure(kube, LEGACY, image, shop(image, f"latest@{digests['latest']}"), {})
    app = app_obj(kube, "shop")
    annotations = app["metadata"]["annotations"]
    annotations["argocd-image-updater.argoproj.io/image-list"] = f"web={image}:latest"
    annotations["argocd-image-updater.argoproj.io/web.update-strategy"] = "digest"
    kube.store.put(app)
    conf = registries_conf(tmp_path, registry)

    await set_run.set_version(
        settings(kube, tmp_path, conf), "shop", NS, f"web={digests['stable']}", "", ""
    )

    # the followed tag (latest) does not have it: the others in the strategy's order
    [entry] = app_obj(kube, "shop")["spec"]["source"]["kustomize"]["images"]
    assert entry == f"{image}:stable@{digests['stable']}"


@pytest.mark.parametrize("mode", [CRD, LEGACY])
async def test_a_tag_at_its_digest_is_written_pinned_and_elsewhere_it_is_refused(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, mode: str
) -> None:
    digests = await push(registry, repo, BUILDS)
    image = f"{registry.host}/{repo}"
    configure(kube, mode, image, shop(image), {})
    conf = registries_conf(tmp_path, registry)
    moved = f"web=1.0.0@{digests['1.1.0']}"

    with pytest.raises(SetError) as err:
        await set_run.set_version(settings(kube, tmp_path, conf), "shop", NS, moved, "", "")

    assert str(err.value) == (
        f"cannot set web of Application argocd/shop to 1.0.0@{digests['1.1.0']}: tag '1.0.0' of "
        f"{image} now points at {digests['1.0.0']}, not {digests['1.1.0']}"
    )
    assert kustomize_tag(kube) == "1.2.0" and held(kube) == {}
    assert kube.request_count("patch", "applications") == 2  # the hold, and taking it back

    wanted = f"1.0.0@{digests['1.0.0']}"
    message = await set_run.set_version(
        settings(kube, tmp_path, conf), "shop", NS, f"web={wanted}", "", ""
    )
    assert message == f"set web of Application argocd/shop to {image}:{wanted}; held until released"
    [entry] = app_obj(kube, "shop")["spec"]["source"]["kustomize"]["images"]
    assert entry == f"{image}:{wanted}"
    assert held(kube)[HOLD_REASON_ANNOTATION] == f"set to {wanted}"


async def test_a_digest_no_tag_has_is_an_error_and_nothing_is_written_nor_held(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push(registry, repo, BUILDS)
    image = f"{registry.host}/{repo}"
    configure(kube, CRD, image, shop(image), {})
    conf = registries_conf(tmp_path, registry)

    with pytest.raises(SetError) as err:
        await set_run.set_version(settings(kube, tmp_path, conf), "shop", NS, f"web={NONE}", "", "")

    assert str(err.value) == (
        f"no tag of {image} points at {NONE} (5 tags listed); a digest no tag names cannot be set"
    )
    assert kustomize_tag(kube) == "1.2.0" and held(kube) == {}


@pytest.mark.parametrize("mode", [CRD, LEGACY])
async def test_a_digest_is_committed_to_git_over_smart_http(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, mode: str
) -> None:
    digests = await push(registry, repo, BUILDS)
    image = f"{registry.host}/{repo}"
    kustomization = KUSTOMIZATION + f"images:\n- name: {image}\n  newTag: {{tag}}\n"
    root = tmp_path / "srv"
    remote = bare_repo(
        root / "org" / "deploy.git",
        files={"app/kustomization.yaml": kustomization.format(tag="1.2.0")},
    )
    home = tmp_path / "home"
    home.mkdir()
    token = "set-digest-t0ken"
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
            "shop", NS, images=[f"{image}:1.2.0"], repo_url=url, path="app", target_revision="main"
        )
        write_back = {"method": "git", "gitConfig": {"writeBackTarget": "kustomization"}}
        configure(kube, mode, image, app, write_back)
        conf = registries_conf(tmp_path, registry)
        run = settings(kube, tmp_path, conf)
        with pytest.raises(SetError, match="now points at"):
            await set_run.set_version(run, "shop", NS, f"web=1.1.0@{digests['1.0.0']}", "", "")
        assert show(remote, "main", "app/kustomization.yaml", home=home) == (
            kustomization.format(tag="1.2.0")
        )
        await set_run.set_version(run, "shop", NS, f"web={digests['1.0.0']}", "", "")
        first = show(remote, "main", "app/kustomization.yaml", home=home)
        await set_run.set_version(run, "shop", NS, f"web=1.1.0@{digests['1.1.0']}", "", "")
        second = show(remote, "main", "app/kustomization.yaml", home=home)

    assert first == kustomization.format(tag="1.0.0")
    # a kustomization's images: entry takes the digest beside the tag
    assert second == kustomization.format(tag="1.1.0") + f"  digest: {digests['1.1.0']}\n"
    assert held(kube)[HOLD_ANNOTATION] == "web"


async def test_a_digest_in_local_mode_edits_the_manifest(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    from test_holds_local import write_apps

    digests = await push(registry, repo, BUILDS)
    image = f"{registry.host}/{repo}"
    apps = tmp_path / "apps"
    manifest = write_apps(apps, image, "1.2.0")
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
    with pytest.raises(SetError, match=f"no tag of {image} points at {NONE}"):
        await set_run.set_version(local, "shop", "", f"web={NONE}", "", "")
    assert HOLD_ANNOTATION not in manifest.read_text()

    message = await set_run.set_version(local, "shop", "", f"web={digests['stable']}", "", "")

    assert message.startswith(f"set web of Application argocd/shop to {image}:1.1.0 (the tag")
    text = manifest.read_text()
    assert f"{image}:1.1.0" in text and f"{image}:1.2.0" not in text
    assert f"{HOLD_ANNOTATION}: web" in text
    wanted = f"1.0.0@{digests['1.0.0']}"
    await set_run.set_version(local, "shop", "", f"web={wanted}", "", "")
    assert f"{image}:{wanted}" in manifest.read_text()


async def test_signature_verification_still_applies_to_a_digest(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    images = Images(registry, repo)
    await images.push()
    image = images.name
    kube.store.put(objects.secret(KEY_SECRET, NS, {"cosign.pub": images.pem}))
    kube.store.put(shop(image, "1.1.0"))
    ref = {"namePattern": "shop", "images": [{"alias": "web", "imageName": image}]}
    kube.store.put(objects.image_updater("shop", NS, {**VERIFY, "applicationRefs": [ref]}))
    run = settings(kube, tmp_path, registries_conf(tmp_path, registry))
    digest = images.digests["1.0.0"]

    with pytest.raises(SetError, match=r"signature verification failed: .*no signature found"):
        await set_run.set_version(run, "shop", NS, f"web={digest}", "", "")
    assert kustomize_tag(kube) == "1.1.0" and held(kube) == {}

    await images.sign("1.0.0")
    await set_run.set_version(run, "shop", NS, f"web={digest}", "", "")
    # the verified digest is written with the tag, as for every verified image
    [entry] = app_obj(kube, "shop")["spec"]["source"]["kustomize"]["images"]
    assert entry == f"{image}:1.0.0@{digest}"


@pytest.mark.parametrize(
    ("strategy", "wanted", "asked"),
    [
        ("semver", "1.19.0", 8),  # the tag the policy would choose: one window of HEADs
        ("semver", "1.0.0", 20),  # the last in the order: every tag, once
        ("newest-build", "1.0.0", 0),  # the scan read the manifests: no HEAD at all
    ],
)
async def test_the_tags_are_asked_in_the_images_order_and_each_at_most_once(
    registry: RegistryServer,
    repo: str,
    endpoint_for: Any,
    strategy: str,
    wanted: str,
    asked: int,
) -> None:
    from argocd_image_updater.config.registries import RegistryConfig
    from argocd_image_updater.controller.credentials import CredentialsCache
    from argocd_image_updater.controller.set_digest import tag_for_digest
    from argocd_image_updater.model.application import Application
    from argocd_image_updater.model.update_config import AppUpdateConfig, ImageSpec
    from argocd_image_updater.model.update_settings import UpdateSettings
    from argocd_image_updater.registry.scanner import Scanner

    digests = await push(registry, repo, {f"1.{i}.0": i for i in range(20)})
    image = f"{registry.host}/{repo}"
    spec = ImageSpec("web", image, UpdateSettings(strategy=strategy))
    config = AppUpdateConfig(Application.from_object(shop(image)), (spec,))
    async with Scanner() as scanner:
        found = await tag_for_digest(
            config,
            spec,
            digests[wanted],
            RegistryConfig([endpoint_for(registry)]),
            scanner,
            CredentialsCache(None, False),
        )
        heads = scanner.stats.get("manifest_head", 0)
    assert (found.tag, found.pins, found.asked) == (wanted, False, asked)
    assert heads == asked


async def test_through_the_argocd_api_the_helm_parameter_gets_the_tag_and_digest(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    from argocd_image_updater_testing.argocd import ArgoCDApiServer

    digests = await push(registry, repo, BUILDS)
    image = f"{registry.host}/{repo}"
    app = objects.application(
        "shop",
        NS,
        source_type="Helm",
        images=[f"{image}:1.2.0"],
        helm_parameters={"image.name": image, "image.tag": "1.2.0"},
    )
    kube.store.put(app)  # the hold is put on the Application through the Kubernetes API
    ref = {"namePattern": "shop", "images": [{"alias": "web", "imageName": image}]}
    kube.store.put(objects.image_updater("shop", NS, {"applicationRefs": [ref]}))
    async with ArgoCDApiServer(tokens={"argocd-token": None}) as argocd:
        argocd.store.put(app)
        run = resolve(
            "run",
            {
                "applications_api": "argocd",
                "argocd_server_addr": argocd.url.removeprefix("http://"),
                "argocd_plaintext": True,
                "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
                "registries_conf_path": str(registries_conf(tmp_path, registry)),
                "once": True,
            },
            env={"ARGOCD_TOKEN": "argocd-token"},
        )
        wanted = f"1.1.0@{digests['1.1.0']}"
        await set_run.set_version(run, "shop", NS, f"web={wanted}", "", "")
        written = argocd.store.get("applications", NS, "shop")
    parameters = written["spec"]["source"]["helm"]["parameters"]
    assert {p["name"]: p["value"] for p in parameters} == {"image.name": image, "image.tag": wanted}
    assert held(kube)[HOLD_REASON_ANNOTATION] == f"set to {wanted}"
