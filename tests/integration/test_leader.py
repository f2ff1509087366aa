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
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s

from argocd_image_updater.controller.leader import DEFAULT_LEASE_NAME, LeaderElector
from argocd_image_updater.kube.client import KubeClient
from argocd_image_updater_testing.kube import KubeApiServer, KubeStore

NS = "argocd"
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
FAST = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.1}


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

    async def replica(self, server: KubeApiServer, identity: str, **timing: float) -> Replica:
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
        for replica in self.replicas:
            if replica.task is not None and not replica.task.done():
                replica.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await replica.task
        for client in self.clients:
            await client.close()
        self.replicas.clear()
        self.clients.clear()


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
    # The moment of the change as the elector reported it (not when this test polled it).
    took_over = cluster.timeline.when("replica-b", True)
    # not before the lease expired (it was renewed at most one retry period before death) …
    assert took_over - died >= FAST["lease_duration"] - 2 * FAST["retry_period"]
    # … and soon after
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


async def test_timings_must_leave_room_to_step_down() -> None:
    kube = KubeClient(k8s.ApiClient(), NS)
    with pytest.raises(ValueError, match="renew deadline < lease duration"):
        LeaderElector(kube, namespace=NS, identity="a", lease_duration=5, renew_deadline=5)
    with pytest.raises(ValueError, match="identity"):
        LeaderElector(kube, namespace=NS, identity="")
    await kube.close()
