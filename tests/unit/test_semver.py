"""Semantic versions and constraints (Masterminds/semver v3.4 semantics): VS-14..VS-24, TG-12."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from argocd_image_updater.policy.semver import (
    Constraint,
    ConstraintError,
    Version,
    compare,
    version_key,
)


def v(text: str) -> Version:
    parsed = Version.parse(text)
    assert parsed is not None, f"{text!r} should parse"
    return parsed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("1", (1, 0, 0, "", ""), id="VS-23-major-only"),
        pytest.param("1.2", (1, 2, 0, "", ""), id="VS-23-major-minor"),
        pytest.param("v1.2.3", (1, 2, 3, "", ""), id="VS-23-v-prefix"),
        pytest.param("20240101", (20240101, 0, 0, "", ""), id="date-like"),
        pytest.param("01.02.03", (1, 2, 3, "", ""), id="leading-zeros-coerced"),
        pytest.param("1.2.3-rc.1+build.5", (1, 2, 3, "rc.1", "build.5"), id="pre-and-meta"),
        pytest.param("1.0.0-rc-1", (1, 0, 0, "rc-1", ""), id="dash-in-pre"),
        pytest.param("1-2", (1, 0, 0, "2", ""), id="pre-after-major"),
        pytest.param(
            "v2.3.0-rc.0.18.g1abb7b5dd-ppc64le",
            (2, 3, 0, "rc.0.18.g1abb7b5dd-ppc64le", ""),
            id="VS-6-tag",
        ),
        pytest.param("18446744073709551615", (2**64 - 1, 0, 0, "", ""), id="uint64-max"),
    ],
)
def test_version_parse_lenient(text: str, expected: tuple[int, int, int, str, str]) -> None:
    parsed = v(text)
    assert (parsed.major, parsed.minor, parsed.patch, parsed.prerelease, parsed.metadata) == (
        expected
    )
    assert parsed.original == text


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("latest", id="VS-23-latest"),
        pytest.param("stable", id="VS-23-stable"),
        pytest.param("1.2.3.4", id="VS-23-four-parts"),
        pytest.param("abc", id="VS-23-abc"),
        pytest.param("", id="empty"),
        pytest.param("V1.2.3", id="capital-v"),
        pytest.param(" 1.2.3", id="leading-space"),
        pytest.param("1.2.3\n", id="trailing-newline"),
        pytest.param("1.0.0-01", id="pre-leading-zero"),
        pytest.param("1.0.0-", id="empty-pre"),
        pytest.param("1.0.0+", id="empty-meta"),
        pytest.param("1..0", id="empty-part"),
        pytest.param("18446744073709551616", id="above-uint64"),
        pytest.param("9" * 5000, id="huge-number"),
        pytest.param("1.0.0-α", id="non-ascii-pre"),
        pytest.param("١.٢.٣", id="non-ascii-digits"),
    ],
)
def test_version_parse_rejects(text: str) -> None:
    assert Version.parse(text) is None
    assert version_key(text) is None


def test_version_key_is_the_precedence_of_the_parsed_version() -> None:
    texts = [
        "1",
        "v1.2",
        "01.02.03",
        "1.2.3-rc.1+build.5",
        "1-2",
        "1.0.0-0a.1",
        "1.0.0-00a",
        "1.0.0-99999999999999999999999",
        "18446744073709551615",
        "18446744073709551615.00000000000000000001.3",
        "00000000000000000000000001.2",
        "18446744073709551616.1",
    ]
    for text in texts:
        parsed = Version.parse(text)
        assert version_key(text) == (parsed.precedence if parsed else None), text


def test_precedence_follows_semver_spec() -> None:
    # The ordering example of semver.org section 11.
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
        "1.1.0",
        "2.0.0",
    ]
    for low, high in itertools.pairwise(ordered):
        assert compare(v(low), v(high)) == -1, (low, high)
        assert compare(v(high), v(low)) == 1, (high, low)
    assert sorted(ordered[::-1], key=lambda t: v(t)) == ordered


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param("v1.0", "1.0", id="VS-24-v-prefix"),
        pytest.param("1", "1.0.0", id="missing-parts"),
        pytest.param("1.0.0+build.1", "1.0.0+build.2", id="metadata-ignored"),
        pytest.param("01.2.3", "1.2.3", id="leading-zeros"),
    ],
)
def test_compare_equal_precedence(a: str, b: str) -> None:
    assert compare(v(a), v(b)) == 0


def test_large_numeric_prerelease_compares_as_text() -> None:
    # Identifiers above 64 bits are not numbers for the Go library: they sort after numbers.
    assert compare(v("1.0.0-99999999999999999999999"), v("1.0.0-5")) == 1
    assert compare(v("1.0.0-99999999999999999999999"), v("1.0.0-a")) == -1


def test_sort_tg12_ties_broken_by_original_text() -> None:
    tags = ["v2.0.2", "v1.0", "v2.0.0", "v1.0.1", "v2.0.3", "v2.0", "latest"]
    versions = [p for t in tags if (p := Version.parse(t)) is not None]
    assert [x.original for x in sorted(versions)] == [
        "v1.0",
        "v1.0.1",
        "v2.0",
        "v2.0.0",
        "v2.0.2",
        "v2.0.3",
    ]


def test_ordering_is_total_and_consistent_with_equality() -> None:
    a, b = v("1.0"), v("v1.0")
    assert a < b and not b < a and a != b and a <= b and b >= a and b > a
    assert v("1.0") == v("1.0") and hash(v("1.0")) == hash(v("1.0"))
    assert str(v("v1.2-rc.1+b")) == "1.2.0-rc.1+b"


@pytest.mark.parametrize(
    ("constraint", "version", "expected"),
    [
        pytest.param("1.2.x", "1.2.12", True, id="VS-14-in"),
        pytest.param("1.2.x", "1.3.0", False, id="VS-14-out"),
        pytest.param("1.x", "1.15.2", True, id="VS-15-in"),
        pytest.param("1.x", "2.0", False, id="VS-15-out"),
        pytest.param("2.x-0", "2.0-rc1", True, id="VS-16-prerelease-admitted"),
        pytest.param("2.x", "2.0-rc1", False, id="VS-16-prerelease-excluded"),
        pytest.param("v1.x", "1.0", True, id="VS-17-v-constraint"),
        pytest.param("1.x", "v1.0", True, id="VS-17-v-version"),
        pytest.param("^1.2.3", "1.9.9", True, id="VS-20-caret-in"),
        pytest.param("^1.2.3", "2.0.0", False, id="VS-20-caret-out"),
        pytest.param("^0.2.3", "0.2.9", True, id="VS-20-caret-zero-in"),
        pytest.param("^0.2.3", "0.3.0", False, id="VS-20-caret-zero-out"),
        pytest.param("~1.2.3", "1.2.9", True, id="VS-20-tilde-in"),
        pytest.param("~1.2.3", "1.3.0", False, id="VS-20-tilde-out"),
        pytest.param("~1", "1.9.0", True, id="VS-20-tilde-major-in"),
        pytest.param("~1", "2.0.0", False, id="VS-20-tilde-major-out"),
        pytest.param("*", "99.0.0", True, id="VS-20-star"),
        pytest.param("x", "3.1.4", True, id="VS-20-x"),
        pytest.param("*", "1.0.0-rc.1", False, id="VS-20-star-no-prerelease"),
        pytest.param(">= 1.2, < 3.0.0 || >= 4.2.3", "2.9.0", True, id="VS-21-or-first"),
        pytest.param(">= 1.2, < 3.0.0 || >= 4.2.3", "4.2.3", True, id="VS-21-or-second"),
        pytest.param(">= 1.2, < 3.0.0 || >= 4.2.3", "3.5.0", False, id="VS-21-or-gap"),
        pytest.param(">=1.2 <3.0.0", "2.0.0", True, id="VS-21-space-and"),
        pytest.param("1.2 - 1.4.5", "1.4.5", True, id="VS-21-range-upper-inclusive"),
        pytest.param("1.2 - 1.4.5", "1.2.0", True, id="VS-21-range-lower-inclusive"),
        pytest.param("1.2 - 1.4.5", "1.4.6", False, id="VS-21-range-out"),
        pytest.param("~1.0", "1.3.0-rc1", False, id="VS-22-prerelease-never"),
        pytest.param(">=1.3.0-0", "1.3.0-rc1", True, id="VS-22-dash-zero"),
        pytest.param(">=1.3.0-0 <2.0.0", "1.5.0-rc.1", True, id="VS-22-and-group-prerelease"),
        pytest.param(">=1.3.0 <2.0.0 || >3-0", "1.5.0-rc.1", False, id="VS-22-other-group"),
        pytest.param("", "1.2.3", True, id="empty-is-star"),
        pytest.param("", "1.2.3-rc.1", False, id="empty-no-prerelease"),
        pytest.param("1.20", "1.20.7", True, id="bare-minor-is-x"),
        pytest.param("1.20", "1.21.0", False, id="bare-minor-is-x-out"),
        pytest.param("1.2.3", "1.2.3", True, id="exact"),
        pytest.param("1.2.3", "1.2.4", False, id="exact-out"),
        pytest.param("~>1.2", "1.2.5", True, id="tilde-arrow"),
        pytest.param("=>1.2", "1.3.0", True, id="ge-reversed"),
        pytest.param("=<1.2", "1.2.9", True, id="le-reversed"),
    ],
)
def test_constraint_documented_cases(constraint: str, version: str, expected: bool) -> None:
    assert Constraint.parse(constraint).check(v(version)) is expected


# The Go library's own constraint table (constraints_test.go), expected results included.
MASTERMINDS_TABLE = [
    ("=2.0.0", "1.2.3", False),
    ("=2.0.0", "2.0.0", True),
    ("=2.0", "1.2.3", False),
    ("=2.0", "2.0.0", True),
    ("=2.0", "2.0.1", True),
    ("4.1", "4.1.0", True),
    ("!=4.1.0", "4.1.0", False),
    ("!=4.1.0", "4.1.1", True),
    ("!=4.1", "4.1.0", False),
    ("!=4.1", "4.1.1", False),
    ("!=4.1", "5.1.0-alpha.1", False),
    ("!=4.1-alpha", "4.1.0", True),
    ("!=4.1", "5.1.0", True),
    ("<11", "0.1.0", True),
    ("<11", "11.1.0", False),
    ("<1.1", "0.1.0", True),
    ("<1.1", "1.1.0", False),
    ("<1.1", "1.1.1", False),
    ("<=11", "1.2.3", True),
    ("<=11", "12.2.3", False),
    ("<=11", "11.2.3", True),
    ("<=1.1", "1.2.3", False),
    ("<=1.1", "0.1.0", True),
    ("<=1.1", "1.1.0", True),
    ("<=1.1", "1.1.1", True),
    (">1.1", "4.1.0", True),
    (">1.1", "1.1.0", False),
    (">0", "0", False),
    (">0", "1", True),
    (">0", "0.0.1-alpha", False),
    (">0.0", "0.0.1-alpha", False),
    (">0-0", "0.0.1-alpha", False),
    (">0.0-0", "0.0.1-alpha", False),
    (">0", "0.0.0-alpha", False),
    (">0-0", "0.0.0-alpha", False),
    (">0.0.0-0", "0.0.0-alpha", True),
    (">1.2.3-alpha.1", "1.2.3-alpha.2", True),
    (">1.2.3-alpha.1", "1.3.3-alpha.2", True),
    (">11", "11.1.0", False),
    (">11.1", "11.1.0", False),
    (">11.1", "11.1.1", False),
    (">11.1", "11.2.1", True),
    (">=11", "11.1.2", True),
    (">=11.1", "11.1.2", True),
    (">=11.1", "11.0.2", False),
    (">=1.1", "4.1.0", True),
    (">=1.1", "1.1.0", True),
    (">=1.1", "0.0.9", False),
    (">=0", "0.0.1-alpha", False),
    (">=0.0", "0.0.1-alpha", False),
    (">=0-0", "0.0.1-alpha", True),
    (">=0.0-0", "0.0.1-alpha", True),
    (">=0", "0.0.0-alpha", False),
    (">=0-0", "0.0.0-alpha", True),
    (">=0.0.0-0", "0.0.0-alpha", True),
    (">=0.0.0-0", "1.2.3", True),
    (">=0.0.0-0", "3.4.5-beta.1", True),
    ("<0", "0.0.0-alpha", False),
    ("<0-z", "0.0.0-alpha", True),
    (">=0", "0", True),
    ("=0", "1", False),
    ("*", "1", True),
    ("*", "4.5.6", True),
    ("*", "1.2.3-alpha.1", False),
    ("*-0", "1.2.3-alpha.1", True),
    ("2.*", "1", False),
    ("2.*", "3.4.5", False),
    ("2.*", "2.1.1", True),
    ("2.1.*", "2.1.1", True),
    ("2.1.*", "2.2.1", False),
    ("", "1", True),
    ("", "4.5.6", True),
    ("", "1.2.3-alpha.1", False),
    ("2", "1", False),
    ("2", "3.4.5", False),
    ("2", "2.1.1", True),
    ("2.1", "2.1.1", True),
    ("2.1", "2.2.1", False),
    ("~1.2.3", "1.2.4", True),
    ("~1.2.3", "1.3.4", False),
    ("~1.2", "1.2.4", True),
    ("~1.2", "1.3.4", False),
    ("~1", "1.2.4", True),
    ("~1", "2.3.4", False),
    ("~0.2.3", "0.2.5", True),
    ("~0.2.3", "0.3.5", False),
    ("~1.2.3-beta.2", "1.2.3-beta.4", True),
    ("~1.2.3-beta.2", "1.2.4-beta.2", True),
    ("~1.2.3-beta.2", "1.3.4-beta.2", False),
    ("^1.2.3", "1.8.9", True),
    ("^1.2.3", "2.8.9", False),
    ("^1.2.3", "1.2.1", False),
    ("^1.1.0", "2.1.0", False),
    ("^1.2.0", "2.2.1", False),
    ("^1.2.0", "1.2.1-alpha.1", False),
    ("^1.2.0-alpha.0", "1.2.1-alpha.1", True),
    ("^1.2.0-alpha.0", "1.2.1-alpha.0", True),
    ("^1.2.0-alpha.2", "1.2.0-alpha.1", False),
    ("^1.2", "1.8.9", True),
    ("^1.2", "2.8.9", False),
    ("^1", "1.8.9", True),
    ("^1", "2.8.9", False),
    ("^0.2.3", "0.2.5", True),
    ("^0.2.3", "0.5.6", False),
    ("^0.2", "0.2.5", True),
    ("^0.2", "0.5.6", False),
    ("^0.0.3", "0.0.3", True),
    ("^0.0.3", "0.0.4", False),
    ("^0.0", "0.0.3", True),
    ("^0.0", "0.1.4", False),
    ("^0.0", "1.0.4", False),
    ("^0", "0.2.3", True),
    ("^0", "1.1.4", False),
    ("^0.2.3-beta.2", "0.2.3-beta.4", True),
    ("^0.2.3-beta.2", "0.2.4-beta.2", True),
    ("^0.2.3-beta.2", "0.3.4-beta.2", False),
    ("^0.2.3-beta.2", "0.2.3-beta.2", True),
    ("~0.0.0", "1.2.3", True),
    ("0.x.x", "1.2.3", False),
    ("0.0.x", "1.2.3", False),
    ("0.0.0", "1.2.3", False),
    ("^0.0.0", "1.2.3", False),
    ("= 2.0", "1.2.3", False),
    ("= 2.0", "2.0.0", True),
    ("4.1.x", "4.1.3", True),
    ("1.x", "1.4", True),
    ("!=4.1-alpha", "4.1.0-alpha", False),
    ("!=4.1-alpha", "4.1.1-alpha", False),
    ("!=4.x", "5.1.0", True),
    ("!=4.x", "4.1.0", False),
    ("!=4.1.x", "4.2.0", True),
    ("!=4.2.x", "4.2.3", False),
    ("<1.x", "1.1.1", False),
    ("<1.x", "0.1.1", True),
    ("<1.x", "2.0.0", False),
    ("<1.1.x", "1.2.1", False),
    ("<1.1.x", "1.1.500", False),
    ("<1.1.x", "1.0.500", True),
    ("<1.2.x", "1.1.1", True),
    (">=1.1", "4.1.0-beta", False),
    ("<=1.1", "0.1.0-alpha", False),
    ("<=1.1-a", "0.1.0-alpha", True),
    ("<=1.x", "1.1.0", True),
    ("<=2.x", "3.0.0", False),
    ("<=1.1.x", "1.2.500", False),
    ("<=4.5", "3.4.0", True),
    ("<=4.5", "3.7.0", True),
    ("<=4.5", "4.6.3", False),
    (">1.1, <2", "1.1.1", False),
    (">1.1, <2", "1.2.1", True),
    (">1.1, <3", "4.3.2", False),
    (">=1.1, <2, !=1.2.3", "1.2.3", False),
    (">1.1 <2", "1.1.1", False),
    (">1.1 <2", "1.2.1", True),
    (">1.1    <3", "4.3.2", False),
    (">=1.1    <2    !=1.2.3", "1.2.3", False),
    (">=1.1, <2, !=1.2.3 || > 3", "4.1.2", True),
    (">=1.1, <2, !=1.2.3 || > 3", "3.1.2", False),
    (">=1.1, <2, !=1.2.3 || >= 3", "3.0.0", True),
    (">=1.1, <2, !=1.2.3 || > 3", "3.0.0", False),
    (">=1.1, <2, !=1.2.3 || > 3", "1.2.3", False),
    ("> 1.1, <     2", "1.1.1", False),
    (">   1.1, <2", "1.2.1", True),
    (">= 1.1 <2 != 1.2.3 || >= 3", "3.0.0", True),
    ("1.1 - 2", "1.1.1", True),
    ("1.5.0 - 4.5", "3.7.0", True),
    ("1.1-3", "4.3.2", False),
    ("^1.1", "1.1.1", True),
    ("^1.1", "4.3.2", False),
    ("^1.x", "1.1.1", True),
    ("^2.x", "1.1.1", False),
    ("^1.x", "2.1.1", False),
    ("^1.x", "1.1.1-beta1", False),
    ("^1.1.2-alpha", "1.2.1-beta1", True),
    ("^1.2.x-alpha", "1.1.1-beta1", False),
    ("^0.0.1", "0.0.1", True),
    ("^0.0.1", "0.3.1", False),
    ("~*", "2.1.1", True),
    ("~1", "2.1.1", False),
    ("~1", "1.3.5", True),
    ("~1", "1.4", True),
    ("~1.x", "2.1.1", False),
    ("~1.x", "1.3.5", True),
    ("~1.x", "1.4", True),
    ("~1.1", "1.1.1", True),
    ("~1.1", "1.1.1-alpha", False),
    ("~1.1-alpha", "1.1.1-beta", True),
    ("~1.1.1-beta", "1.1.1-alpha", False),
    ("~1.1.1-beta", "1.1.1", True),
    ("~1.2.3", "1.2.5", True),
    ("~1.2.3", "1.2.2", False),
    ("~1.2.3", "1.3.2", False),
    ("~1.1", "1.2.3", False),
    ("~1.3", "2.4.5", False),
    (">=1.3.0-0 <2.0.0", "1.5.0-rc.1", True),
    (">=1.3.0-0 <2.0.0 || >3", "1.5.0-rc.1", True),
    (">=1.3.0 <2.0.0 || >3-0", "1.5.0-rc.1", False),
    ("2.x-0", "2.0.0-rc1", True),
    ("2.x-0", "2.3.0", True),
    ("2.x-0", "3.0.0-rc1", False),
]


@pytest.mark.parametrize(
    ("constraint", "version", "expected"),
    [pytest.param(*row, id=f"MM-{i}") for i, row in enumerate(MASTERMINDS_TABLE, 1)],
)
def test_constraint_library_table(constraint: str, version: str, expected: bool) -> None:
    assert Constraint.parse(constraint).check(v(version)) is expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("latest", id="VS-8-latest"),
        pytest.param(">= bar", id="op-with-word"),
        pytest.param("BAR >= 1.2.3", id="leading-word"),
        pytest.param("12.3.4.1234", id="four-parts"),
        pytest.param("12.3.34~ 1.2.3", id="no-separator"),
        pytest.param(">1<2", id="glued-comparators"),
        pytest.param("1.0 ||", id="empty-alternative"),
        pytest.param(">=1.0,", id="trailing-comma"),
        pytest.param("1|2", id="single-bar"),
        pytest.param("xx", id="double-wildcard"),
        pytest.param("1.2.3-01", id="bad-prerelease"),
    ],
)
def test_constraint_errors_name_the_input(text: str) -> None:
    with pytest.raises(ConstraintError) as err:
        Constraint.parse(text)
    assert f"'{text}'" in str(err.value)
    assert "use e.g." in str(err.value)


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        (">= 1.1", [1]),
        (">40.50.60, < 50.70", [2]),
        ("v2.3.5-20161202202307-sha.e8fc5e5", [1]),
        (">= 1.2.3 < 2.0 || => 3.0 < 4", [2, 2]),
        ("3 - 4 || => 3.0, < 4", [2, 2]),
        ("12.3.34 ~1.2.3", [2]),
    ],
)
def test_constraint_structure(text: str, groups: list[int]) -> None:
    assert [len(g) for g in Constraint.parse(text).groups] == groups


def test_has_prerelease_and_include_prerelease() -> None:
    assert not Constraint.parse("~1.0").has_prerelease
    assert Constraint.parse("2.x-0").has_prerelease
    assert Constraint.parse("~1.0 || >=2.0.0-0").has_prerelease
    plain = Constraint.parse("~1.0")
    assert not plain.check(v("1.0.5-rc.1"))
    assert plain.check(v("1.0.5-rc.1"), include_prerelease=True)
    assert str(plain) == "~1.0"


def test_constraint_scan_is_linear_on_hostile_input() -> None:
    # A pattern-based validator backtracks exponentially on this; the scanner must not.
    with pytest.raises(ConstraintError):
        Constraint.parse(">=1.0" + "      1.0" * 40 + " ~")


versions = st.builds(
    lambda nums, pre, meta, prefix: (
        prefix
        + ".".join(str(n) for n in nums)
        + (f"-{pre}" if pre else "")
        + (f"+{meta}" if meta else "")
    ),
    st.lists(st.integers(0, 10**6), min_size=1, max_size=3),
    st.sampled_from(["", "alpha", "alpha.1", "beta.2", "rc.10", "rc.9", "0", "x-y.3"]),
    st.sampled_from(["", "build", "sha.abc"]),
    st.sampled_from(["", "v"]),
)


@given(versions, versions, versions)
def test_compare_is_a_consistent_order(a: str, b: str, c: str) -> None:
    va, vb, vc = v(a), v(b), v(c)
    assert compare(va, vb) == -compare(vb, va)
    if compare(va, vb) <= 0 and compare(vb, vc) <= 0:
        assert compare(va, vc) <= 0
    assert (va < vb) == (va.sort_key < vb.sort_key)
    assert compare(va, v(str(va))) == 0


@given(st.one_of(versions, st.text("v0123456789.-+abx", max_size=30)))
def test_version_key_agrees_with_version_parse(text: str) -> None:
    parsed = Version.parse(text)
    assert version_key(text) == (parsed.precedence if parsed is not None else None)


@given(versions)
def test_star_admits_exactly_the_releases(text: str) -> None:
    parsed = v(text)
    assert Constraint.parse("*").check(parsed) is (parsed.prerelease == "")
    assert Constraint.parse("*-0").check(parsed)
