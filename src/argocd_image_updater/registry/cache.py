"""Caches of the registry scan.

* :class:`MetadataCache` — parsed metadata by manifest digest. Content behind a digest never
  changes, so entries never go stale; the cache is only bounded (least recently used out).
* :class:`TagListCache` — tag lists shared within one *round* (an update cycle, a webhook event's
  update): every scan of a round that needs a repository's tags uses the one listing that started
  after the round began, however many applications and scans ask for it. A listing never serves
  a later round, so a tag pushed between two cycles is seen by the next one. Keyed by credential
  source too: a list fetched with one set of credentials is never handed to a caller using
  another.

Both merge concurrent requests for one key into one registry call (single-flight); a failure is
handed to everyone waiting and not kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

from argocd_image_updater.model.platform import Platform
from argocd_image_updater.model.tags import PlatformImage
from argocd_image_updater.observe.metrics import CACHE_HITS, CACHE_MISSES
from argocd_image_updater.registry.singleflight import SingleFlight

_COUNTS: dict[tuple[bool, str], Any] = {}


def _count(hit: bool, cache: str, amount: int = 1) -> None:
    """Count hits or misses of ``cache`` (its series looked up once)."""
    series = _COUNTS.get((hit, cache))
    if series is None:
        series = _COUNTS[(hit, cache)] = (CACHE_HITS if hit else CACHE_MISSES).labels(cache)
    series.inc(amount)


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruDict(Generic[K, V]):
    """A dict that forgets its least recently used entries beyond ``max_entries``."""

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError(f"cache size must be at least 1, got {max_entries}")
        self._max = max_entries
        self._data: OrderedDict[K, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def pop(self, key: K) -> V | None:
        return self._data.pop(key, None)

    def items(self) -> list[tuple[K, V]]:
        """The entries, least recently used first (a copy: safe to change the dict meanwhile)."""
        return list(self._data.items())

    def put(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._max:
            self._data.popitem(last=False)


@dataclass(frozen=True, slots=True)
class IndexEntries:
    """What a manifest list / OCI index says: ``(platform, child digest)`` per image."""

    entries: tuple[tuple[Platform, str], ...]


CachedMetadata = PlatformImage | IndexEntries
"""A single image (platform from its config, created, labels) or an index's entry list."""


class MetadataCache:
    """Parsed manifest/config metadata by manifest digest (bounded LRU)."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self._entries: LruDict[str, CachedMetadata] = LruDict(max_entries)
        self._flight: SingleFlight[tuple[str, Hashable], CachedMetadata] = SingleFlight()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, digest: str) -> CachedMetadata | None:
        value = self._entries.get(digest)
        _count(value is not None, "metadata")
        return value

    def peek(self, digest: str) -> CachedMetadata | None:
        """The cached value without counting a hit or a miss (for bookkeeping, not a fetch)."""
        return self._entries._data.get(digest)

    def put(self, digest: str, value: CachedMetadata) -> None:
        self._entries.put(digest, value)

    async def get_or_fetch(
        self,
        digest: str,
        fetch: Callable[[], Awaitable[CachedMetadata]],
        group: Hashable = "",
    ) -> CachedMetadata:
        """The cached value, or the result of ``fetch``. Concurrent misses with the same
        ``group`` share one fetch (use the credential source and repository as the group, so
        that one caller's failure is never handed to a caller with other access rights)."""
        cached = self.get(digest)
        if cached is not None:
            return cached
        value, _ = await self._flight.do((digest, group), fetch)
        self._entries.put(digest, value)
        return value


class TagListKey(NamedTuple):
    """What a cached tag list is for: registry API, repository and credential source.

    A named tuple, hashed and compared without Python code: a key is looked up in several
    tables per scan (the round's tag lists, a sharded replica's copies and their owners), and
    as a frozen dataclass each lookup ran its ``__hash__`` and ``__eq__`` in Python, a sixth of
    the bookkeeping of the 320 copies a sharded replica reuses a cycle (a CPU profile of
    ``benchmarks/sharding.py``)."""

    api_url: str
    repository: str
    credentials_key: str


def _consume(task: asyncio.Future[tuple[str, ...]]) -> None:
    # Mark the outcome as retrieved even when every caller was cancelled meanwhile.
    if not task.cancelled():
        task.exception()


Listing = asyncio.Future[tuple[str, ...]] | tuple[str, ...]
"""A tag listing of the :class:`TagListCache`: in flight (or failed), or its names when it was
held finished (:meth:`TagListCache.put`)."""


class TagListCache:
    """Tag lists shared by the scans of one round, never by a later one.

    :meth:`new_round` returns a round number; :meth:`get` with that number reuses a listing of
    the same key that *started* after the round began (finished or still in flight) and starts
    one otherwise. Listings started before the round — by an earlier cycle, or by concurrent
    work that began earlier — are never used, so everything a round sees is at least as new as
    the round. ``since=None`` only joins a listing that is still in flight.
    """

    def __init__(self, max_entries: int = 10_000) -> None:
        self._sequence = itertools.count(1)
        self._lists: LruDict[TagListKey, tuple[int, Listing]] = LruDict(max_entries)
        self._deferred: Counter[bool] | None = None
        """The hits and misses not counted yet, while :meth:`counted_together`."""

    def _count(self, hit: bool) -> None:
        deferred = self._deferred
        if deferred is None:
            _count(hit, "tags")
        else:
            deferred[hit] += 1

    @contextlib.contextmanager
    def counted_together(self) -> Iterator[None]:
        """Hits and misses counted once at the end of the block, not one by one: a sharded
        replica's scans answered at once take a few hundred held listings in a row, and each
        count is a locked increment of the metric's series."""
        if self._deferred is not None:  # already inside such a block
            yield
            return
        deferred: Counter[bool] = Counter()
        self._deferred = deferred
        try:
            yield
        finally:
            self._deferred = None
            for hit, amount in deferred.items():
                _count(hit, "tags", amount)

    def new_round(self) -> int:
        """A round number: listings started from now on belong to it."""
        return next(self._sequence)

    async def get(
        self,
        key: TagListKey,
        fetch: Callable[[], Awaitable[list[str]]],
        since: int | None = None,
        copy: Callable[[TagListKey], tuple[str, ...] | None] | None = None,
    ) -> tuple[str, ...]:
        """The tags of ``key`` (see the class). Where a listing would start, the names ``copy``
        gives (interned) if any, held as the round's listing (:meth:`put`, counted as the miss
        that listing would have been) without one: spares the listing's task, and interning
        the names again, for a sharded replica's copy of another's listing
        (:class:`~argocd_image_updater.registry.vouched_lists.VouchedLists`)."""
        entry = self._lists.get(key)
        if entry is not None:
            started, task = entry
            if isinstance(task, tuple):  # held finished: never in flight
                if since is not None and started > since:
                    self._count(True)
                    return task
            else:
                usable = (since is None and not task.done()) or (
                    since is not None and started > since
                )
                if usable and not (task.done() and (task.cancelled() or task.exception())):
                    self._count(True)
                    return await asyncio.shield(task)
        if copy is not None and (names := copy(key)) is not None:
            return self.put(key, names, hit=False)
        self._count(False)

        async def load() -> tuple[str, ...]:
            # Interned: a repository lists mostly the same names every cycle, and the names
            # kept from the last listing (``listed_tags``, the tag choices) are then the same
            # strings as this listing's, not a second copy of each.
            return tuple(map(sys.intern, await fetch()))

        started = next(self._sequence)
        task = asyncio.ensure_future(load())
        task.add_done_callback(_consume)
        task.add_done_callback(lambda t: self._forget_failure(key, t))
        self._lists.put(key, (started, task))
        return await asyncio.shield(task)

    def finished(self, key: TagListKey, since: int) -> tuple[str, ...] | None:
        """The tags of a listing of ``key`` of round ``since`` that has finished well (None:
        none, or not yet)."""
        entry = self._lists.get(key)
        if entry is None or entry[0] <= since:
            return None
        task = entry[1]
        if isinstance(task, tuple):
            self._count(True)
            return task
        if not task.done() or task.cancelled() or task.exception() is not None:
            return None
        self._count(True)
        return task.result()

    def put(self, key: TagListKey, names: tuple[str, ...], *, hit: bool = True) -> tuple[str, ...]:
        """Hold ``names`` as a finished listing of ``key`` made now (it was not asked for: a copy
        known to be current: no request, counted as a hit unless not ``hit``), as they are:
        interned already (:meth:`get` interns what it lists, a copy of it keeps its strings).
        Holding the names themselves, not a finished future, and interning nothing again: a
        sharded replica's 330 copies reused a cycle cost 0.21 ms here instead of 0.55 ms
        (``timeit``, 20 tags each, 2 vCPU AMD EPYC, CPython 3.11)."""
        self._count(hit)
        self._lists.put(key, (next(self._sequence), names))
        return names

    def _forget_failure(self, key: TagListKey, task: asyncio.Future[tuple[str, ...]]) -> None:
        entry = self._lists.get(key)
        if entry is not None and entry[1] is task and (task.cancelled() or task.exception()):
            self._lists.pop(key)
