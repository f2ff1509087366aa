"""Operating the controller, end to end: status, events and metrics after a real cycle (with
one replica and with three sharing the work, :mod:`replicas`); two replicas with leader
election; no secret in any log line at trace level."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fleet import registries_conf, seed_web_app
from replicas import REPLICAS, start_replicas
from waiting import eventually

from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.leader import LeaderElector
from argocd_image_updater.observe import log as logging_setup
from argocd_image_updater.observe.server import Servers, metrics_app
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


def settings_for(kube: KubeApiServer, tmp_path: Path, conf: Path, **flags: Any) -> Any:
    return resolve(
        "run",
        {
            "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
            "registries_conf_path": str(conf),
            **flags,
        },
        env={},
    )


@REPLICAS
async def test_status_events_and_metrics_after_a_cycle(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, replicas: int
) -> None:
    _, conf = await seed_web_app(kube, registry, repo, tmp_path, ["1.0.0", "1.1.0"])
    fleet = await start_replicas(replicas, kube, tmp_path, registries_conf_path=str(conf))
    servers = Servers()
    try:
        await servers.start("metrics", metrics_app(), "127.0.0.1:0")
        await fleet.cycle()
        async with httpx.AsyncClient() as client:
            scraped = (
                await client.get(f"http://127.0.0.1:{servers.ports['metrics']}/metrics")
            ).text
    finally:
        await servers.close()
        await fleet.close()

    status = kube.store.get("imageupdaters", NS, "web")["status"]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True" and ready["reason"] == "ReconcileSucceeded"
    assert ready["message"] == "Reconciled 1 applications, 1 images updated."
    assert status["applicationsMatched"] == 1 and status["imagesManaged"] == 1
    assert status["recentUpdates"][0]["newVersion"] == "1.1.0"

    events = kube.store.list("events", NS)
    updated = [e for e in events if e.get("reason") == "ImagesUpdated"]
    assert len(updated) == 1
    event = updated[0]
    assert event["involvedObject"]["name"] == "web" and event["type"] == "Normal"
    assert event["message"] == "Successfully updated application 'web'"
    annotations = event["metadata"]["annotations"]
    assert annotations["argocd-image-updater.image-0/new-tag"] == "1.1.0"
    assert annotations["argocd-image-updater.image-0/old-tag"] == "1.0.0"

    line = next(
        row
        for row in scraped.splitlines()
        if row.startswith("argocd_image_updater_images_updated_total{")
        and 'application="argocd/web"' in row
        # series of other tests' ImageUpdaters for an app of that name share the process
        and 'image_updater_cr_name="web"' in row
    )
    assert float(line.rsplit(" ", 1)[1]) >= 1.0
    assert f'argocd_image_updater_registry_requests_total{{registry="{registry.host}"}}' in scraped
    assert "argocd_image_updater_k8s_api_requests_total" in scraped


async def test_two_replicas_one_leader_takes_over_without_double_writes(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    image, conf = await seed_web_app(kube, registry, repo, tmp_path, ["1.0.0", "1.1.0"])
    replicas = []
    for i in range(2):
        controller, closers = await build_controller(
            settings_for(kube, tmp_path, conf, interval=timedelta(milliseconds=200))
        )
        controller.interval = timedelta(milliseconds=200)
        assert controller.kube is not None
        controller.elector = LeaderElector(
            controller.kube,
            namespace=NS,
            identity=f"replica-{i}",
            lease_duration=1.5,
            renew_deadline=1.0,
            retry_period=0.2,
        )
        stop = asyncio.Event()
        tasks = [
            asyncio.create_task(controller.elector.run(stop)),
            asyncio.create_task(controller.run(stop=stop)),
        ]
        replicas.append((controller, closers, stop, tasks))

    def patched_to(tag: str) -> bool:
        images = kube.store.get("applications", NS, "web")["spec"]["source"]["kustomize"]["images"]
        return images == [f"{image}:{tag}"]

    try:
        await eventually(lambda: patched_to("1.1.0"), "first update")
        leaders = [c for c, *_ in replicas if c.is_leader()]
        assert len(leaders) == 1
        leader = next(r for r in replicas if r[0] is leaders[0])
        follower = next(r for r in replicas if r[0] is not leaders[0])
        assert follower[0].cycles == 0  # a follower never scans nor writes
        # The leader dies without releasing the lease.
        for task in leader[3]:
            task.cancel()
        await asyncio.gather(*leader[3], return_exceptions=True)
        async with ImagePusher(registry.url) as pusher:
            await pusher.push_image(repo, "1.2.0", created=START + timedelta(days=30))
        await eventually(lambda: follower[0].is_leader(), "takeover")
        await eventually(lambda: patched_to("1.2.0"), "update by the new leader")
    finally:
        for _, closers, stop, tasks in replicas:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            for closer in reversed(closers):
                await close_resource(closer)
    # Two updates, two patches: no cycle wrote twice.
    assert kube.request_count("patch", "applications") == 2


@REPLICAS
async def test_trace_logs_contain_no_secret(
    kube: KubeApiServer, tmp_path: Path, repo: str, replicas: int
) -> None:
    user, password = "robot", "registry-Pa55-do-not-log"
    with RegistryServer(users={user: password}) as registry:
        from argocd_image_updater.model.registry import Credentials

        async with ImagePusher(registry.url, credentials=Credentials(user, password)) as pusher:
            for i, tag in enumerate(["1.0.0", "1.0.1"]):
                await pusher.push_image(repo, tag, created=START + timedelta(days=i))
        image = f"{registry.host}/{repo}"
        kube.store.put(objects.secret("pull", NS, {"creds": f"{user}:{password}"}))
        kube.store.put(
            objects.application(
                "web", NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
            )
        )
        kube.store.put(
            objects.image_updater(
                "web",
                NS,
                {
                    "applicationRefs": [
                        {
                            "namePattern": "web",
                            "images": [
                                {
                                    "alias": "web",
                                    "imageName": image,
                                    "commonUpdateSettings": {
                                        "pullSecret": f"secret:{NS}/pull#creds"
                                    },
                                }
                            ],
                        }
                    ]
                },
            )
        )
        conf = registries_conf(tmp_path, registry)
        out = io.StringIO()
        logging_setup.setup("trace", "text", out)
        try:
            fleet = await start_replicas(replicas, kube, tmp_path, registries_conf_path=str(conf))
            try:
                result = await fleet.cycle()
            finally:
                await fleet.close()
        finally:
            logging_setup.setup("info", "text")
    text = out.getvalue()
    assert result.images_updated == 1, text[-2000:]
    assert "level=trace" in text
    assert password not in text
    import base64

    assert base64.b64encode(f"{user}:{password}".encode()).decode() not in text


async def test_metrics_over_https_with_a_self_signed_certificate() -> None:
    import ssl

    from argocd_image_updater.webhook.tls import server_ssl_context

    servers = Servers()
    try:
        context = server_ssl_context(Path("/nonexistent"), "1.2", "1.3")
        await servers.start("metrics", metrics_app(), "127.0.0.1:0", context)
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        async with httpx.AsyncClient(verify=insecure) as client:
            response = await client.get(f"https://127.0.0.1:{servers.ports['metrics']}/metrics")
        assert response.status_code == 200
        assert "argocd_image_updater_registry_requests_total" in response.text
    finally:
        await servers.close()


@REPLICAS
async def test_reconciling_is_marked_only_after_a_spec_change(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, replicas: int
) -> None:
    _, conf = await seed_web_app(kube, registry, repo, tmp_path, ["1.0.0"])
    fleet = await start_replicas(replicas, kube, tmp_path, registries_conf_path=str(conf))
    try:
        await fleet.cycle()  # new CR: one write, at the end, carrying everything
        assert kube.request_count("patch", "imageupdaters/status") == 1
        first = kube.store.get("imageupdaters", NS, "web")["status"]
        assert {"conditions", "lastCheckedAt", "imagesManaged"} <= first.keys()
        assert {c["type"] for c in first["conditions"]} >= {"Ready", "ImagesUpToDate"}
        await fleet.cycle()  # nothing changed: no status write (heartbeat after 5 min)
        assert kube.request_count("patch", "imageupdaters/status") == 1
        cr = kube.store.get("imageupdaters", NS, "web")
        cr["spec"]["applicationRefs"][0]["images"][0]["alias"] = "frontend"
        kube.store.put(cr)  # a spec change: Reconciling=True first, then the final status
        await fleet.cycle()
        assert kube.request_count("patch", "imageupdaters/status") == 3
    finally:
        await fleet.close()
    status = kube.store.get("imageupdaters", NS, "web")["status"]
    reconciling = next(c for c in status["conditions"] if c["type"] == "Reconciling")
    assert reconciling["status"] == "False"
    assert (
        status["observedGeneration"]
        == kube.store.get("imageupdaters", NS, "web")["metadata"]["generation"]
    )
