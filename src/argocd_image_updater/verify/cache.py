"""Verdicts that passed, by (signature location, image digest, policy fingerprint).

A digest's content never changes, so a signature that verified keeps verifying under the same
policy: such digests are not verified again. A changed policy (another key, another signature
repository) has another fingerprint, so nothing verified under the old one is reused. Refusals
are not kept: a signature is often pushed just after its image, and is found in a later cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

from argocd_image_updater.registry.cache import LruDict

DEFAULT_ENTRIES = 10_000


@dataclass(frozen=True, slots=True)
class CacheKey:
    location: str
    """``<api url>/<repository>`` the signatures were read from."""
    digest: str
    policy: str


class VerdictCache:
    def __init__(self, max_entries: int = DEFAULT_ENTRIES) -> None:
        self._passed: LruDict[CacheKey, str] = LruDict(max_entries)

    def __len__(self) -> int:
        return len(self._passed)

    def passed(self, key: CacheKey) -> str | None:
        """Where the signature that passed was found, when ``key`` passed before."""
        return self._passed.get(key)

    def remember(self, key: CacheKey, where: str) -> None:
        self._passed.put(key, where)
