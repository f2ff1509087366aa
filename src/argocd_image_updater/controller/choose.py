"""The cycle's **choose** stage, between the scans and the plans.

A tag is chosen by :meth:`~argocd_image_updater.plan.choices.ScanResults.choose`: once per
(scan, policy) per cycle, on first use, from the scan's tags (or last cycle's choice when the
scan listed exactly the same tags: :class:`~argocd_image_updater.plan.choices.ChoiceMemory`).
This stage gives the choices what they are made from and asks the registry what follows from
them before any application is planned: when each tag of an image with a ``minAge`` was first
seen, the digest of the tag chosen for each pinned image (:mod:`.pins`: those are chosen here),
and the tags that moved to another digest since last seen (:mod:`.moved_tags`). The other
choices are made when their application is planned (:mod:`.update_app`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from argocd_image_updater.controller.cycle_context import Cycle
from argocd_image_updater.controller.moved_tags import note_moved_tags
from argocd_image_updater.controller.pins import pin_digests
from argocd_image_updater.controller.remembered import age_tags
from argocd_image_updater.pipeline.records import CycleApp
from argocd_image_updater.plan.choices import ScanResults
from argocd_image_updater.plan.moved import TagKey, TagMove

Moves = Mapping[TagKey, TagMove]


async def choose_tags(apps: Sequence[CycleApp], scans: ScanResults, cycle: Cycle) -> Moves:
    """Ready the choices of ``scans`` (tag ages, pinned digests); the tags that moved."""
    context = cycle.context
    state = context.state
    age_tags(state, apps, scans, cycle.now)
    await pin_digests(
        [(app.jobs, app.config.app.namespace) for app in apps],
        scans,
        context.scanner,
        context.credentials.for_job,
        cycle.scan_round,
    )
    if state is None:
        return {}
    return note_moved_tags(state, [app.jobs for app in apps], scans)
