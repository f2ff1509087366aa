"""The ``status`` of an ImageUpdater after a cycle, and the writer that stores it.

:func:`compute_status` is pure: it turns one CR's share of a cycle into the whole ``status``
object, with the original's fields, conditions, reasons and messages. Two things differ from the
original on purpose:

* Only images that were really written count as updated. In ``--dry-run`` the would-be updates
  are not reported as done: the ``Ready`` message says ``0 images updated``, ``recentUpdates``
  and ``lastUpdatedAt`` are left as they were, and the pending updates are listed in the
  ``ImagesUpToDate`` condition.
* ``recentUpdates`` holds the updates of the last cycle that wrote something, each with the
  time it was written. A cycle without writes keeps that list (and its ``updatedAt``) unchanged,
  so an entry never looks fresher than it is.

The CRD's status schema prunes unknown fields, so the per-image explanation ("why was this image
not updated?") lives in the message of an extra condition, ``ImagesUpToDate``: one line per
image with its reason code, current and chosen reference, most interesting images first, at most
``max_images`` lines.

:func:`reconciling_status` is the status to write when a cycle starts (``Reconciling=True``).
:class:`StatusWriter` stores a status through the ``/status`` subresource, and only when
something other than ``lastCheckedAt`` changed, or when the stored ``lastCheckedAt`` is at least
:data:`HEARTBEAT` old: a cycle that changes nothing writes no status.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from argocd_image_updater.kits.fence import WriteFenced, check_fence
from argocd_image_updater.kits.json_copy import json_copy
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.ports import ConflictError, KeptFields, StatusStore, StoreError
from argocd_image_updater.pipeline.records import AppOutcome, CRState
from argocd_image_updater.plan.model import ImageChange, ImageResult, Outcome

log = get_logger("status")

READY: Final = "Ready"
RECONCILING: Final = "Reconciling"
ERROR: Final = "Error"
IMAGES: Final = "ImagesUpToDate"
"""Our addition: per-image results of the last cycle, in the message."""

HEARTBEAT: Final = timedelta(minutes=5)
"""An unchanged status is written again (``lastCheckedAt`` moved) at most this often."""

MESSAGE_LIMIT: Final = 30_000
"""Bound of a condition message we write (the CRD allows 32768)."""
LINE_LIMIT: Final = 400

_RANK: Final = {
    "error": 0,
    "write-failed": 0,
    "dry-run": 1,
    "skipped": 2,
    "waiting-for-sync": 3,
    "updated": 4,
    "up-to-date": 5,
}
"""Order of the per-image lines: problems first, then pending, skipped, waiting for sync,
updated, up to date."""


_formatted: list[tuple[datetime, str]] = []


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with whole seconds, like ``metav1.Time``. (A report formats its one
    ``now`` for every ImageUpdater and condition: the last result is kept.)"""
    last = _formatted[0] if _formatted else None
    if last is not None and last[0] is moment:
        return last[1]
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    text = aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _formatted[:] = [(moment, text)]
    return text


CRKey = tuple[str, str]
"""An ImageUpdater's namespace and name."""


def outcomes_by_cr(outcomes: Sequence[AppOutcome]) -> dict[CRKey, list[AppOutcome]]:
    """The outcomes of each ImageUpdater (by namespace and name), in one pass; outcomes of
    applications configured by annotations (no ImageUpdater) are left out."""
    grouped: dict[CRKey, list[AppOutcome]] = {}
    for outcome in outcomes:
        cr = outcome.cr
        if cr is not None:
            grouped.setdefault((cr.namespace, cr.name), []).append(outcome)
    return grouped


@dataclass(frozen=True, slots=True)
class ImageLine:
    """One image of the last cycle, as shown in the ``ImagesUpToDate`` condition."""

    app: str
    alias: str
    state: str
    """The result's reason code; ``dry-run`` or ``write-failed`` for an update not written."""
    current: str | None
    chosen: str | None
    message: str
    rank: int
    warnings: tuple[str, ...] = ()
    """Problems with the image's settings (each naming its field); shown whatever the state."""

    def render(self) -> str:
        """``<app> <alias>: <state> [<current>] [-> <chosen>][: <message>][; warning: …]``."""
        text = f"{self.app} {self.alias}: {self.state}"
        if self.current:
            text += f" {self.current}"
        if self.chosen and self.chosen != self.current:
            text += f" -> {self.chosen}"
        if self.rank < _RANK["updated"] and self.message:
            text += f": {self.message}"
        text = text if len(text) <= LINE_LIMIT else text[: LINE_LIMIT - 3] + "..."
        for warning in self.warnings:
            line = f"; warning: {warning}"
            text += line if len(line) <= LINE_LIMIT else line[: LINE_LIMIT - 3] + "..."
        return text


def _line(outcome: AppOutcome, result: ImageResult, dry_run: bool) -> ImageLine:
    state = str(result.reason)
    rank = _RANK["up-to-date"]
    message = result.message
    if result.outcome is Outcome.UPDATED:
        if outcome.written:
            rank = _RANK["updated"]
        elif outcome.error is not None:
            state, rank, message = "write-failed", _RANK["write-failed"], outcome.error
        else:
            state, rank = "dry-run", _RANK["dry-run"]
            message = "dry run, not written" if dry_run else "not written"
    elif result.outcome is Outcome.ERROR:
        rank = _RANK["error"]
    elif result.outcome is Outcome.SKIPPED:
        rank = _RANK["skipped"]
    elif result.outcome is Outcome.WAITING_FOR_SYNC:
        rank = _RANK["waiting-for-sync"]
    return ImageLine(
        outcome.app,
        result.alias,
        state,
        result.current,
        result.chosen,
        message,
        rank,
        result.warnings,
    )


def image_lines(outcomes: Sequence[AppOutcome], *, dry_run: bool) -> list[ImageLine]:
    """Every image of ``outcomes``, most interesting first (errors, pending, skipped, …)."""
    lines = [_line(o, r, dry_run) for o in outcomes if o.plan is not None for r in o.plan.results]
    for outcome in outcomes:
        if outcome.plan is None and outcome.error:
            lines.append(
                ImageLine(outcome.app, "*", "error", None, None, outcome.error, _RANK["error"])
            )
        elif outcome.plan is not None and outcome.plan.note and not outcome.plan.results:
            lines.append(ImageLine(outcome.app, "*", "skipped", None, None, outcome.plan.note, 2))
    return sorted(lines, key=lambda line: (line.rank, line.app, line.alias))


@dataclass(frozen=True, slots=True)
class Counts:
    apps: int
    images: int
    written: int
    pending: int
    errors: int


def count(outcomes: Sequence[AppOutcome]) -> Counts:
    """Applications, considered images, images written, updates not written, errors."""
    written = pending = errors = images = 0
    for outcome in outcomes:
        plan = outcome.plan
        errors += 1 if outcome.error else 0
        if plan is None:
            continue
        images += plan.considered
        errors += plan.errors
        if outcome.written:
            written += len(plan.changes)
        else:
            pending += len(plan.changes)
    return Counts(len(outcomes), images, written, pending, errors)


def recent_updates(
    changes: Sequence[ImageChange], now: datetime, limit: int = 100
) -> list[dict[str, Any]] | None:
    """The original's ``buildRecentUpdates``: one entry per (alias, image, new version), counting
    the applications; ``None`` when nothing changed."""
    if not changes:
        return None
    entries: dict[tuple[str, str, str], dict[str, Any]] = {}
    stamp = format_time(now)
    for change in changes:
        alias = change.alias or change.image.name
        key = (alias, change.image.full_name, change.new_version)
        entry = entries.get(key)
        if entry is not None:
            entry["applicationsUpdated"] += 1
            continue
        if len(entries) >= limit:
            continue
        entries[key] = {
            "alias": alias,
            "image": change.image.full_name,
            "newVersion": change.new_version,
            "applicationsUpdated": 1,
            "updatedAt": stamp,
            "message": f"Updated from {change.old_version} to {change.new_version}.",
        }
    return list(entries.values())


def set_condition(
    conditions: list[dict[str, Any]],
    type_: str,
    status: str,
    reason: str,
    message: str,
    *,
    generation: int,
    now: datetime,
) -> None:
    """Like ``meta.SetStatusCondition``: ``lastTransitionTime`` moves only when the status does."""
    new = {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": format_time(now),
    }
    for i, old in enumerate(conditions):
        if old.get("type") == type_:
            if old.get("status") == status and old.get("lastTransitionTime"):
                new["lastTransitionTime"] = old["lastTransitionTime"]
            conditions[i] = new
            return
    conditions.append(new)


def _previous_conditions(previous: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    found = (previous or {}).get("conditions")
    if not isinstance(found, list):
        return []
    return [json_copy(c) for c in found if isinstance(c, dict) and c.get("type")]


def _images_condition(
    lines: Sequence[ImageLine], counts: Counts, *, dry_run: bool, max_images: int
) -> tuple[str, str, str]:
    errors = sum(1 for line in lines if line.rank == _RANK["error"])
    pending = sum(1 for line in lines if line.state == "dry-run")
    waiting = sum(1 for line in lines if line.rank == _RANK["waiting-for-sync"])
    if errors:
        status, reason = "False", "ImageErrors"
    elif pending:
        status, reason = "False", "DryRun" if dry_run else "UpdatesPending"
    elif counts.written:
        status, reason = "True", "UpdatesApplied"
    elif waiting:
        status, reason = "False", "WaitingForSync"
    elif lines:
        status, reason = "True", "UpToDate"
    else:
        status, reason = "True", "NoImages"
    skipped = sum(1 for line in lines if line.rank == _RANK["skipped"])
    header = (
        f"{len(lines)} images: {counts.written} updated, {pending} not written"
        f"{' (dry run)' if dry_run else ''}, {skipped} skipped, {errors} with errors."
    )
    if waiting:
        header = header[:-1] + f", {waiting} written earlier and waiting for Argo CD to sync."
    parts = [header]
    size = len(header)
    shown = 0
    for line in lines[:max_images]:
        text = line.render()
        if size + len(text) + 1 > MESSAGE_LIMIT - 80:
            break
        parts.append(text)
        size += len(text) + 1
        shown += 1
    if shown < len(lines):
        parts.append(f"... and {len(lines) - shown} more images (see the controller log).")
    return status, reason, "\n".join(parts)


def compute_status(
    cr: CRState,
    outcomes: Sequence[AppOutcome] | Mapping[CRKey, Sequence[AppOutcome]],
    *,
    now: datetime,
    dry_run: bool,
    previous: Mapping[str, Any] | None,
    max_images: int = 100,
) -> dict[str, Any]:
    """The whole ``status`` of ``cr`` after a cycle.

    ``outcomes`` may be every outcome of the cycle (only those of ``cr`` count) or, cheaper when
    there are many ImageUpdaters, the cycle's :func:`outcomes_by_cr`. ``previous`` is
    the status stored so far (``cr.raw["status"]``); it keeps ``lastTransitionTime`` of
    conditions whose status did not change, ``lastUpdatedAt`` and ``recentUpdates`` when nothing
    was written, and conditions of other types.
    """
    grouped = outcomes if isinstance(outcomes, Mapping) else outcomes_by_cr(outcomes)
    mine = grouped.get((cr.namespace, cr.name), ())
    previous = previous or {}
    counts = count(mine)
    generation = cr.generation
    conditions = _previous_conditions(previous)

    def set_(type_: str, status: str, reason: str, message: str) -> None:
        set_condition(conditions, type_, status, reason, message, generation=generation, now=now)

    set_(RECONCILING, "False", "Idle", "Last check completed. Awaiting next cycle.")
    if cr.error is not None:
        set_(READY, "False", "ReconcileFailed", f"Reconciliation failed: {cr.error}")
        set_(ERROR, "True", "ReconcileError", cr.error)
        set_(IMAGES, "Unknown", "NotChecked", f"No image was checked: {cr.error}")
    else:
        if counts.errors:
            set_(
                READY,
                "True",
                "ReconcileCompletedWithErrors",
                f"Reconciled {counts.apps} applications with {counts.errors} errors, "
                f"{counts.written} images updated.",
            )
            set_(
                ERROR,
                "True",
                "PartialErrors",
                f"{counts.errors} error(s) occurred during image update checks.",
            )
        else:
            set_(
                READY,
                "True",
                "ReconcileSucceeded",
                f"Reconciled {counts.apps} applications, {counts.written} images updated.",
            )
            set_(ERROR, "False", "NoErrors", "No errors during last reconciliation.")
        lines = image_lines(mine, dry_run=dry_run)
        set_(IMAGES, *_images_condition(lines, counts, dry_run=dry_run, max_images=max_images))

    status: dict[str, Any] = {
        "observedGeneration": generation,
        "lastCheckedAt": format_time(now),
        "applicationsMatched": counts.apps,
        "imagesManaged": counts.images,
    }
    written = [c for o in mine if o.written and o.plan is not None for c in o.plan.changes]
    updates = recent_updates(written, now, max_images)
    if updates is not None:
        status["lastUpdatedAt"] = format_time(now)
        status["recentUpdates"] = updates
    else:
        if previous.get("lastUpdatedAt"):
            status["lastUpdatedAt"] = previous["lastUpdatedAt"]
        if isinstance(previous.get("recentUpdates"), list):
            status["recentUpdates"] = json_copy(previous["recentUpdates"])
    status["conditions"] = conditions
    return status


def reconciling_status(
    cr: CRState, *, now: datetime, previous: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The status to write when a cycle starts: ``Reconciling=True``, everything else kept."""
    status = json_copy(dict(previous or {}))
    conditions = _previous_conditions(previous)
    set_condition(
        conditions,
        RECONCILING,
        "True",
        "Reconciling",
        "Image update check in progress.",
        generation=cr.generation,
        now=now,
    )
    status["conditions"] = conditions
    return status


StatusSource = Mapping[str, Any] | Callable[[Mapping[str, Any] | None], Mapping[str, Any]]
"""A status, or a function computing it from the stored one (called again after a conflict)."""


def _checked_at(status: Mapping[str, Any]) -> datetime | None:
    text = status.get("lastCheckedAt")
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def unchanged(
    new: Mapping[str, Any], stored: Mapping[str, Any] | None, heartbeat: timedelta = HEARTBEAT
) -> bool:
    """Whether writing ``new`` over ``stored`` can be left out: nothing but ``lastCheckedAt``
    differs and the stored ``lastCheckedAt`` is less than ``heartbeat`` older than the new one."""
    if stored is None:
        return False
    if {k: v for k, v in new.items() if k != "lastCheckedAt"} != {
        k: v for k, v in stored.items() if k != "lastCheckedAt"
    }:
        return False
    before, after = _checked_at(stored), _checked_at(new)
    if before is None or after is None:
        return new.get("lastCheckedAt") == stored.get("lastCheckedAt")
    return after - before < heartbeat


class StatusWriter:
    """Stores a CR's status through a :class:`StatusStore` (the ``/status`` subresource).

    The patch carries the resourceVersion the status was computed from. On a conflict the CR is
    read again and the write retried (at most ``attempts`` times); a function given as status is
    re-evaluated against the fresh stored status. A CR deleted meanwhile is ignored. A status
    that differs from the stored one only by a ``lastCheckedAt`` less than ``heartbeat`` later is
    not written (see :func:`unchanged`). With :attr:`crd` set, what the installed CRD keeps of a
    status is compared (the server prunes the rest), and each answer teaches it what was pruned.
    """

    def __init__(
        self, store: StatusStore, *, attempts: int = 5, heartbeat: timedelta = HEARTBEAT
    ) -> None:
        self._store = store
        self._attempts = attempts
        self._heartbeat = heartbeat
        self.crd: KeptFields | None = None
        self.skipped = 0
        """How many writes were left out because the stored status was current."""

    async def write(self, cr: CRState, status: StatusSource) -> bool:
        """True when written or already current; failures are logged, never raised."""
        version = cr.resource_version
        stored = cr.raw.get("status") if isinstance(cr.raw.get("status"), dict) else None
        fields = {"imageUpdater_namespace": cr.namespace, "imageUpdater_name": cr.name}
        for attempt in range(1, self._attempts + 1):
            body = dict(status(stored)) if callable(status) else dict(status)
            kept = self.crd.keep_status(body) if self.crd is not None else body
            if unchanged(kept, stored, self._heartbeat):
                self.skipped += 1
                return True
            patch: dict[str, Any] = {"status": body}
            if version:
                patch["metadata"] = {"resourceVersion": version}
            try:
                check_fence(f"writing the status of ImageUpdater {cr.namespace}/{cr.name}")
                result = await self._store.patch_status(cr.namespace, cr.name, patch)
            except ConflictError as err:
                if attempt == self._attempts:
                    log.error("could not write the status: %s", str(err), **fields)
                    return False
                log.debug("ImageUpdater changed, re-reading it (attempt %d)", attempt + 1, **fields)
                try:
                    fresh = await self._store.get_image_updater(cr.namespace, cr.name)
                except StoreError as read_err:
                    log.error("could not re-read the ImageUpdater: %s", str(read_err), **fields)
                    return False
                if fresh is None:
                    return False
                version = str((fresh.get("metadata") or {}).get("resourceVersion", ""))
                found = fresh.get("status")
                stored = found if isinstance(found, dict) else None
                continue
            except (StoreError, WriteFenced) as err:
                log.error("could not write the status: %s", str(err), **fields)
                return False
            if result is None:
                log.debug("ImageUpdater is gone, not writing its status", **fields)
                return False
            cr.resource_version = str((result.get("metadata") or {}).get("resourceVersion", ""))
            if self.crd is not None:
                self.crd.learn(body, result.get("status"))
            return True
        return False
