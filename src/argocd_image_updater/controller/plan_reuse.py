"""Last cycle's scan jobs and plans, reused for the Applications whose inputs did not change.

A cycle where little changed would otherwise plan every Application again. An Application's
scan jobs (:func:`~argocd_image_updater.plan.jobs.plan_scans`) depend on its configuration and
the registry configuration only; its plan (:func:`~argocd_image_updater.plan.decide.plan_app`)
on those jobs, the tag choice made for each of them, the remembered writes of the Application
(rollback holds) and its manual holds. Each is recognised cheaply:

* the configuration by identity: the selection hands out last cycle's configuration object
  for an Application and ImageUpdater whose resourceVersions held
  (``controller.views``, ``config.selection.SelectionMemory``);
* the registry configuration by identity (a reloaded ``registries.conf`` is a new object);
* each tag choice by identity: :class:`~argocd_image_updater.plan.choices.ChoiceMemory` hands
  out last cycle's choice record when a scan found exactly the same tags;
* the remembered writes by equality (a few records at most).

A plan is reused only when it changes nothing (a plan with changes is written, and the
Application changes with it), and never for an image with a manual hold (holds end with time),
``pinDigest`` (the digest is asked for every cycle) or signature verification (checked every
cycle), nor when a scan failed or a choice depends on the time (``minAge``). Only the
Applications of the last full cycle are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.model.controller_state import WriteRecord
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.plan.charts import ChartJob
from argocd_image_updater.plan.choices import ScanResults
from argocd_image_updater.plan.holds import HoldContext
from argocd_image_updater.plan.jobs import AppJobs, ImageJob, plan_scans
from argocd_image_updater.plan.model import AppPlan

_Key = tuple[str, str]


def scan_jobs(
    config: AppUpdateConfig, registries: RegistryConfig, reuse: PlanReuse | None
) -> AppJobs | Exception:
    """The scan jobs of one application (last cycle's from ``reuse`` when its configuration
    held); an unexpected failure is returned, not raised."""
    try:
        if reuse is not None:
            return reuse.jobs(config, registries, registries.endpoint_for)
        return plan_scans(config, registries.endpoint_for)
    except Exception as err:  # one application never stops the cycle
        return err


@dataclass(slots=True)
class _Kept:
    config: AppUpdateConfig
    registries: object
    jobs: AppJobs
    plan: AppPlan | None = None
    choices: tuple[object, ...] = ()
    writes: Mapping[str, WriteRecord] = field(default_factory=dict)
    live: tuple[str, ...] = ()
    """What planning told the holds of the live images (a tuple: most hold one)."""


def _choices(jobs: AppJobs, scans: object) -> tuple[object, ...] | None:
    """The choice records the plan of ``jobs`` is made from; None when it may not be reused
    (or a choice failed unexpectedly: planning reports that failure as the image's error)."""
    try:
        return _records(jobs, scans)
    except Exception:
        return None


def _records(jobs: AppJobs, scans: object) -> tuple[object, ...] | None:
    if not isinstance(scans, ScanResults):
        return None
    found: list[object] = []
    every: tuple[ImageJob | ChartJob, ...] = (*jobs.jobs, *jobs.chart_jobs)
    for job in every:
        verification = getattr(job, "verification", None)
        if getattr(job, "pin_digest", False) or (verification is not None and verification.enabled):
            return None
        scan = scans.get(job.scan_key)
        if scan is None or isinstance(scan, Exception):
            return None
        found.append(scans.choice(job.scan_key, job.policy, scan))
    return tuple(found)


class PlanReuse:
    """Scan jobs and plans by Application, from one full cycle to the next (:meth:`begin`,
    :meth:`end`); see the module documentation."""

    __slots__ = ("_kept", "_seen", "jobs_reused", "plans_reused")

    def __init__(self) -> None:
        self._kept: dict[_Key, _Kept] = {}
        self._seen: dict[_Key, _Kept] = {}
        self.jobs_reused = 0
        self.plans_reused = 0
        """How many scan jobs and plans the last cycle reused (for tests and benchmarks)."""

    def __len__(self) -> int:
        return len(self._kept)

    def begin(self) -> None:
        self._seen = {}
        self.jobs_reused = self.plans_reused = 0

    def end(self) -> None:
        self._kept, self._seen = self._seen, {}

    def jobs(
        self,
        config: AppUpdateConfig,
        registries: object,
        endpoint_for: Callable[[str, str], RegistryEndpoint],
    ) -> AppJobs:
        """The scan jobs of ``config``: last cycle's when ``config`` and ``registries`` (whose
        ``endpoint_for`` is given) are the same objects, else new ones (raises as
        :func:`~argocd_image_updater.plan.jobs.plan_scans` does)."""
        key = (config.app.namespace, config.app.name)
        kept = self._kept.get(key)
        if kept is not None and kept.config is config and kept.registries is registries:
            self.jobs_reused += 1
        else:
            kept = _Kept(config, registries, plan_scans(config, endpoint_for))
        self._seen[key] = kept
        return kept.jobs

    def plan(self, jobs: AppJobs, scans: object, holds: HoldContext | None) -> AppPlan | None:
        """Last cycle's plan of ``jobs`` when every input it was made from held (``holds``
        then learns what planning would have told it), else None."""
        app = jobs.config.app
        kept = self._seen.get((app.namespace, app.name))
        if kept is None or kept.jobs is not jobs or kept.plan is None:
            return None
        if holds is None or holds.manual or holds.writes != kept.writes:
            return None
        choices = _choices(jobs, scans)
        if choices is None or len(choices) != len(kept.choices):
            return None
        if any(now is not then for now, then in zip(choices, kept.choices, strict=True)):
            return None
        holds.live.update(kept.live)
        self.plans_reused += 1
        return kept.plan

    def keep(
        self, jobs: AppJobs, scans: object, holds: HoldContext | None, plan: AppPlan | None
    ) -> None:
        """Remember ``plan``, made from ``jobs`` and ``scans`` this cycle, when it may be
        reused (see the module documentation)."""
        app = jobs.config.app
        kept = self._seen.get((app.namespace, app.name))
        if kept is None or kept.jobs is not jobs:
            return
        kept.plan = None
        if plan is None or plan.has_changes or holds is None or holds.manual:
            return
        choices = _choices(jobs, scans)
        if choices is None:
            return
        kept.plan, kept.choices = plan, choices
        kept.writes, kept.live = holds.writes, tuple(holds.live)
