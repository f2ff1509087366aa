"""The tag choice: which tag an image should run, and why every other tag was not chosen.

Filters run in the original's order: ``allowTags``, ``ignoreTags``, then what the strategy never
considers (for ``digest`` every tag but the followed one). Tags whose manifests were fetched are
then matched against the wanted platforms. Last, the strategy orders the eligible tags and the
greatest wins (see :mod:`~argocd_image_updater.policy.strategies`, one module per strategy).
When the registry lists tags by age, the caller passes each tag's list position as
``order_hint``; ``newest-build`` uses it instead of creation dates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

from argocd_image_updater.model.platform import PlatformFilter
from argocd_image_updater.model.registry import TagSortMode
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy.filters import MATCH_ANY, TagMatcher, is_ignored
from argocd_image_updater.policy.strategies import UpdateStrategy, default_strategy
from argocd_image_updater.policy.strategies.base import Key, Ranker
from argocd_image_updater.policy.verdicts import PolicyError, Rejection, TagVerdict, Verdict

if TYPE_CHECKING:  # the minimum age check is imported where a choice has one
    from argocd_image_updater.policy.min_age import TagAges

__all__ = [
    "Policy",
    "PolicyError",
    "Selection",
    "TagVerdict",
    "Verdict",
    "choose",
    "needs_metadata",
    "time_order_hint",
]

_ANY_PLATFORM: Final = PlatformFilter()


@dataclass(frozen=True, slots=True)
class Policy:
    """How to choose a tag for one image."""

    strategy: UpdateStrategy = field(default_factory=default_strategy)
    constraint: str = ""
    """The image's tag part: a semver constraint, or the followed tag for ``digest``."""
    allow: TagMatcher = MATCH_ANY
    ignore: tuple[str, ...] = ()
    platforms: PlatformFilter = _ANY_PLATFORM
    min_age: timedelta | None = None
    """Tags younger than this are not chosen (:mod:`~argocd_image_updater.policy.min_age`)."""
    min_age_from_created: bool = False
    """Age counts from the image's creation time instead of when the tag was first seen."""

    def validate(self, image: str) -> None:
        """Raise :class:`PolicyError` naming ``image`` when the policy cannot be used."""
        self.strategy.prepare(self.constraint, image, None)


class Selection:
    """The result of one tag choice: the chosen tag (or none), a summary and every tag's verdict.

    ``verdicts`` is built when first read: a choice over 10,000 tags whose verdicts nobody
    reads (a controller cycle reads only the chosen tag and the summary) does not pay for
    10,000 objects.
    """

    __slots__ = ("_beaten", "_rejected", "_tags", "_verdicts", "chosen", "eligible", "summary")

    chosen: TagInfo | None
    summary: str
    """What was chosen, or why nothing was (with counts per verdict)."""
    eligible: tuple[str, datetime] | None
    """The tag, of those ranked above the chosen one (or of all, when none was chosen) but
    not ``minAge`` old yet, that is old enough first, and when; None when there is none."""

    def __init__(
        self,
        chosen: TagInfo | None,
        summary: str,
        tags: Sequence[TagInfo],
        rejected: Mapping[str, Verdict | Rejection],
        beaten: str,
        eligible: tuple[str, datetime] | None = None,
    ) -> None:
        self.chosen = chosen
        self.summary = summary
        self.eligible = eligible
        self._tags = tags
        self._rejected = rejected
        self._beaten = beaten
        self._verdicts: tuple[Verdict, ...] | None = None

    @property
    def verdicts(self) -> tuple[Verdict, ...]:
        """One per distinct tag name, in the order the tags were given."""
        if self._verdicts is None:
            names = (tag.name for tag in self._tags)
            self._verdicts = _verdicts(names, self._rejected, self.chosen, self._beaten)
        return self._verdicts

    def counts(self) -> dict[TagVerdict, int]:
        return dict(Counter(v.reason for v in self.verdicts))

    def verdict(self, tag: str) -> Verdict | None:
        return next((v for v in self.verdicts if v.tag == tag), None)

    def __repr__(self) -> str:
        chosen = self.chosen.name if self.chosen is not None else None
        return f"Selection(chosen={chosen!r}, summary={self.summary!r})"


def needs_metadata(policy: Policy, *, time_sorted: bool = False) -> bool:
    """Whether the scan must fetch manifests for ``policy`` (``time_sorted``: the registry lists
    tags by age, which ``newest-build`` uses instead of dates)."""
    if policy.min_age is not None and policy.min_age_from_created:
        return True
    return policy.strategy.needs_metadata(time_sorted=time_sorted)


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


def choose(
    policy: Policy,
    tags: Sequence[TagInfo],
    order_hint: Mapping[str, int] | None = None,
    ages: TagAges | None = None,
) -> Selection:
    """Choose the tag ``policy`` selects from ``tags`` (pure and deterministic).

    A repeated tag name counts once, with its last entry. ``order_hint`` maps tag names to their
    age rank (higher is newer) for registries that list tags by age; it replaces creation dates
    for ``newest-build``. With ``ages`` (the repository's first-seen times and the time now), a
    policy's ``min_age`` rejects younger tags as ``too-young``; without, ``min_age`` is not
    applied. Raises :class:`PolicyError` when the policy is unusable (see
    :meth:`Policy.validate`).
    """
    strategy = policy.strategy
    ranker = strategy.prepare(policy.constraint, "", order_hint)
    unique: dict[str, TagInfo] = {}
    for tag in tags:
        unique[tag.name] = tag

    rejected: dict[str, Verdict | Rejection] = {}
    # the greatest key so far and its tag (the first of equal keys wins, as max() would)
    best: Key | None = None
    chosen: TagInfo | None = None
    allow, ignore, platforms = policy.allow, policy.ignore, policy.platforms
    # Most strategies consider every tag: skip the call for them (this loop runs per tag).
    excludes = ranker.excludes if type(ranker).excludes is not Ranker.excludes else None
    rank = ranker.rank
    allow_all = allow is MATCH_ANY
    min_age = policy.min_age if ages is not None else None
    young: list[tuple[TagInfo, datetime]] = []
    if min_age is not None:
        from argocd_image_updater.policy.min_age import eligible_at, format_time
    for name, tag in unique.items():
        verdict: Verdict | None = None
        if not allow_all and not allow.matches(name):
            verdict = Verdict(
                name, TagVerdict.NOT_ALLOWED, allow.error or f"does not match {allow}"
            )
        elif ignore and (pattern := is_ignored(name, ignore)) is not None:
            verdict = Verdict(name, TagVerdict.IGNORED, f"matches ignore pattern '{pattern}'")
        elif excludes is not None and (excluded := excludes(name)) is not None:
            verdict = excluded
        elif tag.images and not any(platforms.wants(image.platform) for image in tag.images):
            offered = ", ".join(sorted({str(image.platform) for image in tag.images}))
            verdict = Verdict(
                name, TagVerdict.PLATFORM_MISMATCH, f"no image for {platforms} (has {offered})"
            )
        elif min_age is not None and ages is not None:
            ready = eligible_at(
                tag, min_age, ages, from_created=policy.min_age_from_created, platforms=platforms
            )
            if ready > ages.now:
                verdict = Verdict(name, TagVerdict.TOO_YOUNG, f"until {format_time(ready)}")
                young.append((tag, ready))
        if verdict is not None:
            rejected[name] = verdict
            continue
        ranked = rank(tag, platforms)
        if isinstance(ranked, tuple):
            if best is None or ranked > best:
                best, chosen = ranked, tag
        else:
            rejected[name] = ranked

    # The first of them old enough (of those old enough at once, the one ranked highest).
    eligible: tuple[str, datetime] | None = None
    first: tuple[datetime, Key] | None = None
    for tag, ready in young:
        ranked = rank(tag, platforms)
        if not isinstance(ranked, tuple) or (best is not None and not ranked > best):
            continue
        if first is None or ready < first[0] or (ready == first[0] and ranked > first[1]):
            first, eligible = (ready, ranked), (tag.name, ready)
    summary = _summary(policy, chosen, len(unique), rejected)
    # The names for the verdicts, built when they are read: ``tags`` itself when it is a tuple
    # of distinct names (the usual case: its caller keeps it anyway), so that a kept choice
    # holds no table of every tag name.
    distinct = isinstance(tags, tuple) and len(unique) == len(tags)
    considered = tags if distinct else tuple(unique.values())
    return Selection(chosen, summary, considered, rejected, strategy.beaten, eligible)


def _verdict(name: str, verdict: Verdict | Rejection) -> Verdict:
    return verdict.of(name) if isinstance(verdict, Rejection) else verdict


def _verdicts(
    tags: Iterable[str],
    rejected: Mapping[str, Verdict | Rejection],
    chosen: TagInfo | None,
    beaten: str,
) -> tuple[Verdict, ...]:
    if chosen is None:
        return tuple(_verdict(name, verdict) for name, verdict in rejected.items())
    won = Verdict(chosen.name, TagVerdict.CHOSEN)
    lost = f"{beaten} '{chosen.name}'"
    out: list[Verdict] = []
    for name in tags:
        verdict = rejected.get(name)
        if verdict is None:
            out.append(won if name == chosen.name else Verdict(name, TagVerdict.OLDER, lost))
        else:
            out.append(_verdict(name, verdict))
    return tuple(out)


def _summary(
    policy: Policy,
    chosen: TagInfo | None,
    total: int,
    rejected: Mapping[str, Verdict | Rejection],
) -> str:
    """``rejected``: every tag's verdict when nothing was chosen."""
    if total == 0:
        return "the registry lists no tags for this image"
    if chosen is not None:
        return policy.strategy.chosen_summary(chosen, policy.constraint, _count(total))
    verdicts = tuple(_verdict(name, verdict) for name, verdict in rejected.items())
    counts = Counter(v.reason for v in verdicts)
    order = list(TagVerdict)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], order.index(item[0])))
    detail = f"{_count(total)}: " + ", ".join(f"{n} {reason}" for reason, n in ranked)
    return policy.strategy.none_summary(policy.constraint, verdicts, detail)


def _count(n: int) -> str:
    return f"{n} tag" if n == 1 else f"{n} tags"
