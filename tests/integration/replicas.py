"""Replicas of the controller, built as ``run`` builds them, over one Kubernetes API fake.

One replica runs as the controller always has (no Lease of any kind); several run with
``--sharding`` and short Lease timings and share the ImageUpdaters (and v0.x-annotated
Applications) through member Leases, each named after its ``POD_NAME``.

The controller suites run over :data:`REPLICAS` (1 and 3) with the same assertions:
:meth:`Replicas.cycle` is one cycle of the fleet. It waits until every replica has settled (a
member for one lease duration, every other member in its list: each key has exactly one owner),
runs every replica's cycle at once as ``run`` does (under its membership: cancelled, and its
writes fenced, should it lose it) and adds their results up. Every cycle's keys are recorded
with the monotonic time they were held (from the moment it claimed them until it let them go:
its writes all fall in between); a fleet cycle fails when a key was held by two replicas at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Final
from unittest import mock

import pytest
from waiting import eventually

from argocd_image_updater.cli.run_cmd import build_controller, close_resource, start_election
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.fleet_scans import FleetScans
from argocd_image_updater.controller.fleet_tag_lists import FleetTagLists
from argocd_image_updater.controller.leading import run_as_leader
from argocd_image_updater.controller.membership import Membership
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.controller.shards import owner
from argocd_image_updater.pipeline.records import CycleResult
from argocd_image_updater_testing.kube import KubeApiServer, KubeStore

NS: Final = "argocd"
TIMING: Final = {
    "leader_election_lease_duration": timedelta(seconds=2),
    "leader_election_renew_deadline": timedelta(seconds=1.6),
    "leader_election_retry_period": timedelta(seconds=0.2),
}
"""Short Lease timings: a replica settles 2 s after it joined; the event loop may stall for
1.6 s before a member stops writing."""
NAMES: Final = ("r0", "r1", "r2", "r3", "r4")
"""The pods of a fleet (the suites' ImageUpdaters spread over the first three)."""
WITHIN: Final = 60.0
REPLICAS: Final = pytest.mark.parametrize("replicas", [1, 3], ids=["1-replica", "3-replicas"])
"""Run a controller test with one replica and with three sharded ones."""


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
    own_api: bool
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def membership(self) -> Membership | None:
        return self.controller.shards


class Replicas:
    """Controllers over one :class:`KubeStore`: each through ``api`` when given (request counts
    are the fleet's), else through an API front of its own (faults can be injected into one
    replica's requests). ``values``: the settings of every replica (``resolve("run", ...)``)."""

    def __init__(
        self,
        tmp_path: Path,
        store: KubeStore,
        *,
        api: KubeApiServer | None = None,
        values: Mapping[str, Any] | None = None,
        namespace: str = NS,
    ) -> None:
        self.tmp_path, self.store, self.api, self.namespace = tmp_path, store, api, namespace
        self.values = dict(values or {})
        if "registries_conf_path" not in self.values:
            conf = tmp_path / "registries.conf"
            conf.write_text("registries: []\n")
            self.values["registries_conf_path"] = str(conf)
        self.replicas: dict[str, Replica] = {}
        self.holds: list[Hold] = []
        self.keys: set[str] = set()
        """The keys :meth:`partitioned` expects."""

    # --- starting and stopping -----------------------------------------------------------------

    async def start(
        self,
        name: str,
        *,
        sharded: bool = True,
        loop: bool = True,
        interval: timedelta = timedelta(milliseconds=100),
        **values: Any,
    ) -> Replica:
        """Build replica ``name`` as ``run`` builds it; ``sharded``: with ``--sharding`` (its
        membership starts at once), else without any Lease (``run`` as it always ran);
        ``loop``: run its loop every ``interval`` (else :meth:`cycle` drives it)."""
        api, own = self.api, self.api is None
        if api is None:
            api = KubeApiServer(self.store)
            await api.__aenter__()
        config = api.write_kubeconfig(
            self.tmp_path / f"kubeconfig-{name}", namespace=self.namespace
        )
        given = {**self.values, **values}
        if sharded:
            given.update(TIMING, sharding=True, once=False)
            clones = given.get("git_cache_dir", self.tmp_path / "clones")
            given["git_cache_dir"] = f"{clones}-{name}"  # a pod's own disk
        settings = resolve("run", {**given, "kubeconfig": str(config)}, env={})
        controller, closers = await build_controller(settings)
        replica = Replica(name, controller, api, closers, own)
        self.replicas[name] = replica
        if sharded:
            with mock.patch.dict(os.environ, {"POD_NAME": name}):
                elector = start_election(settings, controller, replica.stop)
            assert elector is not None and controller.shards is not None
            self._record(controller.shards)
            replica.tasks.append(elector)
        if loop:
            controller.interval = interval
            replica.tasks.append(asyncio.create_task(controller.run(stop=replica.stop)))
        return replica

    def run(self, interval: timedelta) -> None:
        """Start every replica's loop (a cycle every ``interval`` and on the triggers of ``run``)."""
        for replica in self.replicas.values():
            replica.controller.interval = interval
            task = asyncio.create_task(replica.controller.run(stop=replica.stop))
            replica.tasks.append(task)

    def running(self) -> bool:
        """Whether every replica's tasks still run (fails naming the one that ended)."""
        for replica in self.replicas.values():
            for task in replica.tasks:
                assert not task.done(), (replica.name, task)
        return True

    async def kill(self, name: str) -> None:
        """End a replica as a crash would: nothing released, its Lease left to expire."""
        replica = self.replicas.pop(name)
        for task in replica.tasks:
            task.cancel()
        await asyncio.gather(*replica.tasks, return_exceptions=True)
        await self._close(replica)

    async def close(self) -> None:
        """Stop every replica gracefully (their member Leases are released)."""
        for replica in self.replicas.values():
            replica.stop.set()
        for replica in self.replicas.values():
            if replica.tasks:
                _, pending = await asyncio.wait(replica.tasks, timeout=30)
                for task in pending:
                    task.cancel()
                await asyncio.gather(*replica.tasks, return_exceptions=True)
            await self._close(replica)
        self.replicas.clear()

    async def _close(self, replica: Replica) -> None:
        for closer in reversed(replica.closers):
            await close_resource(closer)
        if replica.own_api:
            await replica.api.__aexit__(None, None, None)

    # --- one fleet cycle -----------------------------------------------------------------------

    @property
    def controllers(self) -> list[Controller]:
        return [replica.controller for replica in self.replicas.values()]

    def _memberships(self) -> list[Membership]:
        return [r.membership for r in self.replicas.values() if r.membership is not None]

    def settled(self) -> bool:
        """Every member settled, each with every other in its member list: every key has
        exactly one owner, and that owner may process it."""
        members = self._memberships()
        names = {m.member for m in members}
        return all(m.settled() and m.view == names for m in members)

    async def settle(self) -> None:
        await eventually(self.settled, "every replica settled, knowing the others", within=WITHIN)

    def owners(self, keys: Collection[str]) -> set[str]:
        """The replicas that own ``keys`` (``namespace/name``) once the fleet settled."""
        names = {m.member for m in self._memberships()}
        if not names:
            return set(self.replicas)
        return {found for key in keys if (found := owner(key, names)) is not None}

    async def cycle(self) -> CycleResult:
        """One cycle of every replica, at once, once they settled; their results added up."""
        await self.settle()
        outcomes = await asyncio.gather(
            *(
                run_as_leader(controller.elector, controller.cycle(), "update cycle")
                for controller in self.controllers
            ),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        assert self.double_holds() == []
        return merged([o for o in outcomes if isinstance(o, CycleResult)])

    async def heard(self) -> None:
        """Wait until the heartbeat of every member's last cycle (its word on the repositories
        it lists for the fleet) is read by the others; nothing to wait for with one replica."""

        def lists(replica: Replica) -> FleetTagLists | None:
            scans = replica.controller.fleet_scans
            return scans.lists if isinstance(scans, FleetScans) else None

        given = {name: found._seq for name, r in self.replicas.items() if (found := lists(r))}

        def done() -> bool:
            for name in given:
                found = lists(self.replicas[name])
                seen = found._beats if found is not None else {}
                for other, seq in given.items():
                    if other != name and (other not in seen or seen[other].seq < seq):
                        return False
            return True

        await eventually(done, "every replica read the others' last heartbeats", within=WITHIN)

    # --- what each replica held ------------------------------------------------------------------

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

    def latest(self, member: str, after: float = 0.0) -> frozenset[str] | None:
        """The keys of ``member``'s last finished cycle that started after ``after``."""
        done = [h for h in self.holds if h.member == member and h.end and h.start > after]
        return done[-1].keys if done else None

    def partitioned(self, members: Collection[str], after: float = 0.0) -> bool:
        """Whether the last cycles of ``members`` (started after ``after``) each had keys, and
        together had every key of :attr:`keys` exactly once."""
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


def merged(results: Sequence[CycleResult]) -> CycleResult:
    """The replicas' cycle results as one: every Application's outcome, the scans and errors
    added up, the longest duration."""
    if len(results) == 1:
        return results[0]
    return CycleResult(
        apps=[app for result in results for app in result.apps],
        scans=sum(result.scans for result in results),
        duration=max((result.duration for result in results), default=0.0),
        config_errors=sum(result.config_errors for result in results),
    )


async def start_replicas(
    count: int, kube: KubeApiServer, tmp_path: Path, **values: Any
) -> Replicas:
    """``count`` replicas over ``kube`` with the settings ``values``, driven by
    :meth:`Replicas.cycle`: one as the controller always ran, more with ``--sharding``."""
    fleet = Replicas(tmp_path, kube.store, api=kube, values=values)
    try:
        for name in NAMES[:count]:
            await fleet.start(name, sharded=count > 1, loop=False)
    except BaseException:
        await fleet.close()
        raise
    return fleet
