"""Where the controller's remembered record is kept: a ConfigMap through the real Kubernetes
client library and the Kubernetes API fake (resourceVersion conflicts included), a file in
local mode, and a controller run that remembers the tag it wrote."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fleet import registries_conf
from test_controller_argocd import close_all, make_controller, push_tags

from argocd_image_updater.controller.state_store import STATE_CONFIGMAP, ConfigMapStateStore
from argocd_image_updater.kube.client import KubeClient, KubeError
from argocd_image_updater.local.state_file import FileStateStore
from argocd_image_updater.model.controller_state import ControllerState, repo_key
from argocd_image_updater.pipeline.ports import StoreError
from argocd_image_updater.pipeline.state import MemoryStateStore
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
REPO = repo_key("registry.example.com", "team/web")


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


@pytest.fixture
async def client(kube: KubeApiServer, tmp_path: Path) -> AsyncIterator[KubeClient]:
    config = kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)
    async with await KubeClient.connect(str(config)) as connected:
        yield connected


async def test_the_configmap_is_created_replaced_on_change_and_left_alone_otherwise(
    kube: KubeApiServer, client: KubeClient
) -> None:
    store = ConfigMapStateStore(client, NS)
    state = await store.load()
    assert not state.changed and state.token == ""
    await store.save(state)
    assert kube.request_count("create", "configmaps") == 0  # nothing to write

    state.record_write("argocd/shop", "web", "1.2.0", NOW)
    await store.save(state)
    stored = kube.store.get("configmaps", NS, STATE_CONFIGMAP)
    assert json.loads(stored["data"]["writes.json"])["argocd/shop"]["web"]["tag"] == "1.2.0"
    assert stored["metadata"]["labels"]["app.kubernetes.io/part-of"] == "argocd-image-updater"
    assert state.token == stored["metadata"]["resourceVersion"] and not state.changed

    again = await store.load()
    again.record_write("argocd/shop", "web", "1.2.0", NOW)  # the same: no change
    await store.save(again)
    assert kube.request_count("update", "configmaps") == 0
    again.record_first_seen(REPO, ["1.2.0"], NOW)
    await store.save(again)
    assert kube.request_count("update", "configmaps") == 1


async def test_a_record_beyond_a_configmaps_bound_is_stored_compressed(
    kube: KubeApiServer, client: KubeClient
) -> None:
    store = ConfigMapStateStore(client, NS)
    state = await store.load()
    for n in range(16_000):
        state.record_write(f"team/service-{n}", "web", f"1.{n}.0", NOW)
    plain = state.to_data(limit=10**9)
    with pytest.raises(KubeError, match="Too long"):  # what saving it plain would meet
        await client.create_configmap(NS, {"metadata": {"name": "plain"}, "data": plain})
    await store.save(state)
    stored = kube.store.get("configmaps", NS, STATE_CONFIGMAP)
    assert set(stored["binaryData"]) >= {"writes.json.gz"} and not state.changed
    back = await ConfigMapStateStore(client, NS).load()
    assert back.to_data(limit=10**9) == plain
    back.record_write("team/service-0", "web", "2.0.0", NOW)
    await store.save(back)
    assert (await store.load()).last_write("team/service-0", "web").tag == "2.0.0"  # type: ignore[union-attr]


async def test_each_load_is_a_copy_of_its_own(kube: KubeApiServer, client: KubeClient) -> None:
    store = ConfigMapStateStore(client, NS)
    seed = await store.load()
    seed.record_write("argocd/shop", "web", "1.2.0", NOW)
    await store.save(seed)
    one, two = await store.load(), await store.load()  # the same resourceVersion
    assert one.to_data() == two.to_data() == seed.to_data() and one.token == two.token
    one.release("argocd/shop")
    assert two.last_write("argocd/shop", "web") is not None
    assert (await store.load()).last_write("argocd/shop", "web") is not None


async def test_a_configmap_not_written_yet_reads_as_one_empty_record_and_loads_as_copies(
    kube: KubeApiServer, client: KubeClient
) -> None:
    store = ConfigMapStateStore(client, NS)
    read = await store.read()
    assert read is store.absent is await store.read() is store.parse(None)
    assert not any(read.contents()) and read.token == "" and store.last is None
    loaded = await store.load()
    loaded.record_write("argocd/shop", "web", "1.2.0", NOW)
    assert not any(store.absent.contents())  # a load is a copy: the empty record holds
    await store.save(loaded)
    assert (await store.read()).last_write("argocd/shop", "web") is not None
    assert not any(store.absent.contents())


async def test_a_writer_that_lost_the_race_applies_its_changes_to_the_newer_copy(
    kube: KubeApiServer, client: KubeClient
) -> None:
    store = ConfigMapStateStore(client, NS)
    seed = await store.load()
    seed.record_write("argocd/shop", "web", "1.2.0", NOW)
    seed.record_write("argocd/shop", "api", "3.0.0", NOW)
    await store.save(seed)

    controller_copy = await store.load()
    command_copy = await store.load()
    command_copy.release("argocd/shop", ["web"])  # e.g. the release command
    await store.save(command_copy)
    controller_copy.record_first_seen(REPO, ["1.3.0"], NOW)
    await store.save(controller_copy)  # 409 first, then applied to the released copy

    assert kube.request_count("update", "configmaps") == 3
    final = await store.load()
    assert final.last_write("argocd/shop", "web") is None
    assert final.last_write("argocd/shop", "api") is not None
    assert final.first_seen(REPO, "1.3.0") == NOW
    assert controller_copy.token == final.token


async def test_two_first_saves_race_on_create(kube: KubeApiServer, client: KubeClient) -> None:
    first, second = await asyncio.gather(
        ConfigMapStateStore(client, NS).load(), ConfigMapStateStore(client, NS).load()
    )
    first.record_write("argocd/a", "web", "1", NOW)
    second.record_write("argocd/b", "web", "2", NOW)
    await ConfigMapStateStore(client, NS).save(first)
    await ConfigMapStateStore(client, NS).save(second)  # AlreadyExists → load, apply, replace
    final = await ConfigMapStateStore(client, NS).load()
    assert final.last_write("argocd/a", "web") and final.last_write("argocd/b", "web")


async def test_sharded_members_each_save_their_own_records_without_clobbering_the_others(
    kube: KubeApiServer, client: KubeClient
) -> None:
    """``run --sharding``: every member loads the shared record, records the writes of the keys
    it owns, prunes by the whole listing and saves; the saves race and none is lost."""
    listed = {f"argocd/app-{i}" for i in range(6)}
    members = [ConfigMapStateStore(client, NS) for _ in range(3)]
    copies = await asyncio.gather(*(member.load() for member in members))
    for n, copy in enumerate(copies):
        for i in range(n, 6, 3):  # the Applications of the keys member n owns
            copy.record_write(f"argocd/app-{i}", "web", f"1.{i}.0", NOW)
        copy.prune_apps(listed, None)
    await asyncio.gather(*(m.save(c) for m, c in zip(members, copies, strict=True)))
    final = await ConfigMapStateStore(client, NS).load()
    assert {i: final.last_write(f"argocd/app-{i}", "web") is not None for i in range(6)} == {
        i: True for i in range(6)
    }


async def test_a_configmap_that_cannot_be_read_is_an_error_naming_it(
    kube: KubeApiServer, client: KubeClient
) -> None:
    kube.store.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": STATE_CONFIGMAP, "namespace": NS},
            "data": {"version": "1", "writes.json": "not json"},
        }
    )
    with pytest.raises(
        StoreError, match=f"ConfigMap {NS}/{STATE_CONFIGMAP}: writes.json: not JSON"
    ):
        await ConfigMapStateStore(client, NS).load()


async def test_the_state_file_is_replaced_atomically_and_merges_another_process_changes(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "state"
    store = FileStateStore(directory)
    state = await store.load()
    await store.save(state)
    assert not directory.exists()  # nothing changed: nothing written
    state.record_write("argocd/shop", "web", "1.2.0", NOW)
    await store.save(state)
    doc = json.loads((directory / "state.json").read_text())
    assert doc["version"] == 1 and doc["writes"]["argocd/shop"]["web"]["tag"] == "1.2.0"
    assert sorted(p.name for p in directory.iterdir()) == ["state.json", "state.lock"]

    other = await FileStateStore(directory).load()
    other.release("argocd/shop")
    await FileStateStore(directory).save(other)
    state.record_first_seen(REPO, ["1.2.0"], NOW)
    await store.save(state)
    final = await FileStateStore(directory).load()
    assert final.writes_of("argocd/shop") == {} and final.first_seen(REPO, "1.2.0") == NOW

    (directory / "state.json").write_text("[1]")
    with pytest.raises(StoreError, match=r"state\.json: expected a JSON object"):
        await store.load()


async def test_the_memory_store_keeps_the_record_for_the_process() -> None:
    store = MemoryStateStore()
    one, two = await store.load(), await store.load()
    one.record_write("argocd/a", "web", "1", NOW)
    two.record_write("argocd/b", "web", "2", NOW)
    await store.save(one)
    await store.save(two)
    final = await store.load()
    assert final.last_write("argocd/a", "web") and final.last_write("argocd/b", "web")
    assert isinstance(final, ControllerState) and not final.changed


async def test_the_controller_remembers_the_tags_it_wrote_in_the_configmap(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.0.1"])
    image = f"{registry.host}/{repo}"
    kube.store.put(
        objects.application(
            "shop",
            NS,
            source_type="Kustomize",
            images=[f"{image}:1.0.0"],
            kustomize_images=[f"{image}:1.0.0"],
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
                        "images": [{"alias": "web", "imageName": f"{image}:~1.0"}],
                    }
                ]
            },
        )
    )
    gone = {"argocd/deleted-app": {"web": {"tag": "1", "at": "2026-01-01T00:00:00Z"}}}
    kube.store.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": STATE_CONFIGMAP, "namespace": NS},
            "data": {"version": "1", "writes.json": json.dumps(gone)},
        }
    )
    before = datetime.now(UTC) - timedelta(seconds=1)
    controller, closers = await make_controller(kube, tmp_path, registries_conf(tmp_path, registry))
    try:
        result = await controller.cycle()
    finally:
        await close_all(closers)
    assert result.images_updated == 1
    writes = json.loads(kube.store.get("configmaps", NS, STATE_CONFIGMAP)["data"]["writes.json"])
    assert set(writes) == {"argocd/shop"}  # the deleted Application is forgotten
    assert writes["argocd/shop"]["web"]["tag"] == "1.0.1"
    assert datetime.fromisoformat(writes["argocd/shop"]["web"]["at"]) >= before.replace(
        microsecond=0
    )
