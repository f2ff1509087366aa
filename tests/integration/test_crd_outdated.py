"""The controller against an API server that serves the original project's ImageUpdater CRD (it
prunes ``status.shipments`` and spec fields such as ``holds``) and against one serving ours:
steady cycles write no status, the outdated CRD is reported (log, ``Ready`` condition, metric),
and an ImageUpdater that sets a dropped field says so."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf

from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.crd_check import CrdCheck
from argocd_image_updater.kube.client import KubeClient
from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater.report.crd_schema import CRD_NAME
from argocd_image_updater.report.installed_crd import InstalledCrd
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.kube_schema import (
    IMAGEUPDATER_CRD,
    ORIGINAL_IMAGEUPDATER_CRD,
    shipped_crd_types,
)
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 5, 1, tzinfo=UTC)
STATUS = "imageupdaters/status"
METRIC = "argocd_image_updater_crd_missing_fields"


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logs() -> Iterator[list[logging.LogRecord]]:
    logger = logging.getLogger("argocd_image_updater")
    handler, level = _Records(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler.records
    logger.removeHandler(handler)
    logger.setLevel(level)


def warnings(records: list[logging.LogRecord], text: str) -> list[str]:
    found = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    return [m for m in found if text in m]


@pytest.fixture(params=["original", "ours"])
async def kube(request: pytest.FixtureRequest) -> AsyncIterator[KubeApiServer]:
    crd = ORIGINAL_IMAGEUPDATER_CRD if request.param == "original" else IMAGEUPDATER_CRD
    async with KubeApiServer(namespaces=(NS,), imageupdater_crd=crd) as server:
        yield server


@pytest.fixture
async def original() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(
        namespaces=(NS,), imageupdater_crd=ORIGINAL_IMAGEUPDATER_CRD
    ) as server:
        yield server


def is_original(kube: KubeApiServer) -> bool:
    crd = kube.store.get("customresourcedefinitions", None, CRD_NAME)
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    return "shipments" not in status["properties"]


async def make_controller(
    kube: KubeApiServer, registry: RegistryServer, tmp_path: Path
) -> tuple[Any, list[Any]]:
    settings = resolve(
        "run",
        {
            "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
            "registries_conf_path": str(registries_conf(tmp_path, registry)),
            "git_cache_dir": str(tmp_path / "clones"),
            "git_commit_message_path": str(tmp_path / "no-template"),
            "once": True,
        },
        env={},
    )
    return await build_controller(settings)


async def close_all(closers: list[Any]) -> None:
    for closer in reversed(closers):
        await close_resource(closer)


async def seed_fleet(
    kube: KubeApiServer, registry: RegistryServer, repo: str, apps: int, updaters: int
) -> str:
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(["1.0.0", "1.0.1"]):
            await pusher.push_image(repo, tag, created=START + timedelta(days=i))
    image = f"{registry.host}/{repo}"
    for i in range(apps):
        kube.store.put(
            objects.application(
                f"app-{i}-u{i % max(updaters, 1)}",
                NS,
                source_type="Kustomize",
                images=[f"{image}:1.0.0"],
                kustomize_images=[f"{image}:1.0.0"],
            )
        )
    for u in range(updaters):
        kube.store.put(updater(f"team-{u}", f"app-*-u{u}", image))
    return image


def updater(name: str, pattern: str, image: str, **spec: Any) -> dict[str, Any]:
    body = {
        "applicationRefs": [
            {"namePattern": pattern, "images": [{"alias": "web", "imageName": image}]}
        ]
    } | spec
    return objects.image_updater(name, NS, body)


def applied(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as ``kubectl apply`` creates it: with its last-applied copy."""
    copy = json.loads(json.dumps(obj))
    copy["metadata"].setdefault("annotations", {})[
        "kubectl.kubernetes.io/last-applied-configuration"
    ] = json.dumps(obj, separators=(",", ":"))
    return copy


def ready(kube: KubeApiServer, name: str) -> dict[str, Any]:
    status = kube.store.get("imageupdaters", NS, name)["status"]
    [condition] = [c for c in status["conditions"] if c["type"] == "Ready"]
    return dict(condition)


def metric(field: str) -> float | None:
    return REGISTRY.get_sample_value(METRIC, {"field": field})


async def test_a_steady_cycle_writes_no_status(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    logs: list[logging.LogRecord],
) -> None:
    await seed_fleet(kube, registry, repo, apps=40, updaters=8)
    controller, closers = await make_controller(kube, registry, tmp_path)
    try:
        assert (await controller.cycle()).images_updated == 40
        assert kube.request_count("patch", STATUS) >= 8
        stored = kube.store.get("imageupdaters", NS, "team-0")["status"]
        assert ("shipments" in stored) is not is_original(kube)
        await controller.cycle()  # the Applications now hold the new tag
        before = kube.request_count("patch", STATUS)
        for _ in range(3):
            await controller.cycle()
        assert kube.request_count("patch", STATUS) == before
        if is_original(kube):
            [warning] = warnings(logs, "the installed ImageUpdater CRD")
            assert "status.shipments" in warning and "spec.holds" in warning
            assert "spec.notifications" in warning and "spec.shipTimeout" in warning
            assert "spec.commonUpdateSettings.minAge" in warning
            assert "kubectl apply --server-side" in warning
            condition = ready(kube, "team-0")
            assert condition["status"] == "True" and condition["reason"] == "CRDOutdated"
            assert "status.shipments" in condition["message"]
            assert metric("status.shipments") == 1.0 and metric("spec.holds") == 1.0
        else:
            assert warnings(logs, "the installed ImageUpdater CRD") == []
            assert ready(kube, "team-0")["reason"] == "ReconcileSucceeded"
            assert metric("status.shipments") is None
    finally:
        await close_all(closers)


async def test_an_image_updater_using_holds_reports_the_pruned_field(
    original: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    image = await seed_fleet(original, registry, repo, apps=2, updaters=0)
    hold = [{"alias": "web", "reason": "release freeze"}]
    original.store.put(applied(updater("frozen", "app-0-*", image, holds=hold)))
    original.store.put(applied(updater("plain", "app-1-*", image)))
    stored = original.store.get("imageupdaters", NS, "frozen")
    assert "holds" not in stored["spec"]  # the server dropped it: the hold is lost
    controller, closers = await make_controller(original, registry, tmp_path)
    try:
        await controller.cycle()
        await controller.cycle()  # the Applications now hold the new tag
        condition = ready(original, "frozen")
        assert condition["status"] == "False" and condition["reason"] == "CRDOutdated"
        assert "field holds is not in the installed CRD" in condition["message"]
        assert "cannot be read from the object" in condition["message"]
        other = ready(original, "plain")
        assert other["status"] == "True" and other["reason"] == "CRDOutdated"
        assert "field holds" not in other["message"]
        before = original.request_count("patch", STATUS)
        await controller.cycle()
        await controller.cycle()
        assert ready(original, "frozen") == condition
        assert original.request_count("patch", STATUS) == before
    finally:
        await close_all(closers)


async def test_without_rbac_for_crds_status_writes_teach_what_is_pruned(
    original: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    logs: list[logging.LogRecord],
) -> None:
    original.fail_next(10_000, verb="get", resource="customresourcedefinitions", status=403)
    await seed_fleet(original, registry, repo, apps=4, updaters=2)
    controller, closers = await make_controller(original, registry, tmp_path)
    try:
        await controller.cycle()
        await controller.cycle()
        before = original.request_count("patch", STATUS)
        for _ in range(3):
            await controller.cycle()
        assert original.request_count("patch", STATUS) == before
        assert len(warnings(logs, "cannot read the ImageUpdater CRD")) == 1
        [warning] = warnings(logs, "the installed ImageUpdater CRD")
        assert "status.shipments" in warning and "spec." not in warning
        assert ready(original, "team-0")["reason"] == "CRDOutdated"
    finally:
        await close_all(closers)


async def test_a_changed_crd_is_read_again(original: KubeApiServer, tmp_path: Path) -> None:
    config = original.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)
    crd = InstalledCrd()
    async with await KubeClient.connect(kubeconfig=str(config)) as client:
        check = CrdCheck(client, crd)
        await check.check()
        assert "status.shipments" in crd.missing and "spec.holds" in crd.missing
        assert metric("status.shipments") == 1.0
        await check.check()  # the same resourceVersion: nothing changes
        assert "status.shipments" in crd.missing

        upgraded = original.store.get("customresourcedefinitions", None, CRD_NAME)
        upgraded["spec"] = json.loads(json.dumps(shipped_crd_types()[1].definition))["spec"]
        original.store.put(upgraded)
        await check.check()
        assert crd.missing == ()
        assert metric("status.shipments") is None
