"""``status`` answers from what a real controller cycle left: through the Kubernetes API (the
ImageUpdater's status and the state ConfigMap) and in local mode (the manifests and
``--state-dir``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from fleet import registries_conf
from ruamel.yaml import YAML
from test_controller_argocd import close_all, make_controller, push_tags
from test_holds_controller import NS, cycles, kustomize_app, synced, updater
from test_holds_local import write_apps
from test_local_mode import START, build, run_cycles

from argocd_image_updater.cli.main import cli
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


async def status(*args: str) -> Result:
    """The command in a thread of its own (it runs its own event loop)."""
    return await asyncio.to_thread(CliRunner().invoke, cli, ["status", *args])


async def test_status_through_the_kubernetes_api_shows_holds_writes_and_reasons(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.1.0"])
    image = f"{registry.host}/{repo}"
    kube.store.put(kustomize_app(image, "1.0.0"))
    kube.store.put(updater(image))
    controller, closers = await make_controller(kube, tmp_path, registries_conf(tmp_path, registry))
    try:
        assert (await cycles(controller)).images_updated == 1
        synced(kube, image, "1.1.0")
        await cycles(controller)  # seen running
        synced(kube, image, "1.0.0", spec=True)  # a person rolls back
        await cycles(controller)
    finally:
        await close_all(closers)
    kubeconfig = ["--kubeconfig", str(tmp_path / "kubeconfig")]

    result = await status(*kubeconfig, "-o", "json")
    assert result.exit_code == 0, result.output
    [view] = json.loads(result.output)["imageUpdaters"]
    assert (view["namespace"], view["name"]) == (NS, "shop")
    assert view["ready"].startswith("True ReconcileSucceeded")
    [row] = view["images"]
    assert row["application"] == f"{NS}/shop" and row["alias"] == "web"
    assert (row["verdict"], row["reason"]) == ("held", "held: rolled back from 1.1.0 to 1.0.0")
    assert row["current"] == "1.0.0"
    assert (row["last_write"], row["ship"]) == ("1.1.0", "Shipped")
    assert row["written_at"].endswith("Z")

    table = await status(*kubeconfig, "shop")
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    assert lines[0].startswith(f"ImageUpdater {NS}/shop (checked ")
    assert all(len(line) <= 100 for line in lines), lines
    assert "\x1b[" not in table.output  # no colour when not on a terminal
    [row_line] = [line for line in lines if line.startswith(f"{NS}/shop")]
    assert row_line.split()[:5] == [f"{NS}/shop", "web", "1.0.0", "1.1.0", "held"]
    assert "    held: rolled back from 1.1.0 to 1.0.0" in lines

    yaml_out = await status(*kubeconfig, "--image-updater", f"{NS}/shop", "-o", "yaml")
    assert yaml_out.exit_code == 0, yaml_out.output
    assert YAML(typ="safe").load(yaml_out.output) == json.loads(result.output)

    missing = await status(*kubeconfig, "other-app")
    assert missing.exit_code == 1
    assert "no ImageUpdater status mentions Application other-app" in missing.output


async def test_status_in_local_mode_reads_the_manifests_and_the_state_dir(
    tmp_path: Path, registry: RegistryServer, repo: str
) -> None:
    async with ImagePusher(registry.url) as pusher:
        for day, tag in enumerate(("1.0.0", "1.1.0")):
            await pusher.push_image(repo, tag, created=START + timedelta(days=day))
    image = f"{registry.host}/{repo}"
    apps, state = tmp_path / "apps", tmp_path / "state"
    write_apps(apps, image, "1.0.0")
    local = ["--applications-api", "local", "--local-path", str(apps)]

    before = await status(*local, "--state-dir", str(state), "-o", "json")
    assert before.exit_code == 0, before.output
    [view] = json.loads(before.output)["imageUpdaters"]
    assert view["images"] == [] and view["notes"] == ["no status yet"]

    controller, closers = await build(tmp_path, registry, apps, state_dir=str(state))
    await run_cycles(controller, closers, 1)

    result = await status(*local, "--state-dir", str(state), "-o", "json")
    assert result.exit_code == 0, result.output
    [view] = json.loads(result.output)["imageUpdaters"]
    [row] = view["images"]
    row: dict[str, Any]
    assert (row["application"], row["alias"], row["verdict"]) == ("argocd/shop", "web", "updated")
    assert (row["current"], row["candidate"]) == ("1.0.0", "1.1.0")
    assert (row["last_write"], row["ship"]) == ("1.1.0", "not live yet")

    # the next cycle writes nothing: the status keeps the update it reported before
    controller, closers = await build(tmp_path, registry, apps, state_dir=str(state))
    await run_cycles(controller, closers, 1)
    stored = json.loads((state / "status.json").read_text())["argocd/shop"]
    assert stored["recentUpdates"][0]["newVersion"] == "1.1.0"
    table = await status(*local, "--state-dir", str(state), "shop")
    assert table.exit_code == 0, table.output
    [row_line] = [line for line in table.output.splitlines() if line.startswith("argocd/shop")]
    assert row_line.split()[:3] == ["argocd/shop", "web", "1.1.0"]
    assert row_line.split()[-1] == "live"

    bad = await status("--applications-api", "local", "--local-path", str(tmp_path / "nope"))
    assert bad.exit_code == 1 and "--local-path" in bad.output and "no such directory" in bad.output
