"""Tag lists shared by a sharded fleet, with plain values: the heartbeat's format
(:mod:`argocd_image_updater.model.list_heartbeat`), when a replica reuses its own copy
(:class:`~argocd_image_updater.registry.vouched_lists.VouchedLists`) and when the owner's word
vouches for it (:class:`~argocd_image_updater.controller.fleet_tag_lists.FleetTagLists`, over a
stand-in for the membership)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Mapping

import pytest

from argocd_image_updater.controller.fleet_tag_lists import FleetTagLists
from argocd_image_updater.controller.listing_owners import bounded_owners, ranked
from argocd_image_updater.model.list_heartbeat import (
    HEARTBEAT_ANNOTATION,
    MAX_CHANGED,
    Heartbeat,
    list_id,
    parse_heartbeat,
)
from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.registry.cache import TagListKey
from argocd_image_updater.registry.vouched_lists import COPY_MAX_AGE, VouchedLists
from argocd_image_updater_testing.fleet_members import Members, Witness, exchange

KEYS = [TagListKey("https://registry.example", f"team/app-{i}", "") for i in range(12)]


def test_a_tag_list_key_is_equal_and_hashed_as_its_fields() -> None:
    one = TagListKey("https://registry.example", "team/app", "secret:ns/pull")
    same = TagListKey("https://registry.example", "team/app", "secret:ns/pull")
    assert one == same and hash(one) == hash(same) and {one: 1}[same] == 1
    assert one != TagListKey("https://registry.example", "team/app", "")
    assert len({one, same, *KEYS, *list(KEYS)}) == 1 + len(KEYS)
    assert repr(one) == (
        "TagListKey(api_url='https://registry.example', repository='team/app', "
        "credentials_key='secret:ns/pull')"
    )


# --- the heartbeat ------------------------------------------------------------------------------


def test_a_heartbeat_reads_back_as_written() -> None:
    beat = Heartbeat(3, 1764840000.25, 1764839000.0, "a" * 16, "b" * 16, frozenset({"c" * 12}))
    assert parse_heartbeat(beat.render()) == beat
    many = Heartbeat(4, 1.0, 0.0, "a" * 16, "b" * 16, None)
    assert parse_heartbeat(many.render()).changed is None
    gained = Heartbeat(5, 1.0, 0.0, "a" * 16, "b" * 16, frozenset({"c" * 12}), {"c" * 12: "d" * 16})
    assert parse_heartbeat(gained.render()) == gained


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[]", "not an object"),
        ("{", "not JSON"),
        ('{"seq": 0, "at": 1, "since": 1, "view": "v", "listed": "l", "changed": []}', "seq"),
        ('{"seq": true, "at": 1, "since": 1, "view": "v", "listed": "l", "changed": []}', "seq"),
        ('{"seq": 1, "at": "x", "since": 1, "view": "v", "listed": "l", "changed": []}', "at"),
        ('{"seq": 1, "at": 1, "since": 1e999, "view": "v", "listed": "l", "changed": []}', "since"),
        ('{"seq": 1, "at": 1, "since": 1, "view": "", "listed": "l", "changed": []}', "view"),
        ('{"seq": 1, "at": 1, "since": 1, "view": "v", "changed": []}', "listed"),
        ('{"seq": 1, "at": 1, "since": 1, "view": "v", "listed": "l", "changed": [1]}', "changed"),
        ('{"seq": 1, "at": 1, "since": 1, "view": "v", "listed": "l", "changed": "x"}', "changed"),
        (
            '{"seq": 1, "at": 1, "since": 1, "view": "v", "listed": "l", "changed": [],'
            ' "gained": {"cccccccccccc": "dddddddddddddddd"}}',
            "gained: names a repository not in changed",
        ),
        (
            '{"seq": 1, "at": 1, "since": 1, "view": "v", "listed": "l",'
            ' "changed": ["cccccccccccc"], "gained": {"cccccccccccc": "d"}}',
            "gained: not an object",
        ),
    ],
)
def test_a_malformed_heartbeat_is_refused_naming_the_field(text: str, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        parse_heartbeat(text)


def test_a_heartbeat_is_bounded() -> None:
    too_many = json.dumps(
        {"seq": 1, "at": 1, "since": 1, "view": "v", "listed": "l", "changed": ["a" * 12] * 201}
    )
    with pytest.raises(ValueError, match="changed"):
        parse_heartbeat(too_many)
    with pytest.raises(ValueError, match="longer than"):
        parse_heartbeat(" " * 17_000)


# --- reusing a copy -----------------------------------------------------------------------------


class Registry:
    def __init__(self) -> None:
        self.tags = ["1.0.0"]
        self.lists = 0
        self.fail = False

    async def list_tags(self) -> list[str]:
        self.lists += 1
        if self.fail:
            raise OSError("unreachable")
        return list(self.tags)


def run(coroutine: object) -> object:
    return asyncio.run(coroutine)  # type: ignore[arg-type]


def test_a_copy_is_reused_in_full_rounds_only_while_vouched_for_and_in_use() -> None:
    witness, registry, clock = Witness(), Registry(), [1000.0]
    lists = VouchedLists(witness, wall=lambda: clock[0])
    key = KEYS[0]

    async def names(full: bool = True) -> list[str]:
        return await lists.names(key, registry.list_tags, full=full)

    async def scenario() -> None:
        lists.new_round()
        assert await names() == ["1.0.0"] and registry.lists == 1
        witness.vouched.add(key)
        lists.new_round()
        assert await names() == ["1.0.0"] and registry.lists == 1  # reused
        registry.tags.append("1.1.0")
        assert await names(full=False) == ["1.0.0", "1.1.0"] and registry.lists == 2  # a webhook's
        lists.new_round()
        assert await names() == ["1.0.0", "1.1.0"]  # the webhook's listing is the copy now
        assert registry.lists == 2
        # Not used for a round: listed again (its owner may have stopped listing it).
        lists.new_round()
        lists.new_round()
        assert await names() == ["1.0.0", "1.1.0"] and registry.lists == 3
        lists.new_round()
        clock[0] += COPY_MAX_AGE
        assert await names() == ["1.0.0", "1.1.0"] and registry.lists == 4  # too old
        witness.vouched.clear()
        lists.new_round()
        assert await names() and registry.lists == 5

    run(scenario())
    assert witness.told[0] == (key, ("1.0.0",), None, True)
    assert witness.told[1] == (key, ("1.0.0", "1.1.0"), ("1.0.0",), False)


def test_a_failed_listing_is_told_and_raised() -> None:
    witness, registry = Witness(), Registry()
    lists = VouchedLists(witness)
    registry.fail = True
    lists.new_round()
    with pytest.raises(OSError):
        run(lists.names(KEYS[0], registry.list_tags, full=True))
    assert witness.told == [(KEYS[0], None, None, True)]


# --- vouching -----------------------------------------------------------------------------------


class Fleet:
    """Replicas ``a``, ``b``, ``c`` with a shared wall clock; :meth:`exchange` passes every
    member's Lease annotations to the others, as a membership refresh does."""

    def __init__(self) -> None:
        self.clock = [1000.0]
        names = {"a", "b", "c"}
        self.members = {name: Members(name, names) for name in names}
        self.announced: list[RegistryEvent] = []
        self.lists = {
            name: FleetTagLists(
                m,  # type: ignore[arg-type]
                lambda: 30.0,
                announce=self.announced.append,
                wall=lambda: self.clock[0],
            )
            for name, m in self.members.items()
        }

    def exchange(self) -> None:
        exchange(self.members)

    def cycle(
        self,
        listings: Mapping[TagListKey, tuple[str, ...]],
        changed: Collection[TagListKey] = (),
    ) -> None:
        """A full cycle of every member: each lists what it owns of ``listings``."""
        for lists in self.lists.values():
            lists.round_begun(listings)
            for key, names in listings.items():
                if lists.owns(key):
                    before = names if key not in changed else ("old",)
                    lists.listed(key, names, before, full=True)
            lists.round_done()
        self.clock[0] += 1

    def warmed(self, listings: Mapping[TagListKey, tuple[str, ...]]) -> float:
        """Two full cycles of every member, each heard by the others: when a copy was listed
        that the second one's heartbeats vouch for."""
        self.cycle(listings)
        self.exchange()
        copy = self.clock[0]
        self.cycle(listings)
        self.exchange()
        return copy


def owned_by(member: str, others: set[str] | None = None) -> TagListKey:
    """The first of ``KEYS`` that ``member`` lists when every key is needed, among ``others``
    (else ``a``, ``b`` and ``c``)."""
    members = frozenset(others or {"a", "b", "c"})
    ids = {list_id(k.api_url, k.repository, k.credentials_key): k for k in KEYS}
    owners = bounded_owners(ids, members, lambda key_id: ranked(key_id, members))
    return next(k for key_id, k in ids.items() if owners[key_id] == member)


def test_a_copy_is_vouched_for_once_its_owner_listed_it_after_it_was_first_heard() -> None:
    fleet = Fleet()
    key = owned_by("a")
    listings = {k: ("1.0.0",) for k in KEYS}
    b = fleet.lists["b"]
    assert not b.vouches(key, 1000.0)  # nothing heard yet
    fleet.cycle(listings)
    fleet.exchange()
    assert not b.vouches(key, 1000.0)  # listed before a's first heartbeat was heard
    copy = fleet.clock[0]
    fleet.cycle(listings)
    fleet.exchange()
    assert b.vouches(key, copy)
    assert not fleet.lists["a"].vouches(key, copy)  # its owner lists it itself
    assert HEARTBEAT_ANNOTATION in fleet.members["a"].annotations


def test_a_change_a_failure_or_a_missed_heartbeat_ends_the_vouching() -> None:
    fleet = Fleet()
    key, other = owned_by("a"), next(k for k in KEYS if k != owned_by("a"))
    listings = {k: ("1.0.0",) for k in KEYS}
    copy = fleet.warmed(listings)
    b = fleet.lists["b"]
    assert b.vouches(key, copy)
    fleet.cycle(listings, changed={key})
    fleet.exchange()
    assert not b.vouches(key, copy)  # changed since the copy
    assert [e.repository for e in fleet.announced] == [key.repository]
    assert b.vouches(key, fleet.clock[0])  # a copy listed after hearing of the change
    a_owned = [k for k in KEYS if fleet.lists["a"].owns(k)]
    # A failed listing: the others list it themselves.
    fleet.lists["a"].round_begun(listings)
    fleet.lists["a"].listed(key, None, ("1.0.0",), full=True)
    fleet.lists["a"].round_done()
    fleet.exchange()
    later = fleet.clock[0]
    assert not b.vouches(key, later - 1)
    # A heartbeat missed: nothing of a's is vouched for until listed again.
    fleet.lists["a"].round_begun(listings)
    fleet.lists["a"].round_done()
    fleet.lists["a"].round_begun(listings)
    fleet.lists["a"].round_done()
    fleet.clock[0] += 1
    fleet.exchange()
    assert not any(b.vouches(k, later) for k in a_owned)
    assert other not in a_owned or not b.vouches(other, later)


def test_no_vouching_when_the_owner_is_silent_sees_other_members_or_other_listings() -> None:
    fleet = Fleet()
    key = owned_by("a")
    listings = {k: ("1.0.0",) for k in KEYS}
    copy = fleet.warmed(listings)
    b = fleet.lists["b"]
    assert b.vouches(key, copy)
    fleet.clock[0] += 31  # older than max_age
    assert not b.vouches(key, copy)
    fleet.clock[0] -= 31
    # b expects other listings of a (an ImageUpdater a has not seen yet): a's heartbeat, from
    # before, vouches for what a owned then and owns still, never for the repository new to b
    new = TagListKey("https://registry.example", "new/one", "")
    b.round_begun({**listings, new: ()})
    assert b._place(key)[1] == "a" and b.vouches(key, copy)
    assert not b.vouches(new, copy)
    b.round_begun({**listings, new: ()})  # the same listings once more: nothing forgotten
    assert b.vouches(key, copy)
    b.round_begun(listings)
    assert b.vouches(key, copy)
    fleet.members["b"].view = frozenset({"a", "b"})  # b's view differs from a's for a moment
    assert not b.vouches(key, copy) or owned_by("a", {"a", "b"}) != key
    fleet.members["b"].view = frozenset({"a", "b", "c"})
    fleet.members["b"].is_settled = False
    assert not b.vouches(key, copy)


def test_a_malformed_heartbeat_is_no_heartbeat() -> None:
    fleet = Fleet()
    listings = {k: ("1.0.0",) for k in KEYS}
    for _ in range(2):
        fleet.cycle(listings)
        fleet.exchange()
    key, copy = owned_by("a"), fleet.clock[0] - 1
    assert fleet.lists["b"].vouches(key, copy)
    fleet.members["a"].annotations[HEARTBEAT_ANNOTATION] = '{"seq": "x"}'
    fleet.exchange()
    assert not fleet.lists["b"].vouches(key, copy)


def test_changes_beyond_the_bound_end_every_vouching_of_the_owner_and_no_other() -> None:
    """A heartbeat that names no changes because there were too many (a base image rebuilt
    for every service) ends the word of its owner for every copy listed before, and leaves the
    other owners' words as they were: the other members list its repositories again, not the
    whole fleet's."""
    fleet = Fleet()
    listings = {k: ("1.0.0",) for k in KEYS}
    copy = fleet.warmed(listings)
    a = fleet.lists["a"]
    a.round_begun(listings)
    key = owned_by("a")
    many = (TagListKey("https://registry.example", f"many/{i}", "") for i in range(5000))
    for changed in [k for k in many if a.owns(k)][: MAX_CHANGED + 1]:
        a.listed(changed, ("1.1.0",), ("1.0.0",), full=False)
    a.round_done()
    fleet.exchange()
    assert parse_heartbeat(fleet.members["a"].annotations[HEARTBEAT_ANNOTATION]).changed is None
    b = fleet.lists["b"]
    assert not b.vouches(key, copy)
    assert b.vouches(owned_by("c"), copy)  # c's word is untouched
    fleet.cycle(listings)  # a's next heartbeat, with its changes named again
    fleet.exchange()
    assert not b.vouches(key, copy)  # still older than the changes a could not name
    assert b.vouches(key, fleet.clock[0])


def test_a_vouched_copy_is_scanned_at_once_and_shared_by_the_round() -> None:
    """``Scanner.scan_at_once``: a name-only scan whose copy the owner vouches for needs no
    request and no wait, and the round's other scans of the repository get the same list."""
    from argocd_image_updater.model.registry import RegistryEndpoint
    from argocd_image_updater.registry.scanner import Scanner, ScanRequest

    endpoint = RegistryEndpoint("registry.example", "example", "https://registry.example")
    request = ScanRequest(endpoint, "team/app-0")
    key = Scanner.tag_list_key(request)
    witness = Witness()

    async def scenario() -> None:
        scanner = Scanner()
        lists = scanner.vouched = VouchedLists(witness)
        first = scanner.new_round(full=True)
        assert scanner.scan_at_once(request, first) is None  # no copy yet
        await lists.names(key, Registry().list_tags, full=True)  # as a scan would
        second = scanner.new_round(full=True)
        assert scanner.scan_at_once(request, second) is None  # not vouched for
        witness.vouched.add(key)
        found = scanner.scan_at_once(request, second)
        assert found is not None and [t.name for t in found.result.tags] == ["1.0.0"]
        metadata = ScanRequest(endpoint, "team/app-0", metadata=True)
        assert scanner.scan_at_once(metadata, second) is None  # metadata: asked for
        shared = await scanner.scan(request, second)  # the round's listing, no request
        assert shared.tags == found.result.tags
        webhook = scanner.new_round()
        assert scanner.scan_at_once(request, webhook) is None  # webhook rounds always list
        await scanner.aclose()

    run(scenario())


def test_an_owners_first_listing_of_a_repository_counts_as_a_change() -> None:
    """Its word cannot cover what happened before it listed the repository: a copy another
    member listed before that listing is not vouched for (the repository may have changed in
    between), a copy listed after it is."""
    fleet = Fleet()
    listings = {k: ("1.0.0",) for k in KEYS}
    fleet.cycle(listings)
    fleet.exchange()
    key = owned_by("a")
    a, b = fleet.lists["a"], fleet.lists["b"]
    early = fleet.clock[0]  # b's own copy, listed before a first lists the repository
    fleet.clock[0] += 1
    a.round_begun(listings)
    a.listed(key, ("1.0.0",), None, full=True)  # a's first copy of it
    a.round_done()
    fleet.exchange()
    fleet.cycle(listings)
    fleet.exchange()
    assert not b.vouches(key, early)
    assert b.vouches(key, fleet.clock[0] - 1)


def _c_leaves(fleet: Fleet, listings: Mapping[TagListKey, tuple[str, ...]]) -> TagListKey:
    """c leaves; a lists what it owns then, its first listings of c's repositories among them;
    b hears it and begins a cycle. The repository that moved from c to a."""
    a, c = fleet.lists["a"], fleet.lists["c"]
    two = frozenset({"a", "b"})
    ids = {list_id(k.api_url, k.repository, k.credentials_key): k for k in KEYS}
    after = bounded_owners(ids, two, lambda key_id: ranked(key_id, two))
    moved = next(k for key_id, k in ids.items() if c.owns(k) and after[key_id] == "a")
    fleet.members["a"].view = fleet.members["b"].view = two
    fleet.clock[0] += 1
    a.round_begun(listings)
    for key in listings:
        if a.owns(key):
            a.listed(key, listings[key], listings[key], full=True)
    a.round_done()
    fleet.exchange()
    fleet.lists["b"].round_begun(listings)
    return moved


def test_a_copy_holding_the_tags_of_a_new_owners_first_listing_is_kept() -> None:
    """A repository that moves to another owner (a member left) is named changed by its new
    owner's first listing, with the hash of the tags it listed: a copy holding the very same
    tags is still vouched for, however old; another copy, or a change heard since, is not."""
    fleet = Fleet()
    listings = {k: ("1.0.0",) for k in KEYS}
    copy = fleet.warmed(listings)
    moved = _c_leaves(fleet, listings)
    b = fleet.lists["b"]
    assert b.vouches(moved, copy, ("1.0.0",))
    assert not b.vouches(moved, copy, ("0.9.0",))
    assert not b.vouches(moved, copy)  # its tags not given
    fleet.cycle({**listings, moved: ("1.1.0",)}, changed={moved})
    fleet.exchange()
    assert not b.vouches(moved, copy, ("1.0.0",))


def test_a_copy_older_than_a_change_heard_is_not_kept_for_a_new_owners_listing() -> None:
    """c's change of a repository is heard after b's copy; c leaves, and a's first listing of
    the repository (raced with c's?) gives the tags of b's copy: b lists it all the same."""
    fleet = Fleet()
    listings = {k: ("1.0.0",) for k in KEYS}
    copy = fleet.warmed(listings)
    c = fleet.lists["c"]
    c.round_begun(listings)
    for key in listings:
        if c.owns(key):
            c.listed(key, listings[key], ("0.9.0",), full=True)
    c.round_done()
    fleet.exchange()
    moved = _c_leaves(fleet, listings)
    b = fleet.lists["b"]
    assert not b.vouches(moved, copy, ("1.0.0",))
    assert b.vouches(moved, fleet.clock[0] - 1, ("1.0.0",))


def test_a_heartbeat_missed_ends_the_vouching_of_its_owner_and_of_no_other() -> None:
    """A copy listed before a missed heartbeat of its owner is not vouched for (the heartbeat
    may have named it changed); the other owners' words hold."""
    fleet = Fleet()
    listings = {k: ("1.0.0",) for k in KEYS}
    copy = fleet.warmed(listings)
    b, c = fleet.lists["b"], fleet.lists["c"]
    assert b.vouches(owned_by("a"), copy) and b.vouches(owned_by("c"), copy)
    for _ in range(2):  # c's heartbeats: the first is never seen
        c.round_begun(listings)
        c.round_done()
    fleet.exchange()
    assert not b.vouches(owned_by("c"), copy)
    assert b.vouches(owned_by("a"), copy)
    fleet.clock[0] += 1
    assert b.vouches(owned_by("c"), fleet.clock[0])


def test_a_repository_that_moved_is_vouched_for_from_its_new_owners_first_listing_only() -> None:
    """c names a repository changed in a heartbeat b never sees, then leaves: the repository
    goes to a, whose own copy already holds the new tags. a's first listing of it as its owner
    is named a change all the same, so b's copy from before is not vouched for (nor is it by
    c's word, ended by the missed heartbeat), and b lists it itself."""
    fleet = Fleet()
    listings = {k: ("1.0.0",) for k in KEYS}
    copy = fleet.warmed(listings)
    a, b, c = (fleet.lists[name] for name in "abc")
    ids = {list_id(k.api_url, k.repository, k.credentials_key): k for k in KEYS}
    two = frozenset({"a", "b"})
    after = bounded_owners(ids, two, lambda key_id: ranked(key_id, two))
    moved = next(k for key_id, k in ids.items() if c.owns(k) and after[key_id] == "a")
    kept = next(k for key_id, k in ids.items() if a.owns(k) and after[key_id] == "a")
    assert b.vouches(moved, copy) and b.vouches(kept, copy)
    changed = {**listings, moved: ("1.0.0", "1.1.0")}
    c.round_begun(listings)
    for key in listings:
        if c.owns(key):
            c.listed(key, changed[key], listings[key], full=True)
    c.round_done()  # the heartbeat b misses
    c.round_begun(listings)
    c.round_done()
    fleet.members["a"].view = fleet.members["b"].view = two  # c is gone
    fleet.clock[0] += 1
    a.round_begun(changed)
    for key in changed:
        if a.owns(key):
            a.listed(key, changed[key], changed[key], full=True)  # its copies match
    a.round_done()
    fleet.exchange()
    b.round_begun(changed)
    assert not b.vouches(moved, copy)
    assert b.vouches(kept, copy)  # a owned it without a break
    fleet.clock[0] += 1
    assert b.vouches(moved, fleet.clock[0])  # a copy listed since
