"""Leader election through a ``coordination.k8s.io/v1`` Lease, compatible with client-go's.

Replicas race to hold the Lease ``c21b75f2.argoproj.io`` (the original's lease ID). Every write
carries the resourceVersion it was based on, so two replicas can never both win a race. As in
client-go, a lease held by another replica is considered expired when its record has not changed
for ``leaseDurationSeconds`` as measured by *our* clock since we first saw that record; wall-clock
timestamps in the Lease are informational only, so clock skew between nodes does not matter.

The leader renews every ``retry_period``. When it cannot renew within ``renew_deadline`` of the
start of its last successful renewal it steps down (``not_leading`` is set, ``on_change(False)``
is called) — which, since ``renew_deadline < lease_duration``, happens before any other replica
may take over. :meth:`LeaderElector.is_leader` turns False at that deadline by itself, even
before the renewal loop has noticed (the event loop may have been busy): it is the check a
writer makes right before each write. A graceful stop releases the Lease (empty holder, 1 s
duration), so another replica takes over at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from argocd_image_updater.kube.client import LEASES, KubeClient, KubeError
from argocd_image_updater.observe.log import get_logger

log = get_logger("leader")

DEFAULT_LEASE_NAME: Final = "c21b75f2.argoproj.io"
JITTER: Final = 0.2


def check_timings(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """ValueError unless ``0 < retry period < renew deadline < lease duration`` (client-go's
    rule: a leader must stand down before its lease can expire for the others)."""
    if not 0 < retry_period < renew_deadline < lease_duration:
        raise ValueError(
            "leader election needs 0 < retry period < renew deadline < lease duration, got "
            f"{retry_period:g}s / {renew_deadline:g}s / {lease_duration:g}s"
        )


def micro_time(moment: datetime) -> str:
    """RFC 3339 with exactly six fractional digits in UTC, as ``metav1.MicroTime``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _now() -> datetime:
    return datetime.now(UTC)


def _parse_time(value: Any) -> datetime | None:
    """A Lease's ``MicroTime`` (RFC 3339), or None when absent or unreadable."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The part of a Lease the election reads."""

    holder: str
    duration: int
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int
    resource_version: str

    @classmethod
    def from_lease(cls, lease: Mapping[str, Any]) -> LeaseRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            duration=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=_parse_time(spec.get("acquireTime")),
            renew_time=_parse_time(spec.get("renewTime")),
            transitions=int(spec.get("leaseTransitions") or 0),
            resource_version=str((lease.get("metadata") or {}).get("resourceVersion") or ""),
        )

    def same_as(self, other: LeaseRecord | None) -> bool:
        """Same record content (the resourceVersion aside)."""
        return other is not None and (
            self.holder,
            self.duration,
            self.acquire_time,
            self.renew_time,
            self.transitions,
        ) == (other.holder, other.duration, other.acquire_time, other.renew_time, other.transitions)


class LeaderElector:
    """Elects one leader among the replicas sharing ``namespace``/``name``.

    Run :meth:`run` in a task; act only while :meth:`is_leader` is True (``leading`` is set;
    ``not_leading`` is set otherwise), or use ``on_change(leading: bool)``. ``clock`` is a
    monotonic clock in seconds, ``wall`` gives the timestamps written to the Lease;
    ``annotations`` are written with it; ``may_acquire``, when given, is asked before the Lease
    is taken (never before a renewal) and gives a reason to wait, or None.
    """

    def __init__(
        self,
        kube: KubeClient,
        *,
        namespace: str,
        name: str = DEFAULT_LEASE_NAME,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = _now,
        on_change: Callable[[bool], None] | None = None,
        annotations: Mapping[str, str] | None = None,
        may_acquire: Callable[[], Awaitable[str | None]] | None = None,
    ) -> None:
        if not identity:
            raise ValueError("leader election needs a non-empty identity")
        check_timings(lease_duration, renew_deadline, retry_period)
        self._kube = kube
        self.namespace, self.name, self.identity = namespace, name, identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._clock, self._wall, self._on_change = clock, wall, on_change
        self._annotations = dict(annotations or {})
        self._may_acquire = may_acquire
        """Asked before the Lease is taken (not renewed): a reason to wait, or None."""
        self.waiting_for = ""
        self.leading = asyncio.Event()
        self.not_leading = asyncio.Event()
        self.not_leading.set()
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._renewed_at = 0.0
        self._lock = asyncio.Lock()
        self._released = False

    def annotate(self, key: str, value: str) -> None:
        """Write ``key: value`` among the Lease's annotations from its next renewal on."""
        self._annotations[key] = value

    # --- state -------------------------------------------------------------------------------

    def is_leader(self) -> bool:
        """Whether this replica leads: it won the Lease and its last successful renewal started
        less than ``renew_deadline`` ago (False from that deadline on, even before the renewal
        loop notices; a lease cannot expire for the others before ``lease_duration``)."""
        return self.leading.is_set() and self._clock() < self._renewed_at + self.renew_deadline

    @property
    def observed_holder(self) -> str:
        """The holder in the last Lease record seen ("" when none)."""
        return self._observed.holder if self._observed is not None else ""

    def _set_leading(self, leading: bool, why: str) -> None:
        if leading == self.leading.is_set():
            return
        if leading:
            self.not_leading.clear()
            self.leading.set()
            log.info(
                "became the leader (lease %s/%s)", self.namespace, self.name, identity=self.identity
            )
        else:
            self.leading.clear()
            self.not_leading.set()
            log.warning("stopped leading: %s", why, identity=self.identity)
        if self._on_change is not None:
            try:
                self._on_change(leading)
            except Exception as err:  # a callback must not break the election
                log.error("leader election callback failed: %s", str(err))

    # --- API -----------------------------------------------------------------------------------

    def _body(
        self,
        holder: str,
        acquired: datetime,
        renewed: datetime,
        transitions: int,
        resource_version: str = "",
        duration: int | None = None,
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if resource_version:
            meta["resourceVersion"] = resource_version
        if self._annotations:
            meta["annotations"] = self._annotations
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": meta,
            "spec": {
                "holderIdentity": holder,
                "leaseDurationSeconds": duration or max(1, math.ceil(self.lease_duration)),
                "acquireTime": micro_time(acquired),
                "renewTime": micro_time(renewed),
                "leaseTransitions": transitions,
            },
        }

    async def _read(self) -> LeaseRecord | None:
        try:
            lease = await self._kube.get_object(LEASES, self.namespace, self.name)
        except KubeError as err:
            if err.is_not_found:
                return None
            raise
        return LeaseRecord.from_lease(lease)

    async def _write(self, body: dict[str, Any], create: bool) -> LeaseRecord:
        if create:
            lease = await self._kube.create_object(LEASES, self.namespace, body)
        else:
            lease = await self._kube.replace_object(LEASES, self.namespace, self.name, body)
        return LeaseRecord.from_lease(lease)

    async def try_acquire_or_renew(self) -> bool:
        """One attempt: create the Lease, renew ours, or take over an expired one."""
        async with self._lock:
            if self._released:
                return False
            now, wall = self._clock(), self._wall()
            old = await self._read()
            if old is None:
                if await self._blocked():
                    return False
                record = await self._write(self._body(self.identity, wall, wall, 0), create=True)
            else:
                if not old.same_as(self._observed):
                    # A record counts from when it was seen, not from when it was asked for: it
                    # may have been written while the read was under way.
                    self._observed, self._observed_at = old, self._clock()
                if (
                    old.holder
                    and old.holder != self.identity
                    and self._observed_at + old.duration > now
                ):
                    return False
                mine = old.holder == self.identity
                if not mine and await self._blocked():
                    return False
                body = self._body(
                    self.identity,
                    (old.acquire_time or wall) if mine else wall,
                    wall,
                    old.transitions if mine else old.transitions + 1,
                    old.resource_version,
                )
                record = await self._write(body, create=False)
            self._observed, self._observed_at = record, self._clock()
            return True

    async def _blocked(self) -> bool:
        """Whether ``may_acquire`` gives a reason not to take the Lease now (logged when it
        changes)."""
        reason = await self._may_acquire() if self._may_acquire is not None else None
        if (reason or "") != self.waiting_for:
            if reason:
                log.warning("not taking the lease: %s", reason, identity=self.identity)
            self.waiting_for = reason or ""
        return reason is not None

    async def _attempt(self, limit: float) -> bool:
        try:
            # Not asyncio.wait_for: on 3.11 it loses a cancellation that comes as the request ends.
            async with asyncio.timeout(limit):
                return await self.try_acquire_or_renew()
        except TimeoutError:
            log.debug("lease request timed out", identity=self.identity)
        except KubeError as err:
            if not err.is_conflict:
                log.warning("could not update the lease: %s", str(err), identity=self.identity)
        return False

    # --- loops -------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Campaign until ``stop`` is set, then release the Lease if held. Cancelling the task
        steps down without releasing (others take over once the lease expires)."""
        try:
            while not stop.is_set() and not self._released:
                if await self._acquire(stop):
                    await self._renew(stop)
        except asyncio.CancelledError:
            self._set_leading(False, "cancelled")
            raise
        if self.leading.is_set():
            await self.release()

    async def _acquire(self, stop: asyncio.Event) -> bool:
        while not stop.is_set() and not self._released:
            started = self._clock()
            if await self._attempt(self.renew_deadline):
                self._renewed_at = started
                self._set_leading(True, "")
                return True
            await _wait(stop, self.retry_period * (1 + random.uniform(0, JITTER)))
        return False

    async def _renew(self, stop: asyncio.Event) -> None:
        while not stop.is_set() and self.leading.is_set():
            await _wait(stop, self.retry_period)
            if stop.is_set():
                return
            deadline = self._renewed_at + self.renew_deadline
            while True:
                remaining = deadline - self._clock()
                if remaining <= 0:
                    self._set_leading(
                        False, f"could not renew the lease within {self.renew_deadline:g}s"
                    )
                    return
                started = self._clock()
                if await self._attempt(remaining):
                    self._renewed_at = started
                    break
                if self.observed_holder not in ("", self.identity):
                    self._set_leading(False, f"the lease is held by {self.observed_holder}")
                    return
                await _wait(stop, min(self.retry_period, max(0.0, deadline - self._clock())))
                if stop.is_set():
                    return

    async def release(self) -> bool:
        """Give the Lease up now (empty holder, 1 s duration) and stop campaigning."""
        async with self._lock:
            self._released = True
            was_leader = self.is_leader()
            self._set_leading(False, "released the lease")
            observed = self._observed
            if not was_leader or observed is None or observed.holder != self.identity:
                return False
            wall = self._wall()
            body = self._body("", wall, wall, observed.transitions, observed.resource_version, 1)
            try:
                self._observed = await self._write(body, create=False)
            except KubeError as err:
                log.warning("could not release the lease: %s", str(err), identity=self.identity)
                return False
            log.info("released the lease %s/%s", self.namespace, self.name, identity=self.identity)
            return True


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    """Wait ``seconds`` or until ``stop`` is set."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(max(0.0, seconds)):
            await stop.wait()
