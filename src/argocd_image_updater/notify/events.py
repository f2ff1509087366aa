"""What a notification says: one :class:`Event` per image that changed or failed, gathered per
cycle into a :class:`Batch` (one message per target per cycle).

:func:`cycle_events` reads a cycle's outcomes (the report stage's records); it is pure.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from argocd_image_updater.model.notifications import EventKind
from argocd_image_updater.model.repo_url import RepoUrlError, parse_repo_url
from argocd_image_updater.pipeline.records import AppOutcome, Collected, CRState, CycleResult
from argocd_image_updater.plan.model import ImageReason, Outcome

WRITE_BACK_FAILED = "write-back-failed"
"""Reason of a ``failed`` event whose write-back failed (as the ImageUpdater's Warning events)."""


@dataclass(frozen=True, slots=True)
class Event:
    """One image of one Application: ``application`` and ``image_updater`` are
    ``<namespace>/<name>`` (``image_updater`` is "" for legacy annotations); ``old``/``new`` the
    tags (``tag[@digest]``) of an update; ``reason`` a reason code; ``link`` the commit or pull
    request when known."""

    kind: EventKind
    application: str = ""
    image_updater: str = ""
    alias: str = ""
    image: str = ""
    old: str = ""
    new: str = ""
    reason: str = ""
    message: str = ""
    link: str = ""

    def as_json(self) -> dict[str, str]:
        """The event in the JSON payloads (``webhook``, ``cloudevents``); empty fields left out."""
        fields = {
            "event": self.kind.value,
            "application": self.application,
            "imageUpdater": self.image_updater,
            "alias": self.alias,
            "image": self.image,
            "from": self.old,
            "to": self.new,
            "reason": self.reason,
            "message": self.message,
            "link": self.link,
        }
        return {key: value for key, value in fields.items() if value}

    @property
    def failure_key(self) -> tuple[str, ...]:
        """What makes a failure "the same one again" (it is sent once until it clears)."""
        return (self.kind.value, self.image_updater, self.application, self.alias, self.reason)


@dataclass(frozen=True, slots=True)
class Batch:
    """The events one target receives from one cycle. ``scope`` is the ImageUpdater
    (``<namespace>/<name>``) whose ``spec.notifications`` named the target, "" for the
    ConfigMap default; ``source`` is the CloudEvents ``source`` of the sender."""

    events: tuple[Event, ...]
    source: str
    scope: str = ""
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    time: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def timestamp(self) -> str:
        """RFC 3339 time of the batch (UTC, seconds)."""
        return self.time.strftime("%Y-%m-%dT%H:%M:%SZ")

    def counts(self) -> Mapping[EventKind, int]:
        """Events per kind, in :class:`EventKind` order."""
        found = {kind: sum(1 for e in self.events if e.kind is kind) for kind in EventKind}
        return {kind: count for kind, count in found.items() if count}

    def envelope(self) -> dict[str, Any]:
        """The common JSON body (``webhook``; ``cloudevents`` data)."""
        body: dict[str, Any] = {"id": self.id, "time": self.timestamp, "source": self.source}
        if self.scope:
            body["imageUpdater"] = self.scope
        body["events"] = [e.as_json() for e in self.events]
        return body


def _commit_link(pushed: tuple[str, str] | None) -> str:
    """The web page of a commit pushed straight to the branch (``<repository>/commit/<sha>``,
    ``/commits/`` on bitbucket.org); "" when the repository URL is not understood."""
    if pushed is None:
        return ""
    url, sha = pushed
    try:
        repo = parse_repo_url(url)
    except RepoUrlError:
        return ""
    return f"{repo}/{'commits' if repo.host == 'bitbucket.org' else 'commit'}/{sha}"


def _scope(cr: CRState | None) -> str:
    return f"{cr.namespace}/{cr.name}" if cr is not None else ""


def _outcome_events(outcome: AppOutcome, *, dry_run: bool) -> Iterable[Event]:
    scope = _scope(outcome.cr)
    plan = outcome.plan
    if outcome.written and plan is not None and not dry_run:
        for change in plan.changes:
            yield Event(
                EventKind.UPDATED,
                application=outcome.app,
                image_updater=scope,
                alias=change.alias,
                image=change.image.full_name,
                old=change.old_tag,
                new=change.new_tag,
                reason=ImageReason.UPDATED.value,
                message=f"updated from {change.old_tag} to {change.new_tag}",
                link=outcome.link or _commit_link(outcome.pushed),
            )
    if outcome.error:
        yield Event(
            EventKind.FAILED,
            application=outcome.app,
            image_updater=scope,
            reason=WRITE_BACK_FAILED,
            message=outcome.error,
        )
    for image in plan.results if plan is not None else ():
        if image.outcome is not Outcome.ERROR:
            continue
        kind = (
            EventKind.VERIFICATION_FAILED
            if image.reason == ImageReason.VERIFICATION_FAILED
            else EventKind.FAILED
        )
        yield Event(
            kind,
            application=outcome.app,
            image_updater=scope,
            alias=image.alias,
            image=image.image,
            old=image.current or "",
            new=image.chosen or "",
            reason=image.reason,
            message=image.message,
        )


def cycle_events(
    collected: Collected, result: CycleResult, *, dry_run: bool
) -> list[tuple[CRState | None, Event]]:
    """Every event of a cycle with the ImageUpdater it belongs to (None: legacy annotations):
    the updates written (none in dry-run), the images and write-backs that failed, and the
    ImageUpdaters that could not be used."""
    events: list[tuple[CRState | None, Event]] = [
        (
            cr,
            Event(
                EventKind.FAILED,
                image_updater=_scope(cr),
                reason=ImageReason.INVALID_CONFIG.value,
                message=cr.error,
            ),
        )
        for cr in collected.crs
        if cr.error is not None
    ]
    for outcome in result.apps:
        events.extend((outcome.cr, event) for event in _outcome_events(outcome, dry_run=dry_run))
    return events
