"""One update cycle, stage by stage: collect → scan → choose → plan → verify → write → report.

:func:`run_cycle` reads as the pipeline; each stage is a function or object of its own module,
over the records of :mod:`argocd_image_updater.pipeline.records`, and shares the cycle's inputs
through one :class:`~argocd_image_updater.controller.cycle_context.Cycle`. docs/architecture.md
walks through it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from argocd_image_updater.controller.choose import choose_tags
from argocd_image_updater.controller.cycle_context import Cycle
from argocd_image_updater.controller.cycle_context import CycleContext as CycleContext
from argocd_image_updater.controller.overwriters import name_overwriters
from argocd_image_updater.controller.remembered import remember_announced, remember_writes, via_of
from argocd_image_updater.controller.scan import collect_jobs, scan_repositories
from argocd_image_updater.controller.update_app import AppUpdates
from argocd_image_updater.controller.write import write_deferred
from argocd_image_updater.observe import metrics
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.records import Collected, CycleApp, CycleResult
from argocd_image_updater.plan.choices import ScanResults

log = get_logger("cycle")


async def run_cycle(collected: Collected, context: CycleContext) -> CycleResult:
    """One cycle over the ``collected`` applications (see :class:`CycleContext`)."""
    started = time.monotonic()
    cycle = Cycle.begin(context)
    # collect: each application's scan jobs (last cycle's when its configuration held)
    apps, unplanned = collect_jobs(collected, cycle)
    # scan: each distinct repository once (sharded: and those this member lists for the fleet)
    scans = await scan_repositories(apps, cycle, collected.others)
    # choose: what the tag choices need (first-seen ages), the digests of pinned choices
    moves = await choose_tags(apps, scans, cycle)
    # plan → verify → write: each application; those with a writer of their own are written
    outcomes = await AppUpdates(cycle, scans, moves).run(apps)
    # the rollback holds of the argocd method announced now: who set the parameters back
    await name_overwriters(apps, outcomes, context.writer_for)
    # write: the applications written together (git write-back, local mode)
    await write_deferred(apps, outcomes, cycle)
    result = CycleResult(
        apps=[*outcomes, *unplanned], scans=len(scans), config_errors=collected.errors
    )
    # report: what the next cycle remembers, then the summary (statuses and events: the runner)
    remember(cycle, apps, scans, result)
    summarize(result, started)
    return result


def remember(
    cycle: Cycle, apps: Sequence[CycleApp], scans: ScanResults, result: CycleResult
) -> None:
    """Keep for the next cycles what this one learnt: its tag choices, its plans, the rollback
    holds it announced, its writes (and where: the method of each of ``apps``)."""
    context = cycle.context
    if context.choices is not None:
        context.choices.keep(scans)
    if context.plans is not None:
        context.plans.end()
    if context.state is not None:
        remember_announced(context.state, result.apps)
        via = {app.key: via_of(app.config) for app in apps}
        remember_writes(context.state, result.apps, cycle.now, via)


def summarize(result: CycleResult, started: float) -> None:
    """The cycle's duration (a metric) and its summary line."""
    result.duration = time.monotonic() - started
    metrics.CYCLE_DURATION.observe(result.duration)
    log.info(
        "Processing results: applications=%d images_considered=%d images_skipped=%d "
        "images_updated=%d errors=%d",
        len(result.apps),
        result.images_considered,
        result.images_skipped,
        result.images_updated,
        result.errors,
    )
