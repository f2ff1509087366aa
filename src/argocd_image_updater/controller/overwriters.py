"""Who set an Application's parameters back: the field manager named in a rollback hold.

A rollback hold found in the Application's parameters (the ``argocd`` method) says who
overwrote the tag written when the Application's ``managedFields`` tell (a person's
``kubectl``, an app-of-apps parent's ``argocd-controller``): the Application is read once more,
only when a hold is announced (the listed Applications are kept without ``managedFields``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from argocd_image_updater.model.managed_fields import field_manager
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.ports import AppWriter
from argocd_image_updater.pipeline.records import AppOutcome, CycleApp
from argocd_image_updater.plan.holds import announced, overwriter
from argocd_image_updater.plan.jobs import ImageJob

log = get_logger("cycle")

OWN_MANAGER = "argocd-image-updater"
"""The field manager the API server records for our own writes (our User-Agent's name)."""

_PARAMETERS = {"kustomize": ("kustomize", "images"), "helm": ("helm", "parameters")}


async def name_overwriters(
    apps: Sequence[CycleApp],
    outcomes: Sequence[AppOutcome],
    writer_for: Callable[[AppUpdateConfig], AppWriter | None],
) -> None:
    """Add ``by <manager>`` to the rollback holds of the ``argocd`` method announced now (the
    outcomes of ``apps``, in order)."""
    for app, outcome in zip(apps, outcomes, strict=True):
        config, jobs = app.config, app.jobs
        plan = outcome.plan
        if plan is None or config.write_back.is_git or config.live_is_target:
            continue
        fresh = [
            r
            for r in plan.results
            if (to := announced(r.detail)) is not None and not overwriter(r.message, to)
        ]
        writer = writer_for(config) if fresh else None
        reread = getattr(writer, "reread", None)
        if reread is None:
            continue
        try:
            app = await reread(config.app)
        except Exception as err:  # only a better message is lost
            log.debug("could not read %s again: %s", outcome.app, str(err))
            continue
        kinds = {job.key: job.kind for job in jobs.jobs if isinstance(job, ImageJob)}
        names: dict[str, str] = {}
        for result in fresh:
            key = result.alias or result.image
            where = (*jobs.source_path, *_PARAMETERS.get(kinds.get(key, ""), ("plugin", "env")))
            manager = field_manager(app.raw, where, ignore=OWN_MANAGER)
            if manager:
                names[key] = manager
        if names:
            outcome.plan = dataclasses.replace(
                plan,
                results=tuple(
                    dataclasses.replace(r, message=f"{r.message} by {names[r.alias or r.image]}")
                    if r in fresh and (r.alias or r.image) in names
                    else r
                    for r in plan.results
                ),
            )
