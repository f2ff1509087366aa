"""Which Leases are live, judged as leader election judges them: a Lease counts as held while its
record (holder, times, transitions) changed within its ``leaseDurationSeconds`` as seen by *our*
clock since we first saw that record — never by the wall-clock times written in it, so clock skew
between nodes does not matter — and not once it was released (empty holder). A Lease seen for the
first time with a holder is live for a whole lease duration from that moment.

The members of a sharded fleet judge each other's member Leases this way, and the two kinds of
replica keep apart through it: a member stands by while the leader Lease of its shard is live (a
replica without ``--sharding`` leads alone), and a replica without ``--sharding`` does not take
the leader Lease while a member Lease of its shard is live — so switching between one leader and
sharding under a rolling update never lets both write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from argocd_image_updater.controller.leader import LeaseRecord
from argocd_image_updater.controller.shards import SHARD_ANNOTATION
from argocd_image_updater.kube.client import LEASES, KubeClient

MEMBER_PREFIX: Final = "argocd-image-updater-member-"


class Sightings:
    """The Lease records seen, each with the time (our clock) it was first seen as it is."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[LeaseRecord, float]] = {}

    def look(self, leases: Iterable[tuple[str, LeaseRecord]], now: float) -> None:
        """Take a fresh list of Leases (those not listed are forgotten)."""
        seen: dict[str, tuple[LeaseRecord, float]] = {}
        for name, record in leases:
            before = self.seen.get(name)
            observed = before[1] if before is not None and record.same_as(before[0]) else now
            seen[name] = (record, observed)
        self.seen = seen

    def live(self, name: str, now: float) -> bool:
        """Whether the Lease ``name`` is held (see the module documentation)."""
        found = self.seen.get(name)
        if found is None:
            return False
        record, observed = found
        return bool(record.holder) and now < observed + record.duration


def member_leases(
    leases: Iterable[Mapping[str, Any]], selector: str
) -> list[tuple[str, LeaseRecord]]:
    """The member Leases of the static shard ``selector`` ("" without one) among ``leases``."""
    found = []
    for lease in leases:
        meta = lease.get("metadata") or {}
        name = str(meta.get("name") or "")
        annotations = meta.get("annotations") or {}
        if name.startswith(MEMBER_PREFIX) and annotations.get(SHARD_ANNOTATION, "") == selector:
            found.append((name, LeaseRecord.from_lease(lease)))
    return found


class MembersGuard:
    """Keeps a replica without ``--sharding`` from taking the leader Lease while a member of a
    sharded fleet (of the same static shard) is live: :meth:`blocker` is the elector's
    ``may_acquire``."""

    def __init__(
        self, kube: KubeClient, namespace: str, selector: str, clock: Callable[[], float]
    ) -> None:
        self._kube, self.namespace, self.selector = kube, namespace, selector
        self._clock = clock
        self._sightings = Sightings()

    async def blocker(self) -> str | None:
        """Why the leader Lease must not be taken now (None: it may)."""
        items, _ = await self._kube.list_objects(LEASES, self.namespace)
        now = self._clock()
        self._sightings.look(member_leases(items, self.selector), now)
        live = sorted(name for name in self._sightings.seen if self._sightings.live(name, now))
        if not live:
            return None
        return (
            f"the members of a sharded fleet (run --sharding) still run ({', '.join(live)}); "
            "waiting until their Leases expire"
        )
