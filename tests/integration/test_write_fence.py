"""Every writer checks the write fence right before it sends: with the fence closed (this
replica no longer leads) an Application patch, a status write, an event, a state ConfigMap save
(also the ship tracker's store of the changes it follows) and a pull-request call are refused
and nothing reaches the API fakes; reads still go through.
(The git push is refused likewise: tests/integration/test_fencing.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from argocd_image_updater.controller.leading import NOT_LEADER
from argocd_image_updater.controller.state_store import ConfigMapStateStore
from argocd_image_updater.controller.stores import KubeStatusStore
from argocd_image_updater.kits.fence import WriteFenced, fenced_context
from argocd_image_updater.kube.client import KubeClient
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.pipeline.ports import StoreError
from argocd_image_updater.pipeline.records import AppOutcome, Collected, CRState, CycleResult
from argocd_image_updater.plan.model import AppPlan, ImageChange, ImageResult, Outcome
from argocd_image_updater.report.events import EventRecorder
from argocd_image_updater.report.ship_tracker import ShipTracker
from argocd_image_updater.report.status import StatusWriter
from argocd_image_updater.writeback.argocd import KubeAppWriter
from argocd_image_updater.writeback.scm import client_for, ensure_pull_request, parse_repo_url
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.scm_gitea import GiteaFake

NS = "argocd"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
T = TypeVar("T")


async def fenced(work: Coroutine[Any, Any, T], open_: bool = False) -> T:
    """Run ``work`` under a fence that is closed (or open)."""
    return await asyncio.create_task(work, context=fenced_context(lambda: open_, NOT_LEADER))


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


@pytest.fixture
async def client(kube: KubeApiServer, tmp_path: Path) -> AsyncIterator[KubeClient]:
    config = kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)
    async with await KubeClient.connect(str(config)) as connected:
        yield connected


def web_plan() -> AppPlan:
    """A plan moving ``web`` to 1.1.0 (what it edits does not matter: nothing is sent)."""
    image = ImageRef.parse("nginx:~1")
    change = ImageChange("web", image, "1.0.0", "1.1.0", "")
    result = ImageResult("web", "nginx:~1", "nginx:1.0.0", "nginx:1.1.0", Outcome.UPDATED, "", "")
    return AppPlan.build(
        app_name="web",
        app_namespace=NS,
        source_path=("spec", "source"),
        source_type="Kustomize",
        results=[result],
        changes=[change],
        managed=[],
    )


async def test_an_application_patch_is_refused(kube: KubeApiServer, client: KubeClient) -> None:
    kube.store.put(objects.application("web", NS, kustomize_images=["nginx:1.0.0"]))
    app = Application.from_object(kube.store.get("applications", NS, "web"))
    with pytest.raises(WriteFenced, match=f"^not patching Application {NS}/web: {NOT_LEADER}$"):
        await fenced(KubeAppWriter(client).write(app, web_plan()))
    assert kube.request_count("patch", "applications") == 0


async def test_a_status_write_and_an_event_are_refused(
    kube: KubeApiServer, client: KubeClient
) -> None:
    kube.store.put(objects.image_updater("web", NS))
    raw = kube.store.get("imageupdaters", NS, "web")
    cr = CRState(NS, "web", 1, str(raw["metadata"]["resourceVersion"]), raw=raw)
    status = {"lastCheckedAt": "2026-03-01T12:00:00Z", "applicationsMatched": 1}
    assert not await fenced(StatusWriter(KubeStatusStore(client)).write(cr, status))
    assert not await fenced(EventRecorder(client, enabled=True).cr_failed(cr, "bad field"))
    assert kube.request_count("patch", "imageupdaters/status") == 0
    assert kube.request_count("create", "events") == 0
    # With the fence open both go through.
    assert await fenced(StatusWriter(KubeStatusStore(client)).write(cr, status), open_=True)
    assert await fenced(EventRecorder(client, enabled=True).cr_failed(cr, "bad field"), True)
    assert kube.request_count("patch", "imageupdaters/status") == 1
    assert kube.request_count("create", "events") == 1


async def test_a_state_configmap_save_is_refused(kube: KubeApiServer, client: KubeClient) -> None:
    store = ConfigMapStateStore(client, NS)
    state = await fenced(store.load())  # reading is not fenced
    state.record_write(f"{NS}/web", "web", "1.1.0", NOW)
    with pytest.raises(StoreError, match=f"^not writing ConfigMap {NS}/.*: {NOT_LEADER}$"):
        await fenced(store.save(state))
    assert kube.request_count("create", "configmaps") == 0
    assert kube.request_count("update", "configmaps") == 0


async def test_the_ship_trackers_store_of_the_changes_followed_is_refused(
    kube: KubeApiServer, client: KubeClient
) -> None:
    tracker = ShipTracker(state=ConfigMapStateStore(client, NS), clock=lambda: NOW)
    written = CycleResult(apps=[AppOutcome(app=f"{NS}/web", plan=web_plan(), written=True)])
    await fenced(tracker.observe(Collected(), written, dry_run=False))
    assert list(tracker.pending) == [(f"{NS}/web", "web")]  # followed, not stored
    assert kube.request_count("create", "configmaps") == 0
    assert kube.request_count("update", "configmaps") == 0
    # With the fence open the next look stores it.
    await fenced(tracker.observe(Collected(), CycleResult(), dry_run=False), open_=True)
    assert kube.request_count("create", "configmaps") == 1
    stored = await ConfigMapStateStore(client, NS).load()
    assert list(stored.shipments()) == [f"{NS}/web"]


async def test_a_pull_request_call_is_refused() -> None:
    token = "tok-0123456789abcdefFakeToken"
    repo = parse_repo_url("git@gitea.example.com:org/deploy.git")
    async with GiteaFake(tokens=[token], repos=[]) as gitea:
        gitea.add_repo("org/deploy")
        async with client_for("gitea", repo, token, api_url=gitea.api_url) as scm:
            with pytest.raises(WriteFenced, match=f"^not sending Gitea API POST .*: {NOT_LEADER}$"):
                await fenced(
                    ensure_pull_request(scm, repo, "image-updater-a", "main", "build", "", [])
                )
    assert gitea.calls("POST") == []
    assert gitea.calls("GET")  # looking for an open request is a read
