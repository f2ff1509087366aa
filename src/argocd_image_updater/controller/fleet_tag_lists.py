"""Each repository of a sharded fleet (``run --sharding``) listed by one replica a cycle, not by
every replica whose keys use it: this replica's side of
:mod:`argocd_image_updater.registry.vouched_lists`.

Ownership: a repository listing (registry API, path, credentials) belongs to the live member
that rendezvous hashing with a bound on each member's load gives it among the listings the
static shard needs (:mod:`~argocd_image_updater.controller.listing_owners`, over the same member
list as shard keys; rendezvous hashing alone for a listing outside them). In each full cycle the
owner lists every repository it owns that any Application of its static shard uses — its own
keys' and, through :func:`~argocd_image_updater.controller.scan.scan_repositories`, the other
replicas' — and afterwards puts a heartbeat on its member Lease
(:mod:`argocd_image_updater.model.list_heartbeat`: when that cycle began, when its first began,
under which member list, which of them changed, failed or are newly its own). A repository whose
tags a full cycle found changed is also announced at once through the events ConfigMap
(:mod:`~argocd_image_updater.controller.fleet_events`), as a webhook call would be: the replicas
whose keys use it and that run the webhook server update them without waiting for their next
cycle (the others in their next cycle, their copy no longer vouched for).

Vouching: another replica reuses its own last listing of a repository in a full cycle only when
the owner's last heartbeat is fresh (at most two intervals plus a lease duration old), lists
exactly the repositories this replica expects of it under the same member list, its copy is not
older than the owner's first full cycle, and no change or failure of the repository (nor, from
the owner, a missed heartbeat or more changes than a heartbeat names) was heard since its copy
was listed. An owner's first listing of a repository it did not own at its last heartbeat (a
member joined or left, the listings needed changed) counts as a change, whatever its own copy
holds: its word cannot cover what happened before it, so a repository that moves to another
owner is never vouched for across the gap between their listings, and what the owner before
said (or a heartbeat of its that was missed) no longer matters — but the heartbeat gives the
hash of the tags that first listing found, and a copy holding the very same tags, not older than
a change heard of before, holds what the owner saw: it is used again, not listed (the others
list a repository that moved once, while its new owner's first listing has not reached them,
not once more after it). A heartbeat made before a change of the member list or of the listings
needed that this member saw first still vouches for the repositories its owner listed then and
owns now: when a member joins or leaves, the others keep reusing their copies of every
repository that kept its owner and list only those that moved.
Anything else — no heartbeat yet, a silent owner, a repository outside the listings needed when
this member's last full cycle began, a malformed annotation — and it lists the repository
itself, as without sharing. What this costs: a change seen by a replica that does not own the
repository comes with the owner's listing (plus the time its heartbeat and the event take to
arrive, the Lease retry period at most twice) instead of this replica's own listing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Final, NamedTuple
from urllib.parse import urlsplit

from argocd_image_updater.controller.listing_owners import bounded_owners, ranked
from argocd_image_updater.controller.membership import Membership
from argocd_image_updater.controller.shards import owner
from argocd_image_updater.model.list_heartbeat import (
    HEARTBEAT_ANNOTATION,
    MAX_CHANGED,
    Heartbeat,
    list_id,
    listing_hash,
    parse_heartbeat,
    set_hash,
)
from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.observe import metrics
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.registry.cache import TagListKey
from argocd_image_updater.registry.vouched_lists import COPY_MAX_AGE, VouchChecker

log = get_logger("fleet")


ASSIGNMENTS_KEPT: Final = 4
"""The owners worked out before the last changes of the member list or of the listings needed
that an owner's heartbeat may still match: a member joining or leaving while another does (a
scale-out by several, a rolling update) is one change each, seen before the owners' next
heartbeats."""


def _id(key: TagListKey) -> str:
    return list_id(key.api_url, key.repository, key.credentials_key)


def _never(key: TagListKey, listed_at: float, names: tuple[str, ...] | None = None) -> bool:
    return False


class _Match(NamedTuple):
    """An owner's first listing of a repository it gained, as its heartbeat gave it: a copy
    holding the very same tags holds what the owner saw, however old the copy."""

    digest: str
    """The :func:`~argocd_image_updater.model.list_heartbeat.listing_hash` of the tags."""
    at: float
    """When this member heard it (wall-clock seconds)."""
    heard_before: float
    """When this member last heard of a change of the repository before it: an older copy
    is not taken (the owner's listing may have raced that change)."""
    by: str
    """The owner that listed it: it counts only while that member owns the repository."""


class _Word(NamedTuple):
    """What an owner's last heartbeat says of every copy of the repositories it owns, checked
    once (its view and listings against this member's, made into one bound): a copy listed at
    ``since`` or later holds while the heartbeat is fresh (``at``), this member is settled and
    no change of the repository was heard since the copy."""

    at: float
    """When the owner's cycle began (wall-clock seconds)."""
    since: float
    """The oldest copy vouched for: the owner's ``since`` (its first full cycle), or when any
    of its repositories was last heard to have changed, whichever is later."""
    only: Mapping[str, str] | None
    """None: the owner listed what it owns now. Else it listed what it owned before the member
    list or the listings needed last changed (its heartbeat is older than that change): the
    owners then, by repository id; a copy is vouched for only where the owner was the same
    then."""


class FleetTagLists:
    """This member's part in sharing tag lists (see the module); ``max_age()``: how old the
    owner's last heartbeat may be (seconds)."""

    def __init__(
        self,
        membership: Membership,
        max_age: Callable[[], float],
        *,
        announce: Callable[[RegistryEvent], None] | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.membership, self.max_age = membership, max_age
        self._announce, self._wall = announce, wall
        self._ids: dict[TagListKey, str] = {}
        self._view: tuple[frozenset[str], str] = (frozenset(), set_hash(()))
        self._placed: dict[TagListKey, tuple[str, str | None, bool]] = {}
        """By key: its repository id, owner and whether it is assigned (:meth:`_place`)."""
        self._assigned: tuple[frozenset[str], dict[str, str]] = (frozenset(), {})
        """The owner of each repository id needed, under a member list
        (:func:`~argocd_image_updater.controller.listing_owners.bounded_owners`)."""
        self._ranks: dict[str, tuple[str, ...]] = {}
        """By repository id: the members by weight, under the member list of ``_view``."""
        self._source: frozenset[str] | None = None
        """The membership's view ``_view`` was made from."""
        self._words: dict[str, _Word | None] = {}
        """By owner: what its heartbeat vouches for (None: nothing), made when first asked for
        since its heartbeat, the member list or the listings expected of it last changed."""
        self._needed: tuple[Collection[TagListKey], str] | None = None
        """The listings ``_expected`` was worked out from and the member list's hash then."""
        # the owner's side
        self._seq = 0
        self._since: float | None = None
        """When this member's first full cycle began: it has listed every repository it owned
        in each full cycle since (see :attr:`_gained`)."""
        self._round: tuple[float, str, str] | None = None
        self._expected: dict[str, str] = {}
        """By member: the hash of the listings it should have made (see :meth:`round_begun`)."""
        self._before: list[tuple[dict[str, str], dict[str, str], str]] = []
        """The owners (by repository id), ``_expected`` and the member list's hash before each
        of the last :data:`ASSIGNMENTS_KEPT` changes of the listings needed or of the member
        list, the latest first."""
        self._gained: set[str] = set()
        """The repositories this member owns that it did not own when its last heartbeat
        went out: the first listing of each is noted as a change (its copy may be older than
        what the owner before it said), so that no copy is vouched for across the gap between
        the two owners' listings."""
        self._changed: set[str] = set()
        self._overflow = False
        self._gained_lists: dict[str, str] = {}
        """Of :attr:`_gained`, those listed well since the last heartbeat: the hash of the
        tags last listed (the heartbeat's ``gained``)."""
        # what the others said
        self._texts: dict[str, str] = {}
        self._beats: dict[str, Heartbeat] = {}
        self._heard: dict[str, float] = {}
        """By repository id: when this replica last heard it changed."""
        self._heard_of: dict[str, float] = {}
        """By member: when this replica last heard that any repository it owns may have
        changed (a heartbeat missed or first heard, or more changes than a heartbeat names)."""
        self._matches: dict[str, _Match] = {}
        """By repository id: the last first listing of a new owner heard of (see :class:`_Match`)."""
        membership.on_leases = self.observe

    def _key_id(self, key: TagListKey) -> str:
        found = self._ids.get(key)
        if found is None:
            if len(self._ids) > 100_000:
                self._ids.clear()
            found = self._ids[key] = _id(key)
        return found

    def _members(self) -> tuple[frozenset[str], str]:
        """The member list with its hash; the owners worked out (and the owners' words) are
        kept while it holds (made again only when the membership's view is another object:
        asked several times per repository a cycle)."""
        view = self.membership.view
        if view is not self._source:
            members = view | {self.membership.member}
            if members != self._view[0]:
                self._view = (members, set_hash(members))
                self._placed, self._words, self._ranks = {}, {}, {}
            self._source = view
        return self._view

    def _place(self, key: TagListKey) -> tuple[str, str | None, bool]:
        """The repository id of ``key``, its owner under the member list as it is now, and
        whether that owner lists it for the fleet (it is among the listings needed when this
        member's last full cycle began, under this member list; else its owner is given by
        rendezvous hashing alone, and lists it only if it needs it too). Kept by key while the
        member list holds: a sharded replica asks it of every listing a cycle, twice of those
        it lists."""
        members = self._members()[0]  # first: a new member list drops the places kept
        placed = self._placed.get(key)
        if placed is None:
            if len(self._placed) > 100_000:  # repositories no longer used
                self._placed.clear()
            key_id = self._key_id(key)
            assigned = self._assigned[1] if self._assigned[0] == members else {}
            by = assigned.get(key_id)
            placed = self._placed[key] = (
                (key_id, by, True) if by is not None else (key_id, owner(key_id, members), False)
            )
        return placed

    def _ranked(self, key_id: str) -> tuple[str, ...]:
        found = self._ranks.get(key_id)
        if found is None:
            if len(self._ranks) > 100_000:  # repositories no longer used
                self._ranks.clear()
            found = self._ranks[key_id] = ranked(key_id, self._view[0])
        return found

    def owns(self, key: TagListKey) -> bool:
        """Whether this member lists ``key`` for the fleet."""
        return self._place(key)[1] == self.membership.member

    # --- the owner's side ----------------------------------------------------------------------

    def round_begun(self, needed: Collection[TagListKey]) -> None:
        """A full cycle's scans begin; ``needed``: every listing the static shard needs (this
        member lists those it owns; another member's heartbeat counts only when it listed
        exactly those this member expects of it, or expected before the member list or the
        listings needed last changed: :meth:`_word`; those it owns now and did not own at its
        last heartbeat are :attr:`_gained`). ``needed`` is read, never changed, and must not be
        changed afterwards: the same object under the same member list is taken for the same
        listings (the fleet scans hand out last cycle's while nothing changed), whose hashes
        are not worked out again."""
        now, view = self._wall(), self._members()[1]
        if self._since is None:
            self._since = now  # its word covers nothing listed before its first full cycle
        last = self._needed
        if last is None or last[1] != view or (last[0] is not needed and last[0] != needed):
            members, me = self._members()[0], self.membership.member
            ids = {self._key_id(key) for key in needed}
            owners = bounded_owners(ids, members, self._ranked)
            owned = {key_id for key_id, by in self._assigned[1].items() if by == me}
            self._gained = {
                key_id
                for key_id, by in owners.items()
                if by == me and (key_id in self._gained or key_id not in owned)
            }
            if last is not None:
                before = (self._assigned[1], self._expected, last[1])
                self._before = [before, *self._before[: ASSIGNMENTS_KEPT - 1]]
            self._assigned, self._placed = (members, owners), {}
            by_owner: dict[str, list[str]] = {}
            for key_id, by in owners.items():
                by_owner.setdefault(by, []).append(key_id)
            self._expected = {member: set_hash(ids) for member, ids in by_owner.items()}
            self._needed = (needed, view)
        self._words = {}  # checked against the listings expected now
        self._round = (now, view, self._expected.get(self.membership.member, set_hash(())))

    def listed(
        self,
        key: TagListKey,
        names: tuple[str, ...] | None,
        before: tuple[str, ...] | None,
        *,
        full: bool,
    ) -> None:
        """Note a change (or failure) of a repository this member owns for the next heartbeat;
        announce a change found by a full cycle (a webhook event's was announced already). A
        first listing (no copy ``before``), and the first of a repository it did not own at its
        last heartbeat (:attr:`_gained`, whatever its copy holds), is noted as a change, neither
        counted nor announced unless it differs from the copy: nothing is known to have changed,
        only that this member's word cannot cover the time before it."""
        key_id, by, _ = self._place(key)
        if by != self.membership.member:
            return
        gained = key_id in self._gained
        if names is not None and names == before and not gained:
            return
        if len(self._changed) >= MAX_CHANGED:
            self._overflow = True
        else:
            self._changed.add(key_id)
            if gained and names is not None:
                self._gained_lists[key_id] = listing_hash(names)
            else:  # failed, or changed under a webhook event's listing since it was gained
                self._gained_lists.pop(key_id, None)
        if names is not None and (before is None or names == before):
            return
        metrics.FLEET_TAG_LISTS.labels("changed").inc()
        if full and names is not None and self._announce is not None:
            self._announce(RegistryEvent(urlsplit(key.api_url).netloc, key.repository, ""))

    def round_done(self) -> None:
        """The full cycle's scans are done: every repository owned was listed. The heartbeat
        goes out with the next renewal of the member Lease (none when the member list changed
        meanwhile: the next cycle's)."""
        if self._round is None:
            return
        at, view, listed = self._round
        self._round = None
        if view != self._members()[1]:
            return
        self._seq += 1
        changed = None if self._overflow else frozenset(self._changed)
        # Those still its own; none when the changes are too many to name (``changed`` None).
        gained = {k: h for k, h in self._gained_lists.items() if k in self._gained}
        assert self._since is not None  # set by round_begun
        beat = Heartbeat(
            self._seq, at, self._since, view, listed, changed, gained if changed is not None else {}
        )
        self._changed, self._overflow, self._gained = set(), False, set()
        self._gained_lists = {}
        self.membership.annotate(HEARTBEAT_ANNOTATION, beat.render())

    # --- what the others say -------------------------------------------------------------------

    def observe(self, annotations: Mapping[str, Mapping[str, str]]) -> None:
        """The member Leases' annotations, by member, as just read."""
        now = self._wall()
        if len(self._heard) > 100_000:  # older than any copy reused
            self._heard = {k: t for k, t in self._heard.items() if now - t < COPY_MAX_AGE}
        if len(self._matches) > 100_000:
            self._matches = {k: m for k, m in self._matches.items() if now - m.at < COPY_MAX_AGE}
        for member, found in annotations.items():
            if member == self.membership.member:
                continue
            text = found.get(HEARTBEAT_ANNOTATION, "")
            if text == self._texts.get(member):
                continue
            self._texts[member] = text
            try:
                beat = parse_heartbeat(text) if text else None
            except ValueError as err:
                log.warning(
                    "member %s: ignoring its %s annotation: %s",
                    member,
                    HEARTBEAT_ANNOTATION,
                    str(err),
                )
                beat = None
            last = self._beats.pop(member, None)
            self._words.pop(member, None)
            if beat is None:
                continue
            for found_id, digest in beat.gained.items():  # before its change is heard of
                before = self._heard.get(found_id, 0.0)
                self._matches[found_id] = _Match(digest, now, before, member)
            if last is None or beat.seq != last.seq + 1 or beat.changed is None:
                # What it said before is unknown, or it changed more than a heartbeat names: any
                # of its own repositories may have changed. Not another owner's: a repository
                # that moved from it since is named changed by its new owner's first listing.
                self._heard_of[member] = now
            else:
                for found_id in beat.changed:
                    self._heard[found_id] = now
            self._beats[member] = beat

    def vouches(
        self, key: TagListKey, listed_at: float, names: tuple[str, ...] | None = None
    ) -> bool:
        """Whether the owner of ``key``, another member, vouches for a copy listed at
        ``listed_at`` (holding ``names``): :meth:`checker`'s answer now."""
        return self.checker()(key, listed_at, names)

    def checker(self) -> VouchChecker:
        """Whether owners vouch for copies (``(key, listed_at)``), at this instant: this
        member is settled and the owner's heartbeat fresh, the copy listed no earlier than the
        owner's word covers (:meth:`_word`, kept per owner) and than the last change heard of
        its repository — or, older, holding the very tags of the owner's first listing of a
        repository it gained (:class:`_Match`) with nothing heard since. What turns by the
        clock alone is read once, and each owner's word made into the oldest copy it covers
        once, for the keys asked with nothing heard in between (a full cycle's scans answered
        at once: a few hundred)."""
        if not self.membership.settled():
            return _never
        now, max_age, me = self._wall(), self.max_age(), self.membership.member
        fresh: dict[str, _Word | None] = {}
        place, heard, matches = self._place, self._heard, self._matches

        def vouches(
            key: TagListKey, listed_at: float, names: tuple[str, ...] | None = None
        ) -> bool:
            key_id, by, assigned = place(key)
            # Not one no owner lists for the fleet (outside the listings needed), nor its own.
            if not assigned or by is None or by == me:
                return False
            try:
                word = fresh[by]
            except KeyError:
                try:  # after place(): a new member list lets go of the words kept
                    word = self._words[by]
                except KeyError:  # once per owner while its word holds
                    word = self._words[by] = self._word(by)
                word = fresh[by] = word if word is not None and now - word.at <= max_age else None
            if word is None or (word.only is not None and word.only.get(key_id) != by):
                return False
            changed_at = heard.get(key_id, 0.0)
            if listed_at >= word.since and listed_at >= changed_at:
                return True
            match = matches.get(key_id)
            return (
                match is not None
                and names is not None
                and match.by == by
                and match.at >= word.since
                and match.at >= changed_at
                and listed_at >= match.heard_before
                and listing_hash(names) == match.digest
            )

        return vouches

    def _word(self, by: str) -> _Word | None:
        """What the last heartbeat of ``by`` vouches for under this member's member list and
        the listings it expects of ``by`` (None: nothing): what :meth:`vouches` checked for each
        copy, worked out once per owner while its heartbeat, the member list and the listings
        expected hold. With the owners kept by key (:meth:`_place`) and the listings expected
        kept while the same listings are needed under the same member list (:meth:`round_begun`),
        a replica of three asking for its 500 listings a cycle (330 copies reused, from two
        owners) spends 1.3 ms on its scans at once and their bookkeeping instead of 2.1 ms (a
        timed loop over :class:`~argocd_image_updater.registry.scanner.Scanner` with this
        class, 2 vCPU AMD EPYC, CPython 3.11).

        A heartbeat older than this member's last change of the member list or of the listings
        needed (a member joined or left, a repository newly used or no longer) lists what ``by``
        owned before it, under the member list then: it vouches for the copies of the
        repositories ``by`` owned then and owns now (``only``), not for all or none."""
        beat = self._beats.get(by)
        if beat is None:
            return None
        since = max(beat.since, self._heard_of.get(by, 0.0))
        if beat.view == self._view[1] and beat.listed == self._expected.get(by):
            return _Word(beat.at, since, None)
        for owners, expected, view in self._before:
            if beat.view == view and beat.listed == expected.get(by):
                return _Word(beat.at, since, owners)
        return None
