"""A v0.x setup as users wrote it, unchanged: the ConfigMap switches to the Argo CD API, the
token comes from argocd-image-updater-secret, registries.conf uses an ext: credentials script
(and YAML 1.1 `ping: yes`), and the Application carries the legacy annotations (alias `org/app`
→ keys `org_app.*`). The registry used here lists tags in no defined order, so the seed's
`tagsortmode: latest-last` is left out; the time-sorted path is covered by the policy tests."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from argocd_image_updater.model.registry import Credentials
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.argocd import ArgoCDApiServer
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
TOKEN = "argocd-api-t0ken-from-secret"
USER, PASSWORD = "AWS", "ecr-authorization-t0ken"


@pytest.fixture
def kube() -> Iterator[KubeApiServer]:
    server = KubeApiServer(namespaces=(NS,)).start_in_thread()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def argocd() -> Iterator[ArgoCDApiServer]:
    server = ArgoCDApiServer(tokens={TOKEN: None}).start_in_thread()
    try:
        yield server
    finally:
        server.stop()


async def test_v0_setup_with_argocd_api_and_ext_credentials(
    kube: KubeApiServer, argocd: ArgoCDApiServer, repo: str, tmp_path: Path
) -> None:
    with RegistryServer(users={USER: PASSWORD}) as registry:
        async with ImagePusher(registry.url, credentials=Credentials(USER, PASSWORD)) as pusher:
            for i, tag in enumerate(["1a2b3c4", "9f8e7d6", "latest"]):
                await pusher.push_image(
                    repo, tag, created=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(i)
                )
        image = f"{registry.host}/{repo}"
        script = tmp_path / "ecr.sh"
        script.write_text(f"#!/bin/sh\necho '{USER}:{PASSWORD}'\n")
        script.chmod(0o700)
        config_dir = tmp_path / "config"
        config_dir.mkdir()
        for key, value in {
            "applications_api": "argocd",
            "argocd.grpc_web": "true",
            "argocd.insecure": "false",
            "argocd.plaintext": "true",
            "argocd.server_addr": argocd.url.removeprefix("http://"),
            "log.level": "debug",
            "registries.conf": (
                "registries:\n"
                "  - name: AWS ECR HUB\n"
                f"    api_url: {registry.url}\n"
                f"    prefix: {registry.host}\n"
                "    ping: yes\n"
                f"    credentials: ext:{script}\n"
            ),
        }.items():
            (config_dir / key).write_text(value)
        kube.store.put(objects.secret("argocd-image-updater-secret", NS, {"argocd.token": TOKEN}))
        argocd.store.put(
            objects.application(
                "shop",
                NS,
                source_type="Helm",
                images=[f"{image}:1a2b3c4"],
                helm_parameters={"image.name": image, "image.tag": "1a2b3c4"},
                annotations={
                    "argocd-image-updater.argoproj.io/image-list": f"org/app={image}",
                    "argocd-image-updater.argoproj.io/org_app.pull-secret": f"ext:{script}",
                    "argocd-image-updater.argoproj.io/write-back-method": "argocd",
                    "argocd-image-updater.argoproj.io/org_app.update-strategy": "latest",
                    "argocd-image-updater.argoproj.io/org_app.allow-tags": "regexp:^[0-9a-f]{7}$",
                },
            )
        )
        env = {k: v for k, v in os.environ.items() if k != "ARGOCD_TOKEN"}
        proc = await asyncio.to_thread(
            subprocess.run,
            [
                sys.executable,
                "-m",
                "argocd_image_updater",
                "run",
                "--once",
                "--config-dir",
                str(config_dir),
                "--registries-conf",
                str(config_dir / "registries.conf"),
                "--kubeconfig",
                str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app = argocd.store.get("applications", NS, "shop")
    params = {p["name"]: p["value"] for p in app["spec"]["source"]["helm"]["parameters"]}
    assert params == {"image.name": image, "image.tag": "9f8e7d6"}
    assert "level=debug" in proc.stdout
    assert "image_tag=1a2b3c4" in proc.stdout
    assert "images_updated=1 errors=0" in proc.stdout
    assert TOKEN not in proc.stdout + proc.stderr
    assert PASSWORD not in proc.stdout + proc.stderr
