"""The table of ``test --explain``: every tag with its verdict, in the strategy's order.

The chosen tag comes first, then the tags it beat (``older``), then each group of rejected tags
(in the order of :class:`~argocd_image_updater.policy.verdicts.TagVerdict`); inside a group the
tags are in the strategy's order, best first (highest version, newest build, last name). A line
of counts per verdict ends the table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

from argocd_image_updater.model.platform import PlatformFilter
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy.select import Selection, TagVerdict, Verdict
from argocd_image_updater.policy.strategies import UpdateStrategy

_GROUPS: Final = (
    TagVerdict.CHOSEN,
    TagVerdict.OLDER,
    *(r for r in TagVerdict if r not in (TagVerdict.CHOSEN, TagVerdict.OLDER)),
)


def ordered_verdicts(
    selection: Selection,
    strategy: UpdateStrategy,
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
        return group[verdict.reason], strategy.explain_key(tag, verdict.tag, wanted, order_hint)

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
