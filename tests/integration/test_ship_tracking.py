"""Confirmation that a change shipped, end to end: the controller writes (argocd or git method),
the test moves the Application through Argo CD's sync and health states in the Kubernetes API
fake, and later cycles report ``ImageShipped`` (event, status times, time-to-live metric) or,
past ``spec.shipTimeout``, a Warning ``ImageNotShipped`` carrying the Application's message."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf

from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater.writeback.git import GitCredentialsResolver, RepoCache, RevisionFetcher
from argocd_image_updater.writeback.git.objects import absent_objects
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.git_servers import bare_repo, branch_commit, git
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.receivers import NotificationReceiver
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 5, 1, tzinfo=UTC)
METRIC = "argocd_image_updater_time_to_live_seconds_count"
NOT_SHIPPED = "argocd_image_updater_images_not_shipped_total"


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


async def push_tags(registry: RegistryServer, repo: str, tags: list[str], day: int = 0) -> None:
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(tags):
            await pusher.push_image(repo, tag, created=START + timedelta(days=day + i))


async def make_controller(
    kube: KubeApiServer, registry: RegistryServer, tmp_path: Path, **flags: Any
) -> tuple[Any, list[Any]]:
    settings = resolve(
        "run",
        {
            "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
            "registries_conf_path": str(registries_conf(tmp_path, registry)),
            "git_cache_dir": str(tmp_path / "clones"),
            "git_commit_message_path": str(tmp_path / "no-template"),
            "once": True,
        }
        | flags,
        env={},
    )
    return await build_controller(settings)


async def close_all(closers: list[Any]) -> None:
    for closer in reversed(closers):
        await close_resource(closer)


def set_app_status(
    kube: KubeApiServer,
    name: str,
    *,
    sync: str,
    health: str,
    images: list[str],
    revision: str = "",
    health_message: str = "",
) -> None:
    obj = copy.deepcopy(kube.store.get("applications", NS, name))
    status = obj.setdefault("status", {})
    status["sync"] = {**status.get("sync", {}), "status": sync}
    if revision:
        status["sync"]["revision"] = revision
    status["health"] = {"status": health, **({"message": health_message} if health_message else {})}
    status["summary"] = {"images": images}
    kube.store.put(obj)


def events(kube: KubeApiServer, reason: str) -> list[dict[str, Any]]:
    return [e for e in kube.store.list("events", NS) if e.get("reason") == reason]


def shipments(kube: KubeApiServer, updater: str) -> list[dict[str, Any]]:
    return list(kube.store.get("imageupdaters", NS, updater)["status"].get("shipments", []))


def observed(method: str) -> float:
    return REGISTRY.get_sample_value(METRIC, {"method": method}) or 0.0


def kustomize_app(name: str, image: str, tag: str, **extra: Any) -> dict[str, Any]:
    return objects.application(
        name,
        NS,
        source_type="Kustomize",
        images=[f"{image}:{tag}"],
        kustomize_images=[f"{image}:{tag}"],
        **extra,
    )


def updater(name: str, pattern: str, image: str, **spec: Any) -> dict[str, Any]:
    return objects.image_updater(
        name,
        NS,
        {
            "applicationRefs": [
                {"namePattern": pattern, "images": [{"alias": "web", "imageName": image}]}
            ]
        }
        | spec,
    )


async def shop(kube: KubeApiServer, registry: RegistryServer, repo: str, **spec: Any) -> str:
    """Application ``shop`` at 1.0.0 of ``repo`` (1.0.0 and 1.0.1 pushed), its ImageUpdater with
    ``spec``; the image."""
    await push_tags(registry, repo, ["1.0.0", "1.0.1"])
    image = f"{registry.host}/{repo}"
    kube.store.put(kustomize_app("shop", image, "1.0.0"))
    kube.store.put(updater("shop", "shop", image, **spec))
    return image


async def test_argocd_method_change_is_followed_until_it_is_live(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    image = await shop(kube, registry, repo)
    before = observed("argocd")
    controller, closers = await make_controller(kube, registry, tmp_path)
    try:
        assert (await controller.cycle()).images_updated == 1
        [entry] = shipments(kube, "shop")
        assert entry["state"] == "Written" and entry["newVersion"] == "1.0.1"
        assert "syncedAt" not in entry

        # Argo CD has the new parameter and reports Synced, but still runs the old image.
        await controller.cycle()
        [entry] = shipments(kube, "shop")
        assert entry["state"] == "Synced" and "healthyAt" not in entry
        assert events(kube, "ImageShipped") == [] and observed("argocd") == before

        set_app_status(kube, "shop", sync="Synced", health="Healthy", images=[f"{image}:1.0.1"])
        await controller.cycle()
        [entry] = shipments(kube, "shop")
        assert entry["state"] == "Shipped"
        assert entry["writtenAt"] <= entry["syncedAt"] <= entry["healthyAt"]
        [event] = events(kube, "ImageShipped")
        assert event["type"] == "Normal" and event["involvedObject"]["kind"] == "Application"
        assert event["involvedObject"]["name"] == "shop"
        assert f"image 'web' {image}:1.0.1 is live after" in event["message"]
        assert observed("argocd") == before + 1

        await controller.cycle()  # reported once
        assert len(events(kube, "ImageShipped")) == 1 and observed("argocd") == before + 1
    finally:
        await close_all(closers)


async def test_change_not_live_after_ship_timeout_is_a_warning_with_the_apps_message(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    image = await shop(kube, registry, repo, shipTimeout="1ms")
    not_shipped = REGISTRY.get_sample_value(NOT_SHIPPED, {"method": "argocd"}) or 0.0
    controller, closers = await make_controller(kube, registry, tmp_path)
    try:
        assert (await controller.cycle()).images_updated == 1
        set_app_status(
            kube,
            "shop",
            sync="Synced",
            health="Degraded",
            images=[f"{image}:1.0.0"],
            health_message="Back-off pulling image",
        )
        await controller.cycle()
    finally:
        await close_all(closers)
    [warning] = events(kube, "ImageNotShipped")
    assert warning["type"] == "Warning" and warning["involvedObject"]["name"] == "shop"
    assert "health Degraded" in warning["message"]
    assert "health message: Back-off pulling image" in warning["message"]
    assert events(kube, "ImageShipped") == []
    [entry] = shipments(kube, "shop")
    assert entry["state"] == "NotShipped" and "Back-off pulling image" in entry["message"]
    assert REGISTRY.get_sample_value(NOT_SHIPPED, {"method": "argocd"}) == not_shipped + 1


async def test_a_newer_write_replaces_the_change_followed(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    image = await shop(kube, registry, repo)
    controller, closers = await make_controller(kube, registry, tmp_path)
    try:
        assert (await controller.cycle()).images_updated == 1
        await push_tags(registry, repo, ["1.0.2"], day=5)
        assert (await controller.cycle()).images_updated == 1
        [entry] = shipments(kube, "shop")
        assert entry["newVersion"] == "1.0.2" and entry["state"] == "Written"
        # 1.0.1 going live no longer counts: the change followed is 1.0.2.
        set_app_status(kube, "shop", sync="Synced", health="Healthy", images=[f"{image}:1.0.1"])
        await controller.cycle()
        assert events(kube, "ImageShipped") == []
        set_app_status(kube, "shop", sync="Synced", health="Healthy", images=[f"{image}:1.0.2"])
        await controller.cycle()
    finally:
        await close_all(closers)
    [event] = events(kube, "ImageShipped")
    assert f"{image}:1.0.2 is live" in event["message"]
    [entry] = shipments(kube, "shop")
    assert entry["newVersion"] == "1.0.2" and entry["state"] == "Shipped"


async def test_git_method_needs_a_synced_revision_containing_the_pushed_commit(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    web, api = repo, f"{repo}-api"
    await push_tags(registry, web, ["1.0.0", "1.0.1"])
    await push_tags(registry, api, ["1.0.0"])
    image_web, image_api = f"{registry.host}/{web}", f"{registry.host}/{api}"
    kustomization = (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "images:\n- name: {image}\n  newTag: 1.0.0\n"
    )
    remote = bare_repo(
        tmp_path / "deploy.git",
        files={
            "web/kustomization.yaml": kustomization.format(image=image_web),
            "api/kustomization.yaml": kustomization.format(image=image_api),
        },
    )
    initial = branch_commit(remote, "main")
    assert initial is not None
    for name, image in (("web", image_web), ("api", image_api)):
        kube.store.put(
            objects.application(
                name,
                NS,
                images=[f"{image}:1.0.0"],
                repo_url=f"file://{remote}",
                path=name,
                target_revision="main",
            )
        )
        kube.store.put(
            updater(
                name,
                name,
                image,
                writeBackConfig={
                    "method": "git",
                    "gitConfig": {"writeBackTarget": "kustomization"},
                },
            )
        )
    before = observed("git")
    controller, closers = await make_controller(kube, registry, tmp_path)
    try:
        assert (await controller.cycle()).images_updated == 1  # web: commit C
        pushed = branch_commit(remote, "main")
        assert pushed is not None and pushed != initial

        # Synced and running the new image, but at the initial commit: not shipped.
        set_app_status(
            kube,
            "web",
            sync="Synced",
            health="Healthy",
            images=[f"{image_web}:1.0.1"],
            revision=initial,
        )
        await push_tags(registry, api, ["1.0.1"], day=3)
        assert (await controller.cycle()).images_updated == 1  # api: commit D on top of C
        later = branch_commit(remote, "main")
        assert later is not None and later != pushed
        assert events(kube, "ImageShipped") == []
        assert next(e for e in shipments(kube, "web"))["state"] == "Written"

        # Synced at D, which contains C (checked in the cached clone): shipped.
        set_app_status(
            kube,
            "web",
            sync="Synced",
            health="Healthy",
            images=[f"{image_web}:1.0.1"],
            revision=later,
        )
        await controller.cycle()
    finally:
        await close_all(closers)
    [event] = events(kube, "ImageShipped")
    assert event["involvedObject"]["name"] == "web"
    [entry] = shipments(kube, "web")
    assert entry["state"] == "Shipped" and entry["newVersion"] == "1.0.1"
    assert observed("git") == before + 1
    [api_entry] = shipments(kube, "api")
    assert api_entry["state"] == "Written"


async def test_a_shipped_change_is_a_shipped_notification(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.0.1"])
    image = f"{registry.host}/{repo}"
    kube.store.put(kustomize_app("shop", image, "1.0.0"))
    async with NotificationReceiver() as receiver:
        kube.store.put(objects.secret("hooks", NS, {"url": receiver.url, "key": "signing"}))
        target = {
            "name": "audit",
            "type": "webhook",
            "urlSecret": {"secretName": "hooks", "key": "url"},
            "signingSecret": {"secretName": "hooks", "key": "key"},
            "on": ["shipped"],
        }
        kube.store.put(updater("shop", "shop", image, notifications={"targets": [target]}))
        controller, closers = await make_controller(kube, registry, tmp_path)
        notifier = controller.reporter.notifier
        try:
            assert (await controller.cycle()).images_updated == 1
            set_app_status(kube, "shop", sync="Synced", health="Healthy", images=[f"{image}:1.0.1"])
            await controller.cycle()
            await asyncio.wait_for(notifier.idle(), 30)
        finally:
            await close_all(closers)
        [request] = receiver.requests  # "updated" is not asked for
    [event] = request.json()["events"]
    assert (event["event"], event["application"], event["alias"]) == (
        "shipped",
        f"{NS}/shop",
        "web",
    )
    assert (event["image"], event["to"]) == (image, "1.0.1")
    assert "is live after" in event["message"]


async def test_ancestry_is_unknown_without_a_cached_clone(tmp_path: Path) -> None:
    cache = RepoCache(tmp_path / "clones")
    commit, other = "a" * 40, "b" * 40
    assert await cache.contains_commit("file:///nowhere.git", commit, commit) is True
    assert await cache.contains_commit("file:///nowhere.git", commit, other) is None


def merge_base_runs() -> float:
    return (
        REGISTRY.get_sample_value(
            "argocd_image_updater_git_operations_total",
            {"operation": "merge-base", "result": "success"},
        )
        or 0.0
    ) + (
        REGISTRY.get_sample_value(
            "argocd_image_updater_git_operations_total",
            {"operation": "merge-base", "result": "error"},
        )
        or 0.0
    )


async def test_ancestry_is_asked_of_git_once_per_commit_pair(tmp_path: Path) -> None:
    remote = bare_repo(tmp_path / "deploy.git", files={"a.yaml": "a: 1\n"})
    first = branch_commit(remote, "main")
    work = tmp_path / "work"
    git("clone", "-q", str(remote), str(work), home=tmp_path)
    (work / "a.yaml").write_text("a: 2\n")
    git("commit", "-qam", "second", cwd=work, home=tmp_path)
    git("push", "-q", "origin", "HEAD:main", cwd=work, home=tmp_path)
    second = branch_commit(remote, "main")
    assert first is not None and second is not None and first != second
    cache = RepoCache(tmp_path / "clones")
    url = f"file://{remote}"
    async with cache.checkout(url, branch="main") as clone:
        # The cache fetches shallow; this clone gets the full history, as after our own commits.
        git("fetch", "-q", "--unshallow", "origin", cwd=clone.path, home=tmp_path)
    before = merge_base_runs()
    answers = await asyncio.gather(*(cache.contains_commit(url, first, second) for _ in range(20)))
    assert answers == [True] * 20
    assert await cache.contains_commit(url, second, first) is False
    assert await cache.contains_commit(url, second, first) is False
    assert merge_base_runs() == before + 2


async def test_a_shallow_clone_cannot_say_not_an_ancestor(tmp_path: Path) -> None:
    remote = bare_repo(tmp_path / "deploy.git", files={"a.yaml": "a: 1\n"})
    first = branch_commit(remote, "main")
    work = tmp_path / "work"
    git("clone", "-q", str(remote), str(work), home=tmp_path)
    (work / "a.yaml").write_text("a: 2\n")
    git("commit", "-qam", "second", cwd=work, home=tmp_path)
    git("push", "-q", "origin", "HEAD:main", cwd=work, home=tmp_path)
    second = branch_commit(remote, "main")
    assert first is not None and second is not None
    cache = RepoCache(tmp_path / "clones")
    url = f"file://{remote}"
    async with cache.checkout(url, branch="main") as clone:
        assert (clone.path / ".git" / "shallow").is_file()
    assert await cache.contains_commit(url, first, second) is None


def git_runs(operation: str) -> float:
    return sum(
        REGISTRY.get_sample_value(
            "argocd_image_updater_git_operations_total", {"operation": operation, "result": result}
        )
        or 0.0
        for result in ("success", "error")
    )


def test_absent_objects_agree_with_git(tmp_path: Path) -> None:
    """The object store read from its files says absent exactly what ``git cat-file`` says
    missing: loose objects, objects in pack indexes of version 2 and 1, unknown names."""
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(repo), home=tmp_path)
    for n in range(6):
        (repo / f"f{n}.yaml").write_text(f"n: {n}\n")
        git("add", ".", cwd=repo, home=tmp_path)
        git("commit", "-qm", f"c{n}", cwd=repo, home=tmp_path)
        if n == 2:
            git("repack", "-q", "-d", cwd=repo, home=tmp_path)  # the first three packed
        if n == 4:
            git("-c", "pack.indexVersion=1", "repack", "-q", cwd=repo, home=tmp_path)
    listed = git("cat-file", "--batch-all-objects", "--batch-check=%(objectname)", cwd=repo,
                 home=tmp_path).split()  # fmt: skip
    assert len(listed) >= 18
    assert list((repo / ".git" / "objects" / "pack").glob("*.idx"))
    unknown = ["0" * 40, "f" * 40, listed[0][:-1] + ("0" if listed[0][-1] != "0" else "1")]
    unknown = [u for u in unknown if u not in listed]
    assert absent_objects(repo / ".git", [*listed, *unknown]) == set(unknown)
    # Not readable this way: other hashes, alternates.
    assert absent_objects(repo / ".git", ["a" * 64]) is None
    (repo / ".git" / "objects" / "info" / "alternates").write_text("/elsewhere/objects\n")
    assert absent_objects(repo / ".git", unknown) is None


async def test_unknown_revisions_cost_no_git_process(tmp_path: Path) -> None:
    """Revisions the clone does not have are told from its files: no ``cat-file`` nor
    ``merge-base``; known pairs still go to ``merge-base``, once each."""
    remote = bare_repo(tmp_path / "deploy.git", files={"a.yaml": "a: 1\n"})
    first = branch_commit(remote, "main")
    work = tmp_path / "work"
    git("clone", "-q", str(remote), str(work), home=tmp_path)
    (work / "a.yaml").write_text("a: 2\n")
    git("commit", "-qam", "second", cwd=work, home=tmp_path)
    git("push", "-q", "origin", "HEAD:main", cwd=work, home=tmp_path)
    second = branch_commit(remote, "main")
    assert first is not None and second is not None
    cache = RepoCache(tmp_path / "clones")
    url = f"file://{remote}"
    async with cache.checkout(url, branch="main") as clone:
        git("fetch", "-q", "--unshallow", "origin", cwd=clone.path, home=tmp_path)
    strangers = [f"{n:040x}" for n in range(1, 101)]
    before = git_runs("cat-file"), git_runs("merge-base")
    answers = await cache.contains_commits(url, [(second, s) for s in strangers])
    assert set(answers.values()) == {None}
    assert await cache.contains_commit(url, first, strangers[0]) is None
    assert (git_runs("cat-file"), git_runs("merge-base")) == before
    both = await cache.contains_commits(url, [(first, second), (second, first), *answers])
    assert both[(first, second)] is True and both[(second, first)] is False
    assert (git_runs("cat-file"), git_runs("merge-base")) == (before[0], before[1] + 2)


@pytest.mark.parametrize("store", ["configmap", "state-dir"])
async def test_a_restart_goes_on_following_the_changes_written_before(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, store: str
) -> None:
    image = await shop(kube, registry, repo)
    flags = {"state_dir": str(tmp_path / "state")} if store == "state-dir" else {}

    async def cycle() -> None:  # a new controller process each time
        controller, closers = await make_controller(kube, registry, tmp_path, **flags)
        try:
            await controller.cycle()
        finally:
            await close_all(closers)

    await cycle()
    [entry] = shipments(kube, "shop")
    assert entry["state"] == "Written"
    await cycle()  # Argo CD holds the new parameter: synced (after a restart)
    [entry] = shipments(kube, "shop")
    assert entry["state"] == "Synced"
    set_app_status(kube, "shop", sync="Synced", health="Healthy", images=[f"{image}:1.0.1"])
    await cycle()
    [entry] = shipments(kube, "shop")
    assert entry["state"] == "Shipped", entry
    [event] = events(kube, "ImageShipped")
    assert f"image 'web' {image}:1.0.1 is live after" in event["message"]


async def test_a_synced_revision_the_new_clone_lacks_is_fetched_once(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    """After a restart with an empty clone cache, Argo CD syncs a commit pushed on top of ours:
    the revision is fetched (once) and the change is shipped, not left to the timeout."""
    await push_tags(registry, repo, ["1.0.0", "1.0.1"])
    image = f"{registry.host}/{repo}"
    kustomization = (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "images:\n- name: {image}\n  newTag: 1.0.0\n"
    )
    remote = bare_repo(
        tmp_path / "deploy.git", files={"web/kustomization.yaml": kustomization.format(image=image)}
    )
    kube.store.put(
        objects.application(
            "web",
            NS,
            images=[f"{image}:1.0.0"],
            repo_url=f"file://{remote}",
            path="web",
            target_revision="main",
        )
    )
    writeback = {"method": "git", "gitConfig": {"writeBackTarget": "kustomization"}}
    kube.store.put(updater("web", "web", image, writeBackConfig=writeback))

    async def cycle(clones: str) -> None:
        controller, closers = await make_controller(
            kube, registry, tmp_path, git_cache_dir=str(tmp_path / clones)
        )
        try:
            await controller.cycle()
        finally:
            await close_all(closers)

    await cycle("clones-1")
    ours = branch_commit(remote, "main")
    assert ours is not None
    work = tmp_path / "elsewhere"
    git("clone", "-q", str(remote), str(work), home=tmp_path)
    (work / "README.md").write_text("docs\n")
    git("add", "-A", cwd=work, home=tmp_path)
    git("commit", "-qm", "docs", cwd=work, home=tmp_path)
    git("push", "-q", "origin", "HEAD:main", cwd=work, home=tmp_path)
    later = branch_commit(remote, "main")
    assert later is not None and later != ours
    set_app_status(
        kube, "web", sync="Synced", health="Healthy", images=[f"{image}:1.0.1"], revision=later
    )
    fetches = git_runs("fetch")
    await cycle("clones-2")  # a restart: a new process, an empty clone cache
    [entry] = shipments(kube, "web")
    assert entry["state"] == "Shipped", entry
    assert len(events(kube, "ImageShipped")) == 1
    assert git_runs("fetch") == fetches + 1


async def test_a_revision_is_fetched_once_and_then_answers_from_the_clone(
    tmp_path: Path,
) -> None:
    remote = bare_repo(tmp_path / "deploy.git", files={"a.yaml": "a: 1\n"})
    first = branch_commit(remote, "main")
    work = tmp_path / "work"
    git("clone", "-q", str(remote), str(work), home=tmp_path)
    for n in (2, 3):
        (work / "a.yaml").write_text(f"a: {n}\n")
        git("commit", "-qam", f"change {n}", cwd=work, home=tmp_path)
    git("push", "-q", "origin", "HEAD:main", cwd=work, home=tmp_path)
    last = branch_commit(remote, "main")
    assert first is not None and last is not None
    cache = RepoCache(tmp_path / "clones")
    url = f"file://{remote}"
    assert await cache.contains_commit(url, first, last) is None  # no clone at all
    fetcher = RevisionFetcher(cache, GitCredentialsResolver(None, NS))
    since = datetime.now(UTC) - timedelta(days=1)
    before = git_runs("fetch")
    for _ in range(2):
        await fetcher.fetch_revisions(url, [last], since, "repocreds", NS)
    assert git_runs("fetch") == before + 1
    assert await cache.contains_commit(url, first, last) is True


def stored_state(kube: KubeApiServer) -> dict[str, str]:
    return dict(kube.store.get("configmaps", NS, "argocd-image-updater-state")["data"])


def state_writes(kube: KubeApiServer) -> int:
    return kube.request_count("create", "configmaps") + kube.request_count("update", "configmaps")


async def test_the_writing_cycle_stores_its_writes_and_the_change_followed_in_one_save(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await shop(kube, registry, repo)
    controller, closers = await make_controller(kube, registry, tmp_path)
    try:
        before = state_writes(kube)
        assert (await controller.cycle()).images_updated == 1
        assert state_writes(kube) == before + 1
        data = stored_state(kube)
        assert f"{NS}/shop" in data["writes.json"] and f"{NS}/shop" in data["shipments.json"]
    finally:
        await close_all(closers)


async def test_a_change_followed_whose_cycle_could_not_save_is_stored_by_the_next(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    """The writing cycle's save fails: the change followed, handed to that cycle's record, is
    set again in the next cycle's record (though it did not change since) and stored then."""
    image = await shop(kube, registry, repo)
    controller, closers = await make_controller(kube, registry, tmp_path)
    try:
        kube.fail_next(10, verb="create", resource="configmaps", status=403)
        assert (await controller.cycle()).images_updated == 1
        names = [cm["metadata"]["name"] for cm in kube.store.list("configmaps", NS)]
        assert "argocd-image-updater-state" not in names  # nothing stored
        kube.clear_faults()
        # Argo CD has not synced: the change followed is as it was.
        set_app_status(kube, "shop", sync="OutOfSync", health="Healthy", images=[f"{image}:1.0.0"])
        await controller.cycle()
        [entry] = shipments(kube, "shop")
        assert entry["state"] == "Written"
        assert f"{NS}/shop" in stored_state(kube)["shipments.json"]
    finally:
        await close_all(closers)
