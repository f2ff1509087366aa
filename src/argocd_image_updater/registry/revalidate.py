"""Which known tags a metadata scan asks the registry about again.

Tags are mutable, so a tag seen before may point at another image now; learning that costs one
``HEAD`` per tag. Asking about every known tag in every cycle (what a full check costs) makes a
repository of 200 tags cost 200 requests per cycle where its tag list costs one. Instead, each
scan of a repository checks:

* every tag it has not seen before (a ``GET`` of its manifest, as always);
* the ``newest`` known tags by build date — the ones that win ``newest-build`` now and would
  stop winning if they moved;
* a rotating share of the other known tags: ``rotate`` tags per scan on average (0.2 = one tag
  every fifth scan), so every known tag is checked again within ``len(rest) / rotate`` scans.

A known tag that is not checked keeps the digest it had. :meth:`RepositoryTags.forget` drops
what is known (a registry webhook for the repository), so the next scan fetches those tags
afresh. docs/strategies.md describes the trade-off.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["RepositoryTags", "Revalidation"]


@dataclass(frozen=True, slots=True)
class Revalidation:
    """How many known tags a scan checks again (see the module docs)."""

    newest: int = 1
    rotate: float = 0.2

    def __post_init__(self) -> None:
        if self.newest < 0:
            raise ValueError(f"newest must be 0 or more, got {self.newest}")
        if self.rotate < 0:
            raise ValueError(f"rotate must be 0 or more, got {self.rotate}")


@dataclass(slots=True)
class RepositoryTags:
    """What the scans of one repository know: each tag's last digest and the rotation state."""

    key: str
    digests: dict[str, str] = field(default_factory=dict)
    cursor: int = 0
    credit: float = -1.0

    def known(self, tag: str) -> str | None:
        return self.digests.get(tag)

    def remember(self, tag: str, digest: str) -> None:
        self.digests[tag] = digest

    def keep_only(self, names: Collection[str]) -> None:
        """Forget tags the registry no longer lists."""
        if len(self.digests) > len(names) or any(t not in names for t in self.digests):
            listed = set(names)
            for tag in [t for t in self.digests if t not in listed]:
                del self.digests[tag]

    def forget(self, tags: Iterable[str] | None = None) -> None:
        """Drop the digests of ``tags`` (all when ``None``): their next scan fetches them."""
        if tags is None:
            self.digests.clear()
            return
        for tag in tags:
            self.digests.pop(tag, None)

    def to_check(
        self,
        names: Sequence[str],
        policy: Revalidation,
        created: Callable[[str], datetime | None],
    ) -> Collection[str]:
        """The known tags among ``names`` to check again in this scan (``created`` gives the
        build date of a digest, ``None`` when unknown)."""
        known = [n for n in names if n in self.digests]
        if not known:
            return ()
        # Newest build first; tags without a known build date count as oldest.
        dated = sorted(known, key=lambda n: _age_key(created(self.digests[n])), reverse=True)
        chosen = set(dated[: policy.newest])
        rest = [n for n in known if n not in chosen]
        if not rest or policy.rotate <= 0:
            return chosen
        if self.credit < 0:
            # Spread the repositories' turns over the scans instead of all in the same one.
            self.credit = (zlib.crc32(self.key.encode()) % 1000) / 1000
        self.credit += policy.rotate
        turns = min(int(self.credit), len(rest))
        self.credit -= int(self.credit)
        for i in range(turns):
            chosen.add(rest[(self.cursor + i) % len(rest)])
        self.cursor = (self.cursor + turns) % len(rest)
        return chosen


def _age_key(when: datetime | None) -> tuple[bool, float]:
    return (when is not None, when.timestamp() if when is not None else 0.0)
