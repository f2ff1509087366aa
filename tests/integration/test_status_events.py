"""CR status written through the status subresource and Kubernetes events, against the
Kubernetes API fake (schema validation and pruning, resourceVersion conflicts)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from argocd_image_updater.controller.stores import KubeStatusStore
from argocd_image_updater.kube.client import KubeClient
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.pipeline.records import AppOutcome, CRState, CycleResult
from argocd_image_updater.plan.model import AppPlan, ImageChange, ImageReason, ImageResult, Outcome
from argocd_image_updater.report.events import EventRecorder
from argocd_image_updater.report.status import IMAGES, StatusWriter, compute_status
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer

NS = "argocd"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
async def server() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as fake:
        yield fake


@pytest.fixture
async def kube(server: KubeApiServer, tmp_path: Path) -> AsyncIterator[KubeClient]:
    config = server.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)
    client = await KubeClient.connect(kubeconfig=str(config))
    yield client
    await client.close()


def stored_cr(server: KubeApiServer, name: str = "updater") -> CRState:
    obj = server.store.get("imageupdaters", NS, name)
    meta = obj["metadata"]
    return CRState(NS, name, meta["generation"], meta["resourceVersion"], raw=obj)


def make_cr(server: KubeApiServer, name: str = "updater") -> CRState:
    server.store.put(objects.image_updater(name, NS))
    return stored_cr(server, name)


def change(image: str, alias: str, old: str, new: str) -> ImageChange:
    return ImageChange(alias, ImageRef.parse(image), old, new, "")


def outcome(
    state: CRState | None, app: str, *, written: bool = True, failed: bool = False
) -> AppOutcome:
    results = [
        ImageResult(
            "web", "nginx", "nginx:1.20", "nginx:1.21", Outcome.UPDATED, ImageReason.UPDATED, "x"
        ),
        ImageResult("db", "redis", "redis:7.2", "redis:7.2", Outcome.UP_TO_DATE, "up-to-date", ""),
    ]
    if failed:
        results.append(
            ImageResult(
                "api",
                "ghcr.io/org/api",
                "ghcr.io/org/api:1.0",
                None,
                Outcome.ERROR,
                ImageReason.REGISTRY_ERROR,
                "Could not get tags from registry: 401 Unauthorized",
            )
        )
    plan = AppPlan.build(
        app_name=app,
        app_namespace=NS,
        source_path=("spec", "source"),
        source_type="Kustomize",
        results=results,
        changes=[change("nginx", "web", "1.20", "1.21"), change("redis", "db", "7.0", "7.2")],
    )
    return AppOutcome(f"{NS}/{app}", plan, written=written, cr=state)


def events(server: KubeApiServer, namespace: str = NS) -> list[dict[str, Any]]:
    return server.store.list("events", namespace)


# --- status ----------------------------------------------------------------------------------


async def test_the_whole_status_survives_schema_validation_and_pruning(
    server: KubeApiServer, kube: KubeClient
) -> None:
    state = make_cr(server)
    status = compute_status(
        state,
        [outcome(state, "shop", failed=True), outcome(state, "blog")],
        now=NOW,
        dry_run=False,
        previous=None,
    )
    assert await StatusWriter(KubeStatusStore(kube)).write(state, status)
    stored = server.store.get("imageupdaters", NS, "updater")
    assert stored["status"] == status
    conditions = {c["type"]: c for c in stored["status"]["conditions"]}
    assert conditions["Ready"]["reason"] == "ReconcileCompletedWithErrors"
    assert "argocd/shop api: registry-error" in conditions[IMAGES]["message"]
    assert [u["applicationsUpdated"] for u in stored["status"]["recentUpdates"]] == [2, 2]
    assert state.resource_version == stored["metadata"]["resourceVersion"]
    assert stored["metadata"]["generation"] == 1  # a status write is no spec change


async def test_a_conflict_is_retried_against_the_fresh_object(
    server: KubeApiServer, kube: KubeClient
) -> None:
    state = make_cr(server)
    first = compute_status(state, [], now=NOW, dry_run=False, previous=None)
    # meanwhile someone else stores a status and edits the CR: our resourceVersion is stale
    server.store.patch("imageupdaters", NS, "updater", {"status": first}, subresource="status")
    server.store.patch("imageupdaters", NS, "updater", {"metadata": {"labels": {"team": "a"}}})
    seen: list[Any] = []

    def status(previous: Any) -> dict[str, Any]:
        seen.append(previous)
        later = NOW.replace(hour=13)
        return compute_status(
            state, [outcome(state, "shop")], now=later, dry_run=False, previous=previous
        )

    assert await StatusWriter(KubeStatusStore(kube)).write(state, status)
    assert server.request_count("patch", "imageupdaters/status") == 2
    assert server.request_count("get", "imageupdaters") == 1
    assert seen[0] is None and seen[1] == first
    stored = server.store.get("imageupdaters", NS, "updater")
    ready = next(c for c in stored["status"]["conditions"] if c["type"] == "Ready")
    # recomputed from the fresh status: Ready stayed True, so its transition time is kept
    assert ready["lastTransitionTime"] == "2026-03-01T12:00:00Z"
    assert ready["message"] == "Reconciled 1 applications, 2 images updated."
    assert stored["status"]["lastCheckedAt"] == "2026-03-01T13:00:00Z"
    assert stored["metadata"]["labels"] == {"team": "a"}


async def test_conflicts_are_retried_a_bounded_number_of_times(
    server: KubeApiServer, kube: KubeClient
) -> None:
    state = make_cr(server)
    server.fail_next(10, verb="patch", resource="imageupdaters/status", status=409)
    status = compute_status(state, [], now=NOW, dry_run=False, previous=None)
    assert not await StatusWriter(KubeStatusStore(kube), attempts=3).write(state, status)
    assert server.request_count("patch", "imageupdaters/status") == 3
    assert "status" not in server.store.get("imageupdaters", NS, "updater")


async def test_a_deleted_cr_is_ignored(server: KubeApiServer, kube: KubeClient) -> None:
    state = make_cr(server)
    server.store.delete("imageupdaters", NS, "updater")
    status = compute_status(state, [], now=NOW, dry_run=False, previous=None)
    assert not await StatusWriter(KubeStatusStore(kube)).write(state, status)
    assert server.request_count("patch", "imageupdaters/status") == 1


async def test_an_unchanged_status_is_written_only_as_a_heartbeat(
    server: KubeApiServer, kube: KubeClient
) -> None:
    writer = StatusWriter(KubeStatusStore(kube))

    async def cycle_at(minutes: float, outcomes: list[AppOutcome] | None = None) -> bool:
        state = stored_cr(server)  # each cycle lists the CR again, with its stored status
        mine = outcomes if outcomes is not None else [outcome(state, "shop", written=False)]
        when = NOW + timedelta(minutes=minutes)
        return await writer.write(
            state,
            lambda stored: compute_status(state, mine, now=when, dry_run=False, previous=stored),
        )

    def patches() -> int:
        return server.request_count("patch", "imageupdaters/status")

    make_cr(server)
    assert await cycle_at(0) and patches() == 1  # the first status is always written
    assert await cycle_at(1) and patches() == 1  # nothing but lastCheckedAt moved
    assert await cycle_at(4.99) and patches() == 1
    assert writer.skipped == 2
    stored = server.store.get("imageupdaters", NS, "updater")["status"]
    assert stored["lastCheckedAt"] == "2026-03-01T12:00:00Z"
    assert await cycle_at(5) and patches() == 2  # the heartbeat
    assert server.store.get("imageupdaters", NS, "updater")["status"]["lastCheckedAt"] == (
        "2026-03-01T12:05:00Z"
    )
    assert await cycle_at(6) and patches() == 2
    state = stored_cr(server)
    assert await cycle_at(7, [outcome(state, "shop", failed=True)]) and patches() == 3
    ready = next(
        c
        for c in server.store.get("imageupdaters", NS, "updater")["status"]["conditions"]
        if c["type"] == "Ready"
    )
    assert ready["reason"] == "ReconcileCompletedWithErrors"


# --- events ----------------------------------------------------------------------------------


class Clock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


async def test_images_updated_event_like_the_original(
    server: KubeApiServer, kube: KubeClient
) -> None:
    clock = Clock(1_772_366_400.25)
    recorder = EventRecorder(kube, enabled=True, clock=clock)
    changes = [
        change("ghcr.io/org/web", "web", "1.20", "1.21"),
        change("redis", "db", "7.0", f"7.2@sha256:{'b' * 64}"),
    ]
    assert await recorder.images_updated(NS, "shop", "uid-1", changes)
    [event] = events(server)
    assert event["metadata"]["name"] == f"shop.{int(clock.now * 1e9):x}"
    assert re.fullmatch(r"shop\.[0-9a-f]+", event["metadata"]["name"])
    assert event["type"] == "Normal"
    assert event["reason"] == "ImagesUpdated"
    assert event["message"] == "Successfully updated application 'shop'"
    assert event["source"] == {"component": "ArgocdImageUpdater"}
    assert event["involvedObject"] == {
        "kind": "Application",
        "apiVersion": "argoproj.io/v1alpha1",
        "name": "shop",
        "namespace": NS,
        "uid": "uid-1",
    }
    assert event["metadata"]["annotations"] == {
        "argocd-image-updater.image-0/full-image-name": "ghcr.io/org/web",
        "argocd-image-updater.image-0/image-name": "org/web",
        "argocd-image-updater.image-0/old-tag": "1.20",
        "argocd-image-updater.image-0/new-tag": "1.21",
        "argocd-image-updater.image-1/full-image-name": "redis",
        "argocd-image-updater.image-1/image-name": "redis",
        "argocd-image-updater.image-1/old-tag": "7.0",
        "argocd-image-updater.image-1/new-tag": f"7.2@sha256:{'b' * 64}",
    }
    assert event["count"] == 1
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-03-01T12:00:00Z"


async def test_the_event_goes_to_the_applications_namespace(
    server: KubeApiServer, kube: KubeClient
) -> None:
    server.store.ensure_namespace("team-b")
    recorder = EventRecorder(kube, enabled=True)
    assert await recorder.images_updated("team-b", "app", "", [change("nginx", "", "1", "2")])
    assert events(server) == []
    [event] = events(server, "team-b")
    assert event["involvedObject"]["namespace"] == "team-b"


async def test_disabled_events_create_nothing(server: KubeApiServer, kube: KubeClient) -> None:
    state = make_cr(server)
    recorder = EventRecorder(kube, enabled=False)
    assert not await recorder.images_updated(NS, "shop", "", [change("nginx", "", "1", "2")])
    assert not await recorder.image_failed(state, "argocd/shop", "web", "registry-error", "boom")
    result = CycleResult(apps=[outcome(state, "shop", failed=True)])
    assert await recorder.publish(result) == 0
    assert server.request_count("create", "events") == 0


async def test_warnings_are_rate_limited_per_image_and_reason(
    server: KubeApiServer, kube: KubeClient
) -> None:
    state = make_cr(server)
    clock = Clock(1_772_366_400.0)
    recorder = EventRecorder(kube, enabled=True, clock=clock, warning_interval=600)
    assert await recorder.image_failed(state, "argocd/shop", "web", "registry-error", "401")
    clock.now += 10
    assert not await recorder.image_failed(state, "argocd/shop", "web", "registry-error", "401")
    assert await recorder.image_failed(state, "argocd/shop", "db", "registry-error", "401")
    assert await recorder.image_failed(state, "argocd/shop", "web", "policy-error", "bad")
    clock.now += 591
    assert await recorder.image_failed(state, "argocd/shop", "web", "registry-error", "401")
    warnings = events(server)
    assert len(warnings) == 4
    first = min(warnings, key=lambda e: e["metadata"]["name"])
    assert first["type"] == "Warning"
    assert first["reason"] == "RegistryError"
    assert first["message"] == "Could not update application 'argocd/shop', image 'web': 401"
    assert first["involvedObject"] == {
        "kind": "ImageUpdater",
        "apiVersion": "argocd-image-updater.argoproj.io/v1alpha1",
        "name": "updater",
        "namespace": NS,
        "uid": state.raw["metadata"]["uid"],
    }


async def test_event_failures_are_not_fatal(server: KubeApiServer, kube: KubeClient) -> None:
    server.fail_next(1, verb="create", resource="events", status=403, message="forbidden")
    recorder = EventRecorder(kube, enabled=True)
    assert not await recorder.images_updated(NS, "shop", "", [change("nginx", "", "1", "2")])
    assert await recorder.images_updated(NS, "shop", "", [change("nginx", "", "1", "2")])


async def test_publish_a_cycle(server: KubeApiServer, kube: KubeClient) -> None:
    state = make_cr(server)
    result = CycleResult(
        apps=[
            outcome(state, "shop", failed=True),
            outcome(state, "dry", written=False),
            outcome(None, "legacy", failed=True),
        ]
    )
    recorder = EventRecorder(kube, enabled=True)
    assert await recorder.publish(result, app_uids={f"{NS}/shop": "uid-shop"}) == 3
    found = events(server)
    updated = sorted(e["involvedObject"]["name"] for e in found if e["reason"] == "ImagesUpdated")
    assert updated == ["legacy", "shop"]
    [warning] = [e for e in found if e["type"] == "Warning"]
    assert warning["involvedObject"]["name"] == "updater"
    assert "image 'api'" in warning["message"]
