"""``digest``: the current digest of one mutable tag, the one the constraint names.

Every other tag is ``not-constraint-tag``; the followed tag needs its manifest digest. The
result is pinned: the image is written ``tag@digest`` and is up to date only when the running
image has that digest. The followed tag moves, so its metadata is not cached and there is no
order to compare with the running tag (never downgrade does not apply).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from argocd_image_updater.model.platform import PlatformFilter
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy.strategies.base import Key, Ranker, UpdateStrategy
from argocd_image_updater.policy.verdicts import PolicyError, TagVerdict, Verdict


class _Ranker(Ranker):
    def __init__(self, followed: str) -> None:
        self._followed = followed

    def excludes(self, name: str) -> Verdict | None:
        if name == self._followed:
            return None
        return Verdict(
            name, TagVerdict.NOT_CONSTRAINT_TAG, f"digest strategy follows '{self._followed}'"
        )

    def rank(self, tag: TagInfo, platforms: PlatformFilter) -> Key | Verdict:
        if not tag.digest:
            return Verdict(tag.name, TagVerdict.NO_METADATA, "manifest digest not fetched")
        return (tag.name,)


class Digest(UpdateStrategy):
    name = "digest"
    position = 30
    pins_digest = True
    cacheable = False
    needs_constraint = True

    def needs_metadata(self, *, time_sorted: bool = False) -> bool:
        return True

    def only_tags(self, constraint: str) -> tuple[str, ...]:
        return (constraint,)

    def prepare(self, constraint: str, image: str, order_hint: Mapping[str, int] | None) -> Ranker:
        if not constraint.strip():
            raise PolicyError(
                f"cannot use update strategy 'digest' for image '{image}' without a version "
                "constraint"
            )
        return _Ranker(constraint)

    def chosen_summary(self, chosen: TagInfo, constraint: str, counted: str) -> str:
        return f"chose '{chosen.name}' at digest {chosen.digest}"

    def none_summary(self, constraint: str, verdicts: Sequence[Verdict], detail: str) -> str:
        followed = next((v for v in verdicts if v.tag == constraint), None)
        if followed is None:
            return f"tag '{constraint}' is not in the registry ({detail})"
        return f"tag '{constraint}' is not usable: {followed.detail} ({detail})"


STRATEGY: Final = Digest()
