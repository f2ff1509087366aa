"""The log lines of a cycle's applications: one per image planned, one per image written, one
per application that failed (the lines and their fields are those of the original)."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.records import AppOutcome
from argocd_image_updater.plan.model import AppPlan, ImageReason, Outcome

log = get_logger("cycle")


def _tag_of(reference: str | None) -> str:
    """The ``tag[@digest]`` of a live image reference, for the ``image_tag`` log field."""
    if not reference:
        return ""
    try:
        ref = ImageRef.parse(reference)
    except ImageRefError:
        return reference
    return ref.tag_with_digest if ref.digest else (ref.tag or "")


def log_plan(
    plan: AppPlan, app_key: str, origin: Mapping[str, str], *, updates: bool = True
) -> None:
    """One line per image; the updates only with ``updates`` (the batch writer's apps log
    them once it is known whether their target already held them: :func:`log_updates`)."""
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


def log_updates(plan: AppPlan, app_key: str) -> None:
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


def log_written(plan: AppPlan, app_key: str) -> None:
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


def origin_fields(config: AppUpdateConfig) -> dict[str, str]:
    """Log fields naming the ImageUpdater an application's configuration comes from."""
    kind, _, qualified = config.origin.partition(" ")
    if kind != "imageupdater":
        return {}
    namespace, _, name = qualified.partition("/")
    return {"imageUpdater_namespace": namespace, "imageUpdater_name": name}


def failed(config: AppUpdateConfig, step: str, err: Exception) -> AppOutcome:
    """An application whose ``step`` failed unexpectedly: its error, logged; the cycle goes on."""
    app_key = f"{config.app.namespace}/{config.app.name}"
    message = f"could not {step} application {app_key}: {type(err).__name__}: {err}"
    log.error(message, application=app_key, **origin_fields(config))
    return AppOutcome(app=app_key, plan=None, error=message, uid=config.app.uid)
