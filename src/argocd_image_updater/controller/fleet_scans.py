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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Final

from argocd_image_updater.controller.at_once import AtOnceMemory
from argocd_image_updater.controller.cycle_context import Cycle
from argocd_image_updater.controller.fleet_tag_lists import FleetTagLists
from argocd_image_updater.controller.plan_reuse import scan_jobs
from argocd_image_updater.kits.same_items import same_items
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


class _Needs:
    """The listings a changing collection of objects (each a jobs object or a configuration,
    by identity) needs, and which of them need each: worked out for the objects new since the
    last :meth:`update`, and let go for those gone, not for all of them again."""

    def __init__(self) -> None:
        self._of: dict[int, tuple[object, Listings]] = {}
        """By object identity: the object (kept: its identity stays its own) and its listings."""
        self.by_key: dict[TagListKey, dict[int, ScanRequest]] = {}
        """Each listing needed: the request of each object that needs it, oldest first."""

    def update(self, objects: Mapping[int, object], listings: Callable[[object], Listings]) -> bool:
        """Follow ``objects`` (by identity) now: ``listings`` of each new one; whether anything
        changed."""
        known = self._of
        gone = known.keys() - objects.keys()
        new = objects.keys() - known.keys()
        for ident in gone:
            _, found = known.pop(ident)
            for key in found:
                needers = self.by_key[key]
                del needers[ident]
                if not needers:
                    del self.by_key[key]
        for ident in new:
            obj = objects[ident]
            needs = listings(obj)
            known[ident] = (obj, needs)
            for key, request in needs.items():
                self.by_key.setdefault(key, {})[ident] = request
        return bool(gone or new)


class FleetScans:
    """A member's listings for the fleet (see the module): the listings of each jobs object
    (this member's Applications) and of each configuration (the others') are worked out once,
    for as long as they are met every cycle, under one ``registries.conf``."""

    def __init__(self, lists: FleetTagLists) -> None:
        self.lists = lists
        self.at_once = AtOnceMemory()
        """The requests and answers at once of the last full cycle's scans."""
        self._mine = _Needs()
        self._theirs = _Needs()
        self._registries: object = None
        self._last: tuple[set[TagListKey], Listings] | None = None
        """What the objects followed needed (handed out again while they are the same)."""
        self._order: list[int] = []
        """The others' configurations (by identity) in the order of the last answer."""
        self._given: tuple[list[AppJobs], list[AppUpdateConfig]] | None = None
        """The jobs and configurations of the last answer, as given: the very same ones again
        (a steady fleet's cycle) get it without a look at each."""

    def _needed(
        self, apps: Sequence[CycleApp], others: Sequence[AppUpdateConfig], cycle: Cycle
    ) -> tuple[set[TagListKey], Listings]:
        """Every listing the static shard needs, and those only the ``others`` need (shared:
        read them, never change them; each with the request of the last of the ``others`` that
        needs it). Only the jobs and configurations not met in the last cycle are gone over:
        going over the 5,000 Applications of ``benchmarks/sharding.py`` each cycle cost one of
        three replicas 4 ms of CPU a cycle where some Applications changed (a CPU profile,
        2 vCPU AMD EPYC, CPython 3.11), a third of that now."""
        if cycle.registries is not self._registries:  # the others' jobs are made for it
            self._registries, self._mine, self._theirs = cycle.registries, _Needs(), _Needs()
            self._last, self._given = None, None
        jobs = [app.jobs for app in apps]
        given = self._given
        if (
            self._last is not None
            and given is not None
            and same_items(jobs, given[0])
            and same_items(others, given[1])
        ):
            return self._last
        self._given = (jobs, list(others))
        # Each jobs object's first Application names the namespace of its credentials.
        first = dict(zip(map(id, reversed(jobs)), reversed(apps), strict=True))

        def of_mine(found: object) -> Listings:
            assert isinstance(found, AppJobs)
            return _listings(found, first[id(found)].config.app.namespace, cycle)

        def of_theirs(config: object) -> Listings:
            # Their jobs are made here, not kept by this member's plan reuse, which keeps only
            # what its own cycles meet; a configuration whose jobs cannot be made is its
            # owner's to report.
            assert isinstance(config, AppUpdateConfig)
            made = scan_jobs(config, cycle.registries, None)
            return (
                {} if isinstance(made, Exception) else _listings(made, config.app.namespace, cycle)
            )

        order = list(map(id, others))
        changed = self._mine.update(dict(zip(map(id, jobs), jobs, strict=True)), of_mine)
        changed |= self._theirs.update(dict(zip(order, others, strict=True)), of_theirs)
        if changed or self._last is None or order != self._order:
            self._order = order
            mine, theirs = self._mine.by_key, self._theirs.by_key
            last = dict(zip(order, range(len(order)), strict=True)).__getitem__
            only_theirs = {  # with the request of the last of the others that needs it
                key: needers[max(needers, key=last)]
                for key, needers in theirs.items()
                if key not in mine
            }
            self._last = (mine.keys() | theirs.keys(), only_theirs)
        return self._last

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
