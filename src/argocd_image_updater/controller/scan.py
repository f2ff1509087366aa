"""The cycle's first stages: each collected application's scan jobs (**collect**), then every
distinct registry scan once (**scan**).

Jobs are deduplicated on their :class:`~argocd_image_updater.plan.jobs.ScanKey` (registry,
repository, credentials, metadata, platforms), and each distinct scan runs once with bounded
concurrency: 1,000 Applications sharing 20 images cost 20 tag-list requests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from argocd_image_updater.controller.at_once import AtOnceMemory
from argocd_image_updater.controller.credentials import CredentialsCache
from argocd_image_updater.controller.cycle_context import Cycle
from argocd_image_updater.controller.cycle_log import failed
from argocd_image_updater.controller.plan_reuse import scan_jobs
from argocd_image_updater.controller.remembered import forget_untagged
from argocd_image_updater.model.platform import Platform
from argocd_image_updater.model.registry import CredentialProvider, RegistryEndpoint
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.records import AppOutcome, Collected, CycleApp
from argocd_image_updater.plan.charts import ChartJob
from argocd_image_updater.plan.choices import ChoiceMemory, ScanResults
from argocd_image_updater.plan.jobs import AppJobs, ImageJob, ScanKey
from argocd_image_updater.registry.scanner import Scanner, ScanRequest

log = get_logger("cycle")


def collect_jobs(collected: Collected, cycle: Cycle) -> tuple[list[CycleApp], list[AppOutcome]]:
    """The applications with their scan jobs, and the outcomes of those whose jobs could not
    be planned (an unexpected failure: the application's error, the cycle goes on)."""
    apps: list[CycleApp] = []
    unplanned: list[AppOutcome] = []
    for config, cr in collected.configs:
        jobs = scan_jobs(config, cycle.registries, cycle.context.plans)
        if isinstance(jobs, Exception):
            outcome = failed(config, "plan", jobs)
            outcome.cr = cr
            unplanned.append(outcome)
        else:
            apps.append(CycleApp(config, cr, jobs))
    return apps, unplanned


async def scan_repositories(
    apps: list[CycleApp], cycle: Cycle, others: Sequence[AppUpdateConfig] = ()
) -> ScanResults:
    """Every distinct scan of the cycle's applications, run once; the remembered tags that the
    full tag listings no longer hold are forgotten. A member of a sharded fleet also lists the
    repositories it owns that only ``others`` (the Applications of the other members) use, then
    tells the fleet (:mod:`~argocd_image_updater.controller.fleet_tag_lists`)."""
    context = cycle.context
    own = run_scans(
        [(app.jobs, app.config.app.namespace) for app in apps],
        context.scanner,
        context.credentials,
        scan_round=cycle.scan_round,
        memory=context.choices,
        at_once=context.fleet.at_once if context.fleet is not None else None,
    )
    fleet = context.fleet
    scans = await own if fleet is None else await fleet.around(own, apps, others, cycle)
    if context.state is not None:
        forget_untagged(context.state, apps, scans)
    return scans


def scan_request(
    key: ScanKey,
    repository: str,
    endpoint: RegistryEndpoint,
    credentials: CredentialProvider | None,
) -> ScanRequest:
    """The registry request of the scan ``key`` of ``repository`` (as the job names it)."""
    return ScanRequest(
        endpoint=endpoint,
        repository=repository,
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
    request = scan_request(job.scan_key, job.repository, endpoint, provider)
    return await scanner.scan(request, scan_round)


class _Scans:
    """The scans of one call of :func:`run_scans`, each recorded in ``results`` with bounded
    concurrency; a failure is recorded as the scan's outcome (reported per image, never fatal)."""

    def __init__(
        self,
        scanner: Scanner,
        credentials: CredentialsCache,
        concurrency: int,
        results: ScanResults,
        memory: AtOnceMemory | None = None,
    ) -> None:
        self.scanner = scanner
        self.credentials = credentials
        self.limit = asyncio.Semaphore(concurrency)
        self.results = results
        self.memory = memory
        """A full cycle's: the last full cycle's requests and answers at once, asked again."""
        self._requests: dict[ScanKey, ScanRequest] = {}
        """The requests :meth:`at_once` made and could not answer, by scan: made once (a
        sharded replica makes the request of each scan there, a third of which it then lists)."""

    def at_once(
        self, key: ScanKey, job: ImageJob | ChartJob, namespace: str, scan_round: int | None
    ) -> bool:
        """Record the scan of ``key`` if it needs no request (``Scanner.scan_at_once``: a
        sharded replica's copy that the repository's owner vouches for)."""
        endpoint = job.endpoint
        if endpoint is None or scan_round is None or self.scanner.vouched is None:
            return False
        memory = self.memory
        try:
            provider = self.credentials.for_job(endpoint, job.pull_secret, namespace)
            kept = memory.last(key, endpoint, job.repository, provider) if memory else None
            request, last = kept or (scan_request(key, job.repository, endpoint, provider), None)
            found = self.scanner.scan_at_once(request, scan_round, last)
        except Exception:  # scanned as usual, which reports it
            return False
        if memory is not None:
            memory.keep(key, request, found)
        if found is None:
            self._requests[key] = request
            return False
        self.results[key] = found.result
        return True

    async def run(
        self, key: ScanKey, job: ImageJob | ChartJob, namespace: str, scan_round: int | None
    ) -> None:
        async with self.limit:
            try:
                request = self._requests.pop(key, None)
                self.results[key] = await (
                    scan_one(self.scanner, self.credentials, job, namespace, scan_round)
                    if request is None
                    else self.scanner.scan(request, scan_round)
                )
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
                self.results[key] = err


async def run_scans(
    jobs: list[tuple[AppJobs, str]],
    scanner: Scanner,
    credentials: CredentialsCache,
    concurrency: int = 16,
    scan_round: int | None = None,
    memory: ChoiceMemory | None = None,
    at_once: AtOnceMemory | None = None,
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
    scans = _Scans(scanner, credentials, concurrency, results, at_once)
    with scanner.answering_at_once():
        waiting = [
            (k, j, ns) for k, (j, ns) in firsts.items() if not scans.at_once(k, j, ns, scan_round)
        ]
    if at_once is not None:
        at_once.cycle_done()
    await asyncio.gather(*(scans.run(k, job, ns, scan_round) for k, job, ns in waiting))
    return results
