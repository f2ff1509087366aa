"""Reading manual holds (pure): the Application annotation ``argocd-image-updater.argoproj.io/hold``
and the ImageUpdater's ``spec.holds``; and editing the annotation's value (the ``hold`` and
``release`` commands).

The annotation is a comma-separated list of ``<alias>``, ``<alias>=<RFC 3339 time>`` (held until
then) or ``*`` (every image, also ``*=<time>``). ``spec.holds`` is a list of ``{alias, until,
reason}``. A value that cannot be read becomes a hold with an ``error`` naming the field: the
images it names are not written, the others go on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from argocd_image_updater.model.application import Application
from argocd_image_updater.model.holds import (
    ALL_IMAGES,
    HOLD_ANNOTATION,
    HOLD_REASON_ANNOTATION,
    ManualHold,
)

_ALIAS_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


class HoldValueError(ValueError):
    """A hold time or alias that cannot be used (the command line's values)."""


def parse_time(text: str) -> datetime:
    """An RFC 3339 time with a zone (``2026-03-01T12:00:00Z``, ``…+02:00``)."""
    value = text.strip()
    if "T" not in value.upper():
        raise HoldValueError(f"'{text}' is not an RFC 3339 time (e.g. 2026-03-01T12:00:00Z)")
    try:
        moment = datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError:
        raise HoldValueError(
            f"'{text}' is not an RFC 3339 time (e.g. 2026-03-01T12:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        raise HoldValueError(f"'{text}' has no time zone; add Z or an offset such as +02:00")
    return moment


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_alias(alias: str) -> str:
    if alias != ALL_IMAGES and (not alias or not set(alias) <= _ALIAS_CHARS):
        raise HoldValueError(
            f"'{alias}' is not an image alias (letters, digits, '-', '_', '.') or '*'"
        )
    return alias


def annotation_holds(app: Application) -> tuple[ManualHold, ...]:
    """The holds of the Application's annotation (none when it is not set)."""
    text = app.annotations.get(HOLD_ANNOTATION)
    if text is None:
        return ()
    where = f"Application {app.namespace}/{app.name} annotation {HOLD_ANNOTATION}"
    reason = app.annotations.get(HOLD_REASON_ANNOTATION, "").strip()
    holds: list[ManualHold] = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        alias, sep, until = (part.strip() for part in entry.partition("="))
        try:
            check_alias(alias)
        except HoldValueError as err:  # which image is meant is unknown: hold them all
            error = f"{where}: entry '{entry}': {err}"
            holds.append(ManualHold(ALL_IMAGES, where=where, error=error))
            continue
        try:
            moment = parse_time(until) if sep else None
        except HoldValueError as err:
            holds.append(ManualHold(alias, where=where, error=f"{where}: entry '{entry}': {err}"))
            continue
        holds.append(ManualHold(alias, moment, reason, where))
    return tuple(holds)


def spec_holds(image_updater: Mapping[str, Any] | None) -> tuple[ManualHold, ...]:
    """The holds of an ImageUpdater's ``spec.holds`` (the raw object)."""
    if not image_updater:
        return ()
    meta = image_updater.get("metadata") or {}
    spec = image_updater.get("spec") or {}
    raw = spec.get("holds") if isinstance(spec, Mapping) else None
    if raw is None:
        return ()
    who = f"ImageUpdater {meta.get('namespace', '')}/{meta.get('name', '')} field spec.holds"
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return (ManualHold(ALL_IMAGES, where=who, error=f"{who}: expected a list"),)
    holds: list[ManualHold] = []
    for i, item in enumerate(raw):
        where = f"{who}[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("alias"), str):
            holds.append(
                ManualHold(ALL_IMAGES, where=where, error=f"{where}.alias: a string is required")
            )
            continue
        alias, reason = item["alias"], str(item.get("reason") or "")
        try:
            check_alias(alias)
        except HoldValueError as err:
            holds.append(ManualHold(ALL_IMAGES, where=where, error=f"{where}.alias: {err}"))
            continue
        until = item.get("until")
        try:
            if isinstance(until, datetime):  # a YAML timestamp read from a manifest file
                if until.tzinfo is None:
                    raise HoldValueError(f"'{until}' has no time zone; add Z or an offset")
                moment: datetime | None = until
            else:
                moment = parse_time(str(until)) if until not in (None, "") else None
        except HoldValueError as err:
            holds.append(ManualHold(alias, where=where, error=f"{where}.until: {err}"))
            continue
        holds.append(ManualHold(alias, moment, reason, where))
    return tuple(holds)


def manual_holds(
    app: Application, image_updater: Mapping[str, Any] | None
) -> tuple[ManualHold, ...]:
    """Every manual hold on ``app``: its annotation's and its ImageUpdater's."""
    return annotation_holds(app) + spec_holds(image_updater)


# --- editing the annotation (the hold and release commands) ---------------------------------


def held_annotations(
    annotations: Mapping[str, str], aliases: Sequence[str], until: datetime | None, reason: str
) -> dict[str, str | None]:
    """The annotations to set (None: remove) to hold ``aliases`` (none given: ``*``)."""
    changes: dict[str, str | None] = {
        HOLD_ANNOTATION: with_holds(annotations.get(HOLD_ANNOTATION), aliases, until)
    }
    if reason:
        changes[HOLD_REASON_ANNOTATION] = reason
    return changes


def released_annotations(
    annotations: Mapping[str, str], aliases: Sequence[str]
) -> dict[str, str | None]:
    """The annotations to set (None: remove) to release ``aliases`` (none given: every hold)."""
    value = without_holds(annotations.get(HOLD_ANNOTATION), aliases)
    changes: dict[str, str | None] = {}
    if value != annotations.get(HOLD_ANNOTATION):
        changes[HOLD_ANNOTATION] = value
    if value is None and HOLD_REASON_ANNOTATION in annotations:
        changes[HOLD_REASON_ANNOTATION] = None
    return changes


def _entries(text: str | None) -> list[tuple[str, str]]:
    out = []
    for entry in (e.strip() for e in (text or "").split(",")):
        if entry:
            alias, _, until = (part.strip() for part in entry.partition("="))
            out.append((alias, until))
    return out


def _render(entries: Iterable[tuple[str, str]]) -> str:
    return ",".join(f"{a}={u}" if u else a for a, u in entries)


def with_holds(text: str | None, aliases: Sequence[str], until: datetime | None) -> str:
    """The annotation value with ``aliases`` held (until ``until``; replacing their entries)."""
    names = [check_alias(a) for a in aliases] or [ALL_IMAGES]
    kept = [(a, u) for a, u in _entries(text) if a not in names]
    stamp = format_time(until) if until is not None else ""
    return _render(kept + [(a, stamp) for a in names])


def without_holds(text: str | None, aliases: Sequence[str]) -> str | None:
    """The annotation value with the entries of ``aliases`` removed (every entry when none is
    given); None when nothing is left (remove the annotation)."""
    names = {check_alias(a) for a in aliases}
    kept = [(a, u) for a, u in _entries(text) if names and a not in names]
    return _render(kept) or None
