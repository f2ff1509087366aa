"""After a cycle: CR status, Kubernetes events and metrics (the "report" stage)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from argocd_image_updater.model.controller_state import ControllerState
from argocd_image_updater.notify.dispatcher import Notifier
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.records import AppOutcome, Collected, CRState, CycleResult
from argocd_image_updater.plan.holds import announced
from argocd_image_updater.plan.model import Outcome
from argocd_image_updater.report.cycle_metrics import record_cycle
from argocd_image_updater.report.events import REASON_TAG_MOVED, EventRecorder
from argocd_image_updater.report.installed_crd import InstalledCrd
from argocd_image_updater.report.ship_announce import announce
from argocd_image_updater.report.ship_tracker import ShipTracker
from argocd_image_updater.report.shipping import Shipment
from argocd_image_updater.report.status import (
    StatusWriter,
    compute_status,
    outcomes_by_cr,
    reconciling_status,
)
from argocd_image_updater.report.status_reuse import StatusReuse

log = get_logger("report")

MAX_PARALLEL_WRITES = 8


@dataclass(slots=True)
class Reporter:
    status: StatusWriter | None
    events: EventRecorder | None
    notifier: Notifier | None = None
    """Queues the cycle's notifications (sent in the background, never waited for)."""
    shipping: ShipTracker | None = None
    """Follows written changes until they are live (``status.shipments``, ``ImageShipped``)."""
    statuses: StatusReuse = field(default_factory=StatusReuse)
    """The statuses last computed, reused for ImageUpdaters whose inputs did not change."""
    crd: InstalledCrd | None = None
    """What the installed CRD lacks: said in each status's ``Ready`` condition."""
    _followed: list[Shipment] | None = None
    """The changes a full cycle's :meth:`follow` saw become final, announced by its report."""

    async def reconciling(self, collected: Collected) -> None:
        """Mark ``Reconciling=True`` on the ImageUpdaters whose spec changed since their last
        cycle. A routine cycle writes the status once, at its end; so does the first cycle of
        a new ImageUpdater (no status yet): its one write carries everything."""
        if self.status is None:
            return
        status = self.status
        now = datetime.now(UTC)
        changed = [
            cr
            for cr in collected.crs
            if cr.error is None and _observed(cr) not in (None, cr.generation)
        ]
        limit = asyncio.Semaphore(MAX_PARALLEL_WRITES)

        async def one(index: int) -> None:
            cr = changed[index]
            async with limit:
                with _contained("mark as reconciling", cr):
                    await status.write(
                        cr, lambda stored: reconciling_status(cr, now=now, previous=stored)
                    )

        await asyncio.gather(*(one(i) for i in range(len(changed))))

    async def follow(
        self,
        collected: Collected,
        result: CycleResult,
        *,
        dry_run: bool,
        into: ControllerState | None,
    ) -> None:
        """Move the changes followed on with a full cycle's ``result`` before its record
        ``into`` is saved, which then stores them too (one save of the writing cycle's objects,
        not two; None: no record is saved, the tracker stores them itself); the :meth:`report`
        of the cycle announces those that became final."""
        if self.shipping is not None:
            with _contained("follow the written changes of", None):
                self._followed = await self.shipping.observe(
                    collected, result, dry_run=dry_run, into=into
                )

    async def report(
        self, collected: Collected, result: CycleResult, *, dry_run: bool, partial: bool = False
    ) -> None:
        """``partial``: a cycle over some apps only (a webhook event): events and counters, but
        no status or gauges, which describe whole ImageUpdaters."""
        with _contained("count the cycle of", None):
            record_cycle(result, dry_run=dry_run, crs=collected.crs, gauges=not partial)
        if self.notifier is not None:
            with _contained("queue the notifications of", None):
                self.notifier.submit(collected, result, dry_run=dry_run, partial=partial)
        shipping = self.shipping
        if shipping is not None:
            with _contained("follow the written changes of", None):
                followed = None
                if not partial:  # a full cycle's: followed already (a webhook event's: not)
                    followed, self._followed = self._followed, None
                finished = (
                    followed
                    if followed is not None
                    else await shipping.observe(collected, result, dry_run=dry_run, partial=partial)
                )
                await announce(finished, collected.crs, self.events, self.notifier)
        limit = asyncio.Semaphore(MAX_PARALLEL_WRITES)
        now = datetime.now(UTC)
        by_cr = outcomes_by_cr(result.apps)
        if not partial:
            self.statuses.retain([(cr.namespace, cr.name) for cr in collected.crs])

        def computed(cr: CRState, stored: Mapping[str, Any] | None) -> dict[str, Any]:
            return self.statuses.status(
                cr,
                by_cr.get((cr.namespace, cr.name), ()),
                stored,
                now=now,
                dry_run=dry_run,
                compute=lambda: compute_status(
                    cr, by_cr, now=now, dry_run=dry_run, previous=stored
                ),
            )

        def crd_marked(
            cr: CRState, stored: Mapping[str, Any] | None, status: Mapping[str, Any]
        ) -> Mapping[str, Any]:
            return status if self.crd is None else self.crd.mark(status, cr.raw, stored, now)

        async def status_of(cr_index: int) -> None:
            assert self.status is not None
            cr = collected.crs[cr_index]
            async with limit:
                with _contained("write the status of", cr):
                    await self.status.write(
                        cr,
                        lambda stored: crd_marked(
                            cr,
                            stored,
                            computed(cr, stored)
                            | (
                                {"shipments": shipping.status_entries(cr, stored)}
                                if shipping is not None
                                else {}
                            ),
                        ),
                    )

        async def events_of(index: int) -> None:
            assert self.events is not None
            outcome = result.apps[index]
            namespace, _, name = outcome.app.partition("/")
            async with limit:
                with _contained("report the events of", outcome.cr, outcome.app):
                    if outcome.written and outcome.plan is not None and not dry_run:
                        await self.events.images_updated(
                            namespace, name, outcome.uid, outcome.plan.changes
                        )
                    for move in outcome.moved_tags if not dry_run else ():
                        await self.events.on_application(
                            outcome.app,
                            outcome.uid,
                            warning=True,
                            reason=REASON_TAG_MOVED,
                            message=move.message,
                        )
                    if outcome.plan is not None and not dry_run:
                        await self.events.holds_announced(
                            outcome.app, outcome.uid, outcome.plan.results
                        )
                    if outcome.cr is None:
                        return
                    if outcome.error:
                        await self.events.image_failed(
                            outcome.cr, outcome.app, "", "write-back-failed", outcome.error
                        )
                    for image in outcome.plan.results if outcome.plan is not None else ():
                        if image.outcome is Outcome.ERROR:
                            await self.events.image_failed(
                                outcome.cr, outcome.app, image.alias, image.reason, image.message
                            )

        async def cr_failed(cr: CRState, error: str) -> None:
            assert self.events is not None
            async with limit:
                with _contained("report the error of", cr):
                    await self.events.cr_failed(cr, error)

        tasks = []
        if self.status is not None and not partial:
            tasks += [status_of(i) for i in range(len(collected.crs))]
        if self.events is not None and not partial:
            tasks += [cr_failed(cr, cr.error) for cr in collected.crs if cr.error is not None]
        if self.events is not None:
            apps = result.apps
            tasks += [events_of(i) for i in range(len(apps)) if _has_events(apps[i], dry_run)]
        await asyncio.gather(*tasks)


def _has_events(outcome: AppOutcome, dry_run: bool) -> bool:
    """Whether :meth:`Reporter.report` has events to create for ``outcome`` (most outcomes of
    most cycles have none: they are not looked at again)."""
    plan = outcome.plan
    if not dry_run and (outcome.written or outcome.moved_tags):
        return True
    if outcome.cr is not None and outcome.error:
        return True
    if plan is None:
        return False
    if not dry_run and any(announced(r.detail) is not None for r in plan.results):
        return True
    return outcome.cr is not None and plan.errors > 0


def _observed(cr: CRState) -> object:
    """The ``status.observedGeneration`` stored on ``cr`` (None when unreadable)."""
    status = cr.raw.get("status")
    return status.get("observedGeneration") if isinstance(status, dict) else None


@contextlib.contextmanager
def _contained(step: str, cr: CRState | None, app: str = "") -> Iterator[None]:
    """Reporting on one object never stops the reporting on the others: a failure is logged."""
    try:
        yield
    except Exception as err:
        fields = {"application": app} if app else {}
        if cr is not None:
            fields |= {"imageUpdater_namespace": cr.namespace, "imageUpdater_name": cr.name}
        what = f" {app}" if app else f" ImageUpdater {cr.namespace}/{cr.name}" if cr else " cycle"
        log.error("could not %s%s: %s: %s", step, what, type(err).__name__, str(err), **fields)
