"""Holds in planning (pure): whether an image that needs an update is held, and why.

* **Rollback hold.** The controller remembers the last tag it wrote per Application and image
  (:class:`~argocd_image_updater.model.controller_state.WriteRecord`), and where (``argocd``:
  the Application's parameters; ``git``: the write-back target file). When that *target* now
  holds a tag *older* than the one written, by the image's own strategy ordering, someone else
  changed it back — a person's patch or ``git revert``, an app-of-apps parent resetting the
  Application —, whether or not the written tag ever ran: the image is held, ``held: rolled
  back from <new> to <old>[ by <who>]``, until a tag newer than ``<new>`` is chosen (then it is
  updated as usual) or the hold is released (the ``release`` command forgets the remembered
  write). A running tag older than a written tag that was seen running holds it too.
  The Application's parameters are read here; a git target file only by the git writer, which
  asks the :class:`RollbackGuard` of each change.
* **Manual hold** (:mod:`argocd_image_updater.model.holds`): ``held: <reason> (<where>)``, or an
  error naming the field when the hold cannot be read.

The planner asks :meth:`HoldContext.check` once it knows the image needs an update; the cycle
reads :attr:`HoldContext.live` (written tags seen running) and the results' ``detail``
(:func:`announced`: a rollback hold not announced before) afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from argocd_image_updater.model.controller_state import WriteRecord, format_time
from argocd_image_updater.model.holds import ManualHold, hold_for
from argocd_image_updater.model.platform import PlatformFilter
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.plan.model import EditKind
from argocd_image_updater.plan.params import ParamNames
from argocd_image_updater.policy.downgrade import downgrade
from argocd_image_updater.policy.strategies import UpdateStrategy

HOLD_ANNOUNCE: Final = "hold-announce"
"""``detail`` of a rollback-held image whose hold was not announced before (the cycle creates
the ``ImageHeld`` event and remembers it), followed by a space and the tag rolled back to
(:func:`announced`)."""
HOLD_ROLLBACK: Final = "hold-rollback"
HOLD_MANUAL: Final = "hold-manual"
HOLD_INVALID: Final = "hold-invalid"


@dataclass(frozen=True, slots=True)
class HoldVerdict:
    """An image that is not written: ``error`` when its hold cannot be read."""

    message: str
    detail: str
    error: bool = False


def announced(detail: str) -> str | None:
    """The tag rolled back to of a result whose hold is announced now, else None."""
    name, _, to = detail.partition(" ")
    return to if name == HOLD_ANNOUNCE else None


def overwriter(message: str, to: str) -> str:
    """Who overwrote the tag, as a rollback hold's message to ``to`` names it (``""``)."""
    return message.partition(f" to {to} by ")[2]


def rollback_verdict(record: WriteRecord, to: str, by: str = "") -> HoldVerdict:
    """The hold of ``record``'s tag rolled back to ``to`` (``by``: who did, when known)."""
    if record.held == to:
        by = by or record.held_by
        detail = HOLD_ROLLBACK
    else:
        detail = f"{HOLD_ANNOUNCE} {to}"
    who = f" by {by}" if by else ""
    return HoldVerdict(f"held: rolled back from {record.tag} to {to}{who}", detail)


@dataclass(frozen=True, slots=True, eq=False)
class RollbackGuard:
    """What the git writer needs to hold a change whose target file was rolled back: the
    remembered write, and the image's ordering (``older(tag)``: ``tag`` is ordered below the
    tag written). ``kind``/``names``/``kustomize_name`` say where the image is in the file."""

    record: WriteRecord
    older: Callable[[str], bool]
    kind: EditKind
    names: ParamNames
    kustomize_name: str

    def check(self, found: str, by: str = "") -> HoldVerdict | None:
        """The hold when the target file holds tag ``found``; None when it is not older."""
        if not found or found == self.record.tag or not self.older(found):
            return None
        return rollback_verdict(self.record, found, by)


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
    via: str = ""
    """Where this Application's tags are written: ``argocd`` or ``git`` (as
    :attr:`WriteRecord.via`)."""
    live_is_target: bool = False
    """The running tags were read from the write-back target (local mode)."""

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
        target: str | None = None,
    ) -> HoldVerdict | None:
        """Why ``alias`` (running ``running``, ``chosen`` to update to) is held; None when not.
        ``target``: the tag the write-back target holds, when known here."""
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
        if record is None or (not running and not target) or running == record.tag == target:
            return None

        def below(lower: str, upper: str) -> bool:
            return _below(strategy, lower, upper, tags, hint, platforms)

        if below(record.tag, chosen.name):
            return None  # a tag newer than the one rolled back from: update as usual
        if self.live_is_target:
            target = running
        ours = bool(record.via) and record.via == self.via  # written to this very target
        if ours and target and target != record.tag and below(target, record.tag):
            return rollback_verdict(record, target)  # the target was set back: not by us
        if target is None and self._writer_reads(record):
            return None  # the git writer compares its target file with the write (guard)
        if record.live and running and running != record.tag and below(running, record.tag):
            return rollback_verdict(record, running)  # what ran was rolled back
        return None

    def _writer_reads(self, record: WriteRecord) -> bool:
        """Whether the target of ``record`` is a git file only the writer reads (pushed
        straight to the branch: a pull request's branch may not hold it yet)."""
        return record.via == self.via == "git" and bool(record.commit) and not self.live_is_target

    def guard(
        self,
        alias: str,
        chosen: TagInfo,
        strategy: UpdateStrategy,
        tags: Sequence[TagInfo],
        hint: Mapping[str, int] | None,
        platforms: PlatformFilter,
        where: tuple[EditKind, ParamNames, str],
    ) -> RollbackGuard | None:
        """The guard of a change of ``alias`` to ``chosen`` for a target only the git writer
        reads (``where``: the image's kind, parameter names and kustomize name)."""
        record = self.writes.get(alias)
        if record is None or not self._writer_reads(record):
            return None
        if _below(strategy, record.tag, chosen.name, tags, hint, platforms):
            return None  # newer than what was written: an update whatever the file holds

        def older(tag: str) -> bool:
            return _below(strategy, tag, record.tag, tags, hint, platforms)

        return RollbackGuard(record, older, *where)
