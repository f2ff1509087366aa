"""One update cycle: collect → scan each repository once → pin digests → plan → write → report.

The cycle first turns every selected Application into scan jobs, deduplicates them on their
:class:`~argocd_image_updater.plan.jobs.ScanKey` (registry, repository, credentials, metadata,
platforms), runs each distinct scan once with bounded concurrency, and only then plans and writes
each Application. 1,000 Applications sharing 20 images cost 20 tag-list requests.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from argocd_image_updater.config.holds import manual_holds
from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.config.reloading import ReloadingRegistryConfig
from argocd_image_updater.config.secrets import SecretReader
from argocd_image_updater.controller.moved_tags import note_moved_tags
from argocd_image_updater.controller.overwriters import name_overwriters
from argocd_image_updater.controller.pins import pin_digests
from argocd_image_updater.controller.plan_reuse import PlanReuse
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.controller_state import ControllerState, app_key, repo_key
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.model.platform import Platform
from argocd_image_updater.model.registry import CredentialProvider, RegistryEndpoint
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.observe import metrics
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.ports import AppWriter, BatchWriter, ConflictError
from argocd_image_updater.pipeline.records import (
    AppOutcome,
    BatchResult,
    Collected,
    CRState,
    CycleResult,
)
from argocd_image_updater.plan.charts import ChartJob
from argocd_image_updater.plan.decide import ChoiceMemory, ScanResults
from argocd_image_updater.plan.holds import HoldContext, announced, overwriter
from argocd_image_updater.plan.jobs import AppJobs, ImageJob, ScanKey, plan_scans
from argocd_image_updater.plan.model import AppPlan, ImageReason, Outcome
from argocd_image_updater.plan.moved import moves_of
from argocd_image_updater.plan.patch import json_patch_ops
from argocd_image_updater.policy.min_age import TagAges
from argocd_image_updater.registry.credentials import (
    EndpointCredentials,
    ImageCredentials,
    auto_detected_credentials,
)
from argocd_image_updater.registry.scanner import Scanner, ScanRequest
from argocd_image_updater.verify.gate import Gate, unverified_plan, verified_plan
from argocd_image_updater.verify.policy import ConfigMapReader
from argocd_image_updater.verify.verifier import Verifier

log = get_logger("cycle")

MAX_WRITE_ATTEMPTS = 5


class CredentialsCache:
    """Registry-level credential providers live across cycles (they honour ``credsexpire``)."""

    def __init__(self, secrets: SecretReader | None, cloud_auto: bool = True) -> None:
        self._secrets = secrets
        self._cloud_auto = cloud_auto
        self._by_endpoint: dict[tuple[str, str], EndpointCredentials | None] = {}

    @property
    def secrets(self) -> SecretReader | None:
        return self._secrets

    def for_job(
        self, endpoint: RegistryEndpoint, pull_secret: str | None, namespace: str
    ) -> CredentialProvider | None:
        if pull_secret:
            secrets = self._secrets
            if secrets is not None and hasattr(secrets, "restricted_to"):
                secrets = secrets.restricted_to(namespace)
            return ImageCredentials(pull_secret, endpoint, secrets=secrets)
        key = (endpoint.prefix, endpoint.credentials)
        if key not in self._by_endpoint:
            self._by_endpoint[key] = (
                EndpointCredentials(endpoint, secrets=self._secrets)
                if endpoint.credentials
                else auto_detected_credentials(endpoint, enabled=self._cloud_auto)
            )
        return self._by_endpoint[key]


def _scan_request(
    job: ImageJob | ChartJob, endpoint: RegistryEndpoint, credentials: CredentialProvider | None
) -> ScanRequest:
    key = job.scan_key
    return ScanRequest(
        endpoint=endpoint,
        repository=job.repository,
        metadata=key.metadata,
        platforms=tuple(Platform.parse(p) for p in key.platforms),
        only_tags=frozenset(key.only_tags) if key.only_tags else None,
        credentials=credentials,
    )


async def scan_one(
    scanner: Scanner,
    credentials: CredentialsCache,
    job: ImageJob | ChartJob,
    namespace: str,
    scan_round: int | None,
) -> Any:
    """The scan of one job: a registry scan, or a Helm repository's index for a chart there."""
    if isinstance(job, ChartJob) and job.endpoint is None:
        return await scanner.helm_index.versions(job.ref.repository_url, job.ref.name, scan_round)
    endpoint = job.endpoint
    assert endpoint is not None  # only Helm repository charts have none
    provider = credentials.for_job(endpoint, job.pull_secret, namespace)
    return await scanner.scan(_scan_request(job, endpoint, provider), scan_round)


async def run_scans(
    jobs: list[tuple[AppJobs, str]],
    scanner: Scanner,
    credentials: CredentialsCache,
    concurrency: int = 16,
    scan_round: int | None = None,
    memory: ChoiceMemory | None = None,
) -> ScanResults:
    """Run every distinct scan once; the value is a ScanResult or the exception it raised.

    Scans of one ``scan_round`` (see :meth:`Scanner.new_round`) share one tag listing per
    repository; a new round (each cycle) lists again. ``memory`` holds the last cycle's tag
    choices, reused for scans that found the same tags."""
    firsts: dict[ScanKey, tuple[ImageJob | ChartJob, str]] = {}
    for app_jobs, namespace in jobs:
        all_jobs: list[ImageJob | ChartJob] = [*app_jobs.jobs, *app_jobs.chart_jobs]
        for job in all_jobs:
            firsts.setdefault(job.scan_key, (job, namespace))
    results = ScanResults(memory=memory)
    limit = asyncio.Semaphore(concurrency)

    async def one(key: ScanKey, job: ImageJob | ChartJob, namespace: str) -> None:
        async with limit:
            try:
                results[key] = await scan_one(scanner, credentials, job, namespace, scan_round)
            except Exception as err:  # every failure is reported per image, never fatal
                endpoint = job.endpoint
                host = endpoint.host if endpoint is not None else key.api_url
                log.error(
                    "could not scan %s/%s: %s",
                    host,
                    job.repository,
                    str(err),
                    image_registry=endpoint.prefix if endpoint is not None else key.api_url,
                    image_name=job.repository,
                )
                results[key] = err

    await asyncio.gather(*(one(k, job, ns) for k, (job, ns) in firsts.items()))
    return results


def _tag_of(reference: str | None) -> str:
    """The ``tag[@digest]`` of a live image reference, for the ``image_tag`` log field."""
    if not reference:
        return ""
    try:
        ref = ImageRef.parse(reference)
    except ImageRefError:
        return reference
    return ref.tag_with_digest if ref.digest else (ref.tag or "")


def _log_plan(
    plan: AppPlan, app_key: str, origin: Mapping[str, str], *, updates: bool = True
) -> None:
    """One line per image; the updates only with ``updates`` (the batch writer's apps log
    them once it is known whether their target already held them: :func:`_log_updates`)."""
    quiet = not log.is_enabled(logging.DEBUG)
    for result in plan.results:
        if quiet and result.outcome is Outcome.UP_TO_DATE and not result.warnings:
            continue  # its only line would be at debug level: spare building it
        fields = {
            "application": app_key,
            "image_alias": result.alias,
            "image_name": result.image,
            "image_tag": _tag_of(result.current),
            **origin,
        }
        for warning in result.warnings:
            log.warning("%s", warning, **fields)
        if result.reason == ImageReason.WOULD_DOWNGRADE:
            log.warning("%s", result.message, reason=result.reason, **fields)
        elif result.outcome is Outcome.UPDATED:
            if updates:
                log.info("Setting new image to %s", result.chosen or "", **fields)
        elif (
            result.outcome is Outcome.WAITING_FOR_SYNC
            or result.reason == ImageReason.TEMPLATE_MISSING_KEY
        ):
            log.info("%s", result.message, reason=result.reason, **fields)
        elif result.outcome is Outcome.ERROR:
            log.error("%s", result.message, reason=result.reason, **fields)
        else:
            log.debug("%s", result.message, reason=result.reason, **fields)


def _log_updates(plan: AppPlan, app_key: str) -> None:
    """The update and waiting-for-sync lines of a batch-written application."""
    for result in plan.results:
        fields = {
            "application": app_key,
            "image_alias": result.alias,
            "image_name": result.image,
            "image_tag": _tag_of(result.current),
        }
        if result.outcome is Outcome.UPDATED:
            log.info("Setting new image to %s", result.chosen or "", **fields)
        elif result.outcome is Outcome.WAITING_FOR_SYNC:
            log.info("%s", result.message, reason=result.reason, **fields)


def _settled(app: Application, plan: AppPlan) -> AppPlan:
    """``plan`` with its updates turned into ``waiting-for-sync`` when the Application already
    holds them (the patch would change nothing: written earlier, Argo CD has not synced)."""
    if not plan.has_changes or json_patch_ops(app.raw, plan):
        return plan
    text = "the Application already holds the new value; waiting for Argo CD to sync it"
    return plan.waiting_for_sync({c.alias: text for c in plan.changes})


def _log_written(plan: AppPlan, app_key: str) -> None:
    for change in plan.changes:
        log.info(
            "Successfully updated image '%s' to '%s'",
            change.image.full_name_with_tag,
            change.image.with_tag(
                change.new_tag.split("@")[0], change.new_digest
            ).full_name_with_tag,
            application=app_key,
            image_alias=change.alias,
            image_name=change.image.name,
            image_tag=change.new_tag,
        )


def _origin_fields(config: AppUpdateConfig) -> dict[str, str]:
    """Log fields naming the ImageUpdater an application's configuration comes from."""
    kind, _, qualified = config.origin.partition(" ")
    if kind != "imageupdater":
        return {}
    namespace, _, name = qualified.partition("/")
    return {"imageUpdater_namespace": namespace, "imageUpdater_name": name}


def _failed(config: AppUpdateConfig, step: str, err: Exception) -> AppOutcome:
    """An application whose ``step`` failed unexpectedly: its error, logged; the cycle goes on."""
    app_key = f"{config.app.namespace}/{config.app.name}"
    message = f"could not {step} application {app_key}: {type(err).__name__}: {err}"
    log.error(message, application=app_key, **_origin_fields(config))
    return AppOutcome(app=app_key, plan=None, error=message, uid=config.app.uid)


def _plan_scans(
    config: AppUpdateConfig,
    registries: RegistryConfig,
    reuse: PlanReuse | None = None,
) -> AppJobs | Exception:
    """Phase 1 of one application (last cycle's jobs from ``reuse`` when its configuration
    held); an unexpected failure is returned, not raised."""
    try:
        if reuse is not None:
            return reuse.jobs(config, registries, registries.endpoint_for)
        return plan_scans(config, registries.endpoint_for)
    except Exception as err:  # one application never stops the cycle
        return err


async def process_app(
    config: AppUpdateConfig,
    jobs: AppJobs,
    scans: Mapping[ScanKey, Any],
    writer: AppWriter | None,
    dry_run: bool,
    replan: Callable[[Application], Awaitable[tuple[AppUpdateConfig, AppJobs]]] | None = None,
    may_write: Callable[[], bool] | None = None,
    gate: Gate | None = None,
    holds: HoldContext | None = None,
    reuse: PlanReuse | None = None,
    unverified: AppPlan | None = None,
) -> AppOutcome:
    """Plan one application and write its changes; ``reuse`` keeps the plan for the next
    cycle; ``unverified``: its plan before signature checks, when made already."""
    plan = await verified_plan(config, jobs, scans, gate, holds, unverified)
    outcome, write = planned_outcome(config, jobs, scans, plan, writer, dry_run, holds, reuse)
    if not write:
        return outcome
    assert writer is not None
    return await write_app(outcome, config, scans, writer, replan, may_write, gate, holds)


def planned_outcome(
    config: AppUpdateConfig,
    jobs: AppJobs,
    scans: Mapping[ScanKey, Any],
    plan: AppPlan,
    writer: AppWriter | None,
    dry_run: bool,
    holds: HoldContext | None = None,
    reuse: PlanReuse | None = None,
) -> tuple[AppOutcome, bool]:
    """The outcome of one application's verified ``plan`` (logged; kept in ``reuse`` for the
    next cycle), and whether ``writer`` is to write it now (:func:`write_app`)."""
    app = config.app
    app_key = f"{app.namespace}/{app.name}"
    if reuse is not None:
        reuse.keep(jobs, scans, holds, plan)
    if writer is not None:
        plan = _settled(app, plan)
    _log_plan(plan, app_key, _origin_fields(config), updates=writer is not None or dry_run)
    outcome = AppOutcome(app=app_key, plan=plan)
    if not plan.has_changes:
        return outcome, False
    if dry_run:
        log.info(
            "Dry run - not committing %d changes to application",
            len(plan.changes),
            application=app_key,
        )
        return outcome, False
    # Without a writer, written later together with the other apps of its repository.
    return outcome, writer is not None


async def write_app(
    outcome: AppOutcome,
    config: AppUpdateConfig,
    scans: Mapping[ScanKey, Any],
    writer: AppWriter,
    replan: Callable[[Application], Awaitable[tuple[AppUpdateConfig, AppJobs]]] | None = None,
    may_write: Callable[[], bool] | None = None,
    gate: Gate | None = None,
    holds: HoldContext | None = None,
) -> AppOutcome:
    """Write the changes of ``outcome``'s plan (:func:`planned_outcome`) with ``writer``,
    planning again (``replan``) when the Application changed meanwhile."""
    app = config.app
    app_key = outcome.app
    plan = outcome.plan
    assert plan is not None
    for attempt in range(1, MAX_WRITE_ATTEMPTS + 1):
        if may_write is not None and not may_write():
            outcome.error = f"not writing {app_key}: this replica is no longer the leader"
            log.warning(outcome.error, application=app_key)
            return outcome
        try:
            await writer.write(app, plan)
            outcome.written = True
            _log_written(plan, app_key)
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
            config, jobs = await replan(app)
            plan = _settled(app, await verified_plan(config, jobs, scans, gate, holds))
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


async def _write_batch(
    deferred: Sequence[tuple[AppUpdateConfig, AppOutcome]], writer: BatchWriter | None
) -> None:
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
        _log_updates(outcome.plan, outcome.app)
        error = done.errors.get(outcome.app)
        if error:
            outcome.error = error
            log.error(error, application=outcome.app)
        elif outcome.plan.has_changes:
            outcome.written = True
            outcome.pushed = done.pushed.get(outcome.app)
            outcome.link = done.links.get(outcome.app, "")
            _log_written(outcome.plan, outcome.app)


def _forget_untagged(
    state: ControllerState,
    planned: Sequence[tuple[AppUpdateConfig, CRState | None, AppJobs]],
    scans: Mapping[ScanKey, Any],
) -> None:
    """Forget the remembered tags that full tag listings of this cycle no longer hold."""
    done: set[str] = set()
    for _, _, app_jobs in planned:
        for job in app_jobs.jobs:
            repo = repo_key(job.endpoint.host, job.repository)
            scan = scans.get(job.scan_key)
            if repo in done or job.scan_key.only_tags or isinstance(scan, Exception | None):
                continue
            done.add(repo)
            state.prune_tags(repo, {tag.name for tag in scan.tags})


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
        via=_via(config),
        live_is_target=config.live_is_target,
    )


def _via(config: AppUpdateConfig) -> str:
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


def _age_tags(
    state: ControllerState | None,
    planned: Sequence[tuple[AppUpdateConfig, CRState | None, AppJobs]],
    scans: ScanResults,
    now: datetime,
) -> None:
    """For the scans of images with a ``minAge``: remember when their tags were first seen
    (now, for tags not seen before) and give the planner those times."""
    for _, _, app_jobs in planned:
        jobs: list[ImageJob | ChartJob] = [*app_jobs.jobs, *app_jobs.chart_jobs]
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


async def run_cycle(
    collected: Collected,
    registries: RegistryConfig,
    scanner: Scanner,
    credentials: CredentialsCache,
    writer_for: Callable[[AppUpdateConfig], AppWriter | None],
    *,
    dry_run: bool = False,
    max_concurrent_apps: int = 10,
    batch_writer: BatchWriter | None = None,
    may_write: Callable[[], bool] | None = None,
    verifier: Verifier | None = None,
    config_maps: ConfigMapReader | None = None,
    choices: ChoiceMemory | None = None,
    plans: PlanReuse | None = None,
    state: ControllerState | None = None,
    now: datetime | None = None,
) -> CycleResult:
    """One cycle; ``verifier`` (kept across cycles for its cache) checks signatures of images
    whose verification is enabled; without one such images are refused, never written.
    ``choices`` (kept across cycles) spares choosing again from tag lists that did not change;
    ``plans`` (kept across full cycles) planning again Applications whose inputs held.
    ``state`` is what the controller remembers (the writes of this cycle are added to it;
    tags no longer in their registry are forgotten); ``now`` the time this cycle began."""
    now = now or datetime.now(UTC)
    started = time.monotonic()
    scan_round = scanner.new_round()  # tag lists are fresh: listed after this cycle began
    result = CycleResult(config_errors=collected.errors)
    planned: list[tuple[AppUpdateConfig, CRState | None, AppJobs]] = []
    unplanned: list[AppOutcome] = []
    # One look at a reloading registries.conf per cycle: its endpoints hold for the cycle.
    snapshot = registries.current() if isinstance(registries, ReloadingRegistryConfig) else None
    if plans is not None:
        plans.begin()
    for config, cr in collected.configs:
        jobs = _plan_scans(config, registries if snapshot is None else snapshot, plans)
        if isinstance(jobs, Exception):
            unplanned.append(_failed(config, "plan", jobs))
            unplanned[-1].cr = cr
        else:
            planned.append((config, cr, jobs))
    scans = await run_scans(
        [(jobs, config.app.namespace) for config, _, jobs in planned],
        scanner,
        credentials,
        scan_round=scan_round,
        memory=choices,
    )
    result.scans = len(scans)
    if state is not None:
        _forget_untagged(state, planned, scans)
    _age_tags(state, planned, scans, now)
    await pin_digests(
        [(jobs, config.app.namespace) for config, _, jobs in planned],
        scans,
        scanner,
        credentials.for_job,
        scan_round,
    )
    moves = note_moved_tags(state, [j for _, _, j in planned], scans) if state is not None else {}
    gate = Gate(
        verifier, registries.endpoint_for, credentials.for_job, credentials.secrets, config_maps
    )

    limit = asyncio.Semaphore(max_concurrent_apps)

    def finish(
        config: AppUpdateConfig,
        cr: CRState | None,
        jobs: AppJobs,
        holds: HoldContext,
        outcome: AppOutcome,
    ) -> AppOutcome:
        if state is not None:
            remember_holds(state, outcome, holds)
        outcome.cr = cr
        outcome.uid = config.app.uid
        outcome.moved_tags = moves_of(jobs, scans, moves)
        return outcome

    def reused(
        config: AppUpdateConfig, cr: CRState | None, jobs: AppJobs
    ) -> AppOutcome | Awaitable[AppOutcome]:
        """Last cycle's outcome when its plan may be reused (it changes nothing: no write, no
        wait), else the work of planning and writing."""
        holds = hold_context(state, config, cr, now)
        plan = plans.plan(jobs, scans, holds) if plans is not None else None
        if plan is None:
            return plan_now(config, cr, jobs, holds)
        app_key = f"{config.app.namespace}/{config.app.name}"
        _log_plan(plan, app_key, _origin_fields(config))
        return finish(config, cr, jobs, holds, AppOutcome(app=app_key, plan=plan))

    def plan_now(
        config: AppUpdateConfig, cr: CRState | None, jobs: AppJobs, holds: HoldContext
    ) -> AppOutcome | Awaitable[AppOutcome]:
        """The outcome of an application planned at once, or the work of what waits (a
        signature check, a write): most applications of a cycle change nothing and need no
        task of their own."""
        try:
            plan, checking = unverified_plan(jobs, scans, holds)
            if checking:
                return one(config, cr, jobs, holds, unverified=plan)
            writer = writer_for(config)
            outcome, write = planned_outcome(
                config, jobs, scans, plan, writer, dry_run, holds, plans
            )
        except Exception as err:  # one application never stops the cycle
            return finish(config, cr, jobs, holds, _failed(config, "update", err))
        if not write:
            return finish(config, cr, jobs, holds, outcome)
        assert writer is not None
        return one(config, cr, jobs, holds, (outcome, writer))

    async def one(
        config: AppUpdateConfig,
        cr: CRState | None,
        jobs: AppJobs,
        holds: HoldContext,
        settled: tuple[AppOutcome, AppWriter] | None = None,
        unverified: AppPlan | None = None,
    ) -> AppOutcome:
        """Plan (unless ``settled``: its outcome and writer; ``unverified``: its plan before
        signature checks) and write one application."""
        async with limit:

            async def again(app: Application) -> tuple[AppUpdateConfig, AppJobs]:
                fresh = dataclasses.replace(config, app=app)
                return fresh, plan_scans(fresh, registries.endpoint_for)

            try:
                if settled is not None:
                    outcome = await write_app(
                        settled[0], config, scans, settled[1], again, may_write, gate, holds
                    )
                else:
                    outcome = await process_app(
                        config,
                        jobs,
                        scans,
                        writer_for(config),
                        dry_run,
                        again,
                        may_write,
                        gate,
                        holds,
                        plans,
                        unverified,
                    )
            except Exception as err:  # one application never stops the cycle
                outcome = _failed(config, "update", err)
            return finish(config, cr, jobs, holds, outcome)

    items = [reused(c, cr, j) for c, cr, j in planned]
    waiting = [(i, item) for i, item in enumerate(items) if not isinstance(item, AppOutcome)]
    done = await asyncio.gather(*(item for _, item in waiting))
    for (i, _), outcome in zip(waiting, done, strict=True):
        items[i] = outcome
    result.apps = [item for item in items if isinstance(item, AppOutcome)]
    named = zip(planned, result.apps, strict=True)
    await name_overwriters([(c, j, o) for (c, _, j), o in named], writer_for)
    deferred = [
        (config, outcome)
        for (config, _, _), outcome in zip(planned, result.apps, strict=True)
        if writer_for(config) is None and outcome.plan is not None and outcome.plan.has_changes
    ]
    result.apps.extend(unplanned)
    if deferred and not dry_run:
        if may_write is not None and not may_write():
            for _, outcome in deferred:
                outcome.error = f"not writing {outcome.app}: this replica is no longer the leader"
        else:
            await _write_batch(deferred, batch_writer)
    if choices is not None:
        choices.keep(scans)
    if plans is not None:
        plans.end()
    if state is not None:
        remember_announced(state, result.apps)
        via = {app_key(c.app.namespace, c.app.name): _via(c) for c, _, _ in planned}
        remember_writes(state, result.apps, now, via)
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
    return result
