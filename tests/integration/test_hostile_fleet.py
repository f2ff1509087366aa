"""``run --once`` with hostile tenants and a hostile registry beside a good tenant: the good
Application is updated in the same cycle, the cycle ends within the configured deadlines, and
each hostile image is reported with its field or registry named."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from argocd_image_updater_testing.hostile_fleet import NS, seed_hostile_fleet
from argocd_image_updater_testing.hostile_registry import HostileRegistry
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.registry import RegistryServer


async def run_once(kubeconfig: Path, conf: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMAGE_UPDATER_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "argocd_image_updater",
        "run",
        "--once",
        "--kubeconfig",
        str(kubeconfig),
        "--registries-conf-path",
        str(conf),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        # An upper bound for a loaded machine; the hostile registry's deadline is 2 s.
        out, err = await asyncio.wait_for(proc.communicate(), 100)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_hostile_tenants_and_registry_do_not_stop_the_good_tenant(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    kube = KubeApiServer(namespaces=(NS,)).start_in_thread()
    hostile = HostileRegistry(stream_bytes=64 * 2**20).start_in_thread()
    try:
        fleet = await seed_hostile_fleet(kube, registry, hostile, tmp_path, prefix=repo)
        # The Kubernetes API answers the first list of Applications with 429 and the first
        # ImageUpdater list with 503: the client retries, as client-go does.
        kube.fail_next(verb="list", resource="applications", status=429)
        kube.fail_next(verb="list", resource="imageupdaters", status=503)
        code, out, err = await run_once(fleet.kubeconfig, fleet.registries_conf)
    finally:
        hostile.stop()
        kube.stop()
    logs = out + err
    assert "Traceback" not in logs
    assert code == 4, logs[-4000:]  # the cycle ran, with errors
    web = kube.store.get("applications", NS, "web")
    assert web["spec"]["source"]["kustomize"]["images"] == [f"{fleet.good_image}:1.1.0"]
    for name in fleet.hostile_apps:
        app = kube.store.get("applications", NS, name)
        assert app["spec"]["source"]["kustomize"]["images"][0].endswith(":1.0.0"), name
    # Each hostile tenant's image is reported, with its field or registry named.
    assert "images_updated=1" in out
    field = f"ImageUpdater {NS}/printf field spec.applicationRefs[0].images[0].imageName"
    assert field in logs
    field = f"ImageUpdater {NS}/ranges field spec.applicationRefs[0].images[0].imageName"
    assert field in logs
    said = {
        "huge-chunk": "refusing to read further",
        "endless-trailers": "the trailer section is longer than 16384 bytes",
        "long-length": "invalid Content-Length",
        "switch": "a 101 Switching Protocols answer to a request that asked for none",
        "interim": "more than 10 interim (1xx) responses",
        "trickle": "within its deadline of 2s",
    }
    for behaviour, why in said.items():
        lines = [line for line in err.splitlines() if f"application={NS}/{behaviour} " in line]
        assert any(why in line and hostile.host in line for line in lines), (behaviour, lines)
