"""Registry events (webhooks): rescan the one repository named in the event and update only the
Applications that use it.

An event is a hint, not the truth: the tag written still comes from the registry and the policy.
An image matches an event when the event names its repository as polling resolves it (through
``registries.conf``: the default registry for images written without a host, ``defaultns``), and,
as in the original, an image written without a registry host matches an event of any registry
naming the same repository. The update lists the repository's tags afresh (its own scan round).
Which Applications use the repository comes from the last full cycle while it is recent; those
Applications are read again before planning.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from typing import Final

from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.controller.sources import collect
from argocd_image_updater.model.application import Application, ApplicationError
from argocd_image_updater.model.chart import ChartRef, ChartRefError
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.registry_event import RegistryEvent, repository_key
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.records import Collected, CRState, CycleResult

log = get_logger("webhook-events")

SELECTION_MAX_AGE: Final = 60.0
"""Seconds a full cycle's selection is reused by webhook events (at least the interval)."""


def matches_event(ref: ImageRef, endpoint: RegistryEndpoint, event: RegistryEvent) -> bool:
    """Whether ``event`` names the repository of image ``ref``, which polling scans through
    ``endpoint`` (``registries.conf``'s choice for it)."""
    wanted = repository_key(event.registry, event.repository)
    names = {ref.name, endpoint.repository_path(ref.name)}
    if not ref.registry and event.repository.strip().strip("/") in names:
        return True  # no host: any registry (spec: images without a host match any registry)
    hosts = {endpoint.prefix.split("/", 1)[0], endpoint.host}
    if ref.registry:
        hosts.add(ref.registry)
    return any(repository_key(host, name) == wanted for host in hosts if host for name in names)


def images_for_repository(
    config: AppUpdateConfig,
    event: RegistryEvent,
    endpoint_for: Callable[[str, str], RegistryEndpoint],
) -> AppUpdateConfig | None:
    """``config`` narrowed to its images and OCI charts of the event's repository (None when it
    has none)."""
    keep = []
    for spec in config.images:
        try:
            ref = ImageRef.parse(spec.image)
        except ImageRefError:
            continue
        if matches_event(ref, endpoint_for(ref.registry, ref.name), event):
            keep.append(spec)
    charts = []
    for chart in config.charts:
        try:
            found = ChartRef.parse(chart.chart)
        except ChartRefError:
            continue
        if not found.is_oci:
            continue  # Helm repositories send no registry events
        as_image = ImageRef(found.registry, found.repository, None)
        if matches_event(as_image, endpoint_for(found.registry, found.repository), event):
            charts.append(chart)
    if not keep and not charts:
        return None
    return dataclasses.replace(config, images=tuple(keep), charts=tuple(charts))


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
    fields = {
        "webhook_registry": event.registry,
        "webhook_repository": event.repository,
        "webhook_tag": event.tag,
    }
    # The pushed tag may have moved: its next scan asks the registry instead of trusting the
    # digest it knew (the event's repository on any endpoint; at worst one extra request).
    controller.scanner.forget_tags(event.repository, [event.tag] if event.tag else None)
    collected, cached = await _selection(controller)
    narrowed = Collected(crs=collected.crs)
    for config, cr in collected.configs:
        only = images_for_repository(config, event, controller.registries.endpoint_for)
        if only is not None:
            narrowed.configs.append((only, cr))
    if cached:
        narrowed.configs = await _refreshed(controller, narrowed.configs)
    if not narrowed.configs:
        log.info("no application uses the repository of this event", **fields)
        return None
    with controller.shard(narrowed):
        if not narrowed.configs:
            log.info("no application of this replica's shard uses this repository", **fields)
            return None
        log.info("processing registry event for %d application(s)", len(narrowed.configs), **fields)
        result = await controller.update(narrowed)
        if controller.reporter is not None:
            await controller.reporter.report(
                narrowed, result, dry_run=controller.dry_run, partial=True
            )
    log.info("registry event processed in %.3fs", time.monotonic() - started, **fields)
    return result
