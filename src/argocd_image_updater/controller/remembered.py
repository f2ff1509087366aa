"""What a cycle reads from and adds to the controller's remembered record
(:class:`~argocd_image_updater.model.controller_state.ControllerState`): the tags written, where
and seen running (rollback holds), the rollback holds announced and who overwrote the tag, when
each tag was first seen (``minAge``), and the tags no longer listed (forgotten)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from argocd_image_updater.config.holds import manual_holds
from argocd_image_updater.model.controller_state import ControllerState, app_key, repo_key
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.pipeline.records import AppOutcome, CRState, CycleApp
from argocd_image_updater.plan.charts import ChartJob
from argocd_image_updater.plan.choices import ScanResults
from argocd_image_updater.plan.holds import HoldContext, announced, overwriter
from argocd_image_updater.plan.jobs import ImageJob, ScanKey
from argocd_image_updater.plan.model import Outcome
from argocd_image_updater.policy.min_age import TagAges


def hold_context(
    state: ControllerState | None, config: AppUpdateConfig, cr: CRState | None, now: datetime
) -> HoldContext:
    """What planning ``config``'s application needs to know about its holds."""
    app = config.app
    writes = state.writes_of(app_key(app.namespace, app.name)) if state is not None else {}
    return HoldContext(
        now,
        writes,
        manual_holds(app, cr.raw if cr is not None else None),
        via=via_of(config),
        live_is_target=config.live_is_target,
    )


def via_of(config: AppUpdateConfig) -> str:
    """Where ``config``'s application's tags are written: ``git`` or ``argocd`` (as
    :attr:`~argocd_image_updater.model.write_record.WriteRecord.via`)."""
    return "git" if config.write_back.is_git else "argocd"


def remember_holds(state: ControllerState, outcome: AppOutcome, holds: HoldContext) -> None:
    """Remember which written tags were seen running."""
    for alias in holds.live:
        state.mark_live(outcome.app, alias)


def remember_announced(state: ControllerState, outcomes: Sequence[AppOutcome]) -> None:
    """Remember the rollback holds announced (the ``ImageHeld`` event is created once per
    hold), with who overwrote the tag when known."""
    for outcome in outcomes:
        for result in outcome.plan.results if outcome.plan is not None else ():
            to = announced(result.detail)
            if to is not None:
                by = overwriter(result.message, to)
                state.mark_held(outcome.app, result.alias or result.image, to, by)


def _tag_only(reference: str | None) -> str:
    try:
        return (ImageRef.parse(reference).tag or "") if reference else ""
    except ImageRefError:
        return ""


def remember_writes(
    state: ControllerState,
    outcomes: Sequence[AppOutcome],
    now: datetime,
    via: Mapping[str, str] | None = None,
) -> None:
    """Remember the tags written for each image, and where (``via``: by Application key;
    rollback holds compare the target and the running tag with them)."""
    for outcome in outcomes:
        if not outcome.written or outcome.error or outcome.plan is None:
            continue
        commit = outcome.pushed[1] if outcome.pushed else ""
        for result in outcome.plan.results:
            if result.outcome is Outcome.UPDATED and result.chosen:
                tag = _tag_only(result.chosen)
                if tag:
                    alias = result.alias or result.image
                    where = (via or {}).get(outcome.app, "")
                    state.record_write(outcome.app, alias, tag, now, where, commit)


def forget_untagged(
    state: ControllerState, apps: Sequence[CycleApp], scans: Mapping[ScanKey, Any]
) -> None:
    """Forget the remembered tags that full tag listings of this cycle no longer hold. A
    repository done, or of which nothing is remembered, costs no look at its scan: a sharded
    replica scans nearly every repository of the fleet (one of three in
    ``benchmarks/sharding.py``: 490 of 500), and looking at each scan and tag list cost it
    about 2.5 ms of CPU a cycle, as much as a single replica."""
    done: set[str] = set()
    for app in apps:
        for job in app.jobs.jobs:
            repo = repo_key(job.endpoint.host, job.repository)
            if repo in done:  # before the scan's key is hashed: most jobs share a repository
                continue
            scan = scans.get(job.scan_key)
            if job.scan_key.only_tags or isinstance(scan, Exception | None):
                continue
            done.add(repo)
            if state.remembers_tags(repo):
                state.prune_tags(repo, [tag.name for tag in scan.tags])


def age_tags(
    state: ControllerState | None, apps: Sequence[CycleApp], scans: ScanResults, now: datetime
) -> None:
    """For the scans of images with a ``minAge``: remember when their tags were first seen
    (now, for tags not seen before) and give the planner those times."""
    for app in apps:
        jobs: list[ImageJob | ChartJob] = [*app.jobs.jobs, *app.jobs.chart_jobs]
        for job in jobs:
            if job.policy.min_age is None or job.scan_key in scans.ages:
                continue
            scan = scans.get(job.scan_key)
            if scan is None or isinstance(scan, Exception):
                continue
            host = job.endpoint.host if job.endpoint is not None else job.scan_key.api_url
            repo = repo_key(host, job.repository)
            if state is None:
                scans.ages[job.scan_key] = TagAges(now)
                continue
            state.record_first_seen(repo, (tag.name for tag in scan.tags), now)
            scans.ages[job.scan_key] = TagAges(now, state.first_seen_of(repo))
