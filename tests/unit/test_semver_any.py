"""A blank constraint (or ``*``), the one nearly every choice uses, is parsed without compiling
the constraint grammar, into exactly what the grammar makes of ``*``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from argocd_image_updater.model.platform import PlatformFilter
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy import semver
from argocd_image_updater.policy.strategies import named
from argocd_image_updater.policy.verdicts import Rejection, TagVerdict


@pytest.mark.parametrize("text", ["", " ", "\t", "*"])
def test_any_version_is_what_the_grammar_makes_of_a_star(text: str) -> None:
    parsed = semver.Constraint.parse(text)
    by_grammar = semver._parse_comparator(text, "*")
    assert parsed.text == text
    assert parsed.groups == ((by_grammar,),)
    assert parsed.group_has_prerelease == (False,)
    for version in ("0.0.0", "1.2.3", "99.0.1", "1.0.0-rc.1"):
        candidate = semver.Version.parse(version)
        assert candidate is not None
        assert parsed.check(candidate) == semver.Constraint(text, ((by_grammar,),), (False,)).check(
            candidate
        )


@given(
    st.sampled_from(["", " ", "*", "1.x", "~0.0.0", ">=0.0.0", "*-0"]),
    st.from_regex(r"v?[0-9]{1,3}(\.[0-9]{1,3}){0,2}(-[0-9a-z.]{1,5})?|[a-z.]{1,5}", fullmatch=True),
)
def test_ranking_under_a_blank_constraint_is_what_its_test_gives(text: str, name: str) -> None:
    """The ranker's shortcut for every release: the same key, or the same rejection, as the
    constraint's own test, for every tag name."""
    constraint = semver.Constraint.parse(text)
    ranker = named("semver").prepare(text, "img", None)
    ranked = ranker.rank(TagInfo(name), PlatformFilter([]))
    key = semver.version_key(name)
    if key is None:
        assert isinstance(ranked, Rejection) and ranked.reason is TagVerdict.NOT_SEMVER
    elif constraint.check_key(key):
        assert ranked == (key, name)
    elif not key[3] and constraint.check_key(key, True):
        assert isinstance(ranked, Rejection) and ranked.reason is TagVerdict.PRERELEASE
    else:
        assert isinstance(ranked, Rejection) and ranked.reason is TagVerdict.OUTSIDE_CONSTRAINT
    assert constraint.admits_every_release is (text.strip() in ("", "*"))
