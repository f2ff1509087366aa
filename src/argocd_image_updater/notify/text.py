"""The human side of a batch, shared by the chat receivers (Slack, Teams): a title and one line
per event, in parts each receiver marks up its own way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from argocd_image_updater.model.notifications import EventKind
from argocd_image_updater.notify.events import Batch, Event

MAX_LINES: Final = 40
"""Events listed in one chat message; the rest are counted ("… and 3 more")."""

_VERBS: Final = {
    EventKind.UPDATED: "updated",
    EventKind.FAILED: "failed",
    EventKind.HELD: "held",
    EventKind.VERIFICATION_FAILED: "verification failed",
    EventKind.SHIPPED: "shipped",
}


def title(batch: Batch) -> str:
    """``argocd-image-updater: 2 updated, 1 failed`` (and the ImageUpdater, when scoped)."""
    counts = ", ".join(f"{n} {_VERBS[kind]}" for kind, n in batch.counts().items())
    where = f" ({batch.scope})" if batch.scope else ""
    return f"argocd-image-updater{where}: {counts or 'nothing to report'}"


@dataclass(frozen=True, slots=True)
class Line:
    """One event as text: ``subject`` (application, alias), ``what`` (``1.0 → 1.1`` or the
    reason), ``detail`` (a failure's message) and ``link``."""

    subject: str
    what: str
    detail: str
    link: str


def line(event: Event) -> Line:
    subject = event.application or event.image_updater or "argocd-image-updater"
    if event.alias:
        subject = f"{subject} {event.alias}"
    if event.kind is EventKind.UPDATED:
        image = f"{event.image} " if event.image else ""
        what = f"{image}{event.old or '?'} → {event.new}"
        detail = ""
    else:
        what = f"{_VERBS[event.kind]}" + (f" ({event.reason})" if event.reason else "")
        detail = event.message
    return Line(subject, what, detail, event.link)


def lines(batch: Batch) -> tuple[list[Line], int]:
    """The lines to list and how many events were left out."""
    shown = [line(e) for e in batch.events[:MAX_LINES]]
    return shown, len(batch.events) - len(shown)
