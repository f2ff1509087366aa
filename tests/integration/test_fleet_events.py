"""What the replicas of a sharded fleet pass each other through the ConfigMap
``argocd-image-updater-events``: a webhook event received by any replica updates the
Applications of every owner; each replica lists a repository its keys share once per cycle and
once per event; a registry back-off one member learned holds the others' requests too.

Replicas run as ``run --sharding --enable-webhook`` builds them, each with its own front of the
Kubernetes API fake over one store and its own counting proxy in front of the real registry
(one ``registries.conf`` per replica, same registry host), so that each replica's registry
requests are counted apart. Every wait polls with a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Collection, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from waiting import eventually

from argocd_image_updater.cli.run_cmd import (
    build_controller,
    close_resource,
    start_election,
    start_webhook,
)
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.fleet_events import FleetEvents, join_fleet
from argocd_image_updater.controller.membership import Membership
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.controller.shards import owner
from argocd_image_updater.kube.client import KubeClient
from argocd_image_updater.model.fleet_events import BACKOFFS_KEY, EVENTS_CONFIGMAP
from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater.registry.scanner import Scanner, ScanRequest
from argocd_image_updater.webhook.signatures import sign_generic
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.faulty_proxy import FaultyProxy
from argocd_image_updater_testing.kube import KubeApiServer, KubeStore
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
SECRET = "generic-webhook-s3cret"
MEMBERS = ("a", "b", "c")
TIMING = {
    "leader_election_lease_duration": timedelta(seconds=4),
    "leader_election_renew_deadline": timedelta(seconds=3),
    "leader_election_retry_period": timedelta(seconds=0.3),
}
WITHIN = 90.0
START = datetime(2026, 5, 1, tzinfo=UTC)


def sample(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@dataclass
class Replica:
    name: str
    controller: Controller
    api: KubeApiServer
    proxy: FaultyProxy
    port: int
    closers: list[Any]
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    cycles_held: list[frozenset[str]] = field(default_factory=list)
    """The keys of each full cycle that ended."""

    @property
    def shards(self) -> Membership:
        assert self.controller.shards is not None
        return self.controller.shards

    @property
    def fleet(self) -> FleetEvents:
        assert self.controller.fleet is not None
        return self.controller.fleet


class Fleet:
    """Sharded replicas with webhook servers; no periodic cycle (a cycle runs at start and
    when the member list changes)."""

    def __init__(self, tmp_path: Path, store: KubeStore, registry: RegistryServer) -> None:
        self.tmp_path, self.store, self.registry = tmp_path, store, registry
        self.replicas: dict[str, Replica] = {}

    async def start(self, name: str, monkeypatch: pytest.MonkeyPatch) -> Replica:
        api = KubeApiServer(self.store)
        await api.__aenter__()
        proxy = await FaultyProxy(self.registry.url).start()
        conf = self.tmp_path / f"registries-{name}.conf"
        conf.write_text(
            f"registries:\n- name: t\n  prefix: {self.registry.host}\n  api_url: {proxy.url}\n"
        )
        settings = resolve(
            "run",
            {
                "kubeconfig": str(
                    api.write_kubeconfig(self.tmp_path / f"kubeconfig-{name}", namespace=NS)
                ),
                "registries_conf_path": str(conf),
                "git_cache_dir": str(self.tmp_path / f"clones-{name}"),
                "sharding": True,
                "enable_webhook": True,
                "disable_tls": True,
                "webhook_ratelimit_per_source": 0,
                "interval": timedelta(hours=1),
                **TIMING,
            },
            env={"GENERIC_WEBHOOK_SECRET": SECRET},
        )
        controller, closers = await build_controller(settings)
        monkeypatch.setenv("POD_NAME", name)
        stop = asyncio.Event()
        elector = start_election(settings, controller, stop)
        assert elector is not None
        _, port = await start_webhook(settings, controller, 0, closers)
        replica = Replica(name, controller, api, proxy, port, closers, stop)
        holding = replica.shards.holding

        @contextlib.contextmanager
        def recorded(keys: Collection[str], *, full: bool = False) -> Iterator[None]:
            with holding(keys, full=full):
                yield
            if full:
                replica.cycles_held.append(frozenset(keys))

        replica.shards.holding = recorded  # type: ignore[method-assign]
        replica.tasks = [elector, asyncio.create_task(controller.run(stop=stop))]
        self.replicas[name] = replica
        return replica

    def quiet(self) -> bool:
        """Every replica is a settled member that sees all of them, follows the events
        ConfigMap and has finished a cycle of exactly its share (so with the full member list:
        no cycle runs again until something changes), to its end: what a cycle does after
        it lets its keys go (the first one settles the heap) is done and counted."""
        names = set(self.replicas)
        return all(
            r.shards.settled()
            and r.shards.view == names
            and r.fleet.following
            and r.cycles_held
            and r.cycles_held[-1] == SHARES[r.name]
            and not r.shards.claimed
            and r.controller.cycles == len(r.cycles_held)
            for r in self.replicas.values()
        )

    async def close(self) -> None:
        for replica in self.replicas.values():
            replica.stop.set()
        for replica in self.replicas.values():
            _, pending = await asyncio.wait(replica.tasks, timeout=30)
            for task in pending:
                task.cancel()
            await asyncio.gather(*replica.tasks, return_exceptions=True)
            for closer in reversed(replica.closers):
                await close_resource(closer)
            await replica.api.__aexit__(None, None, None)
            await replica.proxy.stop()
        self.replicas.clear()


def shares(per_member: int = 2) -> dict[str, frozenset[str]]:
    """Each member's keys: ``per_member`` ImageUpdaters each."""
    chosen: dict[str, set[str]] = {m: set() for m in MEMBERS}
    number = 0
    while any(len(keys) < per_member for keys in chosen.values()):
        key = f"{NS}/updater-{number:03d}"
        mine = chosen[owner(key, MEMBERS) or ""]
        if len(mine) < per_member:
            mine.add(key)
        number += 1
    return {member: frozenset(keys) for member, keys in chosen.items()}


SHARES = shares()


@pytest.fixture
async def shared_repo(registry: RegistryServer, repo: str) -> str:
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0.0", created=START)
    return repo


@pytest.fixture
def store(registry: RegistryServer, shared_repo: str) -> KubeStore:
    """Six ImageUpdaters, two owned by each member, each with an Application of the one
    shared repository."""
    store = KubeStore(namespaces=(NS,))
    image = f"{registry.host}/{shared_repo}"
    for key in sorted(set().union(*SHARES.values())):
        name = key.partition("/")[2]
        app = f"app-of-{name}"
        store.put(
            objects.application(
                app, NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
            )
        )
        ref = {"namePattern": app, "images": [{"alias": "a", "imageName": image}]}
        store.put(objects.image_updater(name, NS, {"applicationRefs": [ref]}))
    return store


@pytest.fixture
async def fleet(
    tmp_path: Path, store: KubeStore, registry: RegistryServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Fleet]:
    replicas = Fleet(tmp_path, store, registry)
    try:
        for name in MEMBERS:
            await replicas.start(name, monkeypatch)
        await eventually(replicas.quiet, "the three replicas settle", within=WITHIN)
        yield replicas
    finally:
        await replicas.close()


def images(store: KubeStore) -> dict[str, list[str]]:
    return {
        app["metadata"]["name"]: app["spec"]["source"]["kustomize"]["images"]
        for app in store.list("applications", NS)
    }


async def post_event(port: int, host: str, repository: str, tag: str) -> None:
    body = json.dumps({"registry": host, "repository": repository, "tag": tag}).encode()
    stamp = int(time.time())
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"http://127.0.0.1:{port}/webhook?type=generic",
            content=body,
            headers={
                "Content-Type": "application/json",
                "X-Timestamp": str(stamp),
                "X-Signature-256": sign_generic(SECRET, stamp, body),
            },
        )
    assert response.status_code == 200, response.text


async def test_an_event_received_by_one_replica_updates_the_applications_of_every_owner(
    fleet: Fleet, registry: RegistryServer, shared_repo: str
) -> None:
    image = f"{registry.host}/{shared_repo}"
    a, b, c = (fleet.replicas[name] for name in MEMBERS)
    cycles = {r.name: r.controller.cycles for r in (a, b, c)}
    tags = {r.name: r.proxy.counts["tags"] for r in (a, b, c)}
    sent = sample("argocd_image_updater_webhook_events_forwarded_total", {"direction": "sent"})
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(shared_repo, "1.1.0", created=START + timedelta(days=1))

    await post_event(a.port, registry.host, shared_repo, "1.1.0")

    want = [f"{image}:1.1.0"]
    await eventually(
        lambda: all(held == want for held in images(fleet.store).values()),
        "every owner updates its Applications",
        within=WITHIN,
    )
    # The event did it, not a cycle; each replica listed the repository once for it.
    assert {r.name: r.controller.cycles for r in (a, b, c)} == cycles
    assert {r.name: r.proxy.counts["tags"] - tags[r.name] for r in (a, b, c)} == {
        "a": 1,
        "b": 1,
        "c": 1,
    }
    assert (
        sample("argocd_image_updater_webhook_events_forwarded_total", {"direction": "sent"})
        == sent + 1
    )
    ring = json.loads(fleet.store.get("configmaps", NS, EVENTS_CONFIGMAP)["data"]["events.json"])
    assert [(e["member"], e["repository"], e["tag"]) for e in ring] == [("a", shared_repo, "1.1.0")]


async def test_each_replica_lists_a_repository_its_keys_share_once_per_cycle(
    fleet: Fleet, shared_repo: str
) -> None:
    replicas = list(fleet.replicas.values())
    before = {r.name: (r.controller.cycles, r.proxy.counts["tags"]) for r in replicas}
    # A spec change starts a cycle on every replica (each watches the ImageUpdaters).
    first = sorted(u["metadata"]["name"] for u in fleet.store.list("imageupdaters", NS))[0]
    updater = fleet.store.get("imageupdaters", NS, first)
    updater["spec"]["applicationRefs"][0]["images"][0]["alias"] = "renamed"
    fleet.store.put(updater)
    await eventually(
        lambda: all(r.controller.cycles > before[r.name][0] for r in replicas),
        "every replica runs a cycle",
        within=WITHIN,
    )
    await eventually(
        lambda: all(not r.shards.claimed for r in replicas), "the cycles end", within=WITHIN
    )
    for r in replicas:
        cycles = r.controller.cycles - before[r.name][0]
        listed = r.proxy.counts["tags"] - before[r.name][1]
        # At most once (a replica that does not own the repository may reuse its own last
        # listing while the owner vouches for it: test_fleet_tag_lists.py).
        assert 1 <= listed <= cycles, f"{r.name}: {listed} tag lists in {cycles} cycle(s)"


async def test_members_share_a_registry_back_off_and_divide_its_rate(
    tmp_path: Path, registry: RegistryServer, repo: str, endpoint_for: Any
) -> None:
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0.0", created=START)
    proxy = await FaultyProxy(registry.url).start()
    store = KubeStore(namespaces=(NS,))
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    async with KubeApiServer(store) as api:
        clients = [
            await KubeClient.connect(str(api.write_kubeconfig(tmp_path / f"kc-{n}", namespace=NS)))
            for n in "ab"
        ]
        scanners = [Scanner(), Scanner()]
        try:
            members, fleets = [], []
            for name, client, scanner in zip("ab", clients, scanners, strict=True):
                member = Membership(
                    client,
                    namespace=NS,
                    member=name,
                    lease_duration=1.0,
                    renew_deadline=0.6,
                    retry_period=0.1,
                )
                events = join_fleet(member, client, scanner.budget)
                members.append(member)
                fleets.append(events)
                tasks += [
                    asyncio.create_task(member.run(stop)),
                    asyncio.create_task(events.run(stop)),
                ]
            await eventually(
                lambda: (
                    all(m.settled() and m.view == {"a", "b"} for m in members)
                    and all(f.following for f in fleets)
                ),
                "both members settle",
                within=WITHIN,
            )
            # The budget is divided among the live members.
            assert [s.budget.share() for s in scanners] == [2, 2]

            endpoint = endpoint_for(proxy)
            heard = sample(
                "argocd_image_updater_registry_backoffs_shared_total", {"direction": "received"}
            )
            proxy.fail(429, kind="tags", retry_after="3")
            first = asyncio.create_task(scanners[0].scan(ScanRequest(endpoint, repo)))

            # b hears of it: its requests to the registry wait as long.
            await eventually(
                lambda: scanners[1].budget.remaining(proxy.host) > 0,
                "b holds the registry's back-off",
                within=WITHIN,
            )
            stored = json.loads(store.get("configmaps", NS, EVENTS_CONFIGMAP)["data"][BACKOFFS_KEY])
            until = datetime.fromisoformat(stored[proxy.host]["until"].replace("Z", "+00:00"))
            assert stored[proxy.host]["member"] == "a"
            second = await scanners[1].scan(ScanRequest(endpoint, repo))
            assert [t.name for t in second.tags] == ["1.0.0"]
            assert datetime.now(UTC) >= until - timedelta(milliseconds=5)  # not before it
            assert [t.name for t in (await first).tags] == ["1.0.0"]  # after its own back-off
            assert proxy.counts["tags"] == 3  # a: the 429 and its retry; b: one, once allowed
            assert (
                sample(
                    "argocd_image_updater_registry_backoffs_shared_total",
                    {"direction": "received"},
                )
                == heard + 1
            )
        finally:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            for scanner in scanners:
                await scanner.aclose()
            for client in clients:
                await client.close()
            await proxy.stop()


async def test_a_member_follows_new_entries_of_others_skips_malformed_ones_and_replays_none(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = KubeStore(namespaces=(NS,))

    def entry(ident: str, member: str, repository: str) -> dict[str, str]:
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return {"id": ident, "member": member, "time": stamp, "repository": repository}

    def put(entries: list[Any]) -> None:
        store.put(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": EVENTS_CONFIGMAP, "namespace": NS},
                "data": {"events.json": json.dumps(entries)},
            }
        )

    old = entry("old", "b", "team/old")
    put([old])
    received: list[RegistryEvent] = []
    stop = asyncio.Event()
    async with KubeApiServer(store) as api:
        config = api.write_kubeconfig(tmp_path / "kc", namespace=NS)
        async with await KubeClient.connect(str(config)) as client:
            events = FleetEvents(client, NS, "a", settled=lambda: True)
            events.receive = received.append
            task = asyncio.create_task(events.run(stop))
            try:
                await eventually(lambda: events.following, "the watch lists the ConfigMap")
                bad = {**entry("bad", "b", "team/bad"), "tag": 7}
                mine = entry("mine", "a", "team/mine")
                put([old, bad, mine, entry("new", "b", "team/new"), "not an entry"])
                await eventually(lambda: received, "the new entry arrives")
                put([old, entry("newer", "c", "team/newer")])
                await eventually(lambda: len(received) == 2, "the next entry arrives")
            finally:
                stop.set()
                await task
    assert [e.repository for e in received] == ["team/new", "team/newer"]
    warnings = [r.getMessage() for r in caplog.records if "malformed entry" in r.getMessage()]
    assert any("events.json[1]: tag: expected a string" in w for w in warnings), warnings
    assert any("events.json[4]: expected an object" in w for w in warnings), warnings
