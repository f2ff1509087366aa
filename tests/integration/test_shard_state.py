"""``run --sharding``: the remembered record in one ConfigMap per shard key, on the Kubernetes API
fake (one front per replica over one store): replicas save their keys without clobbering each
other, a key that moves keeps what was remembered of it, a conflict on one key's ConfigMap reads
and rewrites only that one, the single ConfigMap of an unsharded fleet is taken over, the
``release`` command finds a key's ConfigMap, and a controller run stores its write there."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf
from test_controller_argocd import close_all, make_controller, push_tags

from argocd_image_updater.cli import hold_run
from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.controller.shard_state import ShardedStateStore
from argocd_image_updater.controller.state_cache import StateCache
from argocd_image_updater.controller.state_objects import (
    PER_KEY,
    PER_REPOSITORY,
    REPOSITORY_ANNOTATION,
    SHARD_KEY_ANNOTATION,
    STATE_KIND_LABEL,
    key_store,
    object_name,
    repository_object_name,
    repository_store,
)
from argocd_image_updater.controller.state_store import STATE_CONFIGMAP, ConfigMapStateStore
from argocd_image_updater.kube.client import KubeClient
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.controller_state import ControllerState, WriteRecord, repo_key
from argocd_image_updater.model.update_config import AppUpdateConfig, ImageSpec
from argocd_image_updater.pipeline.records import Collected, CRState
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer, KubeStore
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HOST = "registry.example.com"
BASE = repo_key(HOST, "base/runtime")
FLEET = {f"{NS}/updater-{k}": [f"app-{k}-{n}" for n in range(3)] for k in range(4)}
"""Four ImageUpdaters of three Applications each; every Application runs its own repository
and the shared ``base/runtime``."""


def repo_of(app: str) -> str:
    return repo_key(HOST, f"team/{app}")


def share(keys: Mapping[str, list[str]]) -> Collected:
    """A cycle's selection narrowed to ``keys`` (and their Applications)."""
    collected = Collected(listed={f"{NS}/{app}" for apps in FLEET.values() for app in apps})
    for key, apps in keys.items():
        cr = CRState(NS, key.partition("/")[2], 1, "1")
        collected.crs.append(cr)
        for app in apps:
            view = Application.from_object(objects.application(app, NS, source_type="Helm"))
            images = (
                ImageSpec("web", f"{HOST}/team/{app}"),
                ImageSpec("base", f"{HOST}/base/runtime"),
            )
            collected.configs.append((AppUpdateConfig(app=view, images=images), cr))
    return collected


def of(*keys: str) -> Collected:
    return share({key: FLEET[key] for key in keys})


KEYS = sorted(FLEET)


@pytest.fixture
def store() -> KubeStore:
    return KubeStore(namespaces=(NS,))


@pytest.fixture
async def fronts(
    store: KubeStore, tmp_path: Path
) -> AsyncIterator[list[tuple[KubeApiServer, KubeClient]]]:
    """Two replicas' API fronts over one store, each with its client."""
    async with AsyncExitStack() as stack:
        found = []
        for n in range(2):
            api = await stack.enter_async_context(KubeApiServer(store))
            config = api.write_kubeconfig(tmp_path / f"kubeconfig-{n}", namespace=NS)
            client = await stack.enter_async_context(await KubeClient.connect(str(config)))
            found.append((api, client))
        yield found


def sharded(client: KubeClient) -> ShardedStateStore:
    return ShardedStateStore(client, NS, RegistryConfig())


def stored_writes(store: KubeStore, key: str) -> dict[str, Any]:
    cm = store.get("configmaps", NS, object_name(key))
    return dict(json.loads(cm["data"]["writes.json"]))


def stored_first_seen(store: KubeStore, repo: str) -> dict[str, Any]:
    cm = store.get("configmaps", NS, repository_object_name(repo))
    return dict(json.loads(cm["data"]["first-seen.json"]).get(repo, {}))


async def test_two_replicas_save_their_own_keys_and_never_clobber_each_other(
    store: KubeStore, fronts: list[tuple[KubeApiServer, KubeClient]]
) -> None:
    """Their keys share the base image's repository: each records first-seen tags of it (both
    loaded before either saved), and both are kept, in the repository's one object."""
    one, two = sharded(fronts[0][1]), sharded(fronts[1][1])
    mine, theirs = of(*KEYS[:2]), of(*KEYS[2:])
    with one.scoped(mine):
        first = await one.load()
    with two.scoped(theirs):
        second = await two.load()
    for state, keys, base_tag in ((first, KEYS[:2], "7"), (second, KEYS[2:], "8")):
        for key in keys:
            for app in FLEET[key]:
                state.record_write(f"{NS}/{app}", "web", "1.0.0", NOW)
                state.record_first_seen(repo_of(app), ["1.0.0"], NOW)
        state.record_first_seen(BASE, [base_tag], NOW + timedelta(hours=int(base_tag)))
    with one.scoped(mine):
        await one.save(first)
    with two.scoped(theirs):
        await two.save(second)
    assert second.first_seen(BASE, "7") == NOW + timedelta(hours=7)  # the other's, taken in

    repos = {BASE, *(repo_of(app) for apps in FLEET.values() for app in apps)}
    names = {cm["metadata"]["name"] for cm in store.list("configmaps", NS)}
    # one per key and one per repository, no single ConfigMap
    assert names == {object_name(key) for key in KEYS} | {
        repository_object_name(repo) for repo in repos
    }
    for key in KEYS:
        cm = store.get("configmaps", NS, object_name(key))
        assert cm["metadata"]["labels"][STATE_KIND_LABEL] == PER_KEY
        assert cm["metadata"]["labels"]["app.kubernetes.io/component"] == "state"
        assert cm["metadata"]["annotations"][SHARD_KEY_ANNOTATION] == key
        assert set(stored_writes(store, key)) == {f"{NS}/{app}" for app in FLEET[key]}
        assert json.loads(cm["data"]["first-seen.json"]) == {}  # the repositories' own objects
    for repo in repos:
        cm = store.get("configmaps", NS, repository_object_name(repo))
        assert cm["metadata"]["labels"][STATE_KIND_LABEL] == PER_REPOSITORY
        assert cm["metadata"]["annotations"][REPOSITORY_ANNOTATION] == repo
        assert set(json.loads(cm["data"]["first-seen.json"])) == {repo}
    assert set(stored_first_seen(store, BASE)) == {"7", "8"}  # neither replica's lost
    everything = sharded(fronts[0][1])
    with everything.scoped(of(*KEYS)):
        merged = await everything.load()
    assert all(merged.last_write(f"{NS}/{a}", "web") for apps in FLEET.values() for a in apps)
    assert merged.first_seen(BASE, "7") == NOW + timedelta(hours=7)
    assert merged.first_seen(BASE, "8") == NOW + timedelta(hours=8)


async def test_a_key_that_moves_to_another_replica_keeps_its_rollback_hold_and_ages(
    store: KubeStore, fronts: list[tuple[KubeApiServer, KubeClient]]
) -> None:
    before, after = sharded(fronts[0][1]), sharded(fronts[1][1])
    moving = KEYS[1]
    app = f"{NS}/{FLEET[moving][0]}"
    with before.scoped(of(KEYS[0], moving)):
        state = await before.load()
        state.record_write(app, "web", "2.0.0", NOW, "argocd")
        state.mark_held(app, "web", "1.0.0", "kubectl")
        state.record_first_seen(repo_of(FLEET[moving][0]), ["2.0.0", "2.1.0"], NOW)
        await before.save(state)
    # The new owner reads it, and what it changes the old owner reads if the key comes back.
    with after.scoped(of(moving)):
        taken = await after.load()
        assert taken.last_write(app, "web") == WriteRecord(
            "2.0.0", NOW, held="1.0.0", via="argocd", held_by="kubectl"
        )
        assert taken.first_seen(repo_of(FLEET[moving][0]), "2.1.0") == NOW
        taken.record_write(app, "web", "2.1.0", NOW + timedelta(hours=1), "argocd")
        await after.save(taken)
    with before.scoped(of(KEYS[0], moving)):
        back = await before.load()
    assert back.last_write(app, "web") == WriteRecord(
        "2.1.0", NOW + timedelta(hours=1), via="argocd"
    )


async def test_a_conflict_on_one_keys_configmap_reads_and_rewrites_only_that_one(
    store: KubeStore, fronts: list[tuple[KubeApiServer, KubeClient]]
) -> None:
    (api, client), (_, command_client) = fronts
    replica = sharded(client)
    conflicted, calm = KEYS[0], KEYS[1]
    app, other = f"{NS}/{FLEET[conflicted][0]}", f"{NS}/{FLEET[calm][0]}"
    with replica.scoped(of(conflicted, calm)):
        seed = await replica.load()
        for key in (conflicted, calm):
            for name in FLEET[key]:
                seed.record_write(f"{NS}/{name}", "web", "1.0.0", NOW)
        await replica.save(seed)
        state = await replica.load()
        # Meanwhile the release command forgets a write in the first key's ConfigMap.
        command = key_store(command_client, NS, conflicted)
        released = await command.load()
        released.release(app)
        await command.save(released)
        state.mark_live(f"{NS}/{FLEET[conflicted][1]}", "web")
        state.record_write(other, "web", "1.1.0", NOW + timedelta(hours=1))
        gets, updates = (
            api.request_count("get", "configmaps"),
            api.request_count("update", "configmaps"),
        )
        await replica.save(state)
        assert api.request_count("get", "configmaps") - gets == 1  # the conflicted key alone
        assert api.request_count("update", "configmaps") - updates == 3  # 409, again, the calm key
        final = await replica.load()
    assert final.writes_of(app) == {}  # the release holds
    assert final.last_write(f"{NS}/{FLEET[conflicted][1]}", "web") == WriteRecord(
        "1.0.0", NOW, live=True
    )
    assert final.last_write(other, "web") == WriteRecord("1.1.0", NOW + timedelta(hours=1))
    assert state.token == final.token and not state.changed


async def test_an_unchanged_configmap_is_not_parsed_again_and_nothing_unchanged_is_written(
    store: KubeStore,
    fronts: list[tuple[KubeApiServer, KubeClient]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, client = fronts[0]
    replica = sharded(client)
    with replica.scoped(of(*KEYS)):
        state = await replica.load()
        state.record_write(f"{NS}/{FLEET[KEYS[0]][0]}", "web", "1.0.0", NOW)
        await replica.save(state)
        assert api.request_count("create", "configmaps") == 1  # only the key that changed
        parsed: list[str] = []
        original = ControllerState.from_stored.__func__  # type: ignore[attr-defined]

        def counting(cls: type[ControllerState], *args: Any, **kwargs: Any) -> ControllerState:
            parsed.append(kwargs.get("token", args[2] if len(args) > 2 else ""))
            return original(cls, *args, **kwargs)  # type: ignore[no-any-return]

        monkeypatch.setattr(ControllerState, "from_stored", classmethod(counting))
        again = await replica.load()
        await replica.save(again)
        assert parsed == [] and api.request_count("update", "configmaps") == 0
        assert again.last_write(f"{NS}/{FLEET[KEYS[0]][0]}", "web") is not None


async def test_switching_to_sharding_takes_each_keys_record_from_the_single_configmap(
    store: KubeStore, fronts: list[tuple[KubeApiServer, KubeClient]]
) -> None:
    client = fronts[0][1]
    single = ConfigMapStateStore(client, NS)
    old = await single.load()
    for apps in FLEET.values():
        for app in apps:
            old.record_write(f"{NS}/{app}", "web", "1.0.0", NOW, "git")
            old.record_first_seen(repo_of(app), ["1.0.0"], NOW - timedelta(days=3))
    old.mark_held(f"{NS}/{FLEET[KEYS[0]][0]}", "web", "0.9.0")
    old.record_first_seen(BASE, ["7"], NOW - timedelta(days=9))
    await single.save(old)
    kept = store.get("configmaps", NS, STATE_CONFIGMAP)

    replica = sharded(client)
    with replica.scoped(of(*KEYS[:3])):
        state = await replica.load()
        assert state.last_write(f"{NS}/{FLEET[KEYS[0]][0]}", "web") == WriteRecord(
            "1.0.0", NOW, held="0.9.0", via="git"
        )
        assert state.writes_of(f"{NS}/{FLEET[KEYS[3]][0]}") == {}  # not a key held
        await replica.save(state)  # nothing changed, but each key's ConfigMap is written
    for key in KEYS[:3]:
        assert set(stored_writes(store, key)) == {f"{NS}/{app}" for app in FLEET[key]}
    assert (
        store.list("configmaps", NS, field_selector=f"metadata.name={object_name(KEYS[3])}") == []
    )
    assert store.get("configmaps", NS, STATE_CONFIGMAP) == kept  # left in place

    # From now on the keys' own ConfigMaps count (the single one is no longer read for them).
    fresh = sharded(fronts[1][1])
    with fresh.scoped(of(*KEYS[:3])):
        again = await fresh.load()
    assert again.first_seen(BASE, "7") == NOW - timedelta(days=9)
    assert again.last_write(f"{NS}/{FLEET[KEYS[2]][2]}", "web") == WriteRecord(
        "1.0.0", NOW, via="git"
    )


async def test_release_forgets_the_write_in_the_keys_configmap_of_a_sharded_fleet(
    store: KubeStore, fronts: list[tuple[KubeApiServer, KubeClient]], tmp_path: Path
) -> None:
    api, client = fronts[0]
    key = KEYS[0]
    app = FLEET[key][0]
    store.put(objects.application(app, NS, source_type="Helm"))
    refs = [{"namePattern": "app-0-*", "images": [{"alias": "web", "imageName": "x/y"}]}]
    store.put(objects.image_updater(key.partition("/")[2], NS, {"applicationRefs": refs}))
    replica = sharded(client)
    with replica.scoped(of(key)):
        state = await replica.load()
        state.record_write(f"{NS}/{app}", "web", "1.0.0", NOW)
        state.mark_held(f"{NS}/{app}", "web", "0.9.0")
        state.record_write(f"{NS}/{FLEET[key][1]}", "web", "1.0.0", NOW)
        await replica.save(state)
    kubeconfig = str(api.write_kubeconfig(tmp_path / "kubeconfig-command", namespace=NS))

    message = await hold_run.release(app, NS, [], kubeconfig, "kubernetes", "", NS, state_dir="")

    assert message.startswith("released every image")
    assert set(stored_writes(store, key)) == {f"{NS}/{FLEET[key][1]}"}
    with replica.scoped(of(key)):
        assert (await replica.load()).writes_of(f"{NS}/{app}") == {}


async def test_a_sharded_controller_keeps_its_write_in_the_imageupdaters_configmap(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.0.1"])
    image = f"{registry.host}/{repo}"
    async with KubeApiServer(namespaces=(NS,)) as kube:
        kube.store.put(
            objects.application(
                "shop",
                NS,
                source_type="Kustomize",
                images=[f"{image}:1.0.0"],
                kustomize_images=[f"{image}:1.0.0"],
            )
        )
        refs = [{"namePattern": "shop", "images": [{"alias": "web", "imageName": f"{image}:~1.0"}]}]
        kube.store.put(objects.image_updater("shop-updater", NS, {"applicationRefs": refs}))
        conf = registries_conf(tmp_path, registry)
        controller, closers = await make_controller(kube, tmp_path, conf, sharding=True)
        try:
            result = await controller.cycle()
        finally:
            await close_all(closers)
        assert result.images_updated == 1
        writes = json.loads(
            kube.store.get("configmaps", NS, object_name(f"{NS}/shop-updater"))["data"][
                "writes.json"
            ]
        )
        assert writes[f"{NS}/shop"]["web"]["tag"] == "1.0.1"
        names = {cm["metadata"]["name"] for cm in kube.store.list("configmaps", NS)}
        assert STATE_CONFIGMAP not in names


async def test_a_replica_that_takes_keys_over_uses_their_first_seen_times(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    """Real replicas: ``a`` alone remembers when it first saw the new tag (its clock: now); ``b``
    joins a day later (its clock) and takes some keys over: it updates their Applications, as
    the tag is old enough by the times ``a`` stored; ``a`` (still at its now) updates none."""
    from replicas import WITHIN, Replicas
    from waiting import eventually

    await push_tags(registry, repo, ["1.0.0", "1.0.1"])
    image = f"{registry.host}/{repo}"
    store = KubeStore(namespaces=(NS,))
    keys = {f"{NS}/updater-{k}": f"shop-{k}" for k in range(6)}
    for key, app in keys.items():
        running = [f"{image}:1.0.0"]
        store.put(objects.application(app, NS, images=running, kustomize_images=running))
        policy = {
            "alias": "web",
            "imageName": f"{image}:~1.0",
            "commonUpdateSettings": {"minAge": "24h"},
        }
        refs = [{"namePattern": app, "images": [policy]}]
        store.put(objects.image_updater(key.partition("/")[2], NS, {"applicationRefs": refs}))
    now = datetime.now(UTC).replace(microsecond=0)

    def tag_of(app: str) -> str:
        [entry] = store.get("applications", NS, app)["spec"]["source"]["kustomize"]["images"]
        return str(entry).rsplit(":", 1)[1]

    def remembered() -> dict[str, Any]:
        name = repository_object_name(image)
        found = store.list("configmaps", NS, field_selector=f"metadata.name={name}")
        return json.loads(found[0]["data"]["first-seen.json"]).get(image, {}) if found else {}

    fleet = Replicas(
        tmp_path, store, values={"registries_conf_path": str(registries_conf(tmp_path, registry))}
    )
    fleet.keys = set(keys)
    try:
        a = await fleet.start("a")
        a.controller.clock = lambda: now
        await eventually(lambda: "1.0.1" in remembered(), "a remembers the tag", within=WITHIN)
        assert all(tag_of(app) == "1.0.0" for app in keys.values())  # too young for a
        joined = time.monotonic()
        b = await fleet.start("b")
        b.controller.clock = lambda: now + timedelta(hours=25)
        await eventually(lambda: fleet.partitioned("ab", joined), "a and b share", within=WITHIN)
        taken = fleet.latest("b", joined) or frozenset()
        await eventually(
            lambda: all(tag_of(keys[key]) == "1.0.1" for key in taken),
            "b updates the Applications of the keys it took over",
            within=WITHIN,
        )
        assert all(tag_of(keys[key]) == "1.0.0" for key in set(keys) - taken)
        assert fleet.double_holds() == []
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert remembered()["1.0.1"] == stamp  # one object for the repository of every key
    finally:
        await fleet.close()


async def test_a_save_after_another_save_of_the_same_replica_keeps_both(
    store: KubeStore, fronts: list[tuple[KubeApiServer, KubeClient]]
) -> None:
    """A cycle and a webhook event of one replica load the same keys; the event saves first."""
    replica = sharded(fronts[0][1])
    key, other = KEYS[0], KEYS[1]
    app, another = f"{NS}/{FLEET[key][0]}", f"{NS}/{FLEET[other][0]}"
    with replica.scoped(of(key, other)):
        cycle = await replica.load()
        with replica.scoped(of(key)):
            event = await replica.load()
            event.record_write(app, "web", "2.0.0", NOW)
            await replica.save(event)
        cycle.record_first_seen(repo_of(FLEET[key][0]), ["2.0.0"], NOW)
        cycle.record_write(another, "web", "3.0.0", NOW)
        await replica.save(cycle)
        assert cycle.last_write(app, "web") == WriteRecord("2.0.0", NOW)  # taken in
        final = await replica.load()
    assert final.last_write(app, "web") == WriteRecord("2.0.0", NOW)
    assert final.last_write(another, "web") == WriteRecord("3.0.0", NOW)
    assert final.first_seen(repo_of(FLEET[key][0]), "2.0.0") == NOW


async def test_a_steady_save_writes_nothing_until_an_application_moves_to_another_key(
    store: KubeStore, fronts: list[tuple[KubeApiServer, KubeClient]]
) -> None:
    """A save of the record as last saved, in the same scope, has nothing to write; the same
    record in a scope where an Application moved to another key writes that key's object."""
    api, client = fronts[0]
    replica = sharded(client)
    key, other = KEYS[0], KEYS[1]
    app = FLEET[key][0]
    with replica.scoped(of(key, other)):
        state = await replica.load()
        state.record_write(f"{NS}/{app}", "web", "1.0.0", NOW)
        await replica.save(state)
        writes = api.request_count("create", "configmaps") + api.request_count(
            "update", "configmaps"
        )
        await replica.save(await replica.load())
        assert (
            api.request_count("update", "configmaps") + api.request_count("create", "configmaps")
            == writes
        )
    moved = share({key: FLEET[key][1:], other: [*FLEET[other], app]})
    with replica.scoped(moved):
        await replica.save(await replica.load())
    assert f"{NS}/{app}" in stored_writes(store, other)


async def test_a_conflict_on_a_repositorys_configmap_replays_only_that_repositorys_changes(
    store: KubeStore, fronts: list[tuple[KubeApiServer, KubeClient]]
) -> None:
    """Another replica, whose key uses the same base image, records a tag of it and forgets
    another between this replica's load and save: only the base's object is read and written
    again, with this replica's base changes alone; its other objects are written once."""
    (api, client), (_, other_client) = fronts
    replica, other = sharded(client), sharded(other_client)
    mine, theirs = KEYS[0], KEYS[3]
    with replica.scoped(of(mine)):
        seed = await replica.load()
        seed.record_first_seen(BASE, ["1", "2"], NOW)
        await replica.save(seed)
        state = await replica.load()
    with other.scoped(of(theirs)):
        meanwhile = await other.load()
        meanwhile.record_first_seen(BASE, ["3"], NOW + timedelta(hours=3))
        meanwhile.prune_tags(BASE, ["2", "3"])  # "1" left the registry
        await other.save(meanwhile)
    app = f"{NS}/{FLEET[mine][0]}"
    state.record_first_seen(BASE, ["4"], NOW + timedelta(hours=4))
    state.record_first_seen(repo_of(FLEET[mine][0]), ["1.0.0"], NOW)
    state.record_write(app, "web", "1.0.0", NOW)
    before = {verb: api.request_count(verb, "configmaps") for verb in ("get", "update", "create")}
    with replica.scoped(of(mine)):
        await replica.save(state)
        after = {verb: api.request_count(verb, "configmaps") - n for verb, n in before.items()}
        final = await replica.load()
    assert after == {"get": 1, "update": 2, "create": 2}  # base: 409, read, again; web, key
    assert stored_first_seen(store, BASE) == {
        "2": "2026-03-01T12:00:00Z",
        "3": "2026-03-01T15:00:00Z",
        "4": "2026-03-01T16:00:00Z",
    }  # the other's tag kept, the forgotten one stays forgotten, this replica's added
    assert state.first_seen(BASE, "3") == NOW + timedelta(hours=3)  # taken in
    assert state.first_seen(BASE, "1") is None
    assert final.last_write(app, "web") == WriteRecord("1.0.0", NOW)
    assert state.token == final.token and not state.changed


async def test_the_key_configmaps_of_before_feed_the_repository_configmaps(
    store: KubeStore, fronts: list[tuple[KubeApiServer, KubeClient]]
) -> None:
    """Key ConfigMaps that held their repositories' tables (and the single ConfigMap) give the
    repository ConfigMaps that do not exist yet their tables; a repository ConfigMap that
    exists keeps its own; each key's ConfigMap is written again without the tables."""
    client = fronts[0][1]
    key = KEYS[0]
    web = repo_of(FLEET[key][0])
    old = key_store(client, NS, key)
    before = await old.load()
    before.record_write(f"{NS}/{FLEET[key][0]}", "web", "1.0.0", NOW)
    before.record_first_seen(web, ["1.0.0"], NOW - timedelta(days=2))
    before.record_first_seen(BASE, ["7"], NOW - timedelta(days=1))
    before.record_digest(web, "1.0.0", "sha256:" + "a" * 64)
    await old.save(before)  # as the layout of before stored it
    single = ConfigMapStateStore(client, NS)
    record = await single.load()
    record.record_first_seen(web, ["0.9.0"], NOW - timedelta(days=9))
    record.record_write(f"{NS}/{FLEET[KEYS[1]][0]}", "web", "0.1.0", NOW)
    await single.save(record)
    own = repository_store(client, NS, BASE)
    base = await own.load()
    base.record_first_seen(BASE, ["8"], NOW)
    await own.save(base)

    replica = sharded(client)
    with replica.scoped(of(key, KEYS[1])):
        state = await replica.load()
        assert state.first_seen(web, "1.0.0") == NOW - timedelta(days=2)
        assert state.first_seen(BASE, "7") is None  # the base's own object counts
        await replica.save(state)
    assert stored_first_seen(store, web) == {
        "0.9.0": "2026-02-20T12:00:00Z",
        "1.0.0": "2026-02-27T12:00:00Z",
    }
    digests = store.get("configmaps", NS, repository_object_name(web))["data"]["digests.json"]
    assert json.loads(digests) == {web: {"1.0.0": "sha256:" + "a" * 64}}
    assert stored_first_seen(store, BASE) == {"8": "2026-03-01T12:00:00Z"}
    for moved in (key, KEYS[1]):
        cm = store.get("configmaps", NS, object_name(moved))
        assert json.loads(cm["data"]["first-seen.json"]) == {}
        assert json.loads(cm["data"]["digests.json"]) == {}
    assert set(stored_writes(store, KEYS[1])) == {f"{NS}/{FLEET[KEYS[1]][0]}"}
    fresh = sharded(fronts[1][1])
    with fresh.scoped(of(key)):
        again = await fresh.load()
    assert again.first_seen(web, "0.9.0") == NOW - timedelta(days=9)
    assert again.seen_digest(web, "1.0.0") == "sha256:" + "a" * 64


async def test_100000_remembered_writes_are_stored_and_read_back(
    store: KubeStore, fronts: list[tuple[KubeApiServer, KubeClient]]
) -> None:
    """1,000 ImageUpdaters of 100 Applications each, every one written, all sharing the base
    image: every write is stored (none left out) and read back by another replica."""
    keys = {f"{NS}/updater-{k}": [f"app-{k}-{n}" for n in range(100)] for k in range(1000)}
    collected = Collected(listed={f"{NS}/{app}" for apps in keys.values() for app in apps})
    for key, apps in keys.items():
        cr = CRState(NS, key.partition("/")[2], 1, "1")
        collected.crs.append(cr)
        for app in apps:
            view = Application.from_object(objects.application(app, NS, source_type="Helm"))
            images = (ImageSpec("base", f"{HOST}/base/runtime"),)
            collected.configs.append((AppUpdateConfig(app=view, images=images), cr))
    replica = sharded(fronts[0][1])
    with replica.scoped(collected):
        state = await replica.load()
        for n, app in enumerate(app for apps in keys.values() for app in apps):
            state.record_write(f"{NS}/{app}", "web", f"1.{n % 300}.{n}", NOW, "git")
        state.record_first_seen(BASE, [f"2026.{t}" for t in range(100)], NOW)
        await replica.save(state)
    sizes = [
        len(json.dumps(cm.get("data") or {})) + len(json.dumps(cm.get("binaryData") or {}))
        for cm in store.list("configmaps", NS)
    ]
    assert len(sizes) == 1001 and max(sizes) < 64_000
    other = sharded(fronts[1][1])
    with other.scoped(collected):
        back = await other.load()
    assert sum(len(records) for records in back.contents()[0].values()) == 100_000
    assert len(back.first_seen_of(BASE)) == 100


@pytest.mark.system  # the chart rendered by Helm, the overlay by kubectl kustomize
async def test_the_sharded_installs_grant_every_request_on_the_state_configmaps(
    store: KubeStore, fronts: list[tuple[KubeApiServer, KubeClient]]
) -> None:
    """A replica's loads and saves of its keys' and repositories' ConfigMaps (created, read,
    updated, replaced again after another writer's change): every verb it used on ConfigMaps
    is granted on ConfigMaps of any name (theirs are hashes) by the chart with three replicas
    and by the sharded overlay."""
    (api, client), (_, other_client) = fronts
    replica, other = sharded(client), sharded(other_client)
    with replica.scoped(of(KEYS[0])):
        state = await replica.load()
        state.record_first_seen(BASE, ["1"], NOW)
        state.record_write(f"{NS}/{FLEET[KEYS[0]][0]}", "web", "1.0.0", NOW)
        await replica.save(state)
        state = await replica.load()
    with other.scoped(of(KEYS[1])):
        theirs = await other.load()
        theirs.record_first_seen(BASE, ["2"], NOW)
        await other.save(theirs)
    with replica.scoped(of(KEYS[0])):
        state.record_first_seen(BASE, ["3"], NOW)
        await replica.save(state)  # a conflict: read again, replaced
    used = {verb for verb, resource in api.requests if resource == "configmaps"}
    assert {"get", "create", "update"} <= used
    for install, granted in configmap_verbs_granted().items():
        assert used <= granted, install


def configmap_verbs_granted() -> dict[str, set[str]]:
    """The verbs on ConfigMaps of any name (no resourceNames) in the controller's namespace, by
    sharded install: the chart with three replicas, the sharded overlay."""
    import shutil
    import subprocess

    import helm_python

    from argocd_image_updater_testing.manifest_checks import objects_of

    root = Path(__file__).resolve().parents[2]
    with helm_python.Chart.load(root / "charts" / "argocd-image-updater") as chart:
        rendered = chart.render({"replicaCount": 3}, name="argocd-image-updater", namespace=NS)
    installs = {"chart": objects_of(rendered.values())}
    kubectl = shutil.which("kubectl")
    if kubectl is not None:
        overlay = root / "config" / "overlays" / "sharded"
        result = subprocess.run(
            [kubectl, "kustomize", str(overlay)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        installs["config/overlays/sharded"] = objects_of([result.stdout])
    return {
        install: {
            verb
            for role in objs
            if role["kind"] == "Role" and role["metadata"].get("namespace", NS) == NS
            for rule in role["rules"]
            if "configmaps" in rule["resources"] and not rule.get("resourceNames")
            for verb in rule["verbs"]
        }
        for install, objs in installs.items()
    }


async def cached(client: KubeClient, stop: asyncio.Event) -> tuple[ShardedStateStore, Any]:
    """A store with the watched copy of the state ConfigMaps, once it has listed them."""
    from waiting import eventually

    cache = StateCache(client, NS)
    task = asyncio.create_task(cache.run(stop))
    await eventually(lambda: cache.synced, "the state ConfigMaps are listed")
    return ShardedStateStore(client, NS, RegistryConfig(), cache), task


async def test_steady_loads_take_the_watched_copy_and_make_no_request(
    store: KubeStore,
    fronts: list[tuple[KubeApiServer, KubeClient]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the watched copy every load reads each object of its keys and repositories; with
    it, only the first (and a conflict) does: a steady cycle (two loads, a save of nothing)
    makes no request, its own writes are loaded back at once, and another replica's write of a
    shared repository is seen when the watch brings it."""

    from waiting import WITHIN

    (api, client), (_, other_client) = fronts
    keys = of(*KEYS[:2])
    objects = 2 + 1 + 3 * 2  # two keys, the base, each Application's repository
    plain = sharded(client)
    with plain.scoped(keys):
        seed = await plain.load()
        for key in KEYS[:2]:
            seed.record_write(f"{NS}/{FLEET[key][0]}", "web", "1.0.0", NOW)
            for app in FLEET[key]:
                seed.record_first_seen(repo_of(app), ["1.0.0"], NOW)
        seed.record_first_seen(BASE, ["1"], NOW)
        await plain.save(seed)
        gets = api.request_count("get", "configmaps")
        for _ in range(2):
            await plain.save(await plain.load())
        assert api.request_count("get", "configmaps") - gets == 2 * objects  # before

    stop = asyncio.Event()
    replica, task = await cached(client, stop)
    try:
        with replica.scoped(keys):
            first = await replica.load()  # the objects it did not hold are read
            assert api.request_count("get", "configmaps") - gets == 2 * objects + objects
            before = sum(api.requests.values())
            for _ in range(3):
                await replica.load()
                await replica.save(await replica.load())
            assert sum(api.requests.values()) == before  # a steady cycle: no request
            cache, asked = replica.cache, []
            assert cache is not None
            newer = cache.newer
            monkeypatch.setattr(cache, "newer", lambda *a: asked.append(a) or newer(*a))
            for _ in range(2):
                await replica.save(await replica.load())
            assert not asked  # nothing can have changed: no object was even looked at
            monkeypatch.undo()
            first.record_write(f"{NS}/{FLEET[KEYS[0]][1]}", "web", "2.0.0", NOW)
            await replica.save(first)
            assert (await replica.load()).last_write(
                f"{NS}/{FLEET[KEYS[0]][1]}", "web"
            ) == WriteRecord("2.0.0", NOW)  # its own write, whether or not the watch saw it
            written = store.get("configmaps", NS, object_name(KEYS[0]))["metadata"]
            deadline = time.monotonic() + WITHIN
            while (cache._objects.get(written["name"]) or {}).get("metadata", {}).get(
                "resourceVersion"
            ) != written["resourceVersion"]:  # polled until the watch shows the write
                assert time.monotonic() < deadline, "the watch shows the replica's own write"
                await asyncio.sleep(0.02)
            monkeypatch.setattr(cache, "newer", lambda *a: asked.append(a) or newer(*a))
            assert (await replica.load()).last_write(f"{NS}/{FLEET[KEYS[0]][1]}", "web")
            assert not asked  # the echo of its own write changed nothing it would be told
            monkeypatch.undo()
        other = sharded(other_client)
        with other.scoped(of(KEYS[3])):
            theirs = await other.load()
            theirs.record_first_seen(BASE, ["2"], NOW + timedelta(hours=2))
            await other.save(theirs)
        gets = api.request_count("get", "configmaps")

        deadline = time.monotonic() + WITHIN
        while True:  # polled until the watch brings it
            with replica.scoped(keys):
                if (await replica.load()).first_seen(BASE, "2") is not None:
                    break
            assert time.monotonic() < deadline, "the other replica's first-seen time is loaded"
            await asyncio.sleep(0.02)
        assert api.request_count("get", "configmaps") == gets
    finally:
        stop.set()
        await task


async def test_a_key_taken_over_is_read_not_taken_from_the_watched_copy(
    store: KubeStore, fronts: list[tuple[KubeApiServer, KubeClient]]
) -> None:
    """A key this replica did not hold, and its repositories, are read (as the previous owner
    last saved them), never taken from the watched copy, which may be behind."""
    (api, client), (_, other_client) = fronts
    stop = asyncio.Event()
    replica, task = await cached(client, stop)
    try:
        with replica.scoped(of(KEYS[0])):
            await replica.load()
        previous = sharded(other_client)
        app = f"{NS}/{FLEET[KEYS[1]][0]}"
        with previous.scoped(of(KEYS[1])):
            state = await previous.load()
            state.record_write(app, "web", "3.0.0", NOW)
            state.mark_held(app, "web", "2.0.0")
            await previous.save(state)
        gets = api.request_count("get", "configmaps")
        with replica.scoped(of(KEYS[0], KEYS[1])):
            taken = await replica.load()
        assert taken.last_write(app, "web") == WriteRecord("3.0.0", NOW, held="2.0.0")
        assert api.request_count("get", "configmaps") - gets == 1 + 3  # the key, its repos
    finally:
        stop.set()
        await task


async def test_a_key_let_go_is_read_again_and_a_steady_scope_lets_go_of_nothing(
    store: KubeStore, fronts: list[tuple[KubeApiServer, KubeClient]]
) -> None:
    """A full cycle's scope lets go of the objects of the keys no longer held (read again,
    never taken from the watched copy, when they come back); the same selection again lets go
    of nothing and reads nothing."""
    (api, client), _ = fronts
    stop = asyncio.Event()
    replica, task = await cached(client, stop)
    both = of(KEYS[0], KEYS[1])
    try:
        with replica.scoped(both):
            await replica.load()
        gets = api.request_count("get", "configmaps")
        for _ in range(2):  # the very same selection: the same layout, nothing let go
            with replica.scoped(both):
                await replica.load()
        assert api.request_count("get", "configmaps") == gets
        with replica.scoped(of(KEYS[0])):  # KEYS[1] is let go
            await replica.load()
        with replica.scoped(of(KEYS[0], KEYS[1])):
            await replica.load()
        assert api.request_count("get", "configmaps") - gets == 1 + 3  # the key, its repos
    finally:
        stop.set()
        await task
