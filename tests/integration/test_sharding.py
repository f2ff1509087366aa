"""``run --sharding`` end to end: replicas of the controller on the Kubernetes API fake (one
front per replica over one store) share 30 ImageUpdaters through member Leases.

Every cycle's keys are recorded with the monotonic time the cycle held them (from the moment it
claimed them until it let them go: its writes all fall in between). No key is ever held by two
replicas at once, whatever joins or dies; every key is processed; a replica that starts alone
processes everything, then hands keys over as others join; a dead replica's keys go to the others
once its Lease expires. Short durations; every wait polls with a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Collection, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from waiting import eventually

from argocd_image_updater.cli.run_cmd import build_controller, close_resource, start_election
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.leader import DEFAULT_LEASE_NAME
from argocd_image_updater.controller.membership import MEMBER_PREFIX, Membership
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.controller.shards import SHARD_LABEL, leader_lease_name
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer, KubeStore

NS = "argocd"
KEYS = {f"{NS}/updater-{i:02d}" for i in range(30)}
TIMING = {
    "leader_election_lease_duration": timedelta(seconds=2),
    "leader_election_renew_deadline": timedelta(seconds=1.2),
    "leader_election_retry_period": timedelta(seconds=0.2),
}
WITHIN = 60.0


@dataclass
class Hold:
    """The keys one cycle of ``member`` held, from ``start`` to ``end`` (None: still)."""

    member: str
    keys: frozenset[str]
    start: float
    end: float | None = None


@dataclass
class Replica:
    name: str
    controller: Controller
    api: KubeApiServer
    closers: list[Any]
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class Fleet:
    def __init__(self, tmp_path: Path, store: KubeStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tmp_path, self.store, self.monkeypatch = tmp_path, store, monkeypatch
        self.holds: list[Hold] = []
        self.replicas: dict[str, Replica] = {}
        self.keys = KEYS
        conf = tmp_path / "registries.conf"
        conf.write_text("registries: []\n")
        self.conf = conf

    async def start(self, name: str, **values: Any) -> Replica:
        api = KubeApiServer(self.store)
        await api.__aenter__()
        settings = resolve(
            "run",
            {
                "kubeconfig": str(
                    api.write_kubeconfig(self.tmp_path / f"kubeconfig-{name}", namespace=NS)
                ),
                "registries_conf_path": str(self.conf),
                "git_cache_dir": str(self.tmp_path / f"clones-{name}"),
                "sharding": True,
                **TIMING,
                **values,
            },
            env={},
        )
        controller, closers = await build_controller(settings)
        controller.interval = timedelta(milliseconds=100)
        replica = Replica(name, controller, api, closers)
        self.monkeypatch.setenv("POD_NAME", name)
        elector = start_election(settings, controller, replica.stop)
        assert elector is not None
        if controller.shards is not None:
            self._record(controller.shards)
        replica.tasks = [elector, asyncio.create_task(controller.run(stop=replica.stop))]
        self.replicas[name] = replica
        return replica

    def _record(self, membership: Membership) -> None:
        """Record what ``membership`` holds, and when (observed, not changed)."""
        holding = membership.holding

        @contextlib.contextmanager
        def recorded(keys: Collection[str], *, full: bool = False) -> Iterator[None]:
            hold = Hold(membership.member, frozenset(keys), time.monotonic())
            if keys:
                self.holds.append(hold)
            try:
                with holding(keys, full=full):
                    yield
            finally:
                hold.end = time.monotonic()

        membership.holding = recorded  # type: ignore[method-assign]

    async def kill(self, name: str) -> None:
        """End a replica as a crash would: nothing released, its Lease left to expire."""
        replica = self.replicas.pop(name)
        for task in replica.tasks:
            task.cancel()
        await asyncio.gather(*replica.tasks, return_exceptions=True)
        await self._close(replica)

    async def _close(self, replica: Replica) -> None:
        for closer in reversed(replica.closers):
            await close_resource(closer)
        await replica.api.__aexit__(None, None, None)

    async def close(self) -> None:
        for replica in self.replicas.values():
            replica.stop.set()
        for replica in self.replicas.values():
            _, pending = await asyncio.wait(replica.tasks, timeout=30)
            for task in pending:
                task.cancel()
            await asyncio.gather(*replica.tasks, return_exceptions=True)
            await self._close(replica)
        self.replicas.clear()

    def latest(self, member: str, after: float = 0.0) -> frozenset[str] | None:
        """The keys of ``member``'s last finished cycle that started after ``after``."""
        done = [h for h in self.holds if h.member == member and h.end and h.start > after]
        return done[-1].keys if done else None

    def partitioned(self, members: Collection[str], after: float = 0.0) -> bool:
        """Whether the last cycles of ``members`` (started after ``after``) each had keys, and
        together had every key exactly once."""
        shares = [self.latest(member, after) for member in members]
        if any(not share for share in shares):
            return False
        return sum(len(s or ()) for s in shares) == len(self.keys) and set().union(*shares) == (
            self.keys
        )

    def double_holds(self) -> list[tuple[str, str, set[str]]]:
        """Keys held by two replicas at the same time (there must be none)."""
        now = time.monotonic()
        found = []
        for i, one in enumerate(self.holds):
            for other in self.holds[i + 1 :]:
                if one.member == other.member:
                    continue
                overlap = one.start < (other.end or now) and other.start < (one.end or now)
                if overlap and one.keys & other.keys:
                    found.append((one.member, other.member, set(one.keys & other.keys)))
        return found


@pytest.fixture
def store() -> KubeStore:
    store = KubeStore(namespaces=(NS,))
    for key in sorted(KEYS):
        name = key.partition("/")[2]
        shard = {SHARD_LABEL: "blue"} if int(name[-2:]) % 3 == 0 else None
        spec = {"applicationRefs": [{"namePattern": f"app-of-{name}", "useAnnotations": True}]}
        store.put(objects.image_updater(name, NS, spec, labels=shard))
    return store


@pytest.fixture
async def fleet(
    tmp_path: Path, store: KubeStore, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Fleet]:
    replicas = Fleet(tmp_path, store, monkeypatch)
    try:
        yield replicas
    finally:
        await replicas.close()


async def test_replicas_share_the_keys_and_never_hold_one_twice(fleet: Fleet) -> None:
    # Alone, a replica processes every key.
    await fleet.start("a")
    await eventually(lambda: fleet.latest("a") == KEYS, "a alone holds every key", within=WITHIN)

    # Two join: the keys are split three ways, each key on exactly one replica.
    joined = time.monotonic()
    await fleet.start("b")
    await fleet.start("c")
    await eventually(
        lambda: fleet.partitioned("abc", joined), "the keys split over a, b, c", within=WITHIN
    )
    assert fleet.double_holds() == []
    leases = {lease["metadata"]["name"] for lease in fleet.store.list("leases", NS)}
    assert {MEMBER_PREFIX + name for name in "abc"} <= leases

    # c dies without a word: once its Lease expired, a and b process its keys too.
    died = time.monotonic()
    c_keys = fleet.latest("c")
    await fleet.kill("c")
    await eventually(
        lambda: fleet.partitioned("ab", died), "a and b take over c's keys", within=WITHIN
    )
    assert c_keys and c_keys <= (fleet.latest("a") or set()) | (fleet.latest("b") or set())

    # d joins the running fleet and takes its share, without a restart of a or b.
    came = time.monotonic()
    await fleet.start("d")
    await eventually(lambda: fleet.partitioned("abd", came), "d takes its share", within=WITHIN)
    assert fleet.double_holds() == []


async def test_a_replica_that_stops_renewing_hands_its_keys_over_without_a_double_hold(
    fleet: Fleet,
) -> None:
    await fleet.start("a")
    b = await fleet.start("b")
    await eventually(lambda: fleet.partitioned("ab"), "a and b share the keys", within=WITHIN)
    # b's API front refuses its Lease renewals from now on: b is still running, but must stop
    # writing at its renew deadline, before a may take its keys.
    b.api.fail_next(10_000, verb="update", resource="leases", status=403)
    lost = time.monotonic()
    await eventually(lambda: fleet.latest("a", lost) == KEYS, "a holds every key", within=WITHIN)
    assert fleet.double_holds() == []


async def test_a_static_shard_processes_only_its_labelled_imageupdaters(fleet: Fleet) -> None:
    blue = {key for key in KEYS if int(key[-2:]) % 3 == 0}
    await fleet.start("blue-1", shard_selector="blue")
    await fleet.start("rest-1", shard_selector="!")
    await eventually(
        lambda: fleet.latest("blue-1") == blue and fleet.latest("rest-1") == KEYS - blue,
        "each static shard holds its own keys",
        within=WITHIN,
    )
    assert fleet.double_holds() == []
    names = {lease["metadata"]["name"] for lease in fleet.store.list("leases", NS)}
    assert DEFAULT_LEASE_NAME not in names  # sharded replicas elect no single leader


def test_each_static_shard_has_its_own_leader_lease() -> None:
    names = {leader_lease_name(s, DEFAULT_LEASE_NAME) for s in (None, "blue", "Blue", "!")}
    assert len(names) == 4
    assert leader_lease_name(None, DEFAULT_LEASE_NAME) == DEFAULT_LEASE_NAME
    assert leader_lease_name("!", DEFAULT_LEASE_NAME).startswith("shard-unlabelled-")


async def test_a_held_key_is_dropped_and_its_writes_fenced_before_its_new_owner_may_act(
    tmp_path: Path, store: KubeStore
) -> None:
    """The handover rule on two memberships: the first holds every key for a cycle under way;
    when the second joins, the first refuses the writes of the keys that move before the second
    may process anything."""
    from argocd_image_updater.controller.shards import owner
    from argocd_image_updater.kits.fence import WriteFenced, check_fence, fenced_context
    from argocd_image_updater.kube.client import KubeClient

    async with KubeApiServer(store) as api:
        clients = [
            await KubeClient.connect(
                kubeconfig=str(api.write_kubeconfig(tmp_path / f"kc-{n}", namespace=NS))
            )
            for n in "ab"
        ]
        timing = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.1}
        first = Membership(clients[0], namespace=NS, member="first", **timing)
        second = Membership(clients[1], namespace=NS, member="second", **timing)
        stop = asyncio.Event()
        tasks = [asyncio.create_task(first.run(stop))]
        try:
            await eventually(first.is_leader, "the first member settles", within=WITHIN)
            assert all(first.owns(key) for key in KEYS)
            moving = {key for key in KEYS if owner(key, ["first", "second"]) == "second"}
            assert moving and moving != KEYS

            def write() -> None:
                check_fence("writing a key")

            with first.holding(KEYS, full=True):
                fenced = fenced_context(first.is_leader, "moved")
                fenced.run(write)  # allowed: every key is the first's
                tasks.append(asyncio.create_task(second.run(stop)))
                await eventually(lambda: not first.is_leader(), "the first drops", within=WITHIN)
                dropped_while_second_unsettled = not second.settled()
                with pytest.raises(WriteFenced):
                    fenced.run(write)
            assert dropped_while_second_unsettled
            await eventually(second.is_leader, "the second settles", within=WITHIN)
            assert first.view == second.view == {"first", "second"}
            assert {key for key in KEYS if second.owns(key)} == moving
            assert not any(first.owns(key) for key in moving)
            with first.holding(KEYS - moving, full=True):
                assert first.is_leader()
        finally:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            for client in clients:
                await client.close()
        # A graceful stop releases the member Leases: the others need not wait for them.
        released = [
            lease["spec"].get("holderIdentity")
            for lease in store.list("leases", NS)
            if lease["metadata"]["name"].startswith(MEMBER_PREFIX)
        ]
        assert released == ["", ""]


async def test_the_lease_of_a_member_gone_long_ago_is_deleted(
    tmp_path: Path, store: KubeStore
) -> None:
    from argocd_image_updater.kube.client import KubeClient

    gone = MEMBER_PREFIX + "gone"
    store.put(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": gone, "namespace": NS},
            "spec": {
                "holderIdentity": "gone",
                "leaseDurationSeconds": 1,
                "renewTime": "2026-01-01T00:00:00.000000Z",
            },
        }
    )
    async with KubeApiServer(store) as api:
        config = api.write_kubeconfig(tmp_path / "kc", namespace=NS)
        async with await KubeClient.connect(str(config)) as client:
            member = Membership(
                client,
                namespace=NS,
                member="alive",
                lease_duration=1.0,
                renew_deadline=0.6,
                retry_period=0.1,
            )
            stop = asyncio.Event()
            task = asyncio.create_task(member.run(stop))
            try:

                def names() -> set[str]:
                    return {lease["metadata"]["name"] for lease in store.list("leases", NS)}

                await eventually(lambda: gone not in names(), "its Lease is deleted", within=WITHIN)
                assert MEMBER_PREFIX + "alive" in names()
                assert member.view == {"alive"}
            finally:
                stop.set()
                await task


async def test_run_flags_make_the_membership_and_the_static_shards_leader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from argocd_image_updater.cli.options import load_settings
    from argocd_image_updater.cli.run_cluster import leader_elector, shard_membership
    from argocd_image_updater.cli.run_setup import StartupError
    from argocd_image_updater.kube.client import KubeClient

    unused = KubeApiServer()  # never started: no request is made
    kube = await KubeClient.connect(str(unused.write_kubeconfig(tmp_path / "config")))
    try:
        monkeypatch.setenv("POD_NAME", "updater-5d9c-x2")
        flags = {
            "sharding": "true",
            "shard_selector": "blue",
            "leader_election_lease_duration": "30s",
        }
        membership = shard_membership(load_settings("run", dict(flags)), kube)
        assert membership.lease_name == MEMBER_PREFIX + "updater-5d9c-x2"
        assert (membership.lease_duration, membership.renew_deadline) == (30, 10)
        assert membership.shard_selector == "blue"
        assert leader_elector(load_settings("run", dict(flags)), kube).name.startswith(
            "shard-blue-"
        )
        assert leader_elector(load_settings("run", {}), kube).name == DEFAULT_LEASE_NAME
        monkeypatch.delenv("POD_NAME")
        one, other = (shard_membership(load_settings("run", {}), kube) for _ in range(2))
        assert one.member != other.member  # two processes on one machine are distinct members
        bad = load_settings("run", {"sharding": "true", "leader_election_renew_deadline": "15s"})
        with pytest.raises(StartupError, match="renew deadline < lease duration"):
            shard_membership(bad, kube)
    finally:
        await kube.close()


async def test_annotated_applications_are_keys_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = KubeStore(namespaces=(NS,))
    annotation = {"argocd-image-updater.argoproj.io/image-list": "web=127.0.0.1:9/team/web:1.x"}
    for i in range(12):
        store.put(objects.application(f"app-{i:02d}", NS, annotations=annotation))
    fleet = Fleet(tmp_path, store, monkeypatch)
    fleet.keys = {f"{NS}/app-{i:02d}" for i in range(12)}
    try:
        await fleet.start("a")
        await fleet.start("b")
        await eventually(lambda: fleet.partitioned("ab"), "a and b share the apps", within=WITHIN)
        assert fleet.double_holds() == []
    finally:
        await fleet.close()
