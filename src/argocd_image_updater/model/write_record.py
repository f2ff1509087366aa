"""The last tag the controller wrote for one image of one Application (pure), and the time
format of the controller's remembered record (:mod:`.controller_state`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


class StateError(ValueError):
    """A stored record cannot be read (the message names the key and what is wrong)."""


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC, seconds precision (``2026-12-01T12:00:00Z``)."""
    return moment.astimezone(UTC).isoformat(timespec="seconds")[:19] + "Z"  # a third of strftime


def parse_time(text: str) -> datetime:
    """An RFC 3339 time (``Z`` or an offset); a time without a zone is UTC."""
    value = datetime.fromisoformat(text.strip().replace("z", "Z").replace("Z", "+00:00"))
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class WriteRecord:
    """The last tag written for one image of one Application."""

    tag: str
    at: datetime
    live: bool = False
    """The running tag was seen at (or past) ``tag`` since it was written."""
    held: str = ""
    """The tag rolled back to of the rollback hold announced for this write ("" = none)."""
    via: str = ""
    """Where the tag was written: ``argocd`` (the Application's parameters), ``git`` (the
    write-back target file); "" for a record of an earlier version (then only a rollback of a
    tag seen running is held)."""
    commit: str = ""
    """The commit pushed with the tag (``git``), when known."""
    held_by: str = ""
    """Who overwrote the tag, as far as known (a field manager, a commit's author)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tag": self.tag, "at": format_time(self.at)}
        if self.live:
            out["live"] = True
        for key in ("held", "via", "commit"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.held_by:
            out["heldBy"] = self.held_by
        return out

    @classmethod
    def from_json(cls, raw: Any, where: str) -> WriteRecord:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("tag"), str):
            raise StateError(f"{where}: expected an object with a string 'tag'")
        try:
            at = parse_time(str(raw.get("at", "")))
        except ValueError:
            raise StateError(f"{where}.at: not an RFC 3339 time: {raw.get('at')!r}") from None
        return cls(
            raw["tag"],
            at,
            bool(raw.get("live", False)),
            str(raw.get("held") or ""),
            str(raw.get("via") or ""),
            str(raw.get("commit") or ""),
            str(raw.get("heldBy") or ""),
        )
