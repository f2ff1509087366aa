"""Name-only scans hand out the same tags while a repository lists the same names."""

from __future__ import annotations

from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.registry.listed_tags import ROUNDS_KEPT, ListedTags


def test_the_same_names_give_the_same_tags_and_any_change_new_ones() -> None:
    listed = ListedTags()
    listed.new_round()
    first = listed.tags("repo", ("1.0", "1.1"))
    assert first == (TagInfo("1.0"), TagInfo("1.1"))
    listed.new_round()
    assert listed.tags("repo", ("1.0", "1.1")) is first
    assert listed.tags("other", ("1.0", "1.1")) is not first
    for names in [("1.0", "1.1", "1.2"), ("1.1", "1.0"), ("1.0",), ()]:
        listed.new_round()
        tags = listed.tags("repo", names)
        assert [t.name for t in tags] == list(names)
        assert tags is not first


def test_repositories_no_recent_round_listed_are_forgotten() -> None:
    listed = ListedTags()
    listed.new_round()
    listed.tags("gone", ("1.0",))
    for _ in range(ROUNDS_KEPT * 2):
        listed.new_round()
        listed.tags("used", ("1.0",))
    assert len(listed) == 1


def test_repositories_listing_the_same_names_share_their_tags() -> None:
    listed = ListedTags()
    listed.new_round()
    first = listed.tags("repo", ("1.0", "1.1"))
    other = listed.tags("other", ("1.1", "2.0"))
    assert other[0] is first[1] and other == (TagInfo("1.1"), TagInfo("2.0"))
    for _ in range(ROUNDS_KEPT):  # the shared tags follow the repositories kept
        listed.new_round()
        listed.tags("other", ("1.1", "2.0"))
    assert listed.tags("repo", ("1.0",)) == (TagInfo("1.0"),)


def test_a_name_listed_twice_is_one_tag() -> None:
    listed = ListedTags()
    listed.new_round()
    tags = listed.tags("repo", ("1.0", "2.0", "1.0"))
    assert [t.name for t in tags] == ["1.0", "2.0", "1.0"] and tags[0] is tags[2]
