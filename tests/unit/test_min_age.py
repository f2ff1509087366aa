"""Minimum image age: the pure filter of the tag choice, and reading minAge/minAgeFrom."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from argocd_image_updater.model.platform import Platform, PlatformFilter
from argocd_image_updater.model.tags import PlatformImage, TagInfo
from argocd_image_updater.model.update_config import UpdateSettings
from argocd_image_updater.plan.scans import parse_min_age
from argocd_image_updater.policy.min_age import TagAges, too_young, waiting_message
from argocd_image_updater.policy.select import Policy, PolicyError, choose
from argocd_image_updater.policy.verdicts import TagVerdict

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
TAGS = [TagInfo(t) for t in ("1.0.0", "1.1.0", "1.2.0")]
SEEN = {"1.0.0": NOW - timedelta(days=9), "1.1.0": NOW - timedelta(days=4)}


def test_the_newest_tag_old_enough_is_chosen_and_younger_ones_are_too_young() -> None:
    policy = Policy(min_age=timedelta(hours=72))
    selection = choose(policy, TAGS, ages=TagAges(NOW, SEEN))
    assert selection.chosen is not None and selection.chosen.name == "1.1.0"
    young = selection.verdict("1.2.0")  # never seen before: first seen now
    assert young is not None and young.reason is TagVerdict.TOO_YOUNG
    assert young.detail == "until 2026-03-13T12:00:00Z"

    later = choose(Policy(min_age=timedelta(days=5)), TAGS, ages=TagAges(NOW, SEEN))
    assert later.chosen is not None and later.chosen.name == "1.0.0"
    assert later.verdict("1.1.0").detail == "until 2026-03-11T12:00:00Z"  # type: ignore[union-attr]
    none = choose(Policy(min_age=timedelta(days=30)), TAGS, ages=TagAges(NOW, SEEN))
    assert none.chosen is None and "3 too-young" in none.summary


def test_the_tag_that_is_old_enough_first_of_those_above_the_chosen_one_is_eligible() -> None:
    selection = choose(Policy(min_age=timedelta(hours=72)), TAGS, ages=TagAges(NOW, SEEN))
    assert selection.eligible == ("1.2.0", NOW + timedelta(hours=72))
    assert (
        waiting_message(selection.eligible) == "too-young: 1.2.0 eligible at 2026-03-13T12:00:00Z"
    )
    # 1.2.0 is seen later than 1.1.0 becomes old enough: 1.1.0 is eligible first
    seen = {"1.0.0": NOW - timedelta(days=9), "1.1.0": NOW - timedelta(days=4), "1.2.0": NOW}
    later = choose(Policy(min_age=timedelta(days=5)), TAGS, ages=TagAges(NOW, seen))
    assert later.eligible == ("1.1.0", NOW + timedelta(days=1))
    # first seen at the same moment: the best of them
    fresh = choose(Policy(min_age=timedelta(days=1)), TAGS, ages=TagAges(NOW))
    assert fresh.chosen is None and fresh.eligible == ("1.2.0", NOW + timedelta(days=1))
    # everything old enough: nothing waits
    old = choose(Policy(min_age=timedelta(days=1)), TAGS[:2], ages=TagAges(NOW, SEEN))
    assert old.eligible is None and waiting_message(None) == ""


def test_without_first_seen_times_min_age_is_not_applied() -> None:
    selection = choose(Policy(min_age=timedelta(hours=72)), TAGS)
    assert selection.chosen is not None and selection.chosen.name == "1.2.0"


def test_age_from_the_creation_time_of_the_wanted_platforms() -> None:
    amd, arm = Platform.parse("linux/amd64"), Platform.parse("linux/arm64")
    tag = TagInfo(
        "1.2.0",
        images=(
            PlatformImage(amd, created=NOW - timedelta(days=5)),
            PlatformImage(arm, created=NOW - timedelta(hours=1)),
        ),
    )
    ages = TagAges(NOW, {"1.2.0": NOW})
    amd_only = PlatformFilter(["linux/amd64"])
    assert too_young(tag, timedelta(days=2), ages, from_created=True, platforms=amd_only) is None
    both = PlatformFilter(["linux/amd64", "linux/arm64"])
    verdict = too_young(tag, timedelta(days=2), ages, from_created=True, platforms=both)
    assert verdict is not None and verdict.detail == "until 2026-03-12T11:00:00Z"
    # no creation time: first seen counts
    assert too_young(TagInfo("1.2.0"), timedelta(days=2), ages, from_created=True) is not None


def test_min_age_settings_are_read_and_bad_values_name_their_field() -> None:
    assert parse_min_age(UpdateSettings()) == (None, False)
    assert parse_min_age(UpdateSettings(min_age="72h")) == (timedelta(hours=72), False)
    assert parse_min_age(UpdateSettings(min_age="1h30m", min_age_from="Created")) == (
        timedelta(minutes=90),
        True,
    )
    bad = UpdateSettings(min_age="3 days").with_origins("ImageUpdater argocd/shop field spec.x")
    with pytest.raises(
        PolicyError, match=r"spec\.x\.minAge: unknown unit ' days' in duration '3 days'"
    ):
        parse_min_age(bad)
    with pytest.raises(PolicyError, match="minAgeFrom: 'built' is not one of seen, created"):
        parse_min_age(UpdateSettings(min_age="1h", min_age_from="built"))
