"""The table of ``test --explain``: every tag with its verdict, in the strategy's order.

The chosen tag comes first, then the tags it beat (``older``), then each group of rejected tags
(in the order of :class:`Reason`); inside a group the tags are in the strategy's order, best
first (highest version, newest build, last name). A line of counts per verdict ends the table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy.platforms import PlatformFilter
from argocd_image_updater.policy.select import Reason, Selection, Verdict, build_date
from argocd_image_updater.policy.semver import Version
from argocd_image_updater.policy.strategy import Strategy

_GROUPS: Final = (
    Reason.CHOSEN,
    Reason.OLDER,
    *(r for r in Reason if r not in (Reason.CHOSEN, Reason.OLDER)),
)
_NO_DATE: Final = datetime.min.replace(tzinfo=UTC)


def _strategy_key(
    strategy: Strategy,
    tag: TagInfo | None,
    name: str,
    platforms: PlatformFilter,
    order_hint: Mapping[str, int] | None,
) -> tuple[Any, ...]:
    """Greater is better for ``strategy``; tags it cannot order come last, by name."""
    if strategy is Strategy.SEMVER:
        version = Version.parse(name)
        return (1, version.precedence, name) if version is not None else (0, name)
    if strategy is Strategy.NEWEST_BUILD:
        if order_hint is not None:  # the registry lists tags by age: its order is the age
            rank = order_hint.get(name)
            return (1, rank, name) if rank is not None else (0, 0, name)
        created = build_date(tag, platforms) if tag is not None else None
        return (1, created, name) if created is not None else (0, _NO_DATE, name)
    return (1, name)


def ordered_verdicts(
    selection: Selection,
    strategy: Strategy,
    tags: Sequence[TagInfo] = (),
    platforms: PlatformFilter | None = None,
    order_hint: Mapping[str, int] | None = None,
) -> list[Verdict]:
    """The verdicts grouped (chosen, older, then each rejection) and in the strategy's order."""
    by_name = {tag.name: tag for tag in tags}
    wanted = platforms if platforms is not None else PlatformFilter()
    group = {reason: index for index, reason in enumerate(_GROUPS)}

    def key(verdict: Verdict) -> tuple[int, tuple[Any, ...]]:
        tag = by_name.get(verdict.tag)
        return group[verdict.reason], _strategy_key(strategy, tag, verdict.tag, wanted, order_hint)

    # Best first inside a group: sort by the strategy's key descending, then stably by group.
    best_first = sorted(selection.verdicts, key=lambda v: key(v)[1], reverse=True)
    return sorted(best_first, key=lambda v: key(v)[0])


def explain_lines(verdicts: Sequence[Verdict]) -> list[str]:
    """The table, then ``<n> tags: <count> <verdict>, …`` in the table's order."""
    rows = [(v.tag, str(v.reason), v.detail) for v in verdicts]
    width = max([len("TAG"), *(len(r[0]) for r in rows)])
    rwidth = max([len("VERDICT"), *(len(r[1]) for r in rows)])
    lines = [f"{'TAG':<{width}}  {'VERDICT':<{rwidth}}  DETAIL"]
    lines.extend(
        f"{tag:<{width}}  {reason:<{rwidth}}  {detail}".rstrip() for tag, reason, detail in rows
    )
    counts = Counter(v.reason for v in verdicts)
    shown = ", ".join(f"{counts[r]} {r}" for r in _GROUPS if counts[r])
    total = len(verdicts)
    lines.append(f"{total} tag{'s' if total != 1 else ''}: {shown or 'none'}")
    return lines
