"""What the ``status`` command shows (pure: no I/O).

Per image: the current tag, the candidate, the verdict and its reason as the controller wrote
them in the ImageUpdater's ``ImagesUpToDate`` condition (one line per image, see
:meth:`argocd_image_updater.report.status.ImageLine.render`), the last write the controller
remembers (its state record) and the ship state (``status.shipments``). The reason text is shown
as stored, never derived again here, so new reasons show up without a change.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from argocd_image_updater.model.controller_state import ControllerState, WriteRecord, format_time
from argocd_image_updater.report.status import IMAGES, READY

WIDTH: Final = 100
"""The table fits this many columns (or the terminal, when narrower)."""
_LINE: Final = re.compile(
    r"(?P<app>\S+) (?P<alias>\S+): (?P<verdict>[a-z][a-z-]*)"
    r"(?: (?!-> )(?P<current>\S+))?(?: -> (?P<candidate>\S+))?"
    r"(?:: (?P<reason>.*?))?(?P<warnings>(?:; warning: .*)?)"
)
_MORE: Final = re.compile(r"\.\.\. and (\d+) more images")
_PROBLEM: Final = frozenset({"error", "write-failed"})
_GOOD: Final = frozenset({"updated", "up-to-date"})
_GAP: Final = "  "


@dataclass(frozen=True, slots=True)
class ImageRow:
    """One image of one Application, as the last cycle left it."""

    application: str
    alias: str
    image: str
    """The image name (without tag); "" when the status names none."""
    current: str
    """The running tag (and digest)."""
    candidate: str
    """The tag the last cycle chose (the current one when it chose none)."""
    verdict: str
    """The reason code of the last cycle (``updated``, ``held``, ``too-young``, …)."""
    reason: str
    """The explanation stored with it ("" when none)."""
    last_write: str = ""
    """The tag the controller last wrote ("" when it remembers none)."""
    written_at: str = ""
    ship: str = ""
    """``Written``, ``Synced``, ``Shipped``, ``NotShipped``, ``Unknown`` (``status.shipments``),
    ``live``/``not live yet`` (the controller's record) or ""."""
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class UpdaterView:
    """One ImageUpdater: its summary and its images."""

    namespace: str
    name: str
    ready: str
    """``Ready`` condition: ``<status> <reason>: <message>``, or "" without a status."""
    last_checked: str
    images: tuple[ImageRow, ...]
    hidden: int = 0
    """Images the stored condition left out (its ``... and N more`` line)."""
    notes: tuple[str, ...] = field(default=())


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in status.get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


def parse_image_lines(message: str) -> tuple[list[dict[str, str]], int]:
    """The image lines of an ``ImagesUpToDate`` message (its first line is a summary) and the
    number of images it left out."""
    found, hidden = [], 0
    for text in message.splitlines()[1:]:
        more = _MORE.match(text)
        if more is not None:
            hidden = int(more.group(1))
            continue
        match = _LINE.fullmatch(text)
        if match is None:
            continue
        values = {k: v or "" for k, v in match.groupdict().items()}
        found.append(values)
    return found, hidden


def split_reference(reference: str) -> tuple[str, str]:
    """``(image, tag)`` of ``registry/path:tag[@digest]``; a bare tag is ``("", tag)``."""
    head, slash, last = reference.rpartition("/")
    cut = min((i for i in (last.find(":"), last.find("@")) if i >= 0), default=-1)
    if cut < 0:
        return (reference, "") if slash else ("", reference)
    return head + slash + last[:cut], last[cut + 1 :]


def _shipments(status: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
    entries: dict[tuple[str, str], Mapping[str, Any]] = {}
    for entry in status.get("shipments") or ():
        if isinstance(entry, Mapping):
            key = (str(entry.get("application", "")), str(entry.get("alias", "")))
            entries.setdefault(key, entry)  # newest first
    return entries


def _write_of(state: ControllerState | None, app: str, alias: str) -> WriteRecord | None:
    return state.last_write(app, alias) if state is not None else None


def updater_view(
    image_updater: Mapping[str, Any], state: ControllerState | None = None
) -> UpdaterView:
    """The view of one ImageUpdater object (with its ``status``) and the controller's record."""
    meta = image_updater.get("metadata") or {}
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    status = image_updater.get("status")
    if not isinstance(status, Mapping) or not status:
        return UpdaterView(namespace, name, "", "", (), notes=("no status yet",))
    ready = _condition(status, READY)
    ready_text = ""
    if ready is not None:
        ready_text = f"{ready.get('status', '')} {ready.get('reason', '')}".strip()
        if ready.get("message"):
            ready_text += f": {ready['message']}"
    images = _condition(status, IMAGES)
    lines, hidden = parse_image_lines(str(images.get("message", ""))) if images else ([], 0)
    shipped = _shipments(status)
    rows = []
    for line in lines:
        app, alias = line["app"], line["alias"]
        record = _write_of(state, app, alias)
        entry = shipped.get((app, alias))
        ship = str(entry.get("state", "")) if entry is not None else ""
        if not ship and record is not None:
            ship = "live" if record.live else "not live yet"
        warnings = tuple(w for w in line["warnings"].split("; warning: ") if w)
        image, current = split_reference(line["current"])
        chosen_image, candidate = split_reference(line["candidate"])
        rows.append(
            ImageRow(
                application=app,
                alias=alias,
                image=image or chosen_image,
                current=current,
                candidate=candidate or current,
                verdict=line["verdict"],
                reason=line["reason"],
                last_write=record.tag if record is not None else "",
                written_at=format_time(record.at) if record is not None else "",
                ship=ship,
                warnings=warnings,
            )
        )
    notes: tuple[str, ...] = ()
    if images is None:
        notes = ("no per-image results yet",)
    return UpdaterView(
        namespace,
        name,
        ready_text,
        str(status.get("lastCheckedAt", "")),
        tuple(rows),
        hidden,
        notes,
    )


def select(
    views: Iterable[UpdaterView], app: str = "", image_updater: str = ""
) -> list[UpdaterView]:
    """The views of ``image_updater`` (a name, or ``namespace/name``) and, within them, the
    images of Application ``app`` (a name or ``namespace/name``); "" selects everything."""

    def matches(pattern: str, namespace: str, name: str) -> bool:
        return not pattern or pattern in (name, f"{namespace}/{name}")

    chosen = []
    for view in views:
        if not matches(image_updater, view.namespace, view.name):
            continue
        if app:
            images = tuple(row for row in view.images if matches(app, *_split(row.application)))
            if not images:
                continue
            view = UpdaterView(
                view.namespace, view.name, view.ready, view.last_checked, images, 0, view.notes
            )
        chosen.append(view)
    return chosen


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.rpartition("/")
    return namespace, name


# --- output -------------------------------------------------------------------------------------
def as_data(views: Sequence[UpdaterView]) -> list[dict[str, Any]]:
    """The views as plain data (``-o json`` and ``-o yaml``)."""
    out = []
    for view in views:
        data = asdict(view)
        data["images"] = [
            {k: (list(v) if isinstance(v, tuple) else v) for k, v in row.items()}
            for row in data["images"]
        ]
        data["notes"] = list(view.notes)
        out.append(data)
    return out


def as_json(views: Sequence[UpdaterView]) -> str:
    return json.dumps({"imageUpdaters": as_data(views)}, indent=2)


def verdict_text(row: ImageRow) -> str:
    """``<verdict>: <reason>``; the reason alone when it already starts with the verdict."""
    if not row.reason:
        return row.verdict
    if row.reason.startswith(row.verdict):
        return row.reason
    return f"{row.verdict}: {row.reason}"


def colour_of(verdict: str) -> str | None:
    """The colour of a verdict on a terminal."""
    if verdict in _PROBLEM or verdict.endswith("-failed") or verdict.endswith("error"):
        return "red"
    if verdict in _GOOD:
        return "green"
    return "yellow"


_HEADERS: Final = ("APPLICATION", "IMAGE", "CURRENT", "CANDIDATE", "VERDICT", "WRITTEN", "SHIP")


def _cells(row: ImageRow) -> tuple[str, ...]:
    written = row.last_write
    if row.written_at:
        written += f" {row.written_at[5:16].replace('T', ' ')}"  # MM-DD HH:MM (UTC)
    return (
        row.application,
        row.alias,
        row.current or "-",
        row.candidate if row.candidate and row.candidate != row.current else "-",
        row.verdict,
        written or "-",
        row.ship or "-",
    )


def _fit(widths: list[int], limit: int) -> list[int]:
    """Narrow the widest columns, one character at a time, until the row fits ``limit``."""
    floor = [min(len(h), 8) for h in _HEADERS]
    while sum(widths) + len(_GAP) * (len(widths) - 1) > limit:
        widest = max(range(len(widths)), key=lambda i: (widths[i] - floor[i], widths[i]))
        if widths[widest] <= floor[widest]:
            break
        widths[widest] -= 1
    return widths


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def table(views: Sequence[UpdaterView], *, width: int = WIDTH, style: Any = None) -> list[str]:
    """The terminal table: per ImageUpdater a heading line, then one row per image with its
    reason wrapped on the lines below. ``style(text, colour)`` colours verdicts (None: plain).
    No line is longer than ``width``."""
    lines: list[str] = []
    rows = [_cells(row) for view in views for row in view.images]
    natural = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(_HEADERS)]
    widths = _fit(natural, width)
    indent = " " * 4

    def render(cells: Sequence[str], colour: str | None = None) -> str:
        parts = [_cut(c, w).ljust(w) for c, w in zip(cells, widths, strict=True)]
        if colour is not None and style is not None:
            parts[4] = style(parts[4], colour)
        return _GAP.join(parts).rstrip()

    for number, view in enumerate(views):
        if number:
            lines.append("")
        heading = f"ImageUpdater {view.namespace}/{view.name}"
        if view.last_checked:
            heading += f" (checked {view.last_checked})"
        lines.append(_cut(heading, width))
        if view.ready:
            lines.extend(
                textwrap.wrap(view.ready, width, initial_indent="  ", subsequent_indent="  ")
            )
        for note in view.notes:
            lines.append(_cut(f"  {note}", width))
        if not view.images:
            continue
        lines.append(render(_HEADERS))
        for row in view.images:
            lines.append(render(_cells(row), colour_of(row.verdict)))
            details = [verdict_text(row)] if row.reason else []
            details += [f"warning: {w}" for w in row.warnings]
            for detail in details:
                lines.extend(
                    textwrap.wrap(detail, width, initial_indent=indent, subsequent_indent=indent)
                )
        if view.hidden:
            lines.append(f"  ... and {view.hidden} more images (the status lists at most 100)")
    return lines
