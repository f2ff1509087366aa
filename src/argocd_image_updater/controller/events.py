"""Registry events (webhooks): rescan the one repository named in the event and update only the
Applications that use it.

An event is a hint, not the truth: the tag written still comes from the registry and the policy.
The event's repository tag list is dropped from the cache so that the pushed tag is seen. Which
Applications use the repository comes from the last full cycle while it is recent; those
Applications are read again before planning.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Final

from argocd_image_updater.config.update_config import AppUpdateConfig
from argocd_image_updater.controller.cycle import CycleResult
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.controller.sources import Collected, CRState, collect
from argocd_image_updater.model.application import Application, ApplicationError
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.report.log import get_logger
from argocd_image_updater.webhook.events import RegistryEvent, repository_key

log = get_logger("webhook-events")

SELECTION_MAX_AGE: Final = 60.0
"""Seconds a full cycle's selection is reused by webhook events (at least the interval)."""


def images_for_repository(
    config: AppUpdateConfig, key: tuple[str, str]
) -> tuple[AppUpdateConfig | None, list[ImageRef]]:
    """``config`` narrowed to its images of repository ``key`` (None when it has none)."""
    keep = []
    refs = []
    for spec in config.images:
        try:
            ref = ImageRef.parse(spec.image)
        except ImageRefError:
            continue
        if repository_key(ref.registry, ref.name) == key:
            keep.append(spec)
            refs.append(ref)
    if not keep:
        return None, []
    return dataclasses.replace(config, images=tuple(keep)), refs


async def _selection(controller: Controller) -> tuple[Collected, bool]:
    """Which apps use which images: the last full cycle's selection while it is recent (the
    fleet is not listed and matched again for every event), else a fresh one."""
    max_age = max(SELECTION_MAX_AGE, controller.interval.total_seconds())
    cached = controller.last_collected
    if cached is not None and time.monotonic() - controller.last_collected_at < max_age:
        return cached, True
    return (
        await collect(
            controller.store, controller.namespaces, controller.legacy, controller.read_crs
        ),
        False,
    )


async def _refreshed(
    controller: Controller, configs: list[tuple[AppUpdateConfig, CRState | None]]
) -> list[tuple[AppUpdateConfig, CRState | None]]:
    """The selected apps re-read, so that planning sees their current spec and live images."""

    async def one(
        item: tuple[AppUpdateConfig, CRState | None],
    ) -> tuple[AppUpdateConfig, CRState | None] | None:
        config, cr = item
        obj = await controller.store.get_application(config.app.namespace, config.app.name)
        if obj is None:
            return None
        try:
            return dataclasses.replace(config, app=Application.from_object(obj)), cr
        except ApplicationError as err:
            log.error("skipping malformed Application: %s", str(err))
            return None

    fresh = await asyncio.gather(*(one(item) for item in configs))
    return [item for item in fresh if item is not None]


async def handle_event(controller: Controller, event: RegistryEvent) -> CycleResult | None:
    """Update every Application using the event's repository; scan nothing else."""
    started = time.monotonic()
    key = repository_key(event.registry, event.repository)
    fields = {
        "webhook_registry": event.registry,
        "webhook_repository": event.repository,
        "webhook_tag": event.tag,
    }
    collected, cached = await _selection(controller)
    narrowed = Collected(crs=collected.crs)
    for config, cr in collected.configs:
        only, refs = images_for_repository(config, key)
        if only is None:
            continue
        narrowed.configs.append((only, cr))
        for ref in refs:
            endpoint = controller.registries.endpoint_for(ref.registry, ref.name)
            controller.scanner.invalidate_tags(endpoint, ref.name)
    if cached:
        narrowed.configs = await _refreshed(controller, narrowed.configs)
    if not narrowed.configs:
        log.info("no application uses the repository of this event", **fields)
        return None
    log.info("processing registry event for %d application(s)", len(narrowed.configs), **fields)
    result = await controller.update(narrowed)
    if controller.reporter is not None:
        await controller.reporter.report(narrowed, result, dry_run=controller.dry_run, partial=True)
    log.info("registry event processed in %.3fs", time.monotonic() - started, **fields)
    return result
