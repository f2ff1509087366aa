"""Minimum image age (pure): a tag is eligible only once it is ``minAge`` old.

Age counts from the first time the controller saw the tag in its registry (the controller
remembers it: :mod:`argocd_image_updater.model.controller_state`), or, with ``minAgeFrom:
created``, from the creation time in the image's config (the newest of the wanted platforms';
a tag whose creation time is unknown falls back to when it was first seen). A tag never seen
before is first seen now. The caller gives ``now`` and the first-seen times; nothing here reads
a clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Final

from argocd_image_updater.model.platform import PlatformFilter
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy.verdicts import TagVerdict, Verdict

FROM_SEEN: Final = "seen"
FROM_CREATED: Final = "created"
MIN_AGE_FROM: Final = (FROM_SEEN, FROM_CREATED)

_NONE: Mapping[str, datetime] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class TagAges:
    """When the tags of one repository were first seen, as of ``now``."""

    now: datetime
    first_seen: Mapping[str, datetime] = field(default_factory=lambda: _NONE)


def _format(moment: datetime) -> str:
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def born(tag: TagInfo, ages: TagAges, from_created: bool, platforms: PlatformFilter) -> datetime:
    """When ``tag``'s age starts counting."""
    if from_created:
        created = [
            image.created
            for image in tag.images
            if image.created is not None and platforms.wants(image.platform)
        ]
        if created:
            return max(created)
    return ages.first_seen.get(tag.name, ages.now)


def eligible_at(
    tag: TagInfo,
    min_age: timedelta,
    ages: TagAges,
    *,
    from_created: bool = False,
    platforms: PlatformFilter | None = None,
) -> datetime:
    """When ``tag`` is ``min_age`` old."""
    return born(tag, ages, from_created, platforms or PlatformFilter()) + min_age


def format_time(moment: datetime) -> str:
    """``2026-03-01T12:00:00Z`` (seconds precision)."""
    return _format(moment)


def waiting_message(eligible: tuple[str, datetime] | None) -> str:
    """``too-young: <tag> eligible at <time>`` for a selection's ``eligible`` tag (``""``:
    none waits for ``minAge``)."""
    if eligible is None:
        return ""
    return f"too-young: {eligible[0]} eligible at {_format(eligible[1])}"


def too_young(
    tag: TagInfo,
    min_age: timedelta,
    ages: TagAges,
    *,
    from_created: bool = False,
    platforms: PlatformFilter | None = None,
) -> Verdict | None:
    """The ``too-young`` verdict of ``tag`` (``until <time>``); None when it is old enough."""
    ready = eligible_at(tag, min_age, ages, from_created=from_created, platforms=platforms)
    if ready <= ages.now:
        return None
    return Verdict(tag.name, TagVerdict.TOO_YOUNG, f"until {_format(ready)}")
