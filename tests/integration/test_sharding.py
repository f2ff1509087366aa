"""``run --sharding`` end to end: replicas of the controller on the Kubernetes API fake (one
front per replica over one store, :mod:`replicas`) share 30 ImageUpdaters through member Leases.

Every cycle's keys are recorded with the monotonic time the cycle held them. No key is ever held by two
replicas at once, whatever joins or dies; every key is processed; a replica that starts alone
processes everything, then hands keys over as others join; a dead replica's keys go to the others
once its Lease expires. Short durations; every wait polls with a deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from replicas import NS, WITHIN, Replicas
from waiting import eventually

from argocd_image_updater.controller.leader import DEFAULT_LEASE_NAME
from argocd_image_updater.controller.membership import MEMBER_PREFIX, Membership
from argocd_image_updater.controller.shards import SHARD_LABEL, leader_lease_name
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer, KubeStore

KEYS = {f"{NS}/updater-{i:02d}" for i in range(30)}


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
async def fleet(tmp_path: Path, store: KubeStore) -> AsyncIterator[Replicas]:
    replicas = Replicas(tmp_path, store)
    replicas.keys = KEYS
    try:
        yield replicas
    finally:
        await replicas.close()


async def test_replicas_share_the_keys_and_never_hold_one_twice(fleet: Replicas) -> None:
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
    fleet: Replicas,
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


async def test_a_static_shard_processes_only_its_labelled_imageupdaters(fleet: Replicas) -> None:
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


async def test_a_member_starts_its_cycle_the_moment_it_settled(
    tmp_path: Path, store: KubeStore
) -> None:
    """The rule turns by the clock alone one lease duration after joining, between two list
    reads (a long retry period here): the work it lets start is not taken for lost."""
    from argocd_image_updater.controller.leading import run_as_leader
    from argocd_image_updater.kube.client import KubeClient

    async def work() -> str:
        for _ in range(3):  # a few turns of the event loop, as any work takes
            await asyncio.sleep(0)
        return "done"

    async with KubeApiServer(store) as api:
        config = api.write_kubeconfig(tmp_path / "kc", namespace=NS)
        async with await KubeClient.connect(str(config)) as client:
            member = Membership(
                client,
                namespace=NS,
                member="alone",
                lease_duration=1.0,
                renew_deadline=0.9,
                retry_period=0.8,
            )
            stop = asyncio.Event()
            task = asyncio.create_task(member.run(stop))
            try:
                await eventually(member.settled, "the member settles", interval=0.005)
                assert await run_as_leader(member, work(), "update cycle") == "done"
            finally:
                stop.set()
                await task


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


async def test_annotated_applications_are_keys_of_their_own(tmp_path: Path) -> None:
    store = KubeStore(namespaces=(NS,))
    annotation = {"argocd-image-updater.argoproj.io/image-list": "web=127.0.0.1:9/team/web:1.x"}
    for i in range(12):
        store.put(objects.application(f"app-{i:02d}", NS, annotations=annotation))
    fleet = Replicas(tmp_path, store)
    fleet.keys = {f"{NS}/app-{i:02d}" for i in range(12)}
    try:
        await fleet.start("a")
        await fleet.start("b")
        await eventually(lambda: fleet.partitioned("ab"), "a and b share the apps", within=WITHIN)
        assert fleet.double_holds() == []
    finally:
        await fleet.close()


@pytest.mark.system  # the chart rendered by Helm
async def test_the_install_grants_every_lease_request_a_member_makes(
    tmp_path: Path, store: KubeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member's whole life on the API (join, renew, list the others, delete the Lease of one
    long gone, release): every verb it used on Leases is granted by the chart's Role with three
    replicas and by the plain manifests' Role."""
    from argocd_image_updater.controller import membership
    from argocd_image_updater.kube.client import KubeClient

    monkeypatch.setattr(membership, "FORGET_AFTER", 1)
    gone = MEMBER_PREFIX + "gone"
    store.put(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": gone, "namespace": NS},
            "spec": {"holderIdentity": "gone", "leaseDurationSeconds": 1},
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
                await eventually(
                    lambda: (
                        member.settled()
                        and gone
                        not in {lease["metadata"]["name"] for lease in store.list("leases", NS)}
                    ),
                    "the member settled and deleted the Lease of the one gone",
                    within=WITHIN,
                )
            finally:
                stop.set()
                await task
        used = {verb for verb, resource in api.requests if resource == "leases"}
    assert used == {"create", "get", "update", "list", "delete"}
    for install, granted in lease_verbs_granted().items():
        assert used <= granted, install


def lease_verbs_granted() -> dict[str, set[str]]:
    """The verbs on Leases of the controller's namespace, by install: the chart with three
    replicas, the plain manifests."""
    import helm_python

    from argocd_image_updater_testing.manifest_checks import objects_of

    root = Path(__file__).resolve().parents[2]
    with helm_python.Chart.load(root / "charts" / "argocd-image-updater") as chart:
        rendered = chart.render({"replicaCount": 3}, name="argocd-image-updater", namespace=NS)
    installs = {
        "chart": objects_of(rendered.values()),
        "manifests/install.yaml": objects_of([(root / "manifests" / "install.yaml").read_text()]),
    }
    return {
        install: {
            verb
            for role in objs
            if role["kind"] == "Role" and role["metadata"].get("namespace", NS) == NS
            for rule in role["rules"]
            if "coordination.k8s.io" in rule["apiGroups"] and "leases" in rule["resources"]
            for verb in rule["verbs"]
        }
        for install, objs in installs.items()
    }


async def test_one_leader_and_sharded_members_never_run_side_by_side(
    tmp_path: Path, store: KubeStore
) -> None:
    """Switching between one leader and sharding under a rolling update: a member stands by while
    a replica without --sharding holds the leader Lease, and such a replica does not take the
    Lease while a member runs."""
    from argocd_image_updater.controller.leader import LeaderElector
    from argocd_image_updater.controller.lease_sightings import MembersGuard
    from argocd_image_updater.kube.client import KubeClient

    timing = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.1}
    async with KubeApiServer(store) as api:
        config = api.write_kubeconfig(tmp_path / "kc", namespace=NS)
        async with await KubeClient.connect(str(config)) as client:

            def leader() -> LeaderElector:
                guard = MembersGuard(client, NS, "", time.monotonic)
                return LeaderElector(
                    client, namespace=NS, identity="alone", may_acquire=guard.blocker, **timing
                )

            alone, alone_stop = leader(), asyncio.Event()
            alone_task = asyncio.create_task(alone.run(alone_stop))
            await eventually(alone.is_leader, "the replica without --sharding leads")
            member = Membership(client, namespace=NS, member="m", **timing)
            stop = asyncio.Event()
            task = asyncio.create_task(member.run(stop))
            try:
                await eventually(lambda: member.single_leader == "alone", "the member sees it")
                await eventually(member.elector.is_leader, "the member's Lease is renewed")
                assert not member.settled()
                alone_stop.set()  # the old replica stops (and releases the leader Lease)
                await alone_task
                await eventually(member.settled, "the member settles once it stopped")
                assert member.single_leader == ""
                # back to one leader: a new replica without --sharding waits for the member
                again, again_stop = leader(), asyncio.Event()
                again_task = asyncio.create_task(again.run(again_stop))
                try:
                    await eventually(
                        lambda: again.waiting_for.startswith("the members of a sharded fleet"),
                        "the new leader waits for the members",
                    )
                    assert not again.is_leader()
                    stop.set()
                    await task
                    await eventually(again.is_leader, "it leads once the member stopped")
                finally:
                    again_stop.set()
                    await again_task
            finally:
                stop.set()
                await task
