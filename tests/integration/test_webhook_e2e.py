"""Push a tag, post the webhook, the Application is updated — and no other repository is scanned."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from waiting import eventually

from argocd_image_updater.cli.run_cmd import build_controller, close_resource, start_webhook
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.webhook.signatures import sign_generic
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.faulty_proxy import FaultyProxy
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
SECRET = "generic-webhook-s3cret"


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


@pytest.mark.parametrize("after_a_cycle", [False, True], ids=["cold", "after-a-cycle"])
async def test_webhook_updates_only_apps_of_the_pushed_repository(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, after_a_cycle: bool
) -> None:
    other = repo + "-other"
    start = datetime(2026, 5, 1, tzinfo=UTC)
    async with ImagePusher(registry.url) as pusher:
        for r in (repo, other):
            await pusher.push_image(r, "1.0.0", created=start)
    proxy = await FaultyProxy(registry.url).start()
    try:
        host = proxy.url.split("://", 1)[1]
        conf = tmp_path / "registries.conf"
        conf.write_text(f"registries:\n- name: t\n  prefix: {host}\n  api_url: {proxy.url}\n")
        for name, r in (("web", repo), ("other", other)):
            image = f"{host}/{r}"
            kube.store.put(
                objects.application(
                    name, NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
                )
            )
            kube.store.put(
                objects.image_updater(
                    name,
                    NS,
                    {
                        "applicationRefs": [
                            {"namePattern": name, "images": [{"alias": "a", "imageName": image}]}
                        ]
                    },
                )
            )
        settings = resolve(
            "run",
            {
                "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
                "registries_conf_path": str(conf),
                "enable_webhook": True,
                "disable_tls": True,
            },
            env={"GENERIC_WEBHOOK_SECRET": SECRET},
        )
        controller, closers = await build_controller(settings)
        try:
            _, port = await start_webhook(settings, controller, 0, closers)
            if after_a_cycle:
                # A full cycle first: the event then reuses its selection and re-reads only
                # the Applications that use the pushed repository.
                await controller.cycle()
            lists_before = kube.request_count("list", "applications")
            log_start = len(proxy.log)
            async with ImagePusher(registry.url) as pusher:
                await pusher.push_image(repo, "1.1.0", created=start + timedelta(days=1))
            before = dict(proxy.counts)
            body = json.dumps({"registry": host, "repository": repo, "tag": "1.1.0"}).encode()
            stamp = int(time.time())
            async with httpx.AsyncClient() as client:
                response = await client.post(
                    f"http://127.0.0.1:{port}/webhook?type=generic",
                    content=body,
                    headers={
                        "Content-Type": "application/json",
                        "X-Timestamp": str(stamp),
                        "X-Signature-256": sign_generic(SECRET, stamp, body),
                    },
                )
            assert response.status_code == 200, response.text
            assert response.text == "Webhook received and processing"
            image = f"{host}/{repo}"
            await eventually(
                lambda: (
                    kube.store.get("applications", NS, "web")["spec"]["source"]["kustomize"][
                        "images"
                    ]
                    == [f"{image}:1.1.0"]
                ),
                "the webhook updates the Application",
            )
        finally:
            for closer in reversed(closers):
                await close_resource(closer)
        if after_a_cycle:
            assert kube.request_count("list", "applications") == lists_before
            assert kube.request_count("get", "applications") >= 1
        # Exactly one tag list was fetched: the pushed repository's. The other app is untouched.
        after = dict(proxy.counts)
        assert after.get("tags", 0) - before.get("tags", 0) == 1
        assert [
            line
            for line in proxy.log[log_start:]
            if "/tags/list" in str(line) and other in str(line)
        ] == []
        untouched: Any = kube.store.get("applications", NS, "other")
        assert untouched["spec"]["source"]["kustomize"]["images"] == [f"{host}/{other}:1.0.0"]
    finally:
        await proxy.stop()


async def test_harbor_event_reaches_an_image_written_without_a_registry_host(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    """``acc/app`` has no host: polling scans it through the ``default: true`` registry, so an
    event from that registry must update it too (and an unrelated repository's event not)."""
    start = datetime(2026, 5, 1, tzinfo=UTC)
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0.0", created=start)
    harbor_host = "harbor.example.test"
    conf = tmp_path / "registries.conf"
    conf.write_text(
        "registries:\n"
        f"- name: harbor\n  prefix: {harbor_host}\n  api_url: {registry.url}\n  default: true\n"
    )
    kube.store.put(
        objects.application(
            "hostless", NS, images=[f"{repo}:1.0.0"], kustomize_images=[f"{repo}:1.0.0"]
        )
    )
    kube.store.put(
        objects.image_updater(
            "hostless",
            NS,
            {
                "applicationRefs": [
                    {
                        "namePattern": "hostless",
                        "images": [{"alias": "a", "imageName": f"{repo}:^1.0"}],
                    }
                ]
            },
        )
    )
    secret = "harbor-s3cret"
    settings = resolve(
        "run",
        {
            "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
            "registries_conf_path": str(conf),
            "enable_webhook": True,
            "disable_tls": True,
        },
        env={"HARBOR_WEBHOOK_SECRET": secret},
    )

    def harbor_event(repository: str, tag: str) -> bytes:
        return json.dumps(
            {
                "type": "PUSH_ARTIFACT",
                "event_data": {
                    "resources": [
                        {
                            "tag": tag,
                            "digest": "sha256:" + "0" * 64,
                            "resource_url": f"{harbor_host}/{repository}:{tag}",
                        }
                    ],
                    "repository": {"repo_full_name": repository},
                },
            }
        ).encode()

    def images() -> Any:
        return kube.store.get("applications", NS, "hostless")["spec"]["source"]["kustomize"][
            "images"
        ]

    controller, closers = await build_controller(settings)
    try:
        _, port = await start_webhook(settings, controller, 0, closers)
        async with ImagePusher(registry.url) as pusher:
            await pusher.push_image(repo, "1.1.0", created=start + timedelta(days=1))
        async with httpx.AsyncClient() as client:
            for repository in (repo + "-unrelated", repo):
                response = await client.post(
                    f"http://127.0.0.1:{port}/webhook?type=harbor",
                    content=harbor_event(repository, "1.1.0"),
                    headers={"Content-Type": "application/json", "Authorization": secret},
                )
                assert response.status_code == 200, response.text
        await eventually(lambda: images() == [f"{repo}:1.1.0"], "the Harbor event updates it")
        assert controller.cycles == 0  # the event did it, not a polling cycle
    finally:
        for closer in reversed(closers):
            await close_resource(closer)
