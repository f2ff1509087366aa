"""Notifications end to end: the controller against the Kubernetes API fake (the real client
library over a socket, the ImageUpdater admitted by the CRD's schema), tags from the real
registry, receivers over HTTP. A receiver that never answers does not hold the cycle up."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf
from waiting import eventually

from argocd_image_updater.cli.run_cmd import build_controller
from argocd_image_updater.cli.run_setup import StartupError
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.notify.dispatcher import Notifier
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer, KubeError
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.receivers import NotificationReceiver
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 3, 1, tzinfo=UTC)
SIGNING_KEY = "e2e-signing-key"
CYCLE_BOUND = 30.0
"""Seconds a cycle may take here; waiting for the hanging receiver would take longer (five
attempts of 10 s each, plus the backoff)."""


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


@pytest.fixture
async def receiver() -> AsyncIterator[NotificationReceiver]:
    async with NotificationReceiver() as server:
        yield server


async def seed(
    kube: KubeApiServer, registry: RegistryServer, repo: str, notifications: dict[str, Any]
) -> str:
    """Two Applications running ``1.0.0`` of one image, tags up to ``1.0.2``, an ImageUpdater
    with ``notifications`` managing both."""
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(["1.0.0", "1.0.1", "1.0.2"]):
            await pusher.push_image(repo, tag, created=START + timedelta(days=i))
    image = f"{registry.host}/{repo}"
    for name in ("shop-web", "shop-api"):
        kube.store.put(
            objects.application(
                name, NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
            )
        )
    kube.store.put(
        objects.image_updater(
            "shop",
            NS,
            {
                "applicationRefs": [
                    {"namePattern": "shop-*", "images": [{"alias": "app", "imageName": image}]}
                ],
                "notifications": notifications,
            },
        )
    )
    return image


async def controller_for(
    kube: KubeApiServer, registry: RegistryServer, tmp_path: Path
) -> tuple[Controller, list[Any], Notifier]:
    settings = resolve(
        "run",
        {
            "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
            "registries_conf_path": str(registries_conf(tmp_path, registry)),
            "notifications_config_path": str(tmp_path / "notifications.yaml"),
            "once": True,
        },
        env={},
    )
    controller, closers = await build_controller(settings)
    assert controller.reporter is not None and controller.reporter.notifier is not None
    return controller, closers, controller.reporter.notifier


async def close_all(closers: list[Any]) -> None:
    for closer in reversed(closers):
        await (closer.aclose() if hasattr(closer, "aclose") else closer.close())


async def test_a_cycle_sends_one_signed_message_listing_both_updates(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    receiver: NotificationReceiver,
    tmp_path: Path,
) -> None:
    kube.store.put(
        objects.secret(
            "hooks", NS, {"audit": receiver.url, "chat": receiver.url, "key": SIGNING_KEY}
        )
    )
    ref = {"secretName": "hooks"}
    image = await seed(
        kube,
        registry,
        repo,
        {
            "targets": [
                {
                    "name": "audit",
                    "type": "webhook",
                    "urlSecret": {**ref, "key": "audit"},
                    "signingSecret": {**ref, "key": "key"},
                },
                {
                    "name": "chat",
                    "type": "slack",
                    "urlSecret": {**ref, "key": "chat"},
                    "on": ["failed"],
                },
            ]
        },
    )
    controller, closers, notifier = await controller_for(kube, registry, tmp_path)
    try:
        result = await asyncio.wait_for(controller.cycle(), CYCLE_BOUND)
        await asyncio.wait_for(notifier.idle(), 30)
    finally:
        await close_all(closers)

    assert result.images_updated == 2
    [request] = receiver.requests  # two images, one message; nothing failed for the chat
    timestamp = request.header("X-Timestamp")
    assert timestamp is not None
    expected = hmac.new(
        SIGNING_KEY.encode(), f"{timestamp}.".encode() + request.body, hashlib.sha256
    ).hexdigest()
    assert request.header("X-Signature-256") == f"sha256={expected}"
    body = request.json()
    assert body["imageUpdater"] == f"{NS}/shop"
    events = sorted(body["events"], key=lambda e: e["application"])
    assert [(e["event"], e["application"], e["from"], e["to"]) for e in events] == [
        ("updated", f"{NS}/shop-api", "1.0.0", "1.0.2"),
        ("updated", f"{NS}/shop-web", "1.0.0", "1.0.2"),
    ]
    assert {e["image"] for e in events} == {image}


async def test_a_receiver_that_never_answers_does_not_hold_the_cycle_up(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    receiver: NotificationReceiver,
    tmp_path: Path,
) -> None:
    receiver.hang = True
    kube.store.put(objects.secret("hooks", NS, {"chat": receiver.url}))
    await seed(
        kube,
        registry,
        repo,
        {
            "targets": [
                {
                    "name": "chat",
                    "type": "teams",
                    "urlSecret": {"secretName": "hooks", "key": "chat"},
                }
            ]
        },
    )
    controller, closers, notifier = await controller_for(kube, registry, tmp_path)
    try:
        result = await asyncio.wait_for(controller.cycle(), CYCLE_BOUND)
        assert result.images_updated == 2 and result.errors == 0
        assert notifier.pending() == 1  # the cycle is over; its message is still on its way
        await eventually(lambda: len(receiver.requests) == 1, "the receiver got the message")
        second = await asyncio.wait_for(controller.cycle(), CYCLE_BOUND)
        assert second.errors == 0
    finally:
        await notifier.aclose(grace=0)  # drop what the receiver never took
        await close_all(closers)
    assert notifier.pending() == 0


async def test_the_crd_refuses_a_bad_notifications_section(kube: KubeApiServer) -> None:
    target = {"name": "audit", "type": "webhook", "urlSecret": {"secretName": "h", "key": "u"}}
    for section, message in (
        ({"targets": [target]}, "signingSecret is required for type webhook"),
        ({"targets": [{**target, "type": "email"}]}, 'Unsupported value: "email"'),
        (
            {"targets": [{**target, "type": "slack", "on": ["deleted"]}]},
            'Unsupported value: "deleted"',
        ),
    ):
        spec = {
            "applicationRefs": [{"namePattern": "*", "useAnnotations": True}],
            "notifications": section,
        }
        with pytest.raises(KubeError) as info:
            kube.store.put(objects.image_updater("bad", NS, spec))
        assert message in str(info.value)


async def test_a_bad_default_stops_the_start_naming_the_field(
    kube: KubeApiServer, registry: RegistryServer, tmp_path: Path
) -> None:
    (tmp_path / "notifications.yaml").write_text(
        "targets:\n  - {name: chat, type: slack, urlSecret: {secretName: s}}\n"
    )
    with pytest.raises(StartupError) as info:
        await controller_for(kube, registry, tmp_path)
    assert str(info.value) == (
        f"notifications configuration: {tmp_path / 'notifications.yaml'}: "
        "targets[0].urlSecret.key: required field is missing"
    )
