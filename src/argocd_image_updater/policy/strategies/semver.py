"""``semver`` (the default): the highest semantic version satisfying the constraint.

Tags that are versions and satisfy the constraint are ordered by precedence, equal versions by
their text (``v1.0`` after ``1.0``). A pre-release is admitted only by a constraint with a
pre-release part. Below the running tag means a lower precedence (both must be versions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from argocd_image_updater.model.platform import PlatformFilter
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy.semver import Constraint, ConstraintError, Version, version_key
from argocd_image_updater.policy.strategies.base import Key, Ranker, UpdateStrategy
from argocd_image_updater.policy.verdicts import PolicyError, Rejection, TagVerdict, Verdict

_NOT_SEMVER: Final = Rejection(TagVerdict.NOT_SEMVER, "not a semantic version")


def shown(constraint: str) -> str:
    """The constraint as summaries show it (``*`` for none)."""
    return constraint if constraint.strip() else "*"


class _Ranker(Ranker):
    def __init__(self, constraint: Constraint, text: str) -> None:
        self._check = constraint.check_key
        # No constraint (``*``, the most common): every release satisfies it, no test to run.
        self._every_release = constraint.admits_every_release
        self._prerelease = Rejection(
            TagVerdict.PRERELEASE,
            f"pre-release; constraint '{shown(text)}' has no pre-release part "
            "(append -0, e.g. '2.x-0', to admit pre-releases)",
        )
        self._outside = Rejection(
            TagVerdict.OUTSIDE_CONSTRAINT, f"outside constraint '{shown(text)}'"
        )

    def rank(self, tag: TagInfo, platforms: PlatformFilter) -> Key | Rejection:
        # Runs once per tag of a choice: the version's precedence key only, no Version object,
        # and a rejection shared by every tag it rejects.
        name = tag.name
        key = version_key(name)
        if key is None:
            return _NOT_SEMVER
        if key[3] and self._every_release:
            return (key, name)
        if self._check(key):
            return (key, name)
        if not key[3] and self._check(key, True):
            return self._prerelease
        return self._outside


class Semver(UpdateStrategy):
    name = "semver"
    position = 0
    beaten = "lower than"

    def prepare(self, constraint: str, image: str, order_hint: Mapping[str, int] | None) -> Ranker:
        try:
            return _Ranker(Constraint.parse(constraint), constraint)
        except ConstraintError as err:
            raise PolicyError(f"image '{image}': {err}") from None

    def chosen_summary(self, chosen: TagInfo, constraint: str, counted: str) -> str:
        what = f"highest version satisfying '{shown(constraint)}'"
        return f"chose '{chosen.name}': {what} ({counted})"

    def none_summary(self, constraint: str, verdicts: Sequence[Verdict], detail: str) -> str:
        return f"no tag satisfies constraint '{shown(constraint)}' ({detail})"

    def explain_key(
        self,
        tag: TagInfo | None,
        name: str,
        platforms: PlatformFilter,
        order_hint: Mapping[str, int] | None,
    ) -> Key:
        version = Version.parse(name)
        return (1, version.precedence, name) if version is not None else (0, name)

    def downgrade(
        self,
        running: str,
        chosen: TagInfo,
        tags: Sequence[TagInfo],
        order_hint: Mapping[str, int] | None,
        platforms: PlatformFilter,
    ) -> str | None:
        old, new = Version.parse(running), Version.parse(chosen.name)
        if old is None or new is None or new.precedence >= old.precedence:
            return None
        return f"'{chosen.name}' is a lower version than the running '{running}'"


STRATEGY: Final = Semver()
