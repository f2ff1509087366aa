"""The cycle's **write** stage: where a write is made.

An application with its own writer (the ``argocd`` method: the Kubernetes or Argo CD API) is
written as soon as it is planned (:func:`write_app`), planned again and retried when it changed
meanwhile; the others (``git`` write-back, local mode) are written together once every
application is planned (:func:`write_deferred`), so that one commit can carry many. Nothing is
written once this replica is no longer the leader.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from argocd_image_updater.controller.cycle_context import Cycle
from argocd_image_updater.controller.cycle_log import log_updates, log_written
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.ports import AppWriter, BatchWriter, ConflictError
from argocd_image_updater.pipeline.records import AppOutcome, BatchResult, CycleApp
from argocd_image_updater.plan.holds import HoldContext
from argocd_image_updater.plan.jobs import ScanKey, plan_scans
from argocd_image_updater.plan.model import AppPlan
from argocd_image_updater.plan.patch import json_patch_ops
from argocd_image_updater.verify.gate import Gate, verified_plan

log = get_logger("cycle")

MAX_WRITE_ATTEMPTS = 5


def settled(app: Application, plan: AppPlan) -> AppPlan:
    """``plan`` with its updates turned into ``waiting-for-sync`` when the Application already
    holds them (the patch would change nothing: written earlier, Argo CD has not synced)."""
    if not plan.has_changes or json_patch_ops(app.raw, plan):
        return plan
    text = "the Application already holds the new value; waiting for Argo CD to sync it"
    return plan.waiting_for_sync({c.alias: text for c in plan.changes})


@dataclass(frozen=True, slots=True)
class Replan:
    """Plans an application again when it changed while it was written (a conflict): the
    Application as it is now, with the cycle's scans, holds and signature checks."""

    config: AppUpdateConfig
    endpoint_for: Callable[[str, str], RegistryEndpoint]
    scans: Mapping[ScanKey, Any]
    gate: Gate | None
    holds: HoldContext | None

    async def plan(self, app: Application) -> AppPlan:
        config = dataclasses.replace(self.config, app=app)
        jobs = plan_scans(config, self.endpoint_for)
        return settled(app, await verified_plan(config, jobs, self.scans, self.gate, self.holds))


def _not_leader(outcome: AppOutcome) -> str:
    return f"not writing {outcome.app}: this replica is no longer the leader"


async def write_app(
    outcome: AppOutcome,
    app: Application,
    writer: AppWriter,
    replan: Replan | None,
    may_write: Callable[[], bool] | None = None,
) -> AppOutcome:
    """Write the changes of ``outcome``'s plan to ``app`` with ``writer``, planning again
    (``replan``) when the Application changed meanwhile."""
    app_key = outcome.app
    plan = outcome.plan
    assert plan is not None
    for attempt in range(1, MAX_WRITE_ATTEMPTS + 1):
        if may_write is not None and not may_write():
            outcome.error = _not_leader(outcome)
            log.warning(outcome.error, application=app_key)
            return outcome
        try:
            await writer.write(app, plan)
            outcome.written = True
            log_written(plan, app_key)
            return outcome
        except ConflictError:
            if attempt == MAX_WRITE_ATTEMPTS or replan is None:
                break
            log.info(
                "Application changed while updating it, re-reading and retrying (attempt %d)",
                attempt + 1,
                application=app_key,
            )
            app = await writer.reread(app)
            plan = await replan.plan(app)
            outcome.plan = plan
            if not plan.has_changes:
                return outcome
        except Exception as err:
            outcome.error = f"could not update application {app_key}: {err}"
            log.error(outcome.error, application=app_key)
            return outcome
    outcome.error = f"could not update application {app_key}: it kept changing while we wrote it"
    log.error(outcome.error, application=app_key)
    return outcome


async def write_deferred(
    apps: Sequence[CycleApp], outcomes: Sequence[AppOutcome], cycle: Cycle
) -> None:
    """Write together the changes of the applications without a writer of their own (the
    outcomes of ``apps``, in order), unless this is a dry run."""
    context = cycle.context
    deferred = [
        (app.config, outcome)
        for app, outcome in zip(apps, outcomes, strict=True)
        if context.writer_for(app.config) is None
        and outcome.plan is not None
        and outcome.plan.has_changes
    ]
    if not deferred or context.dry_run:
        return
    if not cycle.may_write():
        for _, outcome in deferred:
            outcome.error = _not_leader(outcome)
        return
    await write_batch(deferred, context.batch_writer)


async def write_batch(
    deferred: Sequence[tuple[AppUpdateConfig, AppOutcome]], writer: BatchWriter | None
) -> None:
    """Write the plans of ``deferred`` with ``writer`` and record in each outcome what became
    of it (written, pushed, its link, held, waiting for sync, or its error)."""
    if writer is None:
        for _, outcome in deferred:
            outcome.error = f"no writer for the git write-back method of {outcome.app}"
            log.error(outcome.error, application=outcome.app)
        return
    items = [(config, outcome.plan) for config, outcome in deferred if outcome.plan is not None]
    try:
        done = await writer.write_batch(items)
    except Exception as err:  # a broken writer must not take the cycle down
        done = BatchResult(
            {outcome.app: f"git write-back failed: {err}" for _, outcome in deferred}
        )
    for _, outcome in deferred:
        if outcome.plan is None:
            continue
        outcome.plan = outcome.plan.held(done.held.get(outcome.app, {}))
        outcome.plan = outcome.plan.waiting_for_sync(done.waiting.get(outcome.app, {}))
        log_updates(outcome.plan, outcome.app)
        error = done.errors.get(outcome.app)
        if error:
            outcome.error = error
            log.error(error, application=outcome.app)
        elif outcome.plan.has_changes:
            outcome.written = True
            outcome.pushed = done.pushed.get(outcome.app)
            outcome.link = done.links.get(outcome.app, "")
            log_written(outcome.plan, outcome.app)
