"""What an owner's word vouches for, worked out once per owner
(:meth:`~argocd_image_updater.controller.fleet_tag_lists.FleetTagLists.vouches`), against the
per-copy computation it replaces, across heartbeats, member lists, listings expected, missed
heartbeats, changes, failures, the clock and the membership settling; and a copy reused by a
scan, held as the round's listing without a task (:class:`~argocd_image_updater.registry.scanner.
Scanner`)."""

from __future__ import annotations

import asyncio
import random
import sys
from collections.abc import Collection

import pytest

from argocd_image_updater.controller.fleet_tag_lists import ASSIGNMENTS_KEPT, FleetTagLists
from argocd_image_updater.controller.listing_owners import bounded_owners, ranked
from argocd_image_updater.model.list_heartbeat import list_id, listing_hash, set_hash
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.observe.metrics import CACHE_HITS, CACHE_MISSES, FLEET_TAG_LISTS
from argocd_image_updater.registry.cache import TagListKey
from argocd_image_updater.registry.scanner import Scanner, ScanRequest
from argocd_image_updater.registry.vouched_lists import VouchedLists
from argocd_image_updater_testing.fleet_members import Members, Witness, exchange

KEYS = [TagListKey("https://registry.example", f"team/app-{i}", "") for i in range(16)]
NAMES = ("a", "b", "c", "d")
MAX_AGE = 30.0


def _key_id(key: TagListKey) -> str:
    return list_id(key.api_url, key.repository, key.credentials_key)


class Reference:
    """The per-copy computation of every check, from scratch (no owner, hash or word kept),
    over what the member heard (its heartbeats and changes) and the listings it expected of
    each owner when its last full cycle began."""

    def __init__(self, lists: FleetTagLists) -> None:
        self.lists = lists
        self.expected: dict[str, str] = {}
        self.owners: tuple[frozenset[str], dict[str, str]] = (frozenset(), {})
        self.ids: set[str] | None = None
        self.before: list[tuple[dict[str, str], dict[str, str], str]] = []
        """The owners, listings expected and member list's hash before each of the last
        changes of the listings needed or of the member list (the latest first)."""

    def round_begun(self, needed: Collection[TagListKey]) -> None:
        members = self.lists.membership.view | {self.lists.membership.member}
        ids = {_key_id(key) for key in needed}
        owners = bounded_owners(ids, members, lambda key_id: ranked(key_id, members))
        if self.ids is not None and (members != self.owners[0] or ids != self.ids):
            before = (self.owners[1], self.expected, set_hash(self.owners[0]))
            self.before = [before, *self.before][:ASSIGNMENTS_KEPT]
        self.owners, self.ids = (members, owners), ids
        by_owner: dict[str, list[str]] = {}
        for key_id, by in owners.items():
            by_owner.setdefault(by, []).append(key_id)
        self.expected = {by: set_hash(ids) for by, ids in by_owner.items()}

    def vouches(
        self, key: TagListKey, listed_at: float, now: float, names: tuple[str, ...]
    ) -> bool:
        lists, membership = self.lists, self.lists.membership
        if not membership.settled():
            return False
        members = membership.view | {membership.member}
        key_id = _key_id(key)
        assigned = self.owners[1] if self.owners[0] == members else {}
        by = assigned.get(key_id)  # a listing outside them: no owner lists it for the fleet
        if by is None or by == membership.member:
            return False
        beat = lists._beats.get(by)
        before = self.before
        heard_of, heard = lists._heard_of.get(by, 0.0), lists._heard.get(key_id, 0.0)
        match = lists._matches.get(key_id)
        return (
            beat is not None
            and (
                (beat.view == set_hash(members) and beat.listed == self.expected.get(by))
                # listed before the listings needed or the member list changed: what it owned
                # then and owns now
                or any(
                    beat.view == view
                    and beat.listed == expected.get(by)
                    and owners.get(key_id) == by
                    for owners, expected, view in before
                )
            )
            and now - beat.at <= MAX_AGE
            and (
                (listed_at >= beat.since and listed_at >= heard_of and listed_at >= heard)
                # older, but holding the tags of the new owner's first listing
                or (
                    match is not None
                    and match.by == by
                    and match.at >= max(beat.since, heard_of, heard)
                    and listed_at >= match.heard_before
                    and listing_hash(names) == match.digest
                )
            )
        )


class Fleet:
    """Four replicas with a shared wall clock, each with a view of the fleet of its own."""

    def __init__(self) -> None:
        self.clock = [1000.0]
        self.members = {name: Members(name, NAMES) for name in NAMES}
        self.lists = {
            name: FleetTagLists(
                m,  # type: ignore[arg-type]
                lambda: MAX_AGE,
                announce=lambda event: None,
                wall=lambda: self.clock[0],
            )
            for name, m in self.members.items()
        }
        self.reference = {name: Reference(lists) for name, lists in self.lists.items()}
        self.needed: dict[str, set[TagListKey]] = {name: set(KEYS[:12]) for name in NAMES}

    def exchange(self) -> None:
        exchange(self.members)

    def cycle(self, name: str, rng: random.Random, *, done: bool = True) -> None:
        lists = self.lists[name]
        needed = self.needed[name]
        lists.round_begun(needed)
        self.reference[name].round_begun(needed)
        for key in needed:
            if lists.owns(key):
                fate = rng.random()
                names = None if fate < 0.05 else ("1.0.0",)
                before = ("0.9.0",) if fate > 0.9 else ("1.0.0",)
                lists.listed(key, names, before, full=True)
        if done:
            lists.round_done()


def _step(fleet: Fleet, rng: random.Random) -> None:
    name = rng.choice(NAMES)
    what = rng.random()
    if what < 0.35:
        fleet.cycle(name, rng)
    elif what < 0.5:
        fleet.exchange()
    elif what < 0.65:
        fleet.clock[0] += rng.choice((0.5, 1.0, 5.0, 12.0, 31.0))
    elif what < 0.72:
        fleet.cycle(name, rng, done=False)  # a heartbeat missed
    elif what < 0.8:  # its view changes (a member seen gone, or back)
        others = [n for n in NAMES if n != name]
        fleet.members[name].view = frozenset(
            {name, *rng.sample(others, rng.randint(1, len(others)))}
        )
    elif what < 0.86:
        fleet.members[name].is_settled = not fleet.members[name].is_settled
    elif what < 0.93:  # another ImageUpdater seen, or one gone: other listings needed
        needed = set(rng.sample(KEYS, rng.randint(8, len(KEYS))))
        # seen by every member, or by this one first (the owners differ until the others see it)
        for seen_by in NAMES if rng.random() < 0.7 else (name,):
            fleet.needed[seen_by] = set(needed)
    else:  # the same listings, as another object
        fleet.needed[name] = set(fleet.needed[name])


@pytest.mark.parametrize("seed", range(12))
def test_an_owners_word_vouches_for_exactly_what_each_check_per_copy_did(seed: int) -> None:
    rng = random.Random(seed)
    fleet = Fleet()
    vouched = 0
    for _ in range(250):
        _step(fleet, rng)
        now = fleet.clock[0]
        times = (now - 40.0, now - 12.0, now - 5.0, now - 1.0, now - 0.5, now)
        for name, lists in fleet.lists.items():
            reference = fleet.reference[name]
            for key in KEYS:
                for listed_at in times:
                    # the tags the owners list, but in the copies made 5 s ago
                    names = ("0.9.0",) if listed_at == now - 5.0 else ("1.0.0",)
                    expected = reference.vouches(key, listed_at, now, names)
                    assert lists.vouches(key, listed_at, names) == expected, (name, key, listed_at)
                    vouched += expected
    assert vouched > 0  # the scenario vouches for copies, not only refuses them


def test_the_word_turns_with_the_clock_and_the_membership_at_each_call() -> None:
    """A word kept for an owner still checks, at each call, that its heartbeat is fresh and
    that this member is settled: no copy is reused after either turned within a cycle."""
    fleet, rng = Fleet(), random.Random(1)
    for _ in range(2):
        for name in NAMES:
            fleet.cycle(name, rng)
        fleet.exchange()
        fleet.clock[0] += 1
    b = fleet.lists["b"]
    key = next(k for k in KEYS[:12] if not b.owns(k) and b.vouches(k, fleet.clock[0] - 1))
    copy = fleet.clock[0] - 1
    fleet.members["b"].is_settled = False
    assert not b.vouches(key, copy)
    fleet.members["b"].is_settled = True
    assert b.vouches(key, copy)
    fleet.clock[0] += MAX_AGE
    assert not b.vouches(key, copy)  # the owner's heartbeat is too old now


def test_the_listings_expected_are_worked_out_again_for_other_listings_or_member_list() -> None:
    fleet, rng = Fleet(), random.Random(2)
    b = fleet.lists["b"]
    needed = fleet.needed["b"]
    fleet.cycle("b", rng)
    expected = b._expected
    fleet.cycle("b", rng)
    assert b._expected is expected  # the same listings: not worked out again
    fleet.needed["b"] = set(needed)
    fleet.cycle("b", rng)
    assert b._expected is expected  # equal listings as another object: nor then
    fleet.needed["b"] = set(needed) - {next(iter(needed))}
    fleet.cycle("b", rng)
    assert b._expected != expected  # other listings: worked out again
    expected = b._expected
    fleet.members["b"].view = frozenset({"a", "b"})
    fleet.cycle("b", rng)
    assert b._expected != expected


def test_a_heartbeat_from_before_the_needs_changed_vouches_for_what_kept_its_owner() -> None:
    """A repository newly needed, seen by one member before the owners' next heartbeats,
    changes what that member expects of the owner it goes to: the copies of the repositories
    that owner listed then and owns still are vouched for (the member does not list them all
    itself), those of the new repository and of any that moved are not."""
    fleet, rng = Fleet(), random.Random(3)
    for name in NAMES:
        fleet.cycle(name, rng)
    fleet.exchange()
    b = fleet.lists["b"]
    copy = fleet.clock[0]  # listed after every change heard
    old = {key: b._place(key)[1] for key in KEYS[:12]}
    assert all(b.vouches(key, copy) for key, by in old.items() if by != "b")
    expected = dict(b._expected)

    fleet.needed["b"] = set(KEYS[:13])  # seen by b alone: the others list as before
    fleet.cycle("b", rng)
    new = KEYS[12]
    taker = b._place(new)[1]
    assert taker != "b" and b._expected[taker] != expected[taker]  # what b expects changed
    kept = [key for key, by in old.items() if by == taker and b._place(key)[1] == taker]
    assert kept  # listed by the taker in its last heartbeat, and still its own
    assert all(b.vouches(key, copy) for key in kept)
    assert not b.vouches(new, copy)  # nobody listed it yet
    moved = [key for key, by in old.items() if b._place(key)[1] not in (by, "b")]
    assert not any(b.vouches(key, copy) for key in moved)


def _steady_cycle(fleet: Fleet, name: str) -> None:
    """A full cycle of ``name`` whose listings all match its copies."""
    lists = fleet.lists[name]
    lists.round_begun(fleet.needed[name])
    for key in fleet.needed[name]:
        if lists.owns(key):
            lists.listed(key, ("1.0.0",), ("1.0.0",), full=True)
    lists.round_done()


@pytest.mark.parametrize("lists", [("abc", "abcd"), ("abcd", "abd"), ("ab", "abc", "abcd")])
def test_a_change_of_the_member_list_leaves_the_copies_of_what_kept_its_owner_vouched_for(
    lists: tuple[str, ...],
) -> None:
    """Members join or leave (one after the other, each change seen by b before any heartbeat
    under it): b's cycles still reuse its copies of the repositories whose owner is the same
    (the owners' heartbeats under the member list before), and keep reusing them after the
    owners' next heartbeats (an owner's word covers what it owned without a break); the copies
    of the repositories that moved are not, until their new owner listed them (its first
    listing of each is noted as a change, although its own copy matches)."""
    first, *changes = lists
    then = changes[-1]
    fleet = Fleet()
    for name in NAMES:
        fleet.members[name].view = frozenset(first)
    for name in first:
        _steady_cycle(fleet, name)
    fleet.exchange()
    fleet.clock[0] += 1
    copy = fleet.clock[0]  # b's copies, listed after every change heard
    b = fleet.lists["b"]
    old = {key: b._place(key)[1] for key in KEYS[:12]}
    assert all(b.vouches(key, copy) for key, by in old.items() if by != "b")

    for members in changes:
        for name in NAMES:
            fleet.members[name].view = frozenset(members)
        fleet.clock[0] += 1
        b.round_begun(fleet.needed["b"])  # before any heartbeat under the new member list
    new = {key: b._place(key)[1] for key in KEYS[:12]}
    kept = [key for key in KEYS[:12] if old[key] == new[key] != "b"]
    moved = [key for key in KEYS[:12] if new[key] not in (old[key], "b")]
    assert kept and moved
    assert all(b.vouches(key, copy) for key in kept)
    assert not any(b.vouches(key, copy) for key in moved)

    for name in then:
        if name != "b":
            _steady_cycle(fleet, name)
    fleet.exchange()
    assert all(b.vouches(key, copy) for key in kept)
    assert not any(b.vouches(key, copy) for key in moved)
    assert all(b.vouches(key, fleet.clock[0]) for key in moved)  # a copy listed since
    for name in then:  # the next heartbeats name no change: nothing more is refused
        _steady_cycle(fleet, name)
    fleet.exchange()
    assert all(b.vouches(key, copy) for key in kept)


# --- a reused copy, held as the round's listing -------------------------------------------------


class Client:
    def __init__(self) -> None:
        self.lists = 0

    async def list_tags(self, repository: str, credentials: object = None) -> list[str]:
        self.lists += 1
        await asyncio.sleep(0)
        return ["".join(("1.", "0.0")), "".join(("1.", "1.0"))]  # strings not interned


def _count(counter: object, label: str) -> float:
    return counter.labels(label)._value.get()  # type: ignore[attr-defined, no-any-return]


def test_a_vouched_copy_scanned_with_metadata_is_reused_without_a_task_counted_as_before() -> None:
    endpoint = RegistryEndpoint("registry.example", "example", "https://registry.example")
    request = ScanRequest(endpoint, "team/app-0", metadata=True)
    key = Scanner.tag_list_key(request)
    witness, client = Witness(), Client()

    async def scenario() -> None:
        scanner = Scanner()
        scanner.vouched = VouchedLists(witness)
        scanner.client = lambda endpoint: client  # type: ignore[method-assign, assignment, return-value]
        scanner._fetch_all = _no_metadata  # type: ignore[method-assign, assignment]
        first = scanner.new_round(full=True)
        await scanner.scan(request, first)
        assert client.lists == 1 and witness.asked == 0  # no copy yet: nothing asked
        witness.vouched.add(key)
        second = scanner.new_round(full=True)
        misses, hits = _count(CACHE_MISSES, "tags"), _count(CACHE_HITS, "tags")
        reused = _count(FLEET_TAG_LISTS, "reused")
        tasks = len(asyncio.all_tasks())
        found = await scanner.scan(request, second)
        assert len(asyncio.all_tasks()) == tasks  # no listing task
        assert client.lists == 1 and found.listed == 2
        assert _count(CACHE_MISSES, "tags") == misses + 1  # the miss the listing would have been
        assert _count(CACHE_HITS, "tags") == hits
        assert _count(FLEET_TAG_LISTS, "reused") == reused + 1
        names = scanner._tag_lists.finished(key, second)
        assert names is not None and all(name is sys.intern(name) for name in names)
        again = await scanner.scan(request, second)  # the round's listing, asked no more
        assert again.listed == 2 and witness.asked == 1
        witness.vouched.clear()
        third = scanner.new_round(full=True)
        await scanner.scan(request, third)
        assert client.lists == 2 and witness.asked == 2  # asked once, then listed
        webhook = scanner.new_round()
        witness.vouched.add(key)
        await scanner.scan(request, webhook)
        assert client.lists == 3 and witness.asked == 2  # webhook rounds always list
        await scanner.aclose()

    asyncio.run(scenario())


async def _no_metadata(*args: object, **kwargs: object) -> list[object]:
    return []


class Credentials:
    """A stand-in for the credentials cache, counting what it is asked."""

    def __init__(self) -> None:
        self.asked = 0

    def for_job(self, endpoint: object, pull_secret: object, namespace: str) -> None:
        self.asked += 1


def test_a_scan_not_answered_at_once_is_scanned_with_the_request_made_for_it() -> None:
    """A sharded replica's scans: those of a copy reused are answered at once, the others
    listed, each with the one request made for it (the credentials asked once per scan)."""
    from types import SimpleNamespace

    from argocd_image_updater.controller.scan import _Scans
    from argocd_image_updater.plan.choices import ScanResults
    from argocd_image_updater.plan.scans import ScanKey

    endpoint = RegistryEndpoint("registry.example", "example", "https://registry.example")
    witness, client, credentials = Witness(), Client(), Credentials()
    jobs = {
        ScanKey(endpoint.api_url, f"team/app-{i}", "", False, (), ()): SimpleNamespace(
            endpoint=endpoint, pull_secret=None, repository=f"team/app-{i}"
        )
        for i in range(4)
    }

    async def scenario() -> None:
        scanner = Scanner()
        scanner.vouched = VouchedLists(witness)
        scanner.client = lambda endpoint: client  # type: ignore[method-assign, assignment, return-value]
        first = scanner.new_round(full=True)
        for key in jobs:  # copies of every listing
            await scanner.scan(ScanRequest(endpoint, key.repository), first)
        witness.vouched = {
            Scanner.tag_list_key(ScanRequest(endpoint, "team/app-0")),
            Scanner.tag_list_key(ScanRequest(endpoint, "team/app-1")),
        }
        second = scanner.new_round(full=True)
        assert second > first
        results = ScanResults()
        scans = _Scans(scanner, credentials, 4, results)  # type: ignore[arg-type]
        waiting = [key for key, job in jobs.items() if not scans.at_once(key, job, "ns", second)]  # type: ignore[arg-type]
        assert [key.repository for key in waiting] == ["team/app-2", "team/app-3"]
        await asyncio.gather(*(scans.run(key, jobs[key], "ns", second) for key in waiting))  # type: ignore[arg-type]
        assert credentials.asked == len(jobs)  # once per scan
        assert client.lists == len(jobs) + 2
        assert all(not isinstance(result, Exception) for result in results.values())
        assert len(results) == len(jobs)
        await scanner.aclose()

    asyncio.run(scenario())
