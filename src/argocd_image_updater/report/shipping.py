"""Whether a written change is live: the pure core of ship tracking.

A :class:`Shipment` is one image change of one Application, followed from the moment it was
written. :func:`advance` moves it on, given what Argo CD reports about the Application (an
:class:`AppView`, read from the Application object a cycle lists anyway) and the time:

* ``Written`` → ``Synced``: Argo CD reports ``Synced`` at a revision that contains the change —
  git method: the pushed commit is the synced revision or one of its ancestors; argocd method:
  the Application's parameters hold the new value (the caller works this out: ``contains``);
* → ``Shipped``: also ``Healthy``, and ``status.summary.images`` holds the new reference;
* → ``NotShipped``: not shipped ``timeout`` after it was written; the message is the
  Application's own sync and health messages.

Times are those of the cycles that saw each step (so they are as precise as the interval).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from argocd_image_updater.model.image import ImageRef, ImageRefError

DEFAULT_TIMEOUT: Final = timedelta(minutes=30)


class Stage(enum.StrEnum):
    """Where a change is; also the ``state`` of its ``status.shipments`` entry."""

    WRITTEN = "Written"
    SYNCED = "Synced"
    SHIPPED = "Shipped"
    NOT_SHIPPED = "NotShipped"
    UNKNOWN = "Unknown"
    """Only in the status: written by an earlier run of the controller, which forgot it."""

    @property
    def final(self) -> bool:
        return self in (Stage.SHIPPED, Stage.NOT_SHIPPED)


@dataclass(frozen=True, slots=True)
class AppView:
    """What Argo CD reports about an Application (``status``), as plain values."""

    sync: str = ""
    revision: str = ""
    health: str = ""
    images: tuple[str, ...] = ()
    message: str = ""
    """The Application's own words: the last operation's, health's and conditions' messages."""

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> AppView:
        status = _mapping(obj.get("status"))
        sync = _mapping(status.get("sync"))
        health = _mapping(status.get("health"))
        operation = _mapping(status.get("operationState"))
        images = _mapping(status.get("summary")).get("images")
        revision = sync.get("revision") or ""
        if not revision and isinstance(sync.get("revisions"), list):
            revision = next((r for r in sync["revisions"] if isinstance(r, str) and r), "")
        sync_status, health_status = str(sync.get("status") or ""), str(health.get("status") or "")
        words = [
            f"sync status {sync_status or 'Unknown'}"
            + (f" at revision {str(revision)[:12]}" if revision else ""),
            f"health {health_status or 'Unknown'}",
        ]
        if operation.get("message"):
            words.append(
                f"last sync {operation.get('phase') or 'operation'}: {operation['message']}"
            )
        if health.get("message"):
            words.append(f"health message: {health['message']}")
        for condition in status.get("conditions") or ():
            if isinstance(condition, dict) and condition.get("message"):
                words.append(f"{condition.get('type') or 'condition'}: {condition['message']}")
        return cls(
            sync=sync_status,
            revision=str(revision),
            health=health_status,
            images=tuple(i for i in images if isinstance(i, str))
            if isinstance(images, list)
            else (),
            message="; ".join(words),
        )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class Shipment:
    """One written change being followed. ``app`` is ``<namespace>/<name>``; ``image`` the
    image's full name; ``new_tag`` the written ``tag[@digest]``; ``commit`` the pushed commit
    (git method, straight to the followed branch) in ``repository``; ``scope`` the
    ImageUpdater (``<namespace>/<name>``, "" for annotations)."""

    app: str
    alias: str
    image: str
    new_tag: str
    method: str
    written_at: datetime
    timeout: timedelta = DEFAULT_TIMEOUT
    uid: str = ""
    scope: str = ""
    commit: str = ""
    repository: str = ""
    credentials: str = ""
    """git method: the write-back credentials reference (to fetch a synced revision)."""
    stage: Stage = Stage.WRITTEN
    synced_at: datetime | None = None
    healthy_at: datetime | None = None
    message: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.app, self.alias)

    @property
    def reference(self) -> str:
        """``image:tag[@digest]``, as the change wrote it."""
        tag, _, digest = self.new_tag.partition("@")
        return self.image + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")

    @property
    def time_to_live(self) -> float | None:
        """Seconds from written to live, once shipped."""
        if self.healthy_at is None:
            return None
        return max(0.0, (self.healthy_at - self.written_at).total_seconds())

    def status_entry(self) -> dict[str, Any]:
        """Its ``status.shipments`` entry."""
        entry: dict[str, Any] = {
            "application": self.app,
            "alias": self.alias,
            "image": self.image,
            "newVersion": self.new_tag,
            "state": self.stage.value,
            "writtenAt": _format(self.written_at),
        }
        if self.synced_at is not None:
            entry["syncedAt"] = _format(self.synced_at)
        if self.healthy_at is not None:
            entry["healthyAt"] = _format(self.healthy_at)
        if self.message:
            entry["message"] = self.message[:1024]
        return entry

    def to_json(self) -> dict[str, Any]:
        """What the controller state remembers of a change followed (see :meth:`from_json`)."""
        out: dict[str, Any] = {
            "image": self.image,
            "newTag": self.new_tag,
            "method": self.method,
            "writtenAt": _format(self.written_at),
            "timeout": int(self.timeout.total_seconds()),
            "stage": self.stage.value,
        }
        for key, value in (
            ("uid", self.uid),
            ("scope", self.scope),
            ("commit", self.commit),
            ("repository", self.repository),
            ("credentials", self.credentials),
        ):
            if value:
                out[key] = value
        if self.synced_at is not None:
            out["syncedAt"] = _format(self.synced_at)
        return out

    @classmethod
    def from_json(cls, app: str, alias: str, raw: Any) -> Shipment | None:
        """The change :meth:`to_json` wrote; None when ``raw`` cannot be read (forgotten)."""
        if not isinstance(raw, Mapping):
            return None
        try:
            synced = raw.get("syncedAt")
            return cls(
                app=app,
                alias=alias,
                image=str(raw["image"]),
                new_tag=str(raw["newTag"]),
                method=str(raw["method"]),
                written_at=_parse(raw["writtenAt"]),
                timeout=timedelta(seconds=int(raw.get("timeout") or 0)) or DEFAULT_TIMEOUT,
                uid=str(raw.get("uid") or ""),
                scope=str(raw.get("scope") or ""),
                commit=str(raw.get("commit") or ""),
                repository=str(raw.get("repository") or ""),
                credentials=str(raw.get("credentials") or ""),
                stage=Stage(raw.get("stage") or Stage.WRITTEN.value),
                synced_at=_parse(synced) if synced else None,
            )
        except (KeyError, ValueError, TypeError):
            return None


def _format(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(text: Any) -> datetime:
    return datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def holds_image(images: Iterable[str], image: str, new_tag: str) -> bool:
    """Whether one of ``images`` (``status.summary.images``) is ``image`` at ``new_tag``: the
    digests decide when both sides have one, else the tag names."""
    tag, _, digest = new_tag.partition("@")
    try:
        wanted = ImageRef.parse(image)
    except ImageRefError:
        return False
    for text in images:
        try:
            live = ImageRef.parse(text)
        except ImageRefError:
            continue
        if not live.matches(wanted):
            continue
        if digest and live.digest:
            if live.digest == digest:
                return True
        elif tag and live.tag == tag:
            return True
    return False


def advance(
    shipment: Shipment, view: AppView | None, *, contains: bool | None, now: datetime
) -> Shipment:
    """The shipment after one look at its Application. ``view`` is None when the Application
    was not listed; ``contains`` whether the synced revision contains the change (None: not
    known yet). A final shipment is returned unchanged."""
    if shipment.stage.final:
        return shipment
    synced_at = shipment.synced_at
    if view is not None and view.sync == "Synced" and contains is True and synced_at is None:
        synced_at = now
    live = (
        view is not None
        and view.sync == "Synced"
        and contains is True
        and view.health == "Healthy"
        and holds_image(view.images, shipment.image, shipment.new_tag)
    )
    if live:
        return dataclasses.replace(
            shipment, stage=Stage.SHIPPED, synced_at=synced_at, healthy_at=now, message=""
        )
    if now - shipment.written_at >= shipment.timeout:
        why = view.message if view is not None else "the Application is no longer listed"
        if view is not None and not holds_image(view.images, shipment.image, shipment.new_tag):
            why += f"; {shipment.reference} is not among its live images"
        return dataclasses.replace(
            shipment, stage=Stage.NOT_SHIPPED, synced_at=synced_at, message=why
        )
    stage = Stage.SYNCED if synced_at is not None else Stage.WRITTEN
    return dataclasses.replace(shipment, stage=stage, synced_at=synced_at)


def merge_entries(
    previous: Iterable[Any], current: Iterable[Shipment], known: set[tuple[str, str]], limit: int
) -> list[dict[str, Any]]:
    """The ``status.shipments`` list: ``current`` shipments, then the stored entries of other
    changes (an unfinished one the tracker does not know — written before a restart — turns
    ``Unknown``), newest written first, at most ``limit``."""
    entries = {s.key: s.status_entry() for s in current}
    for old in previous:
        if not isinstance(old, dict):
            continue
        key = (str(old.get("application", "")), str(old.get("alias", "")))
        if key in entries or key in known:
            continue
        entry = dict(old)
        if entry.get("state") in (Stage.WRITTEN.value, Stage.SYNCED.value):
            entry["state"] = Stage.UNKNOWN.value
            entry["message"] = "the controller restarted before this change was seen live"
        entries[key] = entry
    ordered = sorted(entries.values(), key=lambda e: str(e.get("writtenAt", "")), reverse=True)
    return ordered[:limit]
