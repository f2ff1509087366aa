"""Manual holds: images a person asked the controller not to update (pure values).

A hold names an image alias (``*``: every image of the Application), optionally a time until
which it holds (afterwards it is ignored) and a reason. Holds come from the Application's
annotation ``argocd-image-updater.argoproj.io/hold`` and from the ImageUpdater's
``spec.holds``; a hold that cannot be read carries an ``error`` naming its field, and the
images it names are not written (fail closed) while the others go on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

HOLD_ANNOTATION: Final = "argocd-image-updater.argoproj.io/hold"
HOLD_REASON_ANNOTATION: Final = "argocd-image-updater.argoproj.io/hold-reason"
"""Why the annotation's holds were set (shown instead of ``manual hold``)."""
ALL_IMAGES: Final = "*"


@dataclass(frozen=True, slots=True)
class ManualHold:
    alias: str
    until: datetime | None = None
    reason: str = ""
    where: str = ""
    """Where the hold is set, e.g. ``Application ns/app annotation …/hold``."""
    error: str = ""
    """Why the hold cannot be read (its field named); the images it names are not written."""

    def covers(self, alias: str) -> bool:
        return self.alias in (ALL_IMAGES, alias)

    def active(self, now: datetime) -> bool:
        """Not expired (a hold that cannot be read stays in force)."""
        return bool(self.error) or self.until is None or now < self.until


def hold_for(holds: Iterable[ManualHold], alias: str, now: datetime) -> ManualHold | None:
    """The hold in force for ``alias`` at ``now``: an unreadable one first, else the one that
    lasts longest (no end first)."""
    found = [h for h in holds if h.covers(alias) and h.active(now)]
    if not found:
        return None
    broken = [h for h in found if h.error]
    if broken:
        return broken[0]
    return max(found, key=lambda h: (h.until is None, h.until or now))
