"""``newest-build`` (legacy name ``latest``): the tag whose image was built last.

A tag's build date is the newest ``created`` among its images of a wanted platform; equal dates
are ordered by name, tags without a date first. When the registry lists tags by age, each tag's
list position stands in for its date and no manifest is fetched. Below the running tag means
built before it (both dates, or both list positions, must be known).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Final

from argocd_image_updater.model.platform import PlatformFilter
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy.strategies.base import Key, Ranker, UpdateStrategy
from argocd_image_updater.policy.verdicts import TagVerdict, Verdict

_NO_DATE: Final = datetime.min.replace(tzinfo=UTC)  # images without ``created`` sort first


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def build_date(tag: TagInfo, platforms: PlatformFilter) -> datetime | None:
    """A tag's creation date: the newest ``created`` among its images of a wanted platform."""
    dates = [i.created for i in tag.images if i.created is not None and platforms.wants(i.platform)]
    return max(map(_aware, dates)) if dates else None


class _Ranker(Ranker):
    def __init__(self, order_hint: Mapping[str, int] | None) -> None:
        self._hint = order_hint

    def rank(self, tag: TagInfo, platforms: PlatformFilter) -> Key | Verdict:
        name = tag.name
        if self._hint is not None:
            rank = self._hint.get(name)
            if rank is None:
                return Verdict(name, TagVerdict.NO_METADATA, "not in the registry's tag order")
            return (rank, name)
        if not tag.images:
            return Verdict(name, TagVerdict.NO_METADATA, "no creation date fetched")
        return (build_date(tag, platforms) or _NO_DATE, name)


def _find(tags: Sequence[TagInfo], name: str) -> TagInfo | None:
    return next((tag for tag in reversed(tags) if tag.name == name), None)


class NewestBuild(UpdateStrategy):
    name = "newest-build"
    legacy_names = ("latest",)
    position = 10
    choice = "newest build"

    def needs_metadata(self, *, time_sorted: bool = False) -> bool:
        return not time_sorted

    def prepare(self, constraint: str, image: str, order_hint: Mapping[str, int] | None) -> Ranker:
        return _Ranker(order_hint)

    def explain_key(
        self,
        tag: TagInfo | None,
        name: str,
        platforms: PlatformFilter,
        order_hint: Mapping[str, int] | None,
    ) -> Key:
        if order_hint is not None:  # the registry lists tags by age: its order is the age
            rank = order_hint.get(name)
            return (1, rank, name) if rank is not None else (0, 0, name)
        created = build_date(tag, platforms) if tag is not None else None
        return (1, created, name) if created is not None else (0, _NO_DATE, name)

    def downgrade(
        self,
        running: str,
        chosen: TagInfo,
        tags: Sequence[TagInfo],
        order_hint: Mapping[str, int] | None,
        platforms: PlatformFilter,
    ) -> str | None:
        if order_hint is not None:
            old, new = order_hint.get(running), order_hint.get(chosen.name)
            if old is not None and new is not None and new < old:
                return (
                    f"'{chosen.name}' is listed by the registry as older than the running "
                    f"'{running}'"
                )
            return None
        live = _find(tags, running)
        if live is None:
            return None
        old_date, new_date = build_date(live, platforms), build_date(chosen, platforms)
        if old_date is None or new_date is None or new_date >= old_date:
            return None
        return (
            f"'{chosen.name}' (built {new_date:%Y-%m-%dT%H:%M:%SZ}) is older than the running "
            f"'{running}' (built {old_date:%Y-%m-%dT%H:%M:%SZ})"
        )


STRATEGY: Final = NewestBuild()
