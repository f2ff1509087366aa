"""Holds in local mode: a rollback of the manifest is held across restarts (``--state-dir``),
``release`` ends it; ``hold`` and ``release`` edit the Application's manifest byte-exactly."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from test_local_mode import START, application, build, image_updater, run_cycles

from argocd_image_updater.cli import hold_run
from argocd_image_updater.cli.main import cli
from argocd_image_updater.model.holds import HOLD_ANNOTATION
from argocd_image_updater.plan.model import ImageReason
from argocd_image_updater_testing.git_servers import bare_repo, log_subjects, push_files, show
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

KUSTOMIZATION = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"


def write_apps(apps: Path, image: str, tag: str) -> Path:
    (apps / "web").mkdir(parents=True, exist_ok=True)
    (apps / "web" / "kustomization.yaml").write_text(KUSTOMIZATION)
    manifest = apps / "shop.yaml"
    manifest.write_text(
        application("shop", {"path": "web", "kustomize": f"{{images: ['{image}:{tag}']}}"})
        + "---\n"
        + image_updater("shop", "shop", image, "")
    )
    return manifest


async def test_a_rollback_in_the_manifest_is_held_across_restarts_until_released(
    tmp_path: Path, registry: RegistryServer, repo: str
) -> None:
    async with ImagePusher(registry.url) as pusher:
        for day, tag in enumerate(("1.0.0", "1.1.0")):
            await pusher.push_image(repo, tag, created=START + timedelta(days=day))
    image = f"{registry.host}/{repo}"
    apps, state = tmp_path / "apps", tmp_path / "state"
    manifest = write_apps(apps, image, "1.0.0")

    async def cycle() -> object:
        controller, closers = await build(tmp_path, registry, apps, state_dir=str(state))
        [result] = await run_cycles(controller, closers, 1)  # a new process each time
        return result

    await cycle()
    assert f"{image}:1.1.0" in manifest.read_text()
    await cycle()  # the written tag is seen in the manifest
    writes = json.loads((state / "state.json").read_text())["writes"]
    assert writes["argocd/shop"]["web"] == {
        "tag": "1.1.0",
        "at": writes["argocd/shop"]["web"]["at"],
        "live": True,
        "via": "argocd",
    }

    manifest.write_text(manifest.read_text().replace(f"{image}:1.1.0", f"{image}:1.0.0"))
    result = await cycle()
    [outcome] = result.apps  # type: ignore[attr-defined]
    [web] = outcome.plan.results
    assert (web.reason, web.message) == (ImageReason.HELD, "held: rolled back from 1.1.0 to 1.0.0")
    assert f"{image}:1.0.0" in manifest.read_text()

    message = await hold_run.release(
        "shop", "", ["web"], "", "local", str(apps), "", state_dir=str(state)
    )
    assert message == "released web of Application argocd/shop (shop.yaml)"
    await cycle()
    assert f"{image}:1.1.0" in manifest.read_text()


def test_hold_and_release_edit_only_the_annotation_bytes(tmp_path: Path) -> None:
    apps = tmp_path / "apps"
    manifest = write_apps(apps, "registry.example.com/shop/web", "1.0.0")
    original = manifest.read_text()
    runner = CliRunner()
    local = ["--applications-api", "local", "--local-path", str(apps)]

    held = runner.invoke(
        cli, ["hold", "shop", "--image", "web", "--until", "2030-01-01T00:00:00Z", *local]
    )
    assert held.exit_code == 0, held.output
    assert held.output == (
        "held web of Application argocd/shop (shop.yaml) until 2030-01-01T00:00:00Z\n"
    )
    text = manifest.read_text()
    added = [line for line in text.splitlines() if line not in original.splitlines()]
    assert added == ["  annotations:", f"    {HOLD_ANNOTATION}: web=2030-01-01T00:00:00Z"]
    assert text.replace("\n".join(added) + "\n", "") == original

    again = runner.invoke(cli, ["hold", "shop", "--image", "api", "--reason", "freeze", *local])
    assert again.exit_code == 0, again.output
    text = manifest.read_text()
    assert f"{HOLD_ANNOTATION}: web=2030-01-01T00:00:00Z,api" in text
    assert "argocd-image-updater.argoproj.io/hold-reason: freeze" in text

    released = runner.invoke(cli, ["release", "shop", "--image", "web", *local])
    assert released.exit_code == 0, released.output
    assert f"{HOLD_ANNOTATION}: api\n" in manifest.read_text()
    released = runner.invoke(cli, ["release", "shop", *local])
    assert released.exit_code == 0, released.output
    assert manifest.read_text() == original

    missing = runner.invoke(cli, ["hold", "nope", *local])
    assert missing.exit_code == 1
    assert f"Application argocd/nope not found under {apps}" in missing.output


async def test_a_manifest_reverted_before_the_next_run_is_held(
    tmp_path: Path, registry: RegistryServer, repo: str
) -> None:
    """The argocd method in local mode: the revert comes before any later run saw the tag."""
    async with ImagePusher(registry.url) as pusher:
        for day, tag in enumerate(("1.0.0", "1.1.0", "1.2.0")):
            await pusher.push_image(repo, tag, created=START + timedelta(days=day))
    image = f"{registry.host}/{repo}"
    apps, state = tmp_path / "apps", tmp_path / "state"
    manifest = write_apps(apps, image, "1.0.0")

    async def cycle() -> Any:
        controller, closers = await build(tmp_path, registry, apps, state_dir=str(state))
        [result] = await run_cycles(controller, closers, 1)
        [outcome] = result.apps
        [web] = outcome.plan.results
        return web

    assert (await cycle()).reason == ImageReason.UPDATED
    assert f"{image}:1.2.0" in manifest.read_text()
    manifest.write_text(manifest.read_text().replace(f"{image}:1.2.0", f"{image}:1.0.0"))
    for _ in range(2):
        web = await cycle()
        assert web.message == "held: rolled back from 1.2.0 to 1.0.0"
    assert f"{image}:1.0.0" in manifest.read_text()


async def test_a_git_target_reverted_before_the_next_run_is_held(
    tmp_path: Path, registry: RegistryServer, repo: str
) -> None:
    """The git method in local mode: the target file read from the repository is the target."""
    async with ImagePusher(registry.url) as pusher:
        for day, tag in enumerate(("1.0.0", "1.1.0")):
            await pusher.push_image(repo, tag, created=START + timedelta(days=day))
    image = f"{registry.host}/{repo}"
    home = tmp_path / "home"
    home.mkdir()
    kustomization = KUSTOMIZATION + "images:\n- name: {image}\n  newTag: {tag}\n"
    deploy = bare_repo(
        tmp_path / "deploy.git",
        files={"web/kustomization.yaml": kustomization.format(image=image, tag="1.0.0")},
    )
    apps, state = tmp_path / "apps", tmp_path / "state"
    apps.mkdir()
    source = {"repoURL": f"file://{deploy}", "targetRevision": "main", "path": "web"}
    write_back = "  writeBackConfig:\n    method: git\n    gitConfig:\n      writeBackTarget: kustomization\n"
    (apps / "shop.yaml").write_text(
        application("shop", source) + "---\n" + image_updater("shop", "shop", image, write_back)
    )

    async def cycle() -> Any:
        controller, closers = await build(tmp_path, registry, apps, state_dir=str(state))
        [result] = await run_cycles(controller, closers, 1)
        [outcome] = result.apps
        [web] = outcome.plan.results
        return web

    assert (await cycle()).reason == ImageReason.UPDATED
    target = "web/kustomization.yaml"
    assert show(deploy, "main", target, home=home) == kustomization.format(image=image, tag="1.1.0")
    push_files(deploy, {target: kustomization.format(image=image, tag="1.0.0")}, home=home)
    for _ in range(2):
        web = await cycle()
        assert web.message == "held: rolled back from 1.1.0 to 1.0.0"
    assert len(log_subjects(deploy, "main", home=home)) == 3
