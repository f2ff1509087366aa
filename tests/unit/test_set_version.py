"""``set --image ALIAS=TAG``: what it accepts and how it names what it refuses."""

from __future__ import annotations

import pytest

from argocd_image_updater.controller.set_version import SetError, parse_assignment


def test_an_alias_and_a_tag_are_read() -> None:
    assert parse_assignment(" web = 1.4.2 ") == ("web", "1.4.2")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("web", "expected ALIAS=TAG"),
        ("=1.0", "expected ALIAS=TAG"),
        ("web=", "expected ALIAS=TAG"),
        ("web=sha256:" + "a" * 64, "a digest alone names no tag"),
        ("web=1.0@sha256:" + "a" * 64, "a digest alone names no tag"),
        ("web=not a tag", "is not a valid tag"),
    ],
)
def test_bad_assignments_name_the_flag(text: str, problem: str) -> None:
    with pytest.raises(SetError, match="--image") as err:
        parse_assignment(text)
    assert problem in str(err.value)
