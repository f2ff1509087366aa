"""Counts of registry HTTP requests by kind, for tests, benchmarks and the ``stats`` views."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Literal

RequestKind = Literal["ping", "token", "tags", "manifest", "blob"]
KINDS: tuple[RequestKind, ...] = ("ping", "token", "tags", "manifest", "blob")


class RequestStats:
    """Requests made, keyed ``kind`` for GET and ``kind_method`` otherwise (``manifest_head``)."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()

    def record(self, kind: RequestKind, method: str) -> None:
        self._counts[kind if method == "GET" else f"{kind}_{method.lower()}"] += 1

    def snapshot(self) -> Mapping[str, int]:
        return dict(self._counts)

    @property
    def total(self) -> int:
        return sum(self._counts.values())

    def clear(self) -> None:
        self._counts.clear()
