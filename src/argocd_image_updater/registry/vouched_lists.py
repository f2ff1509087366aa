"""Tag lists a replica of a sharded fleet does not ask the registry for again, because the
replica that owns the repository vouches that they did not change.

Every replica of a sharded fleet (``run --sharding``) needs the tags of nearly every repository
when each repository is used by ImageUpdaters of several replicas, so without sharing each
replica lists every repository every cycle: the fleet lists each one N times and each replica
spends as much CPU on it as a single replica. Instead each repository (a :class:`TagListKey`)
has one owner among the live members, which lists it every full cycle and tells the others,
through its member Lease, which of the repositories it owns changed
(:mod:`argocd_image_updater.controller.fleet_tag_lists`, the :class:`TagListWitness`). A
replica keeps its own last listing of each repository (:class:`VouchedLists`) and, in a full
cycle, uses it again instead of a request while the owner vouches for it; it lists the
repository itself when the owner does not (unknown, silent, in another view of the fleet, or
the repository changed or failed since this copy was listed), when its copy was not used in
its previous full cycle, and at least every :data:`COPY_MAX_AGE` seconds. Webhook-triggered
rounds always list.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Final, Protocol

from argocd_image_updater.observe import metrics
from argocd_image_updater.registry.cache import LruDict, TagListKey

COPY_MAX_AGE: Final = 900.0
"""Seconds after which a replica lists a repository itself although its owner vouches for its
copy: bounds what no owner can see (a tag pushed and deleted again between two of the owner's
listings, seen by this replica's listing in between)."""


VouchChecker = Callable[[TagListKey, float, tuple[str, ...] | None], bool]
"""Whether a copy of ``key`` listed at ``listed_at`` (wall-clock seconds), holding ``names``
(None: not given), still holds: :meth:`TagListWitness.vouches` asked at one instant."""


class TagListWitness(Protocol):
    """Another replica's word on the tags of the repositories it owns, and this replica's word
    on its own (the controller's side of a sharded fleet)."""

    def vouches(
        self, key: TagListKey, listed_at: float, names: tuple[str, ...] | None = None
    ) -> bool:
        """Whether a listing of ``key`` made at ``listed_at`` (wall-clock seconds), which gave
        ``names``, still holds: its owner, another replica, listed it since and saw no change
        (or, a new owner, saw the very same tags)."""
        ...

    def checker(self) -> VouchChecker:
        """:meth:`vouches` for many keys asked at one instant, with nothing changed in between
        (a full cycle's scans answered at once): what turns by the clock alone read once."""
        ...

    def listed(
        self,
        key: TagListKey,
        names: tuple[str, ...] | None,
        before: tuple[str, ...] | None,
        *,
        full: bool,
    ) -> None:
        """This replica listed ``key``: ``names`` (None: the listing failed), ``before`` its
        previous listing (None: none), in a full round (else a webhook event's)."""
        ...


@dataclass(slots=True)
class _Copy:
    listed_at: float
    """Wall-clock seconds when the listing that gave ``names`` was started."""
    round: int
    """The last full round that listed or used it."""
    names: tuple[str, ...]
    """Interned (as the tag-list cache holds a listing: a reused copy is held as it is)."""


@dataclass(slots=True)
class _Together:
    now: float
    vouches: VouchChecker
    reused: int = 0


class VouchedLists:
    """This replica's last listing of each repository, reused in full rounds while the
    ``witness`` vouches for it (see the module)."""

    def __init__(
        self,
        witness: TagListWitness,
        *,
        wall: Callable[[], float] = time.time,
        max_entries: int = 10_000,
    ) -> None:
        self.witness = witness
        self._wall = wall
        self._copies: LruDict[TagListKey, _Copy] = LruDict(max_entries)
        self._round = 0
        self._reused = metrics.FLEET_TAG_LISTS.labels("reused")
        """The series counting copies reused, looked up once (a few hundred reuses a cycle)."""
        self._together: _Together | None = None
        """While :meth:`asked_together`: the instant, the witness's checker, the reuses."""
        self._refused: set[TagListKey] = set()
        """The keys :meth:`reuse` gave no copy of in this full round (not asked again)."""

    def new_round(self) -> None:
        """A full round (a cycle, not a webhook event's update) begins."""
        self._round += 1
        self._refused = set()

    def reuse(self, key: TagListKey) -> tuple[str, ...] | None:
        """This replica's copy of the tags of ``key`` if, in this full round, the owner vouches
        for it (and it was used in the previous one and is not too old), else None."""
        copy = self._copies.get(key)
        if copy is None or copy.round < self._round - 1:
            self._refused.add(key)
            return None
        together = self._together
        vouches: VouchChecker
        if together is None:
            now, vouches = self._wall(), self.witness.vouches
        else:
            now, vouches = together.now, together.vouches
        if now - copy.listed_at >= COPY_MAX_AGE or not vouches(key, copy.listed_at, copy.names):
            self._refused.add(key)
            return None
        copy.round = self._round
        if together is None:
            self._reused.inc()
        else:
            together.reused += 1
        return copy.names

    @contextlib.contextmanager
    def asked_together(self) -> Iterator[None]:
        """:meth:`reuse` asked for many copies at one instant (a full cycle's scans answered at
        once, with no wait in between): the clock and the witness's word read once
        (:meth:`TagListWitness.checker`), the copies reused counted once at the end: 0.52 ms
        instead of 0.73 ms for the 337 copies one of three replicas in
        ``benchmarks/sharding.py`` reuses a cycle (with the tag-list cache's counts, a timed
        loop over these classes)."""
        if self._together is not None:  # already inside such a block
            yield
            return
        together = self._together = _Together(self._wall(), self.witness.checker())
        try:
            yield
        finally:
            self._together = None
            if together.reused:
                self._reused.inc(together.reused)

    def listing(
        self, key: TagListKey, fetch: Callable[[], Awaitable[list[str]]], *, full: bool
    ) -> tuple[
        Callable[[], Awaitable[list[str]]], Callable[[TagListKey], tuple[str, ...] | None] | None
    ]:
        """How the round's tag-list cache gets the tags of ``key``: in a full round, this
        replica's copy (:meth:`reuse`), asked first (the cache then starts no listing task for
        it) unless it was refused in this round already (a sharded replica's scans answered at
        once ask for every copy first), else ``fetch`` through :meth:`names` (which then asks
        for no copy again)."""
        return (lambda: self.names(key, fetch, full=full, asked=full)), (
            self.reuse if full and key not in self._refused else None
        )

    async def names(
        self,
        key: TagListKey,
        fetch: Callable[[], Awaitable[list[str]]],
        *,
        full: bool,
        asked: bool = False,
    ) -> list[str]:
        """The tags of ``key``: this replica's copy when ``full`` (a full round) and the owner
        vouches for it, else listed by ``fetch`` (and the owner side told); ``asked``: the
        caller asked :meth:`reuse` for this listing just before (and got nothing)."""
        if full and not asked and (reused := self.reuse(key)) is not None:
            return list(reused)
        copy = self._copies.get(key)
        now = self._wall()
        before = copy.names if copy is not None else None
        try:
            names = await fetch()
        except BaseException:
            self.witness.listed(key, None, before, full=full)
            raise
        listed = tuple(map(sys.intern, names))
        self.witness.listed(key, listed, before, full=full)
        # A webhook round's listing is fresh, but says nothing of the full rounds' needs.
        used = self._round if full else (copy.round if copy is not None else -1)
        self._copies.put(key, _Copy(now, used, listed))
        return names
