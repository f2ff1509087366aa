"""Holds in planning (pure): whether an image that needs an update is held, and why.

* **Rollback hold.** The controller remembers the last tag it wrote per Application and image
  (:class:`~argocd_image_updater.model.controller_state.WriteRecord`) and whether that tag was
  since seen running. When the running tag is now *older* than that tag, by the image's own
  strategy ordering, someone rolled back: the image is held, ``held: rolled back from <new> to
  <old>``, until a tag newer than ``<new>`` is chosen (then it is updated as usual) or the hold
  is released (the ``release`` command forgets the remembered write).
* **Manual hold** (:mod:`argocd_image_updater.model.holds`): ``held: <reason> (<where>)``, or an
  error naming the field when the hold cannot be read.

The planner asks :meth:`HoldContext.check` once it knows the image needs an update; the cycle
reads :attr:`HoldContext.live` (written tags seen running) and the results' ``detail``
(:data:`HOLD_ANNOUNCE`: a rollback hold not announced before) afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from argocd_image_updater.model.controller_state import WriteRecord, format_time
from argocd_image_updater.model.holds import ManualHold, hold_for
from argocd_image_updater.model.platform import PlatformFilter
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy.downgrade import downgrade
from argocd_image_updater.policy.strategies import UpdateStrategy

HOLD_ANNOUNCE: Final = "hold-announce"
"""``detail`` of a rollback-held image whose hold was not announced before (the cycle creates
the ``ImageHeld`` event and remembers it)."""
HOLD_ROLLBACK: Final = "hold-rollback"
HOLD_MANUAL: Final = "hold-manual"
HOLD_INVALID: Final = "hold-invalid"


@dataclass(frozen=True, slots=True)
class HoldVerdict:
    """An image that is not written: ``error`` when its hold cannot be read."""

    message: str
    detail: str
    error: bool = False


def _info(name: str, tags: Sequence[TagInfo]) -> TagInfo:
    return next((t for t in tags if t.name == name), TagInfo(name))


def _below(
    strategy: UpdateStrategy,
    lower: str,
    upper: str,
    tags: Sequence[TagInfo],
    hint: Mapping[str, int] | None,
    platforms: PlatformFilter,
) -> bool:
    """``lower`` is ordered below ``upper`` by ``strategy`` (False when they cannot be)."""
    if lower == upper:
        return False
    found = downgrade(
        strategy, upper, _info(lower, tags), tags=tags, order_hint=hint, platforms=platforms
    )
    return found is not None


@dataclass(slots=True)
class HoldContext:
    """What planning one Application needs to know about its holds."""

    now: datetime
    writes: Mapping[str, WriteRecord] = field(default_factory=dict)
    """The remembered writes of this Application, by alias."""
    manual: tuple[ManualHold, ...] = ()
    live: set[str] = field(default_factory=set)
    """Aliases whose remembered write was seen running (or passed) in this plan."""

    def observe(
        self,
        alias: str,
        running: str | None,
        strategy: UpdateStrategy,
        tags: Sequence[TagInfo],
        hint: Mapping[str, int] | None,
        platforms: PlatformFilter,
    ) -> None:
        """Note that the remembered write of ``alias`` runs (``running`` is it, or newer)."""
        record = self.writes.get(alias)
        if record is None or record.live or not running:
            return
        if running == record.tag or _below(strategy, record.tag, running, tags, hint, platforms):
            self.live.add(alias)

    def check(
        self,
        alias: str,
        running: str | None,
        chosen: TagInfo,
        strategy: UpdateStrategy,
        tags: Sequence[TagInfo],
        hint: Mapping[str, int] | None,
        platforms: PlatformFilter,
    ) -> HoldVerdict | None:
        """Why ``alias`` (running ``running``, ``chosen`` to update to) is held; None when not."""
        manual = hold_for(self.manual, alias, self.now)
        if manual is not None:
            if manual.error:
                return HoldVerdict(
                    f"held: the hold cannot be read: {manual.error}", HOLD_INVALID, error=True
                )
            why = manual.reason or "manual hold"
            until = f" until {format_time(manual.until)}" if manual.until else ""
            return HoldVerdict(f"held: {why}{until} ({manual.where})", HOLD_MANUAL)
        record = self.writes.get(alias)
        if record is None or not record.live or not running or running == record.tag:
            return None
        if not _below(strategy, running, record.tag, tags, hint, platforms):
            return None  # not a rollback: what runs is not older than what we wrote
        if _below(strategy, record.tag, chosen.name, tags, hint, platforms):
            return None  # a tag newer than the one rolled back from: update as usual
        detail = HOLD_ROLLBACK if record.held == running else HOLD_ANNOUNCE
        return HoldVerdict(f"held: rolled back from {record.tag} to {running}", detail)
