"""``alphabetical`` (legacy name ``name``): the tag that sorts last.

Names are compared by code point, which equals Go's byte order; the constraint is ignored.
Below the running tag means sorting before it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from argocd_image_updater.model.platform import PlatformFilter
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy.strategies.base import Key, Ranker, UpdateStrategy
from argocd_image_updater.policy.verdicts import Verdict


class _Ranker(Ranker):
    def rank(self, tag: TagInfo, platforms: PlatformFilter) -> Key | Verdict:
        return (tag.name,)


class Alphabetical(UpdateStrategy):
    name = "alphabetical"
    legacy_names = ("name",)
    position = 20
    beaten = "sorts before"
    choice = "last in alphabetical order"

    def prepare(self, constraint: str, image: str, order_hint: Mapping[str, int] | None) -> Ranker:
        return _Ranker()

    def downgrade(
        self,
        running: str,
        chosen: TagInfo,
        tags: Sequence[TagInfo],
        order_hint: Mapping[str, int] | None,
        platforms: PlatformFilter,
    ) -> str | None:
        if chosen.name >= running:
            return None
        return f"'{chosen.name}' sorts before the running '{running}'"


STRATEGY: Final = Alphabetical()
