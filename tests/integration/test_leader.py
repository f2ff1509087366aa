"""Leader election on a coordination.k8s.io/v1 Lease of the Kubernetes API fake: one leader at a
time, takeover after death or release, and a leader that loses the API steps down before anyone
else can take over. Short durations; every wait polls with a deadline."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from argocd_image_updater.controller.leader import DEFAULT_LEASE_NAME, LeaderElector
from argocd_image_updater.kube.client import KubeClient
from argocd_image_updater_testing.kube import KubeApiServer, KubeError, KubeStore

NS = "argocd"
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
FAST = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.1}
STOP_WITHIN = 10.0  # a cancelled elector ends at its next step; this only bounds a hang


async def eventually(condition: Callable[[], bool], within: float = 30.0) -> float:
    """Poll until ``condition`` holds; returns the monotonic time it first held."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {within}s")
        await asyncio.sleep(0.005)
    return time.monotonic()


@dataclass
class Timeline:
    """Leadership changes of every elector, in order, with a shared monotonic time."""

    changes: list[tuple[float, str, bool]] = field(default_factory=list)
    leaders: set[str] = field(default_factory=set)
    overlaps: int = 0

    def hook(self, identity: str) -> Callable[[bool], None]:
        def on_change(leading: bool) -> None:
            self.changes.append((time.monotonic(), identity, leading))
            if leading:
                self.overlaps += bool(self.leaders)
                self.leaders.add(identity)
            else:
                self.leaders.discard(identity)

        return on_change

    def when(self, identity: str, leading: bool) -> float:
        return next(t for t, who, lead in self.changes if who == identity and lead == leading)


@dataclass
class Replica:
    elector: LeaderElector
    stop: asyncio.Event
    task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self.elector.run(self.stop))


class Cluster:
    """Electors, each with its own client; ``server_for`` picks the API server each one uses."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.timeline = Timeline()
        self.replicas: list[Replica] = []
        self.clients: list[KubeClient] = []

    async def replica(self, server: KubeApiServer, identity: str, **timing: Any) -> Replica:
        config = server.write_kubeconfig(self.tmp_path / f"kubeconfig-{identity}", namespace=NS)
        client = await KubeClient.connect(kubeconfig=str(config))
        self.clients.append(client)
        elector = LeaderElector(
            client,
            namespace=NS,
            identity=identity,
            on_change=self.timeline.hook(identity),
            **(timing or FAST),
        )
        replica = Replica(elector, asyncio.Event())
        self.replicas.append(replica)
        replica.start()
        return replica

    async def close(self) -> None:
        """Cancel every elector (each must end at once) and close the clients."""
        ignored = []
        for replica in self.replicas:
            if replica.task is not None and not await _cancelled_in_time(replica.task):
                ignored.append(replica.elector.identity)
                replica.stop.set()  # so that it does not outlive the test
                await asyncio.wait({replica.task}, timeout=STOP_WITHIN)
        for client in self.clients:
            await client.close()
        self.replicas.clear()
        self.clients.clear()
        assert not ignored, f"electors kept running after they were cancelled: {ignored}"


async def _cancelled_in_time(task: asyncio.Task[None]) -> bool:
    """Cancel ``task``; whether it then ends within :data:`STOP_WITHIN` seconds."""
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=STOP_WITHIN)
    return task in done


@pytest.fixture
async def server() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as fake:
        yield fake


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    electors = Cluster(tmp_path)
    yield electors
    await electors.close()


def lease(server: KubeApiServer) -> dict[str, Any]:
    spec: dict[str, Any] = server.store.get("leases", NS, DEFAULT_LEASE_NAME)["spec"]
    return spec


def takeover_of(server: KubeApiServer, old: str, new: str) -> tuple[datetime, datetime]:
    """The last ``renewTime`` ``old`` wrote and the ``acquireTime`` of ``new`` replacing it,
    from the Lease's change history."""
    store = server.store
    changes, watch = store.subscribe(store.resolve("leases"), NS, "1", asyncio.Queue())
    store.unsubscribe(watch)
    for change in changes:
        before, after = (change.old or {}).get("spec", {}), change.obj["spec"]
        if before.get("holderIdentity") == old and after.get("holderIdentity") == new:
            return _micro(before["renewTime"]), _micro(after["acquireTime"])
    raise AssertionError(f"the Lease never went from {old} to {new}")


def _micro(timestamp: str) -> datetime:
    assert MICRO.match(timestamp), timestamp
    return datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%S.%fZ")


async def test_two_replicas_elect_exactly_one_leader(
    server: KubeApiServer, cluster: Cluster
) -> None:
    a = await cluster.replica(server, "replica-a")
    b = await cluster.replica(server, "replica-b")
    await eventually(lambda: a.elector.is_leader() or b.elector.is_leader())
    leader, follower = (a, b) if a.elector.is_leader() else (b, a)
    renewals = server.request_count("update", "leases")
    await eventually(lambda: server.request_count("update", "leases") >= renewals + 5)
    assert leader.elector.is_leader() and leader.elector.leading.is_set()
    assert not follower.elector.is_leader() and follower.elector.not_leading.is_set()
    assert follower.elector.observed_holder == leader.elector.identity
    assert cluster.timeline.overlaps == 0
    spec = lease(server)
    assert spec["holderIdentity"] == leader.elector.identity
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 0
    assert MICRO.match(spec["acquireTime"]) and MICRO.match(spec["renewTime"])
    assert spec["renewTime"] > spec["acquireTime"]


async def test_a_dead_leader_is_replaced_once_its_lease_expires(
    server: KubeApiServer, cluster: Cluster
) -> None:
    a = await cluster.replica(server, "replica-a")
    await eventually(a.elector.is_leader)
    b = await cluster.replica(server, "replica-b")
    await eventually(lambda: b.elector.observed_holder == "replica-a")
    assert a.task is not None
    a.task.cancel()  # dies: stops renewing, releases nothing
    died = time.monotonic()
    with contextlib.suppress(asyncio.CancelledError):
        await a.task
    assert lease(server)["holderIdentity"] == "replica-a"
    await eventually(b.elector.is_leader)
    # Not before the lease expired: a full lease duration lies between the last renewal and the
    # takeover, as both wrote them into the Lease (1 µs: the timestamps are truncated to µs) …
    last_renewal, takeover = takeover_of(server, "replica-a", "replica-b")
    assert takeover - last_renewal >= timedelta(seconds=FAST["lease_duration"], microseconds=-1)
    # … and soon after (the moment of the change as the elector reported it, not when this test
    # polled it).
    took_over = cluster.timeline.when("replica-b", True)
    assert took_over - died <= FAST["lease_duration"] + 1.0
    spec = lease(server)
    assert spec["holderIdentity"] == "replica-b"
    assert spec["leaseTransitions"] == 1
    assert cluster.timeline.overlaps == 0


@pytest.mark.parametrize("failure", ["errors", "latency"])
async def test_a_leader_that_loses_the_api_steps_down_before_another_takes_over(
    tmp_path: Path, cluster: Cluster, failure: str
) -> None:
    store = KubeStore(namespaces=(NS,))
    async with KubeApiServer(store) as server_a, KubeApiServer(store) as server_b:
        a = await cluster.replica(server_a, "replica-a")
        await eventually(a.elector.is_leader)
        b = await cluster.replica(server_b, "replica-b")
        await eventually(lambda: b.elector.observed_holder == "replica-a")
        lost_api = time.monotonic()
        if failure == "errors":
            server_a.fail_next(100_000, resource="leases", status=503)
        else:
            server_a.set_latency(30.0, resource="leases")
        await eventually(lambda: not a.elector.is_leader())
        await eventually(b.elector.is_leader)
        timeline = cluster.timeline
        # As the electors reported the changes (not when this test polled them).
        stepped_down = timeline.when("replica-a", False)
        took_over = timeline.when("replica-b", True)
        assert stepped_down < took_over
        assert timeline.overlaps == 0
        assert stepped_down - lost_api <= FAST["renew_deadline"] + FAST["retry_period"] + 0.3
        assert lease(server_b)["holderIdentity"] == "replica-b"
        server_a.set_latency(0, resource="leases")
        await cluster.close()


async def test_release_lets_another_replica_take_over_at_once(
    server: KubeApiServer, cluster: Cluster
) -> None:
    slow = {"lease_duration": 10.0, "renew_deadline": 6.0, "retry_period": 0.1}
    a = await cluster.replica(server, "replica-a", **slow)
    await eventually(a.elector.is_leader)
    b = await cluster.replica(server, "replica-b", **slow)
    await eventually(lambda: b.elector.observed_holder == "replica-a")
    a.stop.set()
    assert a.task is not None
    await asyncio.wait_for(a.task, 5.0)
    released = time.monotonic()
    assert not a.elector.is_leader()
    await eventually(b.elector.is_leader)
    took_over = cluster.timeline.when("replica-b", True)
    assert took_over - released < 1.0  # far less than the 10 s lease
    spec = lease(server)
    assert spec["holderIdentity"] == "replica-b"
    assert spec["leaseTransitions"] == 1
    assert [(who, leading) for _, who, leading in cluster.timeline.changes] == [
        ("replica-a", True),
        ("replica-a", False),
        ("replica-b", True),
    ]


async def test_a_cancelled_elector_always_stops(server: KubeApiServer, cluster: Cluster) -> None:
    """Cancelled at many points of its loop (a Lease request in flight or just answered, a pause
    between attempts), the elector ends every time: no cancellation is lost."""
    for attempt in range(40):
        replica = await cluster.replica(server, "replica")
        assert replica.task is not None
        requests = server.request_count(resource="leases")
        deadline = time.monotonic() + 30
        # Loop step by step until 1 to 4 more Lease requests reached the server, then 0 to 6
        # steps more: the cancellation lands on a different point of the election each time.
        while server.request_count(resource="leases") < requests + 1 + attempt % 4:
            assert time.monotonic() < deadline, "the elector sent no Lease request"
            await asyncio.sleep(0)
        for _ in range(attempt % 7):
            await asyncio.sleep(0)
        assert await _cancelled_in_time(replica.task), f"cancellation {attempt} was lost"
        assert replica.task.cancelled()
        assert not replica.elector.is_leader()


async def test_a_lease_counts_from_when_its_record_was_read(
    server: KubeApiServer, cluster: Cluster
) -> None:
    """A lease renewed while a replica's read is under way counts from when the answer came, not
    from when the replica asked: on a slow API it would otherwise take over a live lease."""
    now = 0.0

    def hold(holder: str) -> None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        try:
            record = server.store.get("leases", NS, DEFAULT_LEASE_NAME)
        except KubeError:
            record = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"}
            record["metadata"] = {"name": DEFAULT_LEASE_NAME, "namespace": NS}
        record["spec"] = {"holderIdentity": holder, "leaseDurationSeconds": 10}
        record["spec"] |= {"acquireTime": stamp, "renewTime": stamp, "leaseTransitions": 0}
        server.store.put(record)

    def wall() -> datetime:
        # Called as the first attempt is about to read the Lease: another replica takes it over,
        # and the answer arrives 9 s (of the replica's clock) later.
        nonlocal now
        if now == 0.0:
            hold("intruder-2")
            now = 9.0
        return datetime.now(UTC)

    hold("intruder")
    slow = {"lease_duration": 10.0, "renew_deadline": 5.0, "retry_period": 0.1}
    b = await cluster.replica(server, "replica-b", clock=lambda: now, wall=wall, **slow)
    await eventually(lambda: b.elector.observed_holder == "intruder-2")
    now = 15.0  # 15 s after asking, 6 s after the answer: the lease of intruder-2 still runs
    reads = server.request_count("get", "leases")
    await eventually(lambda: server.request_count("get", "leases") >= reads + 3)
    assert not b.elector.is_leader()
    assert lease(server)["holderIdentity"] == "intruder-2"
    now = 19.5  # 10.5 s after the answer: expired
    await eventually(b.elector.is_leader)
    assert lease(server)["holderIdentity"] == "replica-b"


async def test_a_leader_whose_lease_is_taken_steps_down(
    server: KubeApiServer, cluster: Cluster
) -> None:
    a = await cluster.replica(server, "replica-a")
    await eventually(a.elector.is_leader)
    current = server.store.get("leases", NS, DEFAULT_LEASE_NAME)
    current["spec"]["holderIdentity"] = "intruder"
    server.store.put(current)
    await eventually(lambda: not a.elector.is_leader())
    assert a.elector.observed_holder == "intruder"
    assert lease(server)["holderIdentity"] == "intruder"


async def test_timings_must_leave_room_to_step_down(tmp_path: Path) -> None:
    unused = KubeApiServer()  # never started: no request is made
    kube = await KubeClient.connect(str(unused.write_kubeconfig(tmp_path / "config")))
    with pytest.raises(ValueError, match="renew deadline < lease duration"):
        LeaderElector(kube, namespace=NS, identity="a", lease_duration=5, renew_deadline=5)
    with pytest.raises(ValueError, match="identity"):
        LeaderElector(kube, namespace=NS, identity="")
    await kube.close()


async def test_leadership_ends_at_the_renew_deadline_even_before_the_renewal_loop_notices(
    server: KubeApiServer, cluster: Cluster
) -> None:
    """``is_leader()`` is the check made before every write: it turns False at the renew
    deadline on the elector's own clock, while the renewal loop (asleep for its retry period
    here) has not stepped down yet."""
    now = 0.0
    slow = {"lease_duration": 100.0, "renew_deadline": 60.0, "retry_period": 50.0}
    a = await cluster.replica(server, "replica-a", clock=lambda: now, **slow)
    await eventually(a.elector.is_leader)
    now = 59.999
    assert a.elector.is_leader()
    now = 60.0
    assert not a.elector.is_leader()
    assert a.elector.leading.is_set()  # not noticed yet: no callback, no event
    assert [leading for _, _, leading in cluster.timeline.changes] == [True]


async def test_run_flags_set_the_election_timings_and_bad_ones_stop_the_start(
    tmp_path: Path,
) -> None:
    from argocd_image_updater.cli.options import load_settings
    from argocd_image_updater.cli.run_cluster import leader_elector
    from argocd_image_updater.cli.run_setup import StartupError

    unused = KubeApiServer()  # never started: no request is made
    kube = await KubeClient.connect(str(unused.write_kubeconfig(tmp_path / "config")))
    defaults = leader_elector(load_settings("run", {}), kube)
    assert (defaults.lease_duration, defaults.renew_deadline, defaults.retry_period) == (15, 10, 2)
    flags = {
        "leader_election_lease_duration": "30s",
        "leader_election_renew_deadline": "20s",
        "leader_election_retry_period": "500ms",
        "leader_election_namespace": "elsewhere",
    }
    elector = leader_elector(load_settings("run", flags), kube)
    assert (elector.lease_duration, elector.renew_deadline, elector.retry_period) == (30, 20, 0.5)
    assert elector.namespace == "elsewhere"
    too_long = load_settings("run", {"leader_election_renew_deadline": "15s"})
    with pytest.raises(StartupError, match=r"renew deadline < lease duration, got 2s / 15s / 15s"):
        leader_elector(too_long, kube)
    await kube.close()
