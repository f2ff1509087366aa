"""Caches of the registry scan.

* :class:`MetadataCache` — parsed metadata by manifest digest. Content behind a digest never
  changes, so entries never go stale; the cache is only bounded (least recently used out).
* :class:`TagListCache` — tag lists for a short freshness window, so that many applications using
  the same image in one cycle list its tags once. Keyed by credential source too: a list fetched
  with one set of credentials is never handed to a caller using another.

Both merge concurrent misses for one key into one registry call (single-flight); a failure is
handed to everyone waiting and not kept.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from argocd_image_updater.model.platform import Platform
from argocd_image_updater.model.tags import PlatformImage
from argocd_image_updater.registry.singleflight import SingleFlight
from argocd_image_updater.report.metrics import CACHE_HITS, CACHE_MISSES

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
        (CACHE_HITS if value is not None else CACHE_MISSES).labels("metadata").inc()
        return value

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


@dataclass(frozen=True, slots=True)
class TagListKey:
    api_url: str
    repository: str
    credentials_key: str


class TagListCache:
    """Tag lists kept for ``ttl`` seconds (0 = only merge concurrent requests)."""

    def __init__(self, ttl: float = 30.0, *, clock: Callable[[], float] = time.monotonic) -> None:
        if ttl < 0:
            raise ValueError(f"tag list cache time must not be negative, got {ttl}")
        self.ttl = ttl
        self._clock = clock
        self._lists: dict[TagListKey, tuple[tuple[str, ...], float]] = {}
        self._flight: SingleFlight[TagListKey, tuple[str, ...]] = SingleFlight()

    async def get(
        self, key: TagListKey, fetch: Callable[[], Awaitable[list[str]]]
    ) -> tuple[str, ...]:
        now = self._clock()
        cached = self._lists.get(key)
        if cached is not None and cached[1] > now:
            CACHE_HITS.labels("tags").inc()
            return cached[0]

        async def load() -> tuple[str, ...]:
            return tuple(await fetch())

        tags, shared = await self._flight.do(key, load)
        (CACHE_HITS if shared else CACHE_MISSES).labels("tags").inc()
        if not shared and self.ttl > 0:
            self._lists[key] = (tags, self._clock() + self.ttl)
            self._expire(now)
        return tags

    def invalidate(self, api_url: str, repository: str) -> None:
        """Forget the lists of one repository (e.g. after a registry webhook said it changed)."""
        for key in [k for k in self._lists if (k.api_url, k.repository) == (api_url, repository)]:
            del self._lists[key]

    def _expire(self, now: float) -> None:
        if len(self._lists) > 1024:
            for key in [k for k, (_, until) in self._lists.items() if until <= now]:
                del self._lists[key]
