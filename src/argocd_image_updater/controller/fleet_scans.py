"""The scan stage's part in a sharded fleet's tag lists
(:mod:`~argocd_image_updater.controller.fleet_tag_lists`): which repository listings the whole
static shard needs this cycle (the owners' heartbeats are checked against them), and listing
those this member owns that only the other members' Applications use.

What a listing is shared by (registry API, repository path, credentials) is worked out per
Application from its scan jobs: once for each jobs object of this member's Applications (the
plan reuse, :class:`~argocd_image_updater.controller.plan_reuse.PlanReuse`, hands out last
cycle's jobs of an Application whose configuration held) and once for each configuration of
the others' (selection hands out the same configuration while an Application is unchanged),
so a steady cycle works out nothing again, and hands out last cycle's answer whole.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Sequence
from typing import Final

from argocd_image_updater.controller.cycle_context import Cycle
from argocd_image_updater.controller.fleet_tag_lists import FleetTagLists
from argocd_image_updater.controller.plan_reuse import scan_jobs
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.records import CycleApp
from argocd_image_updater.plan.charts import ChartJob
from argocd_image_updater.plan.choices import ScanResults
from argocd_image_updater.plan.jobs import AppJobs, ImageJob
from argocd_image_updater.registry.cache import TagListKey
from argocd_image_updater.registry.scanner import Scanner, ScanRequest

log = get_logger("cycle")

CONCURRENCY: Final = 16
"""Listings made for the other members at once."""

Listings = dict[TagListKey, ScanRequest]


def _listings(jobs: AppJobs, namespace: str, cycle: Cycle) -> Listings:
    found: Listings = {}
    every: list[ImageJob | ChartJob] = [*jobs.jobs, *jobs.chart_jobs]
    for job in every:
        if job.endpoint is None:
            continue  # a Helm repository's index: no registry tag list
        try:
            provider = cycle.context.credentials.for_job(job.endpoint, job.pull_secret, namespace)
        except Exception as err:  # reported with the Applications of the job
            log.debug("no tag list for %s: %s", job.repository, str(err))
            continue
        request = ScanRequest(job.endpoint, job.repository, credentials=provider)
        found[Scanner.tag_list_key(request)] = request
    return found


class FleetScans:
    """A member's listings for the fleet (see the module); the listings of each jobs object
    (this member's Applications) and of each configuration (the others') are kept for those
    the last cycle met, under one ``registries.conf``."""

    def __init__(self, lists: FleetTagLists) -> None:
        self.lists = lists
        self._kept: dict[int, tuple[object, Listings]] = {}
        self._seen: dict[int, tuple[object, Listings]] = {}
        self._registries: object = None
        self._last: tuple[list[object], list[int], tuple[set[TagListKey], Listings]] | None = None
        """The last cycle's inputs (kept alive: compared by identity) and what they needed."""

    def _of(self, jobs: AppJobs, namespace: str, cycle: Cycle) -> Listings:
        kept = self._kept.get(id(jobs))
        if kept is None or kept[0] is not jobs:
            kept = (jobs, _listings(jobs, namespace, cycle))
        self._seen[id(jobs)] = kept
        return kept[1]

    def _of_other(self, config: AppUpdateConfig, cycle: Cycle) -> Listings:
        """The listings of another member's Application; its scan jobs are made here, not
        kept by this member's plan reuse, which keeps only what its own cycles meet."""
        kept = self._kept.get(id(config))
        if kept is None or kept[0] is not config:
            jobs = scan_jobs(config, cycle.registries, None)
            # A configuration whose jobs cannot be made is its owner's to report.
            found = (
                {} if isinstance(jobs, Exception) else _listings(jobs, config.app.namespace, cycle)
            )
            kept = (config, found)
        self._seen[id(config)] = kept
        return kept[1]

    def _needed(
        self, apps: Sequence[CycleApp], others: Sequence[AppUpdateConfig], cycle: Cycle
    ) -> tuple[set[TagListKey], Listings]:
        """Every listing the static shard needs, and those only the ``others`` need (shared:
        read them, never change them). The last cycle's answer again while its jobs, the
        others' configurations and ``registries.conf`` are the very same objects: going over
        5,000 Applications cost one of three replicas in ``benchmarks/sharding.py`` 6-7 ms a
        cycle."""
        inputs: list[object] = [cycle.registries]  # the others' jobs are made for it
        inputs.extend(app.jobs for app in apps)
        inputs.extend(others)
        ids = list(map(id, inputs))
        last = self._last
        if last is not None and last[1] == ids:
            return last[2]
        if cycle.registries is not self._registries:
            self._registries, self._kept = cycle.registries, {}
        mine: set[TagListKey] = set()
        for app in apps:
            mine.update(self._of(app.jobs, app.config.app.namespace, cycle))
        theirs: Listings = {}
        for config in others:
            theirs.update(self._of_other(config, cycle))
        self._kept, self._seen = self._seen, {}
        only_theirs = {key: request for key, request in theirs.items() if key not in mine}
        needed = (mine | theirs.keys(), only_theirs)
        self._last = (inputs, ids, needed)
        return needed

    async def around(
        self,
        own: Awaitable[ScanResults],
        apps: Sequence[CycleApp],
        others: Sequence[AppUpdateConfig],
        cycle: Cycle,
    ) -> ScanResults:
        everything, theirs = self._needed(apps, others, cycle)
        self.lists.round_begun(everything)
        limit = asyncio.Semaphore(CONCURRENCY)

        async def list_one(request: ScanRequest) -> None:
            # A failure is the fleet's news (the others list it themselves), not this cycle's.
            async with limit:
                with contextlib.suppress(Exception):
                    await cycle.context.scanner.scan(request, cycle.scan_round)

        mine = [request for key, request in theirs.items() if self.lists.owns(key)]
        listing = asyncio.gather(*(list_one(request) for request in mine))
        scans, _ = await asyncio.gather(own, listing)
        self.lists.round_done()
        return scans
