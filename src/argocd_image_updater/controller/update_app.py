"""The cycle's **plan → verify → write** stages, per application.

Each application is planned from the cycle's scans (its tags chosen:
:meth:`~argocd_image_updater.plan.choices.ScanResults.choose`), the tags chosen for images whose
verification is enabled are checked (:mod:`argocd_image_updater.verify.gate`) and it is planned
again with the verdicts, then :meth:`AppUpdates.decide_write` decides whether it is written now
(its own writer: :func:`~argocd_image_updater.controller.write.write_app`), later with the others
of its repository (:func:`~argocd_image_updater.controller.write.write_deferred`), or not at all
(nothing to change, a dry run).

Two fast paths keep a cycle where little changed cheap; each is one method below.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence

from argocd_image_updater.controller.choose import Moves
from argocd_image_updater.controller.cycle_context import Cycle
from argocd_image_updater.controller.cycle_log import failed, log, log_plan, origin_fields
from argocd_image_updater.controller.remembered import hold_context, remember_holds
from argocd_image_updater.controller.write import Replan, settled, write_app
from argocd_image_updater.pipeline.ports import AppWriter
from argocd_image_updater.pipeline.records import AppOutcome, CycleApp
from argocd_image_updater.plan.choices import ScanResults
from argocd_image_updater.plan.holds import HoldContext
from argocd_image_updater.plan.model import AppPlan
from argocd_image_updater.plan.moved import moves_of
from argocd_image_updater.verify.gate import unverified_plan, verified_plan


class AppUpdates:
    """Plans, verifies and writes the applications of one cycle from its ``scans``."""

    __slots__ = ("cycle", "moves", "scans")

    def __init__(self, cycle: Cycle, scans: ScanResults, moves: Moves) -> None:
        self.cycle = cycle
        self.scans = scans
        self.moves = moves

    async def run(self, apps: Sequence[CycleApp]) -> list[AppOutcome]:
        """The outcome of each application, in order."""
        items = [self.update_at_once(app) for app in apps]
        waiting = [(i, item) for i, item in enumerate(items) if not isinstance(item, AppOutcome)]
        done = await asyncio.gather(*(item for _, item in waiting))
        for (i, _), outcome in zip(waiting, done, strict=True):
            items[i] = outcome
        return [item for item in items if isinstance(item, AppOutcome)]

    def update_at_once(self, app: CycleApp) -> AppOutcome | Awaitable[AppOutcome]:
        """The outcome of an application that needs no wait, else the work that waits (a
        signature check, a write) to be run with the others.

        Fast path: most applications of a cycle change nothing, and an application with
        nothing to verify or write is planned here, without a task of its own. Measured with
        ``benchmarks/cycle.py`` (1,000 Applications): tasks per cold cycle went from 1,700 to
        800, part of a 17–22% lower cold-cycle CPU together with two other changes
        (benchmarks/RESULTS.md, *Controller cycle*, "fewer deadlines, shared policies")."""
        holds = hold_context(self.cycle.context.state, app.config, app.cr, self.cycle.now)
        reused = self.reused_plan(app, holds)
        if reused is not None:
            log_plan(reused, app.key, origin_fields(app.config))
            return self.finish(app, holds, AppOutcome(app=app.key, plan=reused))
        try:
            plan, checking = unverified_plan(app.jobs, self.scans, holds)
            if checking:
                return self.verify_and_write(app, holds, plan)
            writer = self.cycle.context.writer_for(app.config)
            outcome, write = self.decide_write(app, holds, plan, writer)
        except Exception as err:  # one application never stops the cycle
            return self.finish(app, holds, failed(app.config, "update", err))
        if not write:
            return self.finish(app, holds, outcome)
        assert writer is not None
        return self.write(app, holds, outcome, writer)

    def reused_plan(self, app: CycleApp, holds: HoldContext) -> AppPlan | None:
        """Last cycle's plan of ``app`` when every input it was made from held (it changes
        nothing: no write, no wait), else None.

        Fast path: :class:`~argocd_image_updater.controller.plan_reuse.PlanReuse` (kept by the
        runner across full cycles) recognises the inputs by identity and spares planning the
        application again. Measured with ``benchmarks/cycle.py`` (1,000 Applications, pairs on
        one machine): the steady cycle's CPU fell by 37–45% and the warm cycle's by 13–29%,
        for 2–3 MB more peak RSS (benchmarks/RESULTS.md, *Controller cycle*, "a cycle redoes
        only what changed", which also reused selections and statuses)."""
        plans = self.cycle.context.plans
        return plans.plan(app.jobs, self.scans, holds) if plans is not None else None

    def decide_write(
        self, app: CycleApp, holds: HoldContext, plan: AppPlan, writer: AppWriter | None
    ) -> tuple[AppOutcome, bool]:
        """Where a write is decided: the outcome of the application's verified ``plan``
        (logged; kept for the next cycle's plan reuse), and whether ``writer`` is to write it
        now. Without a writer its changes are written later, together with the other
        applications of its repository."""
        context = self.cycle.context
        if context.plans is not None:
            context.plans.keep(app.jobs, self.scans, holds, plan)
        if writer is not None:
            plan = settled(app.config.app, plan)
        updates = writer is not None or context.dry_run
        log_plan(plan, app.key, origin_fields(app.config), updates=updates)
        outcome = AppOutcome(app=app.key, plan=plan)
        if not plan.has_changes:
            return outcome, False
        if context.dry_run:
            log.info(
                "Dry run - not committing %d changes to application",
                len(plan.changes),
                application=app.key,
            )
            return outcome, False
        return outcome, writer is not None

    async def verify_and_write(
        self, app: CycleApp, holds: HoldContext, unverified: AppPlan
    ) -> AppOutcome:
        """Check the signatures ``unverified`` waits for, plan again with the verdicts, and
        write the changes when :meth:`decide_write` says so."""
        async with self.cycle.app_slots:
            try:
                plan = await verified_plan(
                    app.config, app.jobs, self.scans, self.cycle.gate, holds, unverified
                )
                writer = self.cycle.context.writer_for(app.config)
                outcome, write = self.decide_write(app, holds, plan, writer)
                if write:
                    assert writer is not None
                    outcome = await self._write(app, holds, outcome, writer)
            except Exception as err:  # one application never stops the cycle
                outcome = failed(app.config, "update", err)
            return self.finish(app, holds, outcome)

    async def write(
        self, app: CycleApp, holds: HoldContext, outcome: AppOutcome, writer: AppWriter
    ) -> AppOutcome:
        """Write the changes of ``outcome`` (decided by :meth:`decide_write`) with ``writer``."""
        async with self.cycle.app_slots:
            try:
                outcome = await self._write(app, holds, outcome, writer)
            except Exception as err:  # one application never stops the cycle
                outcome = failed(app.config, "update", err)
            return self.finish(app, holds, outcome)

    async def _write(
        self, app: CycleApp, holds: HoldContext, outcome: AppOutcome, writer: AppWriter
    ) -> AppOutcome:
        cycle = self.cycle
        replan = Replan(
            app.config, cycle.context.registries.endpoint_for, self.scans, cycle.gate, holds
        )
        return await write_app(outcome, app.config.app, writer, replan, cycle.context.may_write)

    def finish(self, app: CycleApp, holds: HoldContext, outcome: AppOutcome) -> AppOutcome:
        """``outcome`` with what the report needs of ``app``; the written tags seen running are
        remembered (the holds it announced once the cycle's writes are done: ``remember``)."""
        state = self.cycle.context.state
        if state is not None:
            remember_holds(state, outcome, holds)
        outcome.cr = app.cr
        outcome.uid = app.config.app.uid
        outcome.moved_tags = moves_of(app.jobs, self.scans, self.moves)
        return outcome
