"""Digest pinning (``pinDigest``) for strategies that choose by tag name: which chosen tags need
their digest, and where the planner finds it.

A strategy other than ``digest`` chooses from tag names (``semver``, ``alphabetical``) or from
metadata that may be a few cycles old (``newest-build``), so the digest of the chosen tag is asked
for after the choice: one request per distinct (registry, repository, credentials, tag) in a
cycle, never one per tag of the repository. :func:`wanted_pins` lists them from the scans and
the choices (made once, shared with the planner through :class:`~.choices.ScanResults`); the
cycle asks the registry and stores the answers with :meth:`~.choices.ScanResults.pin`; the
planner writes ``tag@digest`` with them. Pure: no I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from argocd_image_updater.plan.choices import ScanResults
from argocd_image_updater.plan.jobs import AppJobs, ImageJob
from argocd_image_updater.policy.select import PolicyError


@dataclass(frozen=True, slots=True)
class PinRequest:
    """One chosen tag whose current digest the registry must give; ``job`` is the first image
    asking for it (its endpoint, repository and pull secret are those of every other)."""

    tag: str
    job: ImageJob
    namespace: str


def wanted_pins(apps: Iterable[tuple[AppJobs, str]], results: ScanResults) -> list[PinRequest]:
    """The distinct chosen tags of the images that pin a strategy choosing by name (each app's
    jobs with its namespace, for the pull secret); tags already pinned in ``results`` are left
    out."""
    wanted: dict[tuple[str, str, str, str], PinRequest] = {}
    for jobs, namespace in apps:
        for job in jobs.jobs:
            if not job.pin_digest or job.policy.strategy.pins_digest:
                continue
            scan = results.get(job.scan_key)
            if scan is None or isinstance(scan, Exception):
                continue
            try:
                chosen = results.choose(job.scan_key, job.policy, scan).chosen
            except PolicyError:
                continue
            if chosen is None or results.pinned(job.scan_key, chosen.name) is not None:
                continue
            key = results.pin_key(job.scan_key, chosen.name)
            wanted.setdefault(key, PinRequest(chosen.name, job, namespace))
    return list(wanted.values())
