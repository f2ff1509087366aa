"""What the owner of repositories in a sharded fleet says of them after each full cycle: the
annotation :data:`HEARTBEAT_ANNOTATION` of its member Lease, written with its next renewal.

``{"seq": 7, "at": 1764840000.5, "since": 1764839000.0, "view": "a1b2…", "listed": "c3d4…",
"changed": ["…"], "gained": {"…": "e5f6…"}}``: the 7th full cycle since the replica started
listed, at ``at`` (wall-clock seconds), every repository it owns that the fleet uses — the set
whose hash is ``listed`` (:func:`set_hash` of their :func:`list_id`), so that a replica that
sees the fleet otherwise (a ``registries.conf`` not updated yet, an ImageUpdater not seen yet)
trusts nothing of it —,
under the member list whose hash is ``view``; it has listed every repository it owned in each
full cycle since ``since`` (its first); ``changed`` names the repositories whose tags changed,
whose listing failed, or that it did not own at its last heartbeat, since that heartbeat —
``null`` when there were more than :data:`MAX_CHANGED`; ``gained`` (optional) gives, for those of
them it did not own at its last heartbeat and listed well, the :func:`listing_hash` of the tags
it listed, so that a replica whose copy holds the very same tags keeps it (a replica that does
not know the field lists them again: it reads them as changed). Read from another replica's
Lease, every field is checked and the text is bounded: a malformed heartbeat is no heartbeat
(nothing is vouched for).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

HEARTBEAT_ANNOTATION: Final = "argocd-image-updater.argoproj.io/tag-lists"
MAX_CHANGED: Final = 200
MAX_TEXT: Final = 16 * 1024
_ID_LENGTH: Final = 12
_HASH_LENGTH: Final = 16


def list_id(api_url: str, repository: str, credentials: str) -> str:
    """A repository listing's short name (its API, path and credentials, hashed)."""
    text = f"{api_url}\0{repository}\0{credentials}"
    return hashlib.blake2b(text.encode(), digest_size=_ID_LENGTH // 2).hexdigest()


def listing_hash(names: Sequence[str]) -> str:
    """The hash of a repository's tags as listed (in the registry's order)."""
    text = "\0".join(names).encode()
    return hashlib.blake2b(text, digest_size=_HASH_LENGTH // 2).hexdigest()


def set_hash(names: Collection[str]) -> str:
    """The hash of a set of names (a member list: two replicas agree on every owner when
    theirs are equal; the repositories a member lists)."""
    return hashlib.blake2b("\0".join(sorted(names)).encode(), digest_size=8).hexdigest()


@dataclass(frozen=True, slots=True)
class Heartbeat:
    seq: int
    at: float
    since: float
    view: str
    listed: str
    changed: frozenset[str] | None
    """None: too many to name (every copy of the owner's repositories is listed again)."""
    gained: Mapping[str, str] = field(default_factory=dict)
    """Of ``changed``, those newly owned: the :func:`listing_hash` of the tags listed."""

    def render(self) -> str:
        changed = sorted(self.changed) if self.changed is not None else None
        raw: dict[str, Any] = {
            "seq": self.seq,
            "at": round(self.at, 3),
            "since": round(self.since, 3),
            "view": self.view,
            "listed": self.listed,
            "changed": changed,
        }
        if self.gained:
            raw["gained"] = dict(sorted(self.gained.items()))
        return json.dumps(raw, separators=(",", ":"))


def _time(raw: dict[str, Any], name: str) -> float:
    value = raw.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name}: not a number")
    return float(value)


def parse_heartbeat(text: str) -> Heartbeat:
    """The heartbeat in ``text`` (ValueError naming the field when it is malformed)."""
    if len(text) > MAX_TEXT:
        raise ValueError(f"longer than {MAX_TEXT} characters")
    try:
        raw = json.loads(text)
    except ValueError as err:
        raise ValueError(f"not JSON: {err}") from None
    if not isinstance(raw, dict):
        raise ValueError("not an object")
    seq = raw.get("seq")
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
        raise ValueError("seq: not a positive integer")
    view, listed = raw.get("view"), raw.get("listed")
    if not isinstance(view, str) or not view or len(view) > 64:
        raise ValueError("view: not a hash")
    if not isinstance(listed, str) or not listed or len(listed) > 64:
        raise ValueError("listed: not a hash")
    changed = raw.get("changed")
    found: frozenset[str] | None = None
    if changed is not None:
        if not isinstance(changed, list) or len(changed) > MAX_CHANGED:
            raise ValueError(f"changed: not a list of at most {MAX_CHANGED} names")
        if not all(isinstance(c, str) and len(c) == _ID_LENGTH for c in changed):
            raise ValueError("changed: not a list of repository names")
        found = frozenset(changed)
    gained = raw.get("gained", {})
    if not isinstance(gained, dict) or not all(
        isinstance(h, str) and len(h) == _HASH_LENGTH for h in gained.values()
    ):
        raise ValueError("gained: not an object of listing hashes")
    if gained and (found is None or not found.issuperset(gained)):
        raise ValueError("gained: names a repository not in changed")
    return Heartbeat(seq, _time(raw, "at"), _time(raw, "since"), view, listed, found, gained)
