"""The status of each ImageUpdater as last computed, reused while nothing it is made of changed.

:func:`~argocd_image_updater.report.status.compute_status` builds an ImageUpdater's whole status
from its stored status, its generation and error and its Applications' outcomes. In a cycle where
none of these changed, the result differs from the last one only by ``lastCheckedAt``, and the last
one equalled the stored status but for that time: the stored status's fields are handed out again
with the new time (only their names are kept, so no second copy of any status lives between cycles).
The outcomes are recognised by their plans' identity (a plan reused from the last cycle is the same
object: :mod:`argocd_image_updater.controller.plan_reuse`), the stored status by the ImageUpdater's
resourceVersion. A result is kept only when its fields but ``lastCheckedAt`` equal the stored ones
(so no condition changed in it, and no time in it is this cycle's), and only for the ImageUpdaters
of the last report.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from argocd_image_updater.model.controller_state import format_time
from argocd_image_updater.pipeline.records import AppOutcome, CRState
from argocd_image_updater.plan.model import AppPlan

_CHECKED = "lastCheckedAt"


@dataclass(frozen=True, slots=True)
class _Kept:
    inputs: tuple[object, ...]
    plans: tuple[AppPlan | None, ...]
    fields: tuple[str, ...]
    """The status's fields, in order: their values are the stored status's (see
    :meth:`StatusReuse.status`), so none is kept here."""


class StatusReuse:
    """Last computed status per ImageUpdater; see the module documentation."""

    __slots__ = ("_kept", "reused")

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str], _Kept] = {}
        self.reused = 0
        """How many statuses the last report handed out again (for tests and benchmarks)."""

    def __len__(self) -> int:
        return len(self._kept)

    def status(
        self,
        cr: CRState,
        mine: Sequence[AppOutcome],
        previous: Mapping[str, Any] | None,
        *,
        now: datetime,
        dry_run: bool,
        compute: Callable[[], dict[str, Any]],
    ) -> dict[str, Any]:
        """The status of ``cr`` from its outcomes ``mine`` over ``previous`` (the stored
        status): ``compute()``, or the last result with ``lastCheckedAt`` set to ``now``."""
        key = (cr.namespace, cr.name)
        stored = cr.raw.get("status")
        if previous is not stored or not cr.resource_version or previous is None:
            self._kept.pop(key, None)  # a re-read status (a retry): computed afresh
            return compute()
        inputs = (
            cr.resource_version,
            cr.generation,
            cr.error,
            dry_run,
            tuple((o.app, o.written, o.error) for o in mine),
        )
        plans = tuple(o.plan for o in mine)
        kept = self._kept.get(key)
        if (
            kept is not None
            and kept.inputs == inputs
            and len(kept.plans) == len(plans)
            and all(now_ is then for now_, then in zip(plans, kept.plans, strict=True))
        ):
            # The stored status is the one the kept result equalled (same resourceVersion).
            self.reused += 1
            checked = format_time(now)
            return {k: checked if k == _CHECKED else previous.get(k) for k in kept.fields}
        body = compute()
        if all(previous.get(k) == v for k, v in body.items() if k != _CHECKED):
            self._kept[key] = _Kept(inputs, plans, tuple(body))
        else:
            self._kept.pop(key, None)
        return body

    def retain(self, crs: Collection[tuple[str, str]]) -> None:
        """Begin a report of ``crs`` (those of the cycle): forget the other ImageUpdaters."""
        self.reused = 0
        for key in self._kept.keys() - set(crs):
            del self._kept[key]
