"""A sharded fleet lists each repository once a cycle, whatever the number of replicas whose keys
use it: its owner lists it and says so on its member Lease (the heartbeat); the others reuse
their own last listing while the heartbeat vouches for it, and list it again once it changed.

Three replicas (``run --sharding``, :mod:`replicas`) on the Kubernetes API fake, the real
registry behind one counting proxy; six ImageUpdaters spread over the three, each with an
Application of the one repository. Fleet cycles run every replica's cycle at once; between
them the test waits (polling) until every replica has read the others' latest heartbeats.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from replicas import NS, Replicas

from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.faulty_proxy import FaultyProxy
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

START = datetime(2026, 6, 1, tzinfo=UTC)
UPDATERS = 6


def reused() -> float:
    return (
        REGISTRY.get_sample_value(
            "argocd_image_updater_fleet_tag_lists_total", {"outcome": "reused"}
        )
        or 0.0
    )


async def push(registry: RegistryServer, repo: str, *tags: str) -> None:
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(tags):
            await pusher.push_image(repo, tag, created=START + timedelta(days=i))


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


@pytest.fixture
async def proxy(registry: RegistryServer) -> AsyncIterator[FaultyProxy]:
    proxy = await FaultyProxy(registry.url).start()
    try:
        yield proxy
    finally:
        await proxy.stop()


def conf(tmp_path: Path, host: str, proxy: FaultyProxy, name: str) -> str:
    path = tmp_path / f"registries-{name}.conf"
    path.write_text(f"registries:\n- name: t\n  prefix: {host}\n  api_url: {proxy.url}\n")
    return str(path)


async def seeded(
    kube: KubeApiServer,
    registry: RegistryServer,
    proxy: FaultyProxy,
    repo: str,
    tmp_path: Path,
    odd: FaultyProxy | None = None,
) -> Replicas:
    """Three replicas over the fleet, each ImageUpdater's Application at ``1.0.0``; the
    registry's API is ``proxy`` (for ``r2``: ``odd`` when given)."""
    await push(registry, repo, "1.0.0")
    host = proxy.url.split("://", 1)[1]
    image = f"{host}/{repo}"
    for i in range(UPDATERS):
        name = f"team-{i}"
        kube.store.put(
            objects.application(
                name, NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
            )
        )
        ref = {"namePattern": name, "images": [{"alias": "a", "imageName": image}]}
        kube.store.put(objects.image_updater(name, NS, {"applicationRefs": [ref]}))
    fleet = Replicas(
        tmp_path, kube.store, api=kube, values={"once": True, "interval": timedelta(hours=1)}
    )
    try:
        for name in ("r0", "r1", "r2"):
            api = odd if name == "r2" and odd is not None else proxy
            path = conf(tmp_path, host, api, name)
            await fleet.start(name, loop=False, registries_conf_path=path)
        assert len(fleet.owners({f"{NS}/team-{i}" for i in range(UPDATERS)})) == 3
    except BaseException:
        await fleet.close()
        raise
    return fleet


@pytest.fixture
async def fleet(
    kube: KubeApiServer, registry: RegistryServer, proxy: FaultyProxy, repo: str, tmp_path: Path
) -> AsyncIterator[Replicas]:
    replicas = await seeded(kube, registry, proxy, repo, tmp_path)
    try:
        yield replicas
    finally:
        await replicas.close()


def images(kube: KubeApiServer) -> set[str]:
    return {
        app["spec"]["source"]["kustomize"]["images"][0].rpartition(":")[2]
        for app in kube.store.list("applications", NS)
    }


async def cycle(fleet: Replicas, proxy: FaultyProxy) -> int:
    """One fleet cycle, then until every heartbeat it gave is read; the tag lists it made."""
    before = proxy.counts["tags"]
    await fleet.cycle()
    await fleet.heard()
    listed = proxy.counts["tags"] - before
    assert 1 <= listed <= 3  # never more than once a replica, always by its owner
    return listed


async def test_each_repository_is_listed_once_a_cycle_by_its_owner(
    fleet: Replicas, kube: KubeApiServer, registry: RegistryServer, proxy: FaultyProxy, repo: str
) -> None:
    # First cycle: nobody has heard of anybody, every replica lists the repository. From the
    # second on only the owner lists it, the others reuse their copies: the owner's first
    # heartbeat gives the hash of the tags it listed, which theirs hold (should a member drop
    # out of a view for a moment under load, a cycle lists it again: a few cycles).
    assert await cycle(fleet, proxy) == 3
    before = reused()
    shared = [await cycle(fleet, proxy) for _ in range(2)]
    while shared[-1] != 1 and len(shared) < 6:
        shared.append(await cycle(fleet, proxy))
    assert shared[-1] == 1, shared
    assert reused() - before >= 2

    # A new tag: the owner finds it in its next cycle (the others, in the same cycle, may still
    # reuse their copies), says it changed, and every replica runs it after the next cycle.
    await push(registry, repo, "1.0.0", "1.1.0")
    await cycle(fleet, proxy)
    await cycle(fleet, proxy)
    assert images(kube) == {"1.1.0"}


async def test_a_replica_that_sees_another_registry_configuration_trusts_no_heartbeat(
    kube: KubeApiServer, registry: RegistryServer, proxy: FaultyProxy, repo: str, tmp_path: Path
) -> None:
    """One replica's registries.conf names another API URL for the registry (say, it was not
    updated yet): the listings it expects of the others are not those they made, so it lists
    the repository itself every cycle and writes a new tag in the very next cycle; the two
    others still share."""
    other = await FaultyProxy(registry.url).start()
    fleet = await seeded(kube, registry, proxy, repo, tmp_path, odd=other)
    try:
        for _ in range(3):
            await fleet.cycle()
            await fleet.heard()
        counts = proxy.counts["tags"], other.counts["tags"]
        await fleet.cycle()
        await fleet.heard()
        assert other.counts["tags"] - counts[1] == 1  # the odd one, every cycle
        assert proxy.counts["tags"] - counts[0] in (1, 2)  # the owner (and r0 or r1 when the
        # owner under their configuration is the odd one, which lists something else)
        await push(registry, repo, "1.0.0", "1.1.0")
        await fleet.cycle()
        odd = {f"team-{i}" for i in range(UPDATERS) if fleet.owners({f"{NS}/team-{i}"}) == {"r2"}}
        assert odd
        for app in kube.store.list("applications", NS):
            if app["metadata"]["name"] in odd:
                assert app["spec"]["source"]["kustomize"]["images"][0].endswith(":1.1.0")
    finally:
        await fleet.close()
        await other.stop()
