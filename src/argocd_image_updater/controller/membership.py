"""Membership of a sharded fleet (``run --sharding``): each replica holds a member Lease of its
own, ``argocd-image-updater-member-<pod>``, and processes the shard keys that rendezvous hashing
(:mod:`~argocd_image_updater.controller.shards`) gives it among the live members.

A member Lease is a :class:`~argocd_image_updater.controller.leader.LeaderElector` that nobody
contends: its ``is_leader()`` means "my membership is valid" (renewed within the renew deadline).
The members are listed every retry period; a member counts as live while its Lease record changed
within its ``leaseDurationSeconds`` as seen by *our* clock (as leader election judges expiry:
clock skew between nodes does not matter), and not once it was released (empty holder).

The handover rule — a member processes keys, and a write of its cycle passes the fence, only while

1. its membership is valid (its Lease renewed within the renew deadline),
2. it has been valid without a break for at least one lease duration,
3. its member list was read less than one renew deadline ago, and in that list the leader Lease
   of its shard was not live (no replica without ``--sharding`` leads: see
   :mod:`~argocd_image_updater.controller.lease_sightings`), and
4. every key of the cycle under way is its own under that list.

Why no key is ever processed by two members at once: two members can disagree on a key's owner
only when one of them is missing from the other's list (rendezvous hashing: with both in both
lists, both pick the higher weight). A member missing because it just joined (or rejoined) waits
one lease duration (2) while every other member's list ages out within one renew deadline (3) —
and a list read after its Lease was written contains it. A member missing because the others found
its Lease unchanged for a lease duration stopped at its renew deadline, which is shorter (1); a
released member stopped before it released. When a key of the cycle under way moves away, the cycle
is cancelled and its writes are refused (4) before the new owner's list can be read (3) and
acted on. A member that stops renewing loses its keys to the others within the lease duration
plus one cycle; a new member takes its share after one lease duration, without restarting the
others.

With ``--shard-selector`` a member Lease carries the selector in the annotation
``argocd-image-updater.argoproj.io/shard-selector``: the members of one static shard share its
keys among themselves, whatever runs for other shards in the same namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Final

from argocd_image_updater.controller.leader import (
    DEFAULT_LEASE_NAME,
    LeaderElector,
    LeaseRecord,
    _wait,
)
from argocd_image_updater.controller.lease_sightings import (
    MEMBER_PREFIX,
    Sightings,
    member_leases,
)
from argocd_image_updater.controller.shards import (
    SHARD_ANNOTATION,
    Ownership,
    leader_lease_name,
)
from argocd_image_updater.kube.client import LEASES, KubeClient, KubeError
from argocd_image_updater.observe import metrics
from argocd_image_updater.observe.log import get_logger

log = get_logger("shards")

MAX_NAME: Final = 253
FORGET_AFTER: Final = 5
"""A member Lease unchanged for this many lease durations is deleted (pods come and go, each
with a Lease of its own); its holder stopped writing long before."""


def member_name(pod: str | None = None) -> str:
    """This replica's member name: ``$POD_NAME``, else the host name with a random suffix (so
    that several processes on one machine are distinct members); lower case, as a Lease name."""
    pod = pod if pod is not None else os.environ.get("POD_NAME", "")
    if not pod:
        pod = f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
    name = "".join(c if c.isalnum() or c in "-." else "-" for c in pod.lower()).strip("-.")
    return name[: MAX_NAME - len(MEMBER_PREFIX)] or uuid.uuid4().hex[:8]


def _annotations(
    leases: Iterable[Mapping[str, object]], names: Collection[str]
) -> dict[str, Mapping[str, str]]:
    """The annotations of the Leases ``names``, by member."""
    found: dict[str, Mapping[str, str]] = {}
    for lease in leases:
        meta = lease.get("metadata")
        if not isinstance(meta, Mapping) or meta.get("name") not in names:
            continue
        annotations = meta.get("annotations")
        found[str(meta["name"]).removeprefix(MEMBER_PREFIX)] = (
            {str(k): str(v) for k, v in annotations.items()}
            if isinstance(annotations, Mapping)
            else {}
        )
    return found


class Membership:
    """This replica's membership and view of the fleet. Quacks like a
    :class:`LeaderElector` for :func:`~argocd_image_updater.controller.leading.run_as_leader`:
    ``is_leader()`` is the handover rule above, ``leading``/``not_leading`` follow it."""

    def __init__(
        self,
        kube: KubeClient,
        *,
        namespace: str,
        member: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        on_view_change: Callable[[], None] | None = None,
        shard_selector: str | None = None,
    ) -> None:
        self._kube, self.namespace, self.member = kube, namespace, member
        self.identity = member
        self.lease_name = MEMBER_PREFIX + member
        self.lease_duration, self.renew_deadline = lease_duration, renew_deadline
        self.retry_period = retry_period
        self._clock, self.on_view_change = clock, on_view_change
        self.elector = LeaderElector(
            kube,
            namespace=namespace,
            name=self.lease_name,
            identity=member,
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=retry_period,
            clock=clock,
            on_change=self._membership_changed,
            annotations={SHARD_ANNOTATION: shard_selector or ""},
        )
        self.shard_selector = shard_selector or ""
        self.leading = asyncio.Event()
        self.not_leading = asyncio.Event()
        self.not_leading.set()
        self.view: frozenset[str] = frozenset()
        self._view_at = -float("inf")
        self._since: float | None = None
        self._sightings = Sightings()
        self.leader_lease = leader_lease_name(shard_selector or None, DEFAULT_LEASE_NAME)
        self.single_leader = ""
        """The holder of the leader Lease while a replica without ``--sharding`` leads."""
        self._holds: list[frozenset[str]] = []
        self._intact = True
        """Whether every held key is still this member's."""
        self._owned: frozenset[str] = frozenset()
        self.on_leases: Callable[[Mapping[str, Mapping[str, str]]], None] | None = None
        """Given the annotations of the member Leases (by member) each time they are read."""
        self._ownership = Ownership(member)
        self._members = (self.view, self.view | {member})
        """The member list and the member set it gives (with this member), made once per list."""

    # --- the rule ------------------------------------------------------------------------------

    def settled(self) -> bool:
        """Rules 1-3: valid, a member for a lease duration, with a fresh member list and no
        replica leading alone."""
        now = self._clock()
        return (
            self.elector.is_leader()
            and self._since is not None
            and now >= self._since + self.lease_duration
            and now < self._view_at + self.renew_deadline
            and not self.single_leader
        )

    def owns(self, key: str) -> bool:
        """Whether ``key`` is this member's under its member list."""
        view, members = self._members
        if view is not self.view:
            members = self.view | {self.member}
            self._members = (self.view, members)
        return self._ownership.owns(key, members)

    @property
    def claimed(self) -> frozenset[str]:
        """The keys of the cycle and the webhook events under way."""
        return frozenset().union(*self._holds)

    def is_leader(self) -> bool:
        """The whole rule: this member may process and write the keys it holds (checked before
        every write: the keys are checked when they are held or the member list changes).
        ``leading``/``not_leading`` follow the answer: the rule also turns by the clock alone
        (one lease duration after joining, at the renew deadline), between two list reads."""
        leader = self.settled() and self._intact
        self._show(leader)
        return leader

    def _check_holds(self) -> None:
        self._intact = all(self.owns(key) for key in self.claimed)

    @contextlib.contextmanager
    def holding(self, keys: Collection[str], *, full: bool = False) -> Iterator[None]:
        """Hold ``keys`` while a cycle (``full``) or a webhook event processes them: should one
        of them move to another member, :meth:`is_leader` turns False (the work is cancelled,
        its writes refused)."""
        held = frozenset(keys)
        if full:
            self._count(held)
            self._ownership.next_cycle()
        self._holds.append(held)
        self._check_holds()
        self._update()
        try:
            yield
        finally:
            self._holds.remove(held)
            self._check_holds()
            self._update()

    def _count(self, keys: frozenset[str]) -> None:
        moved = len(self._owned ^ keys)
        if moved:
            metrics.SHARD_OWNERSHIP_CHANGES.inc(moved)
            log.info(
                "shard keys: %d (%d taken over or handed over)",
                len(keys),
                moved,
                identity=self.member,
            )
        self._owned = keys
        metrics.SHARD_KEYS.set(len(keys))

    def _update(self) -> None:
        self.is_leader()

    def _show(self, leader: bool) -> None:
        if leader:
            self.not_leading.clear()
            self.leading.set()
        else:
            self.leading.clear()
            self.not_leading.set()

    def _membership_changed(self, valid: bool) -> None:
        self._since = self._clock() if valid else None
        self._update()

    def annotate(self, key: str, value: str) -> None:
        """Put ``key: value`` on this member's Lease with its next renewal."""
        self.elector.annotate(key, value)

    # --- the member list -----------------------------------------------------------------------

    async def refresh(self) -> None:
        """Read the member Leases and update the view (KubeError when they cannot be listed)."""
        started = self._clock()
        items, _ = await self._kube.list_objects(LEASES, self.namespace)
        now = self._clock()
        members = member_leases(items, self.shard_selector)
        leader = [
            (self.leader_lease, LeaseRecord.from_lease(lease))
            for lease in items
            if (lease.get("metadata") or {}).get("name") == self.leader_lease
        ]
        self._sightings.look(members + leader, now)
        if self.on_leases is not None:
            self.on_leases(_annotations(items, {name for name, _ in members}))
        live = set()
        for name, record in members:
            observed = self._sightings.seen[name][1]
            if self._sightings.live(name, now):
                live.add(name.removeprefix(MEMBER_PREFIX))
            elif now >= observed + FORGET_AFTER * max(record.duration, self.lease_duration):
                await self._forget(name, record)
        self._alone_leader(now)
        if self.elector.is_leader():
            live.add(self.member)
        view = frozenset(live)
        changed = view != self.view
        self._view_at = started
        if changed:  # else the same object stays: what is worked out under it holds
            self.view = view
            self._check_holds()
            log.info("members: %s", ", ".join(sorted(view)) or "none", identity=self.member)
            if self.on_view_change is not None:
                self.on_view_change()
        self._update()

    def _alone_leader(self, now: float) -> None:
        """Note whether a replica without ``--sharding`` leads (the leader Lease of this shard is
        live): members stand by until it stops (:mod:`.lease_sightings`)."""
        holder = ""
        if self._sightings.live(self.leader_lease, now):
            holder = self._sightings.seen[self.leader_lease][0].holder
        if holder and not self.single_leader:
            log.warning(
                "a replica without --sharding leads (Lease %s held by %s): the members stand by "
                "until it stops",
                self.leader_lease,
                holder,
                identity=self.member,
            )
        elif self.single_leader and not holder:
            log.info("the replica that led alone stopped", identity=self.member)
        self.single_leader = holder

    async def _forget(self, name: str, record: LeaseRecord) -> None:
        """Delete the Lease of a member long gone, unless it was renewed meanwhile (the delete
        is conditional on the resourceVersion read). A member that comes back creates it again
        and, as any new member, waits one lease duration before it processes anything."""
        if name == self.lease_name:
            return
        try:
            await self._kube.delete_unchanged(LEASES, self.namespace, name, record.resource_version)
        except KubeError as err:
            log.debug("could not delete the member Lease %s: %s", name, str(err))
            return
        log.info("deleted the Lease of a member gone long ago: %s", name, identity=self.member)

    async def run(self, stop: asyncio.Event) -> None:
        """Hold the member Lease and follow the members until ``stop`` is set (then release)."""
        elector = asyncio.create_task(self.elector.run(stop))
        try:
            while not stop.is_set():
                try:
                    async with asyncio.timeout(self.renew_deadline):
                        await self.refresh()
                except Exception as err:  # e.g. KubeError, TimeoutError: the list goes stale
                    log.warning("could not list the members: %s", str(err), identity=self.member)
                    self._update()
                await _wait(stop, self.retry_period)
        finally:
            if not stop.is_set():
                elector.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await elector
            self._update()
