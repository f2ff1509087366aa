"""The watched copy of Applications and ImageUpdaters end to end: the controller as ``run``
builds it, its watches against the Kubernetes API fake over a socket, tags from the real
registry. A steady cycle lists neither kind; changes between cycles are seen; our own writes are
read back before their watch events arrive; a failing or refused watch falls back to listing."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import NS, seed_web_app
from waiting import eventually

from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.controller.sources import collect
from argocd_image_updater.controller.spec_watch import Restarts
from argocd_image_updater.controller.watched_objects import WatchedFleet
from argocd_image_updater.kits.json_copy import json_copy
from argocd_image_updater.observe import log as logging_setup
from argocd_image_updater.observe.health import Health
from argocd_image_updater.pipeline.records import CycleResult
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.registry import RegistryServer

LISTS = (("list", "applications"), ("list", "imageupdaters"))


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS, "team-b")) as server:
        yield server


class Running:
    """A controller built as ``run`` builds it, its watched copy kept; cycles driven by hand."""

    def __init__(self, controller: Controller, closers: list[Any]) -> None:
        self.controller, self.closers = controller, closers
        self.stop = asyncio.Event()
        self.health = Health()
        self.task: asyncio.Task[None] | None = None

    @property
    def watched(self) -> WatchedFleet:
        assert self.controller.watched is not None
        return self.controller.watched

    def start(self) -> None:
        self.task = asyncio.create_task(
            self.watched.run(self.stop, self.health, None, Restarts(base=0.05, cap=0.1))
        )

    async def close(self) -> None:
        self.stop.set()
        if self.task is not None:
            await self.task
        for closer in reversed(self.closers):
            await close_resource(closer)


async def running(kube: KubeApiServer, tmp_path: Path, conf: Path, start: bool = True) -> Running:
    config = kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)
    settings = resolve(
        "run",
        {"kubeconfig": str(config), "registries_conf_path": str(conf), "once": True},
        env={},
    )
    controller, closers = await build_controller(settings)
    run = Running(controller, closers)
    if start:
        run.start()
        await eventually(run.watched.synced, "the watched copies listed")
    return run


def counts(kube: KubeApiServer) -> dict[tuple[str, str], int]:
    return {
        (verb, resource): kube.request_count(verb, resource)
        for verb in ("list", "get", "patch", "watch")
        for resource in ("applications", "imageupdaters", "imageupdaters/status")
    }


def since(kube: KubeApiServer, before: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    now = counts(kube)
    return {key: now[key] - before[key] for key in now if now[key] != before[key]}


def held(result: CycleResult) -> list[str]:
    return [r.message for a in result.apps if a.plan for r in a.plan.results if "held" in r.message]


def kustomize_image(kube: KubeApiServer, name: str) -> str:
    app = kube.store.get("applications", NS, name)
    return str(app["spec"]["source"]["kustomize"]["images"][0])


async def test_a_steady_cycle_lists_nothing_and_reads_its_own_writes_before_their_events(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    image, conf = await seed_web_app(kube, registry, repo, tmp_path, ["1.0.0", "1.0.1"])
    run = await running(kube, tmp_path, conf)
    try:
        # The watch lags from now on: the cycles read their writes from our own answers.
        kube.hold_watch_events()
        before = counts(kube)
        first = await run.controller.cycle()
        assert first.images_updated == 1 and kustomize_image(kube, "web") == f"{image}:1.0.1"
        # Served from the copy: no listing of either kind, even in the first cycle.
        assert not any(since(kube, before).get(key) for key in LISTS)

        before = counts(kube)
        second = await run.controller.cycle()  # the write waits for Argo CD's sync now
        assert second.images_updated == 0 and held(second) == []
        third = await run.controller.cycle()  # steady: nothing to write at all
        assert third.images_updated == 0 and held(third) == []
        # One status write (the first cycle's UpdatesApplied became waiting-for-sync), no
        # conflict re-read, no patch of the Application, nothing listed.
        assert since(kube, before) == {("patch", "imageupdaters/status"): 1}

        kube.release_watch_events()
        version = kube.store.get("imageupdaters", NS, "web")["metadata"]["resourceVersion"]
        [copy] = run.watched.image_updaters.values()
        await eventually(
            lambda: copy._objects[(NS, "web")][0] == int(version), "the watch caught up"
        )
        kept = {id(o): json_copy(o) for c in run.watched.copies for o in c.objects() or ()}
        before = counts(kube)
        steady = await run.controller.cycle()
        assert steady.images_updated == 0 and held(steady) == []
        assert since(kube, before) == {}  # not one request of either kind
        # What the cycle was handed is shared with the copy and was not changed by it.
        for c in run.watched.copies:
            for obj in c.objects() or ():
                assert id(obj) not in kept or kept[id(obj)] == obj
    finally:
        await run.close()


async def test_changes_between_cycles_are_seen_by_the_next_cycle(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    image, conf = await seed_web_app(kube, registry, repo, tmp_path, ["1.0.0", "1.0.1"])
    kube.store.put(objects.application("old", NS, images=["nginx:1.25"]))
    run = await running(kube, tmp_path, conf)
    try:
        await run.controller.cycle()
        cr = kube.store.get("imageupdaters", NS, "web")
        cr["spec"]["applicationRefs"][0]["namePattern"] = "web*"
        kube.store.put(cr)  # a spec change: it now selects web-2 too
        kube.store.put(
            objects.application(
                "web-2", NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
            )
        )
        kube.store.delete("applications", NS, "old")

        def seen() -> bool:
            kept = {
                obj["metadata"]["name"]
                for c in run.watched.applications.values()
                for obj in c.objects() or ()
            }
            [crs] = [c.objects() or [] for c in run.watched.image_updaters.values()]
            return kept == {"web", "web-2"} and crs[0]["spec"] == cr["spec"]

        await eventually(seen, "the copy saw the changes")
        before = counts(kube)
        collected = await collect(
            run.controller.store, run.controller.namespaces, run.controller.legacy
        )
        assert collected.listed == {f"{NS}/web", f"{NS}/web-2"}  # "old" is gone
        result = await run.controller.cycle()
        assert [a.app for a in result.apps if a.written] == [f"{NS}/web-2"]
        assert kustomize_image(kube, "web-2") == f"{image}:1.0.1"
        assert not any(since(kube, before).get(key) for key in LISTS)
    finally:
        await run.close()


async def test_a_failing_watch_falls_back_to_listing_and_reports_to_healthz(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    image, conf = await seed_web_app(kube, registry, repo, tmp_path, ["1.0.0", "1.0.1"])
    kube.fail_next(1000, verb="watch", resource="applications", status=400)
    run = await running(kube, tmp_path, conf, start=False)
    try:
        run.start()
        [copy] = run.watched.applications.values()
        name = f"watch of {copy.where}"
        await eventually(lambda: name in run.health.failing, "/healthz reports the watch")
        # Relisted after each failure and current only in between: the cycles list.
        result = await run.controller.cycle()
        assert result.images_updated == 1 and kustomize_image(kube, "web") == f"{image}:1.0.1"
        kube.clear_faults()
        # Listed, then the watch accepted: /healthz is told.
        await eventually(lambda: name not in run.health.failing, "the watch works again")
        await eventually(lambda: copy.objects() is not None, "the copy is current")
        kube.store.put(objects.application("web-3", NS, images=["nginx:1.25"]))
        await eventually(lambda: len(copy) == 2, "the copy saw web-3")
        before = counts(kube)
        collected = await collect(
            run.controller.store, run.controller.namespaces, run.controller.legacy
        )
        assert collected.listed == {f"{NS}/web", f"{NS}/web-3"}
        assert not any(since(kube, before).get(key) for key in LISTS)
    finally:
        await run.close()


async def test_a_refused_watch_is_said_once_and_every_cycle_lists(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    image, conf = await seed_web_app(kube, registry, repo, tmp_path, ["1.0.0", "1.0.1"])
    kube.fail_next(1000, verb="watch", resource="applications", status=403, message="forbidden")
    out = io.StringIO()
    logging_setup.setup("info", "text", out)
    try:
        run = await running(kube, tmp_path, conf, start=False)
        [copy] = run.watched.applications.values()
        [crs] = run.watched.image_updaters.values()
        try:
            run.start()
            await eventually(lambda: copy.forbidden, "the refusal")
            await eventually(lambda: crs.objects() is not None, "the ImageUpdaters' copy")
            for _ in range(2):
                before = counts(kube)
                result = await run.controller.cycle()
                assert result.errors == 0
                done = since(kube, before)
                assert done.get(("list", "applications")) == 1  # listed by the cycle
                assert ("list", "imageupdaters") not in done  # their watch works
            assert kustomize_image(kube, "web") == f"{image}:1.0.1"
            assert not run.health.failing
        finally:
            await run.close()
    finally:
        logging_setup.setup("info", "text")
    warnings = [line for line in out.getvalue().splitlines() if "cannot watch" in line]
    assert len(warnings) == 1, out.getvalue()[-2000:]
    assert "level=warning" in warnings[0] and "`watch` on applications.argoproj.io" in warnings[0]


async def test_a_spec_change_starts_a_cycle_early_through_the_shared_watch(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    _, conf = await seed_web_app(kube, registry, repo, tmp_path, ["1.0.0", "1.0.1"])
    run = await running(kube, tmp_path, conf, start=False)
    controller = run.controller
    controller.interval = timedelta(hours=1)
    out = io.StringIO()
    logging_setup.setup("info", "text", out)
    stop = asyncio.Event()
    loop = asyncio.create_task(controller.run(stop=stop))
    try:
        await eventually(lambda: controller.cycles == 1, "the first cycle")
        assert controller.watched is not None
        await eventually(controller.watched.synced, "the watched copies listed")
        cr = kube.store.get("imageupdaters", NS, "web")
        cr["spec"]["applicationRefs"][0]["images"][0]["alias"] = "frontend"
        kube.store.put(cr)
        await eventually(lambda: controller.cycles == 2, "an early cycle")
        assert "ImageUpdater spec changed, starting a cycle" in out.getvalue()
        # One watch per kind and scope: the early cycle's trigger shares the copy's.
        assert kube.request_count("watch", "imageupdaters") == 1
        assert kube.request_count("watch", "applications") == 1
    finally:
        stop.set()
        await loop
        logging_setup.setup("info", "text")
        await run.close()
