"""Minimum image age end to end: the controller against the Kubernetes API fake and the real
registry; first-seen times survive a restart (a new controller reads the ConfigMap)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf
from test_controller_argocd import app_obj, close_all, make_controller

from argocd_image_updater.controller.events import handle_event
from argocd_image_updater.controller.state_store import STATE_CONFIGMAP
from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.pipeline.records import CycleResult
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


async def push(registry: RegistryServer, repo: str, tags: dict[str, datetime]) -> None:
    async with ImagePusher(registry.url) as pusher:
        for tag, created in tags.items():
            await pusher.push_image(repo, tag, created=created)


def setup_app(kube: KubeApiServer, image: str, settings: dict[str, Any]) -> None:
    kube.store.put(
        objects.application(
            "shop", NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
        )
    )
    kube.store.put(
        objects.image_updater(
            "shop",
            NS,
            {
                "applicationRefs": [
                    {
                        "namePattern": "shop",
                        "images": [
                            {"alias": "web", "imageName": image, "commonUpdateSettings": settings}
                        ],
                    }
                ]
            },
        )
    )


def running(kube: KubeApiServer) -> str:
    [entry] = app_obj(kube, "shop")["spec"]["source"]["kustomize"]["images"]
    return str(entry).rsplit(":", 1)[1]


async def one_cycle(
    kube: KubeApiServer, registry: RegistryServer, tmp_path: Path, now: datetime
) -> CycleResult:
    """A controller started afresh (a restart), running one cycle at ``now``."""
    controller, closers = await make_controller(kube, tmp_path, registries_conf(tmp_path, registry))
    controller.clock = lambda: now
    try:
        return await controller.cycle()
    finally:
        await close_all(closers)


async def test_first_seen_times_survive_a_restart_and_the_newest_old_tag_wins(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    start = datetime.now(UTC).replace(microsecond=0)
    await push(registry, repo, {"1.0.0": start, "1.1.0": start})
    image = f"{registry.host}/{repo}"
    setup_app(kube, image, {"minAge": "72h"})

    first = await one_cycle(kube, registry, tmp_path, start)
    assert first.images_updated == 0 and running(kube) == "1.0.0"
    seen = json.loads(kube.store.get("configmaps", NS, STATE_CONFIGMAP)["data"]["first-seen.json"])
    assert seen == {
        f"{registry.host}/{repo}": {
            "1.0.0": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "1.1.0": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    }

    await push(registry, repo, {"1.2.0": start})
    later = start + timedelta(hours=73)
    second = await one_cycle(kube, registry, tmp_path, later)  # after a restart
    assert second.images_updated == 1 and running(kube) == "1.1.0"
    [outcome] = second.apps
    assert outcome.plan is not None and outcome.plan.results[0].reason == "updated"

    third = await one_cycle(kube, registry, tmp_path, later + timedelta(hours=72))
    assert third.images_updated == 1 and running(kube) == "1.2.0"


async def test_min_age_from_the_image_creation_time(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    await push(
        registry,
        repo,
        {
            "1.0.0": now - timedelta(days=30),
            "1.1.0": now - timedelta(days=3),
            "1.2.0": now - timedelta(hours=2),
        },
    )
    image = f"{registry.host}/{repo}"
    setup_app(kube, image, {"minAge": "24h", "minAgeFrom": "created"})
    result = await one_cycle(kube, registry, tmp_path, now)
    assert result.images_updated == 1 and running(kube) == "1.1.0"


async def test_a_bad_min_age_is_an_error_of_that_image_naming_the_field(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    now = datetime.now(UTC)
    await push(registry, repo, {"1.0.0": now, "1.1.0": now})
    image = f"{registry.host}/{repo}"
    setup_app(kube, image, {"minAge": "72h"})
    cr = kube.store.get("imageupdaters", NS, "shop")
    cr["spec"]["applicationRefs"][0]["images"][0]["commonUpdateSettings"]["minAge"] = "3 days"
    kube.store.put(cr, validate=False)
    result = await one_cycle(kube, registry, tmp_path, now)
    [outcome] = result.apps
    assert outcome.plan is not None
    [web] = outcome.plan.results
    assert web.outcome == "error"
    assert (
        f"ImageUpdater {NS}/shop field spec.applicationRefs[0].images[0].commonUpdateSettings.minAge"
        in web.message
    )


async def test_a_webhook_event_records_the_pushed_tag_as_first_seen_at_once(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    start = datetime.now(UTC).replace(microsecond=0)
    await push(registry, repo, {"1.0.0": start, "1.1.0": start})
    image = f"{registry.host}/{repo}"
    setup_app(kube, image, {"minAge": "72h"})
    controller, closers = await make_controller(kube, tmp_path, registries_conf(tmp_path, registry))
    try:
        controller.clock = lambda: start
        await controller.cycle()
        await push(registry, repo, {"1.2.0": start})
        event_time = start + timedelta(hours=1)
        controller.clock = lambda: event_time
        await handle_event(controller, RegistryEvent(registry.host, repo, "1.2.0"))
        data = kube.store.get("configmaps", NS, STATE_CONFIGMAP)["data"]
        seen = json.loads(data["first-seen.json"])[f"{registry.host}/{repo}"]
        assert seen["1.2.0"] == event_time.strftime("%Y-%m-%dT%H:%M:%SZ")

        controller.clock = lambda: start + timedelta(hours=72, minutes=30)
        await controller.cycle()
        assert running(kube) == "1.1.0"  # 1.2.0 is old enough only at event time + 72h
        controller.clock = lambda: event_time + timedelta(hours=72)
        await controller.cycle()
        assert running(kube) == "1.2.0"
    finally:
        await close_all(closers)


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def web_of(result: CycleResult) -> Any:
    [outcome] = result.apps
    assert outcome.plan is not None
    [web] = outcome.plan.results
    return web


async def test_an_image_waiting_for_min_age_says_which_tag_is_eligible_when(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    from argocd_image_updater.observe.metrics import REGISTRY

    start = datetime.now(UTC).replace(microsecond=0)
    await push(registry, repo, {"1.0.0": start, "1.1.0": start})
    image = f"{registry.host}/{repo}"
    setup_app(kube, image, {"minAge": "72h"})

    first = web_of(await one_cycle(kube, registry, tmp_path, start))
    eligible = f"too-young: 1.1.0 eligible at {stamp(start + timedelta(hours=72))}"
    assert (first.reason, first.message) == ("too-young", eligible)

    await push(registry, repo, {"1.2.0": start})
    later = start + timedelta(hours=73)  # 1.1.0 is old enough: written; 1.2.0 seen now
    assert web_of(await one_cycle(kube, registry, tmp_path, later)).reason == "updated"
    obj = app_obj(kube, "shop")
    obj["status"]["summary"]["images"] = [f"{image}:1.1.0"]
    kube.store.put(obj)
    waiting = web_of(await one_cycle(kube, registry, tmp_path, later + timedelta(hours=1)))
    assert (waiting.reason, waiting.message) == (
        "too-young",
        f"too-young: 1.2.0 eligible at {stamp(later + timedelta(hours=72))}",
    )  # not up-to-date: a newer tag waits
    status = json.dumps(kube.store.get("imageupdaters", NS, "shop")["status"])
    assert f"1.2.0 eligible at {stamp(later + timedelta(hours=72))}" in status
    gauge = REGISTRY.get_sample_value(
        "argocd_image_updater_images_waiting", {"reason": "too-young"}
    )
    assert gauge == 1.0


async def test_the_eligible_time_counts_from_the_creation_time_with_min_age_from_created(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    created = now - timedelta(hours=2)
    await push(registry, repo, {"1.0.0": now - timedelta(days=30), "1.1.0": created})
    image = f"{registry.host}/{repo}"
    setup_app(kube, image, {"minAge": "24h", "minAgeFrom": "created"})
    web = web_of(await one_cycle(kube, registry, tmp_path, now))
    assert web.message == f"too-young: 1.1.0 eligible at {stamp(created + timedelta(hours=24))}"
