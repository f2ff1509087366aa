"""Which objects a clone's object store holds, read from its files without a git process.

A SHA-1 object is in the store when its loose file (``objects/ab/cdef…``) exists or a pack
index (``objects/pack/*.idx``, version 1 or 2) lists it; the index's fan-out table and sorted
names give the answer with a binary search. Only the absence is taken from here: whatever may
be present is still asked of git (``merge-base``), which also tells a commit from other
objects. When the store cannot be read this way (alternates, another hash, an index of an
unknown version, a file vanishing while read), :func:`absent_objects` answers ``None`` and the
caller asks git.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Final

__all__ = ["absent_objects"]

_IDX_V2: Final = b"\377tOc"
_HEX: Final = frozenset("0123456789abcdef")


def _sha1_names(names: Iterable[str]) -> list[str] | None:
    out = list(dict.fromkeys(names))
    if all(len(n) == 40 and set(n) <= _HEX for n in out):
        return out
    return None


class _Index:
    """One pack index, mapped read-only."""

    def __init__(self, data: mmap.mmap) -> None:
        self._data = data
        if data[:4] == _IDX_V2:
            if int.from_bytes(data[4:8], "big") != 2:
                raise ValueError("unknown pack index version")
            self._fanout, self._names, self._stride = 8, 8 + 1024, 20
        else:  # version 1: fan-out first, then (offset, name) entries
            self._fanout, self._names, self._stride = 0, 1024 + 4, 24
        self._count = self._fan(255)
        end = self._names + self._count * self._stride - (4 if self._stride == 24 else 0)
        if len(data) < end:
            raise ValueError("truncated pack index")

    def _fan(self, byte: int) -> int:
        at = self._fanout + 4 * byte
        return int.from_bytes(self._data[at : at + 4], "big")

    def _name(self, i: int) -> bytes:
        at = self._names + i * self._stride
        return self._data[at : at + 20]

    def __contains__(self, name: bytes) -> bool:
        low = self._fan(name[0] - 1) if name[0] else 0
        high = self._fan(name[0])
        while low < high:
            mid = (low + high) // 2
            here = self._name(mid)
            if here == name:
                return True
            if here < name:
                low = mid + 1
            else:
                high = mid
        return False


def absent_objects(git_dir: Path, names: Iterable[str]) -> set[str] | None:
    """The object names (40 lowercase hex digits) that the object store of ``git_dir`` does
    not hold; ``None`` when that cannot be told from its files."""
    wanted = _sha1_names(names)
    objects = git_dir / "objects"
    if wanted is None or (objects / "info" / "alternates").exists():
        return None
    missing = {n for n in wanted if not os.path.exists(objects / n[:2] / n[2:])}
    if not missing:
        return missing
    pack = objects / "pack"
    try:
        indexes = sorted(e.path for e in os.scandir(pack) if e.name.endswith(".idx"))
    except FileNotFoundError:
        return missing
    for path in indexes:
        try:
            with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                index = _Index(data)
                missing = {n for n in missing if bytes.fromhex(n) not in index}
        except (OSError, ValueError):
            return None
        if not missing:
            break
    return missing
