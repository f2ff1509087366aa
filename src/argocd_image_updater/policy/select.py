"""The tag choice: which tag an image should run, and why every other tag was not chosen.

Filters run in the original's order: ``allowTags``, ``ignoreTags``, and for ``digest`` every tag
but the followed one. Tags whose manifests were fetched are then matched against the wanted
platforms (a tag's creation date is the newest ``created`` among its matching images). Last,
the strategy orders the eligible tags and the greatest wins:

* ``semver``: tags that are versions and satisfy the constraint, by precedence; equal versions
  by their text (``v1.0`` after ``1.0``).
* ``newest-build``: by creation date, equal dates by name. When the registry lists tags by age,
  the caller passes each tag's list position as ``order_hint`` and no metadata is needed.
* ``alphabetical``: by name (code point order, which equals Go's byte order).
* ``digest``: the one tag named by the constraint; its digest is the result.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from argocd_image_updater.model.registry import TagSortMode
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy.filters import MATCH_ANY, TagMatcher, is_ignored
from argocd_image_updater.policy.platforms import PlatformFilter
from argocd_image_updater.policy.semver import Constraint, ConstraintError, Version
from argocd_image_updater.policy.strategy import Strategy

_NO_DATE: Final = datetime.min.replace(tzinfo=UTC)  # images without ``created`` sort first
_ANY_PLATFORM: Final = PlatformFilter()


class Reason(enum.StrEnum):
    """Why a tag was (not) chosen."""

    IGNORED = "ignored"
    NOT_ALLOWED = "not-allowed"
    NOT_SEMVER = "not-semver"
    OUTSIDE_CONSTRAINT = "outside-constraint"
    PRERELEASE = "prerelease"
    PLATFORM_MISMATCH = "platform-mismatch"
    NOT_CONSTRAINT_TAG = "not-constraint-tag"
    NO_METADATA = "no-metadata"
    OLDER = "older"
    CHOSEN = "chosen"


class PolicyError(ValueError):
    """A policy that cannot be applied to an image (bad constraint, digest without one)."""


@dataclass(frozen=True, slots=True)
class Policy:
    """How to choose a tag for one image."""

    strategy: Strategy = Strategy.SEMVER
    constraint: str = ""
    """The image's tag part: a semver constraint, or the followed tag for ``digest``."""
    allow: TagMatcher = MATCH_ANY
    ignore: tuple[str, ...] = ()
    platforms: PlatformFilter = _ANY_PLATFORM

    def validate(self, image: str) -> None:
        """Raise :class:`PolicyError` naming ``image`` when the policy cannot be used."""
        _checked_constraint(self, image)


@dataclass(frozen=True, slots=True)
class Verdict:
    tag: str
    reason: Reason
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Selection:
    chosen: TagInfo | None
    verdicts: tuple[Verdict, ...]
    """One per distinct tag name, in the order the tags were given."""
    summary: str
    """What was chosen, or why nothing was (with counts per reason)."""

    def counts(self) -> dict[Reason, int]:
        return dict(Counter(v.reason for v in self.verdicts))

    def verdict(self, tag: str) -> Verdict | None:
        return next((v for v in self.verdicts if v.tag == tag), None)


def needs_metadata(policy: Policy, *, time_sorted: bool = False) -> bool:
    """Whether the scan must fetch manifests for ``policy``.

    ``digest`` always does (for the digest); ``newest-build`` does unless the registry lists
    tags by age (``time_sorted``), in which case the list order stands in for dates.
    """
    if policy.strategy is Strategy.NEWEST_BUILD:
        return not time_sorted
    return policy.strategy is Strategy.DIGEST


def time_order_hint(names: Sequence[str], mode: TagSortMode) -> dict[str, int] | None:
    """Age ranks (higher is newer) from a registry's tag list order, or ``None`` if unsorted.

    As in the original, the i-th of n listed tags ranks ``n - i`` for ``latest-first`` and ``i``
    for ``latest-last``; a name listed twice keeps its later position.
    """
    if not mode.is_time_sorted:
        return None
    count = len(names)
    if mode is TagSortMode.LATEST_FIRST:
        return {name: count - i for i, name in enumerate(names)}
    return {name: i for i, name in enumerate(names)}


def _checked_constraint(policy: Policy, image: str) -> Constraint | None:
    if policy.strategy is Strategy.DIGEST:
        if not policy.constraint.strip():
            raise PolicyError(
                f"cannot use update strategy 'digest' for image '{image}' without a version "
                "constraint"
            )
        return None
    if policy.strategy is not Strategy.SEMVER:
        return None
    try:
        return Constraint.parse(policy.constraint)
    except ConstraintError as err:
        raise PolicyError(f"image '{image}': {err}") from None


_Key = tuple[Any, ...]


def choose(
    policy: Policy, tags: Sequence[TagInfo], order_hint: Mapping[str, int] | None = None
) -> Selection:
    """Choose the tag ``policy`` selects from ``tags`` (pure and deterministic).

    A repeated tag name counts once, with its last entry. ``order_hint`` maps tag names to their
    age rank (higher is newer) for registries that list tags by age; it replaces creation dates
    for ``newest-build``. Raises :class:`PolicyError` when the policy is unusable (see
    :meth:`Policy.validate`).
    """
    constraint = _checked_constraint(policy, "")
    strategy = policy.strategy
    unique: dict[str, TagInfo] = {}
    for tag in tags:
        unique[tag.name] = tag

    rejected: dict[str, Verdict] = {}
    eligible: list[tuple[_Key, TagInfo]] = []
    allow, ignore, platforms = policy.allow, policy.ignore, policy.platforms
    use_hint = order_hint is not None and strategy is Strategy.NEWEST_BUILD
    for name, tag in unique.items():
        verdict: Verdict | None = None
        created: datetime | None = None
        if not allow.matches(name):
            verdict = Verdict(name, Reason.NOT_ALLOWED, allow.error or f"does not match {allow}")
        elif ignore and (pattern := is_ignored(name, ignore)) is not None:
            verdict = Verdict(name, Reason.IGNORED, f"matches ignore pattern '{pattern}'")
        elif strategy is Strategy.DIGEST and name != policy.constraint:
            verdict = Verdict(
                name, Reason.NOT_CONSTRAINT_TAG, f"digest strategy follows '{policy.constraint}'"
            )
        elif tag.images:
            matching = [image for image in tag.images if platforms.wants(image.platform)]
            if not matching:
                offered = ", ".join(sorted({str(image.platform) for image in tag.images}))
                verdict = Verdict(
                    name, Reason.PLATFORM_MISMATCH, f"no image for {platforms} (has {offered})"
                )
            else:
                created = build_date(tag, platforms)
        if verdict is not None:
            rejected[name] = verdict
            continue
        if strategy is Strategy.SEMVER:
            assert constraint is not None
            version = Version.parse(name)
            if version is None:
                rejected[name] = Verdict(name, Reason.NOT_SEMVER, "not a semantic version")
            elif constraint.check(version):
                eligible.append(((version.precedence, name), tag))
            elif version.prerelease and constraint.check(version, include_prerelease=True):
                rejected[name] = Verdict(
                    name,
                    Reason.PRERELEASE,
                    f"pre-release; constraint '{_shown(policy.constraint)}' has no pre-release "
                    "part (append -0, e.g. '2.x-0', to admit pre-releases)",
                )
            else:
                rejected[name] = Verdict(
                    name,
                    Reason.OUTSIDE_CONSTRAINT,
                    f"outside constraint '{_shown(policy.constraint)}'",
                )
        elif strategy is Strategy.NEWEST_BUILD:
            if use_hint:
                assert order_hint is not None
                rank = order_hint.get(name)
                if rank is None:
                    rejected[name] = Verdict(
                        name, Reason.NO_METADATA, "not in the registry's tag order"
                    )
                else:
                    eligible.append(((rank, name), tag))
            elif not tag.images:
                rejected[name] = Verdict(name, Reason.NO_METADATA, "no creation date fetched")
            else:
                eligible.append(((created or _NO_DATE, name), tag))
        elif strategy is Strategy.DIGEST and not tag.digest:
            rejected[name] = Verdict(name, Reason.NO_METADATA, "manifest digest not fetched")
        else:
            eligible.append(((name,), tag))

    chosen = max(eligible, key=lambda item: item[0])[1] if eligible else None
    verdicts = _verdicts(unique, rejected, chosen, strategy)
    return Selection(chosen, verdicts, _summary(policy, chosen, verdicts))


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def build_date(tag: TagInfo, platforms: PlatformFilter) -> datetime | None:
    """A tag's creation date: the newest ``created`` among its images of a wanted platform."""
    dates = [i.created for i in tag.images if i.created is not None and platforms.wants(i.platform)]
    return max(map(_aware, dates)) if dates else None


def _shown(constraint: str) -> str:
    return constraint if constraint.strip() else "*"


def _verdicts(
    unique: Mapping[str, TagInfo],
    rejected: Mapping[str, Verdict],
    chosen: TagInfo | None,
    strategy: Strategy,
) -> tuple[Verdict, ...]:
    if chosen is None:
        return tuple(rejected.values())
    won = Verdict(chosen.name, Reason.CHOSEN)
    if strategy is Strategy.SEMVER:
        lost = f"lower than '{chosen.name}'"
    elif strategy is Strategy.ALPHABETICAL:
        lost = f"sorts before '{chosen.name}'"
    else:
        lost = f"older than '{chosen.name}'"
    out: list[Verdict] = []
    for name in unique:
        verdict = rejected.get(name)
        if verdict is None:
            verdict = won if name == chosen.name else Verdict(name, Reason.OLDER, lost)
        out.append(verdict)
    return tuple(out)


def _summary(policy: Policy, chosen: TagInfo | None, verdicts: Sequence[Verdict]) -> str:
    total = len(verdicts)
    if total == 0:
        return "the registry lists no tags for this image"
    strategy = policy.strategy
    if chosen is not None:
        if strategy is Strategy.SEMVER:
            what = f"highest version satisfying '{_shown(policy.constraint)}'"
        elif strategy is Strategy.NEWEST_BUILD:
            what = "newest build"
        elif strategy is Strategy.ALPHABETICAL:
            what = "last in alphabetical order"
        else:
            return f"chose '{chosen.name}' at digest {chosen.digest}"
        return f"chose '{chosen.name}': {what} ({_count(total)})"
    counts = Counter(v.reason for v in verdicts)
    order = list(Reason)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], order.index(item[0])))
    detail = f"{_count(total)}: " + ", ".join(f"{n} {reason}" for reason, n in ranked)
    if strategy is Strategy.SEMVER:
        return f"no tag satisfies constraint '{_shown(policy.constraint)}' ({detail})"
    if strategy is Strategy.DIGEST:
        followed = next((v for v in verdicts if v.tag == policy.constraint), None)
        if followed is None:
            return f"tag '{policy.constraint}' is not in the registry ({detail})"
        return f"tag '{policy.constraint}' is not usable: {followed.detail} ({detail})"
    return f"no tag is eligible for strategy '{strategy}' ({detail})"


def _count(n: int) -> str:
    return f"{n} tag" if n == 1 else f"{n} tags"
