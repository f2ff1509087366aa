"""The stored form of the remembered record (pure): the data keys of its ConfigMap or file, and
how a record too large for its object is compressed and trimmed (:func:`fit`)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

STATE_VERSION: Final = 1
"""The layout of the stored record; a newer layout is refused, never overwritten."""

VERSION_KEY: Final = "version"
WRITES_KEY: Final = "writes.json"
FIRST_SEEN_KEY: Final = "first-seen.json"
DIGESTS_KEY: Final = "digests.json"
SHIPMENTS_KEY: Final = "shipments.json"
DATA_KEYS: Final = (VERSION_KEY, WRITES_KEY, FIRST_SEEN_KEY, DIGESTS_KEY, SHIPMENTS_KEY)
TABLE_KEYS: Final = (WRITES_KEY, FIRST_SEEN_KEY, DIGESTS_KEY, SHIPMENTS_KEY)
COMPRESSED_SUFFIX: Final = ".gz"
"""A table stored gzip-compressed (``binaryData``) has this suffix after its key."""
MAX_INFLATED_BYTES: Final = 64 * 1024 * 1024

MAX_BYTES: Final = 900_000
"""Upper bound of the serialized record (a ConfigMap holds at most 1 MiB)."""


@dataclass(frozen=True, slots=True)
class Stored:
    """A serialized record: ConfigMap ``data`` and ``binaryData``, their size in bytes, and
    what was left out to fit (``{key: entries}``: repositories or Applications)."""

    data: dict[str, str]
    binary: dict[str, bytes]
    size: int
    dropped: dict[str, int]


def dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def plain(tables: Mapping[str, Any]) -> Stored:
    data = {VERSION_KEY: str(STATE_VERSION), **{key: dump(tables[key]) for key in TABLE_KEYS}}
    return Stored(data, {}, sum(len(k) + len(v.encode()) for k, v in data.items()), {})


def compressed(tables: Mapping[str, Any]) -> Stored:
    binary = {
        key + COMPRESSED_SUFFIX: gzip.compress(dump(tables[key]).encode(), 6, mtime=0)
        for key in TABLE_KEYS
    }
    data = {VERSION_KEY: str(STATE_VERSION)}
    size = (
        len(VERSION_KEY) + len(data[VERSION_KEY]) + sum(len(k) + len(v) for k, v in binary.items())
    )
    return Stored(data, binary, size, {})


def fit(
    tables: dict[str, dict[str, Any]], limit: int, encode: Callable[[Mapping[str, Any]], Stored]
) -> Stored:
    """``encode(tables)`` at most ``limit`` bytes long: the entries of the digests, then of the
    first-seen times, then of the writes are dropped, the largest repositories (the Applications
    written longest ago) first, a batch at a time sized by the bytes still to shed."""
    stored = encode(tables)
    dropped: dict[str, int] = {}
    for key in (DIGESTS_KEY, FIRST_SEEN_KEY, WRITES_KEY):
        table = tables[key]
        if stored.size <= limit or not table:
            continue
        if key != WRITES_KEY and len(table) == 1:  # one repository: its oldest tags go
            stored = _fit_tags(tables, key, limit, encode, dropped)
            continue
        sizes = {name: len(dump(entry)) + len(name) + 4 for name, entry in table.items()}
        if key == WRITES_KEY:
            order = sorted(table, key=lambda app: max(r["at"] for r in table[app].values()))
        else:
            order = sorted(table, key=sizes.__getitem__, reverse=True)
        position = 0
        while stored.size > limit and position < len(order):
            plain = sum(len(dump(t)) for t in tables.values()) or 1
            excess = (stored.size - limit) * plain / stored.size  # in plain bytes
            shed = 0
            while position < len(order) and (shed == 0 or shed < excess):
                name = order[position]
                shed += sizes[name]
                del table[name]
                position += 1
            dropped[key] = position
            stored = encode(tables)
    return replace(stored, dropped=dropped) if dropped else stored


def _fit_tags(
    tables: dict[str, dict[str, Any]],
    key: str,
    limit: int,
    encode: Callable[[Mapping[str, Any]], Stored],
    dropped: dict[str, int],
) -> Stored:
    """``encode(tables)`` with the oldest tags (by first-seen time, those without one first,
    then by name) of the one repository of table ``key`` left out until it fits in
    ``limit`` bytes (``dropped[key]``: the tags left out)."""
    [(repo, tags)] = tables[key].items()
    seen: Mapping[str, str] = tables[FIRST_SEEN_KEY].get(repo, {})
    order = sorted(tags, key=lambda tag: (seen.get(tag, ""), tag))
    sizes = {tag: len(dump({tag: tags[tag]})) for tag in order}
    stored = encode(tables)
    position = 0
    while stored.size > limit and position < len(order):
        plain = sum(len(dump(t)) for t in tables.values()) or 1
        excess = (stored.size - limit) * plain / stored.size
        shed = 0
        while position < len(order) and (shed == 0 or shed < excess):
            tag = order[position]
            shed += sizes[tag]
            del tags[tag]
            position += 1
        stored = encode(tables)
    dropped[key] = position
    if not tags:
        del tables[key][repo]
    return stored
