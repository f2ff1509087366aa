"""``argocd-image-updater run`` as users start it: a real process, flags and environment, against
the Kubernetes API fake and a real registry."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fleet import seed_web_app

from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"


@pytest.fixture
def kube() -> Iterator[KubeApiServer]:
    server = KubeApiServer(namespaces=(NS,)).start_in_thread()
    try:
        yield server
    finally:
        server.stop()


async def seed(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> tuple[str, Path, Path]:
    image, conf = await seed_web_app(kube, registry, repo, tmp_path, ["1.0.0", "1.1.0"])
    return image, kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS), conf


def run_cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "argocd_image_updater", "run", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


async def test_run_once_updates_and_exits(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    image, kubeconfig, conf = await seed(kube, registry, repo, tmp_path)
    proc = run_cli(
        "--once",
        "--kubeconfig",
        str(kubeconfig),
        "--registries-conf-path",
        str(conf),
        env={"IMAGE_UPDATER_LOGLEVEL": "debug"},
    )
    out, err = await asyncio.to_thread(proc.communicate, timeout=180)
    assert proc.returncode == 0, err
    app = kube.store.get("applications", NS, "web")
    assert app["spec"]["source"]["kustomize"]["images"] == [f"{image}:1.1.0"]
    assert "level=info msg=starting" in out
    assert "interval=once" in out
    assert f"Setting new image to {image}:1.1.0" in out
    assert (
        "Processing results: applications=1 images_considered=1 images_skipped=0 images_updated=1 errors=0"
        in out
    )


async def test_a_tenants_bad_credential_reference_does_not_stop_run(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    image, kubeconfig, conf = await seed(kube, registry, repo, tmp_path)
    kube.store.put(
        objects.application(
            "other", NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
        )
    )
    ref = {
        "namePattern": "other",
        "commonUpdateSettings": {"pullSecret": "nonsense:whatever"},
        "images": [{"alias": "web", "imageName": image}],
    }
    kube.store.put(objects.image_updater("other", NS, {"applicationRefs": [ref]}))
    proc = run_cli(
        "--once", "--kubeconfig", str(kubeconfig), "--registries-conf-path", str(conf), env={}
    )
    out, err = await asyncio.to_thread(proc.communicate, timeout=180)
    assert "Traceback" not in err
    assert proc.returncode == 4, err  # the cycle ran, with an error (not a crash: 1)
    web = kube.store.get("applications", NS, "web")
    assert web["spec"]["source"]["kustomize"]["images"] == [f"{image}:1.1.0"]
    field = (
        "ImageUpdater argocd/other field spec.applicationRefs[0].commonUpdateSettings.pullSecret"
    )
    assert f"{field}: invalid credential reference" in err
    assert "images_updated=1 errors=1" in out


def test_invalid_environment_value_is_a_startup_error(tmp_path: Path) -> None:
    proc = run_cli("--once", env={"MAX_CONCURRENT_APPS": "0"})
    _, err = proc.communicate(timeout=180)
    assert proc.returncode != 0
    assert "MAX_CONCURRENT_APPS" in err and "out of range" in err


async def test_sigterm_stops_the_loop_gracefully(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    _, kubeconfig, conf = await seed(kube, registry, repo, tmp_path)
    proc = run_cli(
        "--interval",
        "1h",
        "--kubeconfig",
        str(kubeconfig),
        "--registries-conf-path",
        str(conf),
        "--health-probe-bind-address",
        "127.0.0.1:0",
        "--leader-election=false",
        env={},
    )
    try:
        deadline = time.monotonic() + 120  # an upper bound for a loaded machine
        while kube.request_count("patch", "applications") == 0:
            assert time.monotonic() < deadline, "the first cycle did not write"
            assert proc.poll() is None, proc.communicate()[1]
            await asyncio.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.to_thread(proc.communicate, timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    assert "received SIGTERM" in out


def start_webhook_command(kubeconfig: Path, registries_conf: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "argocd_image_updater",
            "webhook",
            "--webhook-port",
            "0",
            "--disable-tls",
            "--kubeconfig",
            str(kubeconfig),
            "--registries-conf-path",
            str(registries_conf),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "DOCKER_WEBHOOK_SECRET": "hub-s3cret"},
    )


async def test_webhook_command_serves_and_stops_on_sigterm(
    kube: KubeApiServer, tmp_path: Path
) -> None:
    import re

    import httpx

    proc = start_webhook_command(
        kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS), tmp_path / "none.conf"
    )
    try:
        assert proc.stdout is not None
        port = None
        deadline = time.monotonic() + 120  # an upper bound for a loaded machine
        while port is None:
            assert time.monotonic() < deadline, "the webhook server did not start"
            line = await asyncio.to_thread(proc.stdout.readline)
            assert line, proc.stderr.read() if proc.stderr else "no output"
            if match := re.search(r"webhook server listening.*port=(\d+)", line):
                port = int(match.group(1))
                assert "types=docker.io" in line
        async with httpx.AsyncClient() as client:
            health = await client.get(f"http://127.0.0.1:{port}/healthz")
            bad = await client.post(
                f"http://127.0.0.1:{port}/webhook?type=docker.io&secret=wrong", content=b"{}"
            )
        assert health.status_code == 200 and health.text == "OK"
        assert bad.status_code == 400
        proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proc.wait, 30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0


def test_unwritable_git_cache_is_a_startup_error_naming_the_setting(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    apps = tmp_path / "apps"
    apps.mkdir()
    proc = run_cli(
        "--once",
        "--applications-api",
        "local",
        "--local-path",
        str(apps),
        "--git-cache-dir",
        str(blocker / "cache"),
        env={},
    )
    _, err = proc.communicate(timeout=180)
    assert proc.returncode != 0
    assert "Traceback" not in err
    assert f"cannot create the git clone cache in {blocker / 'cache'}" in err
    assert "--git-cache-dir" in err
