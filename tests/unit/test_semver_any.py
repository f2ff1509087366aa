"""A blank constraint (or ``*``), the one nearly every choice uses, is parsed without compiling
the constraint grammar, into exactly what the grammar makes of ``*``."""

from __future__ import annotations

import pytest

from argocd_image_updater.policy import semver


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
