"""What the replicas of a sharded fleet tell each other through the ConfigMap
``argocd-image-updater-events`` (pure): a bounded ring of recent registry events (webhook calls
one replica received, for the owners of the other keys) and the registry back-offs one replica
learned from a ``429`` (so that the others wait too).

Both are JSON documents in the ConfigMap's ``data``: ``events.json``, a list of entries (oldest
first), and ``backoffs.json``, an object keyed by registry host. Whatever any replica (or anyone
with write access to the ConfigMap) put there is checked when read: an entry with a field that
is missing, of the wrong type or too long is left out and named in the problems returned, never
stopping the others. The ring keeps at most :data:`RING_SIZE` entries, none older than
:data:`EVENT_MAX_AGE`; a back-off lasts at most :data:`BACKOFF_MAX` from when it is read, and at
most :data:`BACKOFF_HOSTS` registries are kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from argocd_image_updater.model.registry_event import RegistryEvent

EVENTS_CONFIGMAP: Final = "argocd-image-updater-events"
EVENTS_KEY: Final = "events.json"
BACKOFFS_KEY: Final = "backoffs.json"
RING_SIZE: Final = 64
EVENT_MAX_AGE: Final = timedelta(minutes=5)
"""An event older than this is neither kept nor handled: the owners' cycles have run since."""
BACKOFF_MAX: Final = timedelta(minutes=10)
BACKOFF_HOSTS: Final = 64
MAX_TEXT: Final = 512 * 1024
"""The longest document read (the ring at its largest is a fraction of it)."""

LIMITS: Final[Mapping[str, int]] = {
    "id": 64,
    "member": 253,
    "registry": 253,
    "repository": 256,
    "tag": 128,
    "digest": 160,
    "type": 64,
}
"""The longest value of each field of an entry (characters)."""


@dataclass(frozen=True, slots=True)
class RingEntry:
    """One registry event in the ring: ``member`` received it at ``at`` (its clock)."""

    id: str
    member: str
    at: datetime
    event: RegistryEvent

    def to_json(self) -> dict[str, str]:
        return {
            "id": self.id,
            "member": self.member,
            "time": format_instant(self.at),
            "registry": self.event.registry,
            "repository": self.event.repository,
            "tag": self.event.tag,
            "digest": self.event.digest,
            "type": self.event.source_type,
        }


@dataclass(frozen=True, slots=True)
class Backoff:
    """Requests to registry ``host`` wait until ``until`` (learned by ``member``)."""

    host: str
    until: datetime
    member: str

    def to_json(self) -> dict[str, str]:
        return {"until": format_instant(self.until), "member": self.member}


class EntryError(ValueError):
    """An entry cannot be read (the message names the field)."""


def format_instant(moment: datetime) -> str:
    """RFC 3339 in UTC with milliseconds (``2026-12-04T10:00:00.123Z``)."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(raw: Mapping[str, Any], name: str, *, required: bool = True) -> str:
    value = raw.get(name, None if required else "")
    if not isinstance(value, str):
        raise EntryError(f"{name}: expected a string")
    if len(value) > LIMITS[name]:
        raise EntryError(f"{name}: longer than {LIMITS[name]} characters")
    if required and not value:
        raise EntryError(f"{name}: empty")
    return value


def _instant(raw: Mapping[str, Any], name: str) -> datetime:
    value = raw.get(name)
    if not isinstance(value, str) or len(value) > 40:
        raise EntryError(f"{name}: expected an RFC 3339 time")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise EntryError(f"{name}: {value!r} is not an RFC 3339 time") from None
    if moment.tzinfo is None:
        raise EntryError(f"{name}: {value!r} has no time zone")
    return moment


def check_event(event: RegistryEvent) -> None:
    """Raise :class:`EntryError` when ``event`` does not fit an entry (a field too long)."""
    for name, value in (
        ("registry", event.registry),
        ("repository", event.repository),
        ("tag", event.tag),
        ("digest", event.digest),
        ("type", event.source_type),
    ):
        if len(value) > LIMITS[name]:
            raise EntryError(f"{name}: longer than {LIMITS[name]} characters")
    if not event.repository:
        raise EntryError("repository: empty")


def entry_from_json(raw: Any) -> RingEntry:
    if not isinstance(raw, Mapping):
        raise EntryError("expected an object")
    event = RegistryEvent(
        registry=_text(raw, "registry", required=False),
        repository=_text(raw, "repository"),
        tag=_text(raw, "tag", required=False),
        digest=_text(raw, "digest", required=False),
        source_type=_text(raw, "type", required=False),
    )
    return RingEntry(_text(raw, "id"), _text(raw, "member"), _instant(raw, "time"), event)


def _document(text: str | None, key: str, kind: type) -> tuple[Any, list[str]]:
    if not text:
        return kind(), []
    if len(text) > MAX_TEXT:
        return kind(), [f"{key}: longer than {MAX_TEXT} characters, ignored"]
    try:
        doc = json.loads(text)
    except ValueError as err:
        return kind(), [f"{key}: not JSON ({err})"]
    if not isinstance(doc, kind):
        return kind(), [f"{key}: expected a JSON {'list' if kind is list else 'object'}"]
    return doc, []


def parse_events(text: str | None) -> tuple[list[RingEntry], list[str]]:
    """The entries of ``events.json`` that can be read, and what is wrong with the others."""
    doc, problems = _document(text, EVENTS_KEY, list)
    entries = []
    for number, raw in enumerate(doc[: 4 * RING_SIZE]):
        try:
            entries.append(entry_from_json(raw))
        except EntryError as err:
            problems.append(f"{EVENTS_KEY}[{number}]: {err}")
    return entries, problems


def parse_backoffs(text: str | None, now: datetime) -> tuple[list[Backoff], list[str]]:
    """The back-offs of ``backoffs.json`` still running at ``now`` (each ending at most
    :data:`BACKOFF_MAX` after ``now``), and what is wrong with the others."""
    doc, problems = _document(text, BACKOFFS_KEY, dict)
    found = []
    for host, raw in list(doc.items())[: 4 * BACKOFF_HOSTS]:
        try:
            if not host or len(host) > LIMITS["registry"]:
                raise EntryError("the registry host is empty or too long")
            if not isinstance(raw, Mapping):
                raise EntryError("expected an object")
            until = min(_instant(raw, "until"), now + BACKOFF_MAX)
            member = _text(raw, "member")
        except EntryError as err:
            problems.append(f"{BACKOFFS_KEY}[{host[:64]!r}]: {err}")
            continue
        if until > now:
            found.append(Backoff(host, until, member))
    return found, problems


def appended(
    entries: Iterable[RingEntry], new: Iterable[RingEntry], now: datetime
) -> list[RingEntry]:
    """The ring with ``new`` added: the last :data:`RING_SIZE` entries, none older than
    :data:`EVENT_MAX_AGE` at ``now``, each id once."""
    oldest = now - EVENT_MAX_AGE
    kept: dict[str, RingEntry] = {}
    for entry in [*entries, *new]:
        if entry.at >= oldest:
            kept.pop(entry.id, None)
            kept[entry.id] = entry
    return list(kept.values())[-RING_SIZE:]


def merged_backoffs(
    current: Iterable[Backoff], new: Iterable[Backoff], now: datetime
) -> list[Backoff]:
    """The back-offs running at ``now``, the later of two for one host, at most
    :data:`BACKOFF_HOSTS` (those ending last)."""
    latest: dict[str, Backoff] = {}
    for backoff in [*current, *new]:
        until = min(backoff.until, now + BACKOFF_MAX)
        if until <= now:
            continue
        known = latest.get(backoff.host)
        if known is None or until > known.until:
            latest[backoff.host] = Backoff(backoff.host, until, backoff.member)
    ordered = sorted(latest.values(), key=lambda b: b.until, reverse=True)[:BACKOFF_HOSTS]
    return sorted(ordered, key=lambda b: b.host)


def render_events(entries: Iterable[RingEntry]) -> str:
    return json.dumps([entry.to_json() for entry in entries], separators=(",", ":"))


def render_backoffs(backoffs: Iterable[Backoff]) -> str:
    return json.dumps({b.host: b.to_json() for b in backoffs}, separators=(",", ":"))
