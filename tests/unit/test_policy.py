"""Strategies, tag filters, platforms and the tag choice (upstream cases ST, AT, PL, VS, TG)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from argocd_image_updater.model.platform import (
    Platform,
    PlatformFilter,
    platform_key,
    runtime_platform,
)
from argocd_image_updater.model.registry import TagSortMode
from argocd_image_updater.model.tags import PlatformImage, TagInfo
from argocd_image_updater.policy.filters import (
    MATCH_ANY,
    TagMatcher,
    glob_match,
    is_ignored,
    parse_allow_tags,
)
from argocd_image_updater.policy.select import (
    Policy,
    PolicyError,
    Selection,
    choose,
    needs_metadata,
    time_order_hint,
)
from argocd_image_updater.policy.strategies import UpdateStrategy, named, parse_strategy
from argocd_image_updater.policy.verdicts import TagVerdict

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
AMD64 = Platform("linux", "amd64")
ARM_V7 = Platform("linux", "arm", "v7")
T = ["0.1", "0.5.1", "0.9", "1.0", "1.0.1", "1.1.2", "2.0.3"]


def names(*tags: str) -> list[TagInfo]:
    return [TagInfo(t) for t in tags]


def dated(*pairs: tuple[str, int], platform: Platform = AMD64) -> list[TagInfo]:
    return [
        TagInfo(n, images=(PlatformImage(platform, created=EPOCH + timedelta(seconds=s)),))
        for n, s in pairs
    ]


def chosen(selection: Selection) -> str | None:
    return selection.chosen.name if selection.chosen else None


# --- strategies -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "strategy", "warns"),
    [
        pytest.param("semver", named("semver"), None, id="ST-1-semver"),
        pytest.param("newest-build", named("newest-build"), None, id="ST-1-newest-build"),
        pytest.param("latest", named("newest-build"), "deprecated", id="ST-1-latest"),
        pytest.param("name", named("alphabetical"), "deprecated", id="ST-1-name"),
        pytest.param("alphabetical", named("alphabetical"), None, id="ST-1-alphabetical"),
        pytest.param("digest", named("digest"), None, id="ST-1-digest"),
        pytest.param(
            "invalid", named("semver"), "Unknown sort option invalid -- using semver", id="ST-1-bad"
        ),
        pytest.param(None, named("semver"), None, id="ST-1-unset"),
        pytest.param("", named("semver"), None, id="ST-1-empty"),
        pytest.param("Newest-Build", named("newest-build"), None, id="case-insensitive"),
        pytest.param("LATEST", named("newest-build"), "use 'newest-build'", id="alias-upper"),
    ],
)
def test_parse_strategy(text: str | None, strategy: UpdateStrategy, warns: str | None) -> None:
    got, warning = parse_strategy(text)
    assert got is strategy
    if warns is None:
        assert warning is None
    else:
        assert warning is not None and warns in warning
        assert text is not None and f"{text}" in warning


@pytest.mark.parametrize(
    ("strategy", "text", "cacheable", "metadata", "constraint"),
    [
        pytest.param(named("semver"), "semver", True, False, False, id="ST-2-5-semver"),
        pytest.param(named("newest-build"), "newest-build", True, True, False, id="ST-2-5-newest"),
        pytest.param(named("alphabetical"), "alphabetical", True, False, False, id="ST-2-5-alpha"),
        pytest.param(named("digest"), "digest", False, True, True, id="ST-2-5-digest"),
    ],
)
def test_strategy_properties(
    strategy: UpdateStrategy, text: str, cacheable: bool, metadata: bool, constraint: bool
) -> None:
    assert str(strategy) == text
    assert strategy.cacheable is cacheable
    assert strategy.needs_metadata() is metadata
    assert strategy.needs_constraint is constraint


def test_needs_metadata_for_policy() -> None:
    assert not needs_metadata(Policy())
    assert not needs_metadata(Policy(named("alphabetical")))
    assert needs_metadata(Policy(named("newest-build")))
    assert not needs_metadata(Policy(named("newest-build")), time_sorted=True)
    assert needs_metadata(Policy(named("digest"), "latest"), time_sorted=True)


# --- allowTags / ignoreTags ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "error"),
    [
        pytest.param("", "any", None, id="AT-1"),
        pytest.param(None, "any", None, id="AT-1-unset"),
        pytest.param("any", "any", None, id="AT-2"),
        pytest.param("ANY", "any", None, id="AT-2-upper"),
        pytest.param(
            "other",
            "none",
            "invalid match option syntax 'other': use regexp:<expression> or any",
            id="AT-3",
        ),
        pytest.param("not-regexp:a-z", "none", "unknown match function 'not-regexp'", id="AT-4"),
        pytest.param("regexp:[aA-zZ]", "regexp", None, id="AT-5"),
        pytest.param("RegExp:[aA-zZ]", "regexp", None, id="AT-6"),
        pytest.param("regexp:[aA-zZ", "none", "could not compile regexp '[aA-zZ'", id="AT-7"),
        pytest.param("regexp:/foo\\", "none", "could not compile regexp '/foo\\'", id="AT-10"),
        pytest.param("v1.*", "none", "invalid match option syntax 'v1.*'", id="bare-regexp"),
    ],
)
def test_parse_allow_tags(text: str | None, kind: str, error: str | None) -> None:
    matcher = parse_allow_tags(text)
    assert matcher.kind == kind
    if error is None:
        assert matcher.error is None
    else:
        assert matcher.error is not None and error in matcher.error
    if kind == "none":
        assert not matcher.matches("anything") and not matcher.matches("")


def test_at5_regexp_matches_and_is_case_insensitive_in_function_name() -> None:
    for text in ("regexp:[aA-zZ]", "RegExp:[aA-zZ]"):
        matcher = parse_allow_tags(text)
        assert matcher.pattern == "[aA-zZ]"
        assert matcher.matches("MatchFuncRegexp-tag-name")
        assert str(matcher) == "regexp:[aA-zZ]"


@pytest.mark.parametrize(
    ("expression", "tag", "expected"),
    [
        pytest.param("[a-z]+", "lemon", True, id="AT-8-match"),
        pytest.param("[a-z]+", "31337", False, id="AT-8-no-match"),
        pytest.param("[0-9]", "v1", True, id="unanchored"),
        pytest.param("^v[0-9]+$", "v10", True, id="anchored"),
        pytest.param("^v[0-9]+$", "v10-rc", False, id="anchored-no-match"),
    ],
)
def test_regexp_matcher(expression: str, tag: str, expected: bool) -> None:
    matcher = parse_allow_tags(f"regexp:{expression}")
    assert matcher.kind == "regexp", matcher.error
    assert matcher.matches(tag) is expected


def test_at9_any_and_none() -> None:
    assert MATCH_ANY.matches("whatever") and MATCH_ANY.matches("")
    none = TagMatcher("none", error="why")
    assert not none.matches("whatever")
    assert not TagMatcher("regexp", "[unclosed").matches("x")


@pytest.mark.parametrize(
    ("patterns", "tag", "expected"),
    [
        pytest.param(("tag1", "tag2"), "tag1", "tag1", id="AT-12-tag1"),
        pytest.param(("tag1", "tag2"), "tag2", "tag2", id="AT-12-tag2"),
        pytest.param(("tag1", "tag2"), "tag3", None, id="AT-12-tag3"),
        pytest.param(("tag?", "foo"), "tag1", "tag?", id="AT-13-question"),
        pytest.param(("tag?", "foo"), "foo", "foo", id="AT-13-literal"),
        pytest.param(("tag?", "foo"), "tag10", None, id="AT-13-one-char-only"),
        pytest.param(("*",), "anything", "*", id="AT-14-star"),
        pytest.param(("[", "v*"), "v1", "v*", id="bad-pattern-skipped"),
    ],
)
def test_is_ignored(patterns: tuple[str, ...], tag: str, expected: str | None) -> None:
    assert is_ignored(tag, patterns) == expected


# Go's filepath.Match table (path/filepath/match_test.go): pattern, name, match.
GO_MATCH_TABLE = [
    ("abc", "abc", True),
    ("*", "abc", True),
    ("*c", "abc", True),
    ("a*", "a", True),
    ("a*", "abc", True),
    ("a*", "ab/c", False),
    ("a*/b", "abc/b", True),
    ("a*/b", "a/c/b", False),
    ("a*b*c*d*e*/f", "axbxcxdxe/f", True),
    ("a*b*c*d*e*/f", "axbxcxdxexxx/f", True),
    ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", False),
    ("a*b*c*d*e*/f", "axbxcxdxexxx/fff", False),
    ("a*b?c*x", "abxbbxdbxebxczzx", True),
    ("a*b?c*x", "abxbbxdbxebxczzy", False),
    ("ab[c]", "abc", True),
    ("ab[b-d]", "abc", True),
    ("ab[e-g]", "abc", False),
    ("ab[^c]", "abc", False),
    ("ab[^b-d]", "abc", False),
    ("ab[^e-g]", "abc", True),
    ("a\\*b", "a*b", True),
    ("a\\*b", "ab", False),
    ("a?b", "a☺b", True),
    ("a[^a]b", "a☺b", True),
    ("a???b", "a☺b", False),
    ("a[^a][^a][^a]b", "a☺b", False),
    ("[a-ζ]*", "α", True),
    ("*[a-ζ]", "A", False),
    ("a?b", "a/b", False),
    ("a*b", "a/b", False),
    ("[\\]a]", "]", True),
    ("[\\-]", "-", True),
    ("[x\\-]", "x", True),
    ("[x\\-]", "-", True),
    ("[x\\-]", "z", False),
    ("[\\-x]", "x", True),
    ("[\\-x]", "-", True),
    ("[\\-x]", "a", False),
    ("[]a]", "]", False),
    ("[-]", "-", False),
    ("[x-]", "x", False),
    ("[x-]", "-", False),
    ("[-x]", "x", False),
    ("\\", "a", False),
    ("[a-b-c]", "a", False),
    ("[", "a", False),
    ("[^", "a", False),
    ("[^bc", "a", False),
    ("a[", "a", False),
    ("a[", "ab", False),
    ("a/b[", "x", False),
    ("*x", "xxx", True),
    ("[!a]", "!", True),  # '!' is no negation in Go
    ("[!a]", "b", False),
    ("[z-a]", "m", False),  # an inverted range matches nothing
    ("[^z-a]", "m", True),
    ("v1.*", "v1.2", True),
    ("v1.*", "v10", False),
    ("*-rc*", "1.0-rc1", True),
    ("*.*.*", "1.2", False),
]


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [pytest.param(*row, id=f"GO-{i}") for i, row in enumerate(GO_MATCH_TABLE, 1)],
)
def test_glob_match_go_semantics(pattern: str, name: str, expected: bool) -> None:
    assert glob_match(pattern, name) is expected


# --- platforms ---------------------------------------------------------------------------------


def test_pl1_platform_key() -> None:
    assert platform_key("linux", "amd64", "") == "linux/amd64"
    assert platform_key("linux", "arm", "v6") == "linux/arm/v6"


@pytest.mark.parametrize(
    ("wanted", "platform", "expected"),
    [
        pytest.param([], ARM_V7, True, id="PL-2-arm"),
        pytest.param([], AMD64, True, id="PL-2-amd64"),
        pytest.param(["linux/arm/v7"], ARM_V7, True, id="PL-3"),
        pytest.param(["linux/arm/v7", "linux/arm/v8"], Platform("linux", "arm", "v8"), True, id="PL-4-v8"),
        pytest.param(["linux/arm/v7", "linux/arm/v8"], ARM_V7, True, id="PL-4-v7"),
        *[
            pytest.param(["linux/arm/v7", "linux/arm/v8"], Platform(*p), False, id=f"PL-4-{i}")
            for i, p in enumerate(
                [
                    ("linux", "arm", "v6"), ("linux", "arm", ""), ("linux", "", ""),
                    ("linux", "amd64", "v7"), ("linux", "amd64", ""), ("darwin", "arm", "v7"),
                    ("darwin", "arm", ""),
                ]
            )
        ],
        pytest.param(["linux/arm", "linux/arm/v7"], Platform("linux", "arm", "v8"), True, id="PL-5-v8"),
        pytest.param(["linux/arm", "linux/arm/v7"], ARM_V7, True, id="PL-5-v7"),
        pytest.param(["linux/arm", "linux/arm/v7"], Platform("linux", "arm"), True, id="PL-5-none"),
        pytest.param([AMD64], AMD64, True, id="PL-6"),
        pytest.param(["linux/arm64/v8"], Platform("linux", "arm64", "v8"), True, id="PL-11"),
        pytest.param(["linux/arm64/v8"], Platform("linux", "arm64", "invalid"), False, id="PL-11-no"),
        pytest.param(["linux/arm/v6"], Platform("linux", "arm", "v6"), True, id="PL-12"),
        pytest.param(["linux/arm/v6"], Platform("linux", "arm"), False, id="PL-12-no-variant"),
        pytest.param(["linux/amd64", "linux/arm/v6"], Platform("linux", "amd64", "v6"), True, id="PL-13-lenient"),
        pytest.param(["linux/amd64", "linux/arm/v6"], Platform("linux", "arm"), False, id="PL-13-no"),
        pytest.param(["invalid"], Platform("invalid"), False, id="PL-14-os-only"),
        pytest.param(["invalid"], AMD64, False, id="PL-14-anything"),
        pytest.param([" linux/amd64 "], AMD64, True, id="trimmed"),
    ],
)  # fmt: skip
def test_platform_filter_wants(
    wanted: list[Platform | str], platform: Platform, expected: bool
) -> None:
    assert PlatformFilter(wanted).wants(platform) is expected


def test_pl8_platforms_sorted_and_pl14_kept() -> None:
    assert PlatformFilter().keys == [] and PlatformFilter().platforms == ()
    assert PlatformFilter(["linux/amd64"]).keys == ["linux/amd64"]
    both = PlatformFilter(["linux/arm/v8", "linux/amd64"])
    assert both.keys == ["linux/amd64", "linux/arm/v8"]
    assert both.platforms == (AMD64, Platform("linux", "arm", "v8"))
    assert str(both) == "linux/amd64, linux/arm/v8"
    bad = PlatformFilter(["invalid", "linux/amd64"])
    assert bad.invalid == ("invalid",) and bad.keys == ["invalid", "linux/amd64"]
    assert bad.platforms == (AMD64,)
    assert PlatformFilter(["invalid"]) and not PlatformFilter()
    assert str(PlatformFilter()) == "any platform"
    assert PlatformFilter(["linux/amd64", AMD64]) == PlatformFilter([AMD64])
    assert hash(PlatformFilter([AMD64])) == hash(PlatformFilter(["linux/amd64"]))
    assert PlatformFilter(["invalid"]) != PlatformFilter()


def test_pl9_runtime_platform() -> None:
    runtime = runtime_platform()
    assert runtime.os and runtime.arch
    assert runtime.arch not in ("x86_64", "aarch64", "armv7l")
    only_runtime = PlatformFilter.runtime()
    assert only_runtime.platforms == (runtime,)
    assert only_runtime.wants(runtime)
    if not runtime.variant:  # lenient: any variant of the runtime os/arch is wanted
        assert only_runtime.wants(Platform(runtime.os, runtime.arch, "invalid"))
    else:
        assert not only_runtime.wants(Platform(runtime.os, runtime.arch))
    other = "darwin" if runtime.os == "windows" else "windows"
    assert not only_runtime.wants(Platform(other, runtime.arch))


def test_pl10_empty_filter_wants_everything() -> None:
    assert PlatformFilter().wants(Platform("windows", "amd64"))


# --- the choice: semver -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("constraint", "tags", "expected"),
    [
        pytest.param("", T, "2.0.3", id="VS-1"),
        pytest.param("^1.0", T, "1.1.2", id="VS-2"),
        pytest.param("~1.0", T, "1.0.1", id="VS-3"),
        pytest.param("^1.0", [*T, "latest"], "1.1.2", id="VS-4"),
        pytest.param("", [*T, "latest"], "2.0.3", id="VS-5"),
        pytest.param(
            "", ["v2.2.0", "v2.3.0-rc.0.18.g1abb7b5dd-ppc64le"], "v2.2.0", id="VS-6"
        ),
        pytest.param("~1.0", ["0.1", "0.5.1", "0.9", "2.0.3"], None, id="VS-7"),
        pytest.param("~1.0", [], None, id="VS-9"),
        pytest.param("", ["zz", "bb", "yy", "cc", "aa", "ll"], None, id="VS-11"),
        pytest.param("1.2.x", ["1.2.5", "1.2.12", "1.3.0"], "1.2.12", id="VS-14"),
        pytest.param("1.x", ["1.2.12", "1.3.0", "1.15.2", "2.0"], "1.15.2", id="VS-15"),
        pytest.param("2.x-0", ["1.9", "2.0-rc1", "2.0-rc2"], "2.0-rc2", id="VS-16"),
        pytest.param("v1.x", ["1.0", "2.0"], "1.0", id="VS-17"),
        pytest.param("", ["1.0", "v1.0"], "v1.0", id="VS-24"),
        pytest.param("", ["v1.0", "1.0"], "v1.0", id="VS-24-order-independent"),
        pytest.param(
            "", ["v2.0.2", "v1.0", "v2.0.0", "v1.0.1", "v2.0.3", "v2.0"], "v2.0.3", id="TG-12"
        ),
        pytest.param("", ["1.0.0-rc.9", "1.0.0-rc.10"], None, id="prerelease-only"),
        pytest.param(">=1.0.0-0", ["1.0.0-rc.9", "1.0.0-rc.10"], "1.0.0-rc.10", id="rc10-after-rc9"),
        pytest.param("", ["20240101", "20231231", "1.2.3"], "20240101", id="date-like-tags"),
    ],
)  # fmt: skip
def test_choose_semver(constraint: str, tags: list[str], expected: str | None) -> None:
    assert chosen(choose(Policy(constraint=constraint), names(*tags))) == expected


@pytest.mark.parametrize(
    "constraint",
    [pytest.param("latest", id="VS-8"), pytest.param("stable", id="UA-24")],
)
def test_invalid_constraint_is_an_error(constraint: str) -> None:
    policy = Policy(constraint=constraint)
    with pytest.raises(PolicyError) as err:
        policy.validate("jannfis/test:1.0")
    assert "jannfis/test:1.0" in str(err.value) and f"'{constraint}'" in str(err.value)
    with pytest.raises(PolicyError):
        choose(policy, names(*T))


def test_semver_verdicts_explain_every_tag() -> None:
    tags = names("0.9", "1.0.0", "1.0.5", "1.0.6-rc.1", "1.1.0", "latest", "v1.0.3", "dev")
    policy = Policy(
        constraint="~1.0",
        allow=parse_allow_tags("regexp:^[v0-9]"),
        ignore=("*-rc*x", "v1.0.*"),
    )
    selection = choose(policy, tags)
    assert chosen(selection) == "1.0.5"
    reasons = {v.tag: v.reason for v in selection.verdicts}
    assert reasons == {
        "0.9": TagVerdict.OUTSIDE_CONSTRAINT,
        "1.0.0": TagVerdict.OLDER,
        "1.0.5": TagVerdict.CHOSEN,
        "1.0.6-rc.1": TagVerdict.PRERELEASE,
        "1.1.0": TagVerdict.OUTSIDE_CONSTRAINT,
        "latest": TagVerdict.NOT_ALLOWED,
        "v1.0.3": TagVerdict.IGNORED,
        "dev": TagVerdict.NOT_ALLOWED,
    }
    assert [v.tag for v in selection.verdicts] == [t.name for t in tags]
    assert selection.verdict("v1.0.3") is not None
    assert "v1.0.*" in selection.verdict("v1.0.3").detail  # type: ignore[union-attr]
    assert "-0" in selection.verdict("1.0.6-rc.1").detail  # type: ignore[union-attr]
    assert "lower than '1.0.5'" in selection.verdict("1.0.0").detail  # type: ignore[union-attr]
    assert selection.summary == "chose '1.0.5': highest version satisfying '~1.0' (8 tags)"


def test_summary_when_nothing_is_chosen() -> None:
    tags = names("0.1", "0.5.1", "0.9", "2.0.3", "latest", "stable", "3.0.0-rc1")
    selection = choose(Policy(constraint="~1.0"), tags)
    assert selection.chosen is None
    assert selection.summary == (
        "no tag satisfies constraint '~1.0' (7 tags: 5 outside-constraint, 2 not-semver)"
    )
    assert selection.counts() == {TagVerdict.OUTSIDE_CONSTRAINT: 5, TagVerdict.NOT_SEMVER: 2}
    assert choose(Policy(), []).summary == "the registry lists no tags for this image"


def test_invalid_allow_tags_reports_why() -> None:
    selection = choose(Policy(allow=parse_allow_tags("v1.*")), names("v1.0", "v1.1"))
    assert selection.chosen is None
    assert {v.reason for v in selection.verdicts} == {TagVerdict.NOT_ALLOWED}
    assert "invalid match option syntax 'v1.*'" in selection.verdicts[0].detail


@pytest.mark.parametrize(
    ("allow", "ignore", "expected"),
    [
        pytest.param("regexp:^foobar$", (), None, id="AT-16"),
        pytest.param("", ("*",), None, id="AT-14"),
        pytest.param("regexp:^1\\.2\\.", (), "1.2.2", id="allow-prefix"),
        pytest.param("", ("1.2.2",), "1.2.1", id="ignore-newest"),
    ],
)
def test_filters_in_choice(allow: str, ignore: tuple[str, ...], expected: str | None) -> None:
    tags = names("1.2.0", "1.2.1", "1.2.2", "one", "two")
    policy = Policy(allow=parse_allow_tags(allow), ignore=ignore)
    assert chosen(choose(policy, tags)) == expected


def test_at15_match_none_filters_everything() -> None:
    selection = choose(Policy(allow=TagMatcher("none")), names("1.2.0", "1.2.1", "1.2.2"))
    assert selection.chosen is None
    assert selection.counts() == {TagVerdict.NOT_ALLOWED: 3}


# --- the choice: newest-build, alphabetical, digest ----------------------------------------------


def test_vs10_newest_build_later_duplicate_wins() -> None:
    tags = dated(("zz", 0), ("bb", 5), ("yy", 10), ("cc", 15), ("yy", 20), ("aa", 25), ("ll", 30))
    selection = choose(Policy(named("newest-build")), tags)
    assert chosen(selection) == "ll"
    assert len(selection.verdicts) == 6
    assert selection.summary == "chose 'll': newest build (6 tags)"


def test_vs10_duplicate_keeps_later_date() -> None:
    tags = dated(("yy", 40), ("ll", 30), ("yy", 20))
    assert chosen(choose(Policy(named("newest-build")), tags)) == "ll"


def test_vs12_alphabetical_ignores_constraint() -> None:
    tags = names("zz", "bb", "yy", "cc", "yy", "aa", "ll")
    assert chosen(choose(Policy(named("alphabetical"), "~1.0"), tags)) == "zz"


def test_tg11_alphabetical_byte_order() -> None:
    tags = names("wohoo", "bazar", "alpha", "jesus", "zebra", "Zulu", "2024.01")
    selection = choose(Policy(named("alphabetical")), tags)
    assert chosen(selection) == "zebra"
    assert selection.verdict("Zulu").reason is TagVerdict.OLDER  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        pytest.param(
            [("v2.0.2", 4), ("v1.0", 1), ("v1.0.1", 0), ("v2.0.3", 3), ("v2.0", 2)],
            "v2.0.2",
            id="TG-13",
        ),
        pytest.param(
            [("v2.0.2", 0), ("v1.0", 0), ("v1.0.1", 0), ("v2.0.3", 0), ("v2.0", 0)],
            "v2.0.3",
            id="TG-14",
        ),
        pytest.param([("f33bacd", 7), ("dev", 7), ("latest", 7)], "latest", id="VS-18"),
    ],
)
def test_newest_build_by_date_then_name(pairs: list[tuple[str, int]], expected: str) -> None:
    assert chosen(choose(Policy(named("newest-build")), dated(*pairs))) == expected


def test_newest_build_uses_newest_matching_platform_image() -> None:
    # Manifest list: the amd64 child is newer than the arm child.
    multi = TagInfo(
        "multi",
        digest="sha256:list",
        images=(
            PlatformImage(AMD64, created=EPOCH + timedelta(days=3)),
            PlatformImage(ARM_V7, created=EPOCH + timedelta(days=1)),
        ),
    )
    single = dated(("single", 2 * 86400))[0]
    everything = choose(Policy(named("newest-build")), [multi, single])
    assert chosen(everything) == "multi"
    arm_only = Policy(named("newest-build"), platforms=PlatformFilter(["linux/arm"]))
    selection = choose(arm_only, [multi, single])
    assert chosen(selection) == "multi"
    assert selection.verdict("single").reason is TagVerdict.PLATFORM_MISMATCH  # type: ignore[union-attr]
    arm_v7 = Policy(named("newest-build"), platforms=PlatformFilter(["linux/arm/v7"]))
    older_multi = TagInfo("multi", images=(PlatformImage(ARM_V7, created=EPOCH),))
    assert chosen(choose(arm_v7, [older_multi, *dated(("x", 5), platform=ARM_V7)])) == "x"


def test_pl17_platform_mismatch_is_reported() -> None:
    tags = dated(("1.0", 1), ("2.0", 2), platform=Platform("testOS", "testArch", "testVariant"))
    policy = Policy(named("newest-build"), platforms=PlatformFilter(["linux/amd64"]))
    selection = choose(policy, tags)
    assert selection.chosen is None
    assert selection.counts() == {TagVerdict.PLATFORM_MISMATCH: 2}
    detail = selection.verdicts[0].detail
    assert "linux/amd64" in detail and "testOS/testArch/testVariant" in detail
    assert "2 platform-mismatch" in selection.summary


def test_naive_and_missing_dates() -> None:
    naive = TagInfo("naive", images=(PlatformImage(AMD64, created=datetime(2030, 1, 1)),))
    aware = dated(("aware", 10))[0]
    undated = TagInfo("undated", images=(PlatformImage(AMD64),))
    assert chosen(choose(Policy(named("newest-build")), [undated, aware, naive])) == "naive"
    assert chosen(choose(Policy(named("newest-build")), [undated])) == "undated"


def test_newest_build_without_metadata() -> None:
    selection = choose(Policy(named("newest-build")), names("a", "b"))
    assert selection.chosen is None
    assert selection.counts() == {TagVerdict.NO_METADATA: 2}


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        pytest.param(TagSortMode.LATEST_FIRST, "c", id="RC-19-latest-first"),
        pytest.param(TagSortMode.LATEST_LAST, "a", id="RC-19-latest-last"),
    ],
)
def test_rc19_order_hint_replaces_dates(mode: TagSortMode, expected: str) -> None:
    listed = ["c", "b", "a"]
    hint = time_order_hint(listed, mode)
    assert hint is not None
    selection = choose(Policy(named("newest-build")), names(*listed), hint)
    assert chosen(selection) == expected
    assert time_order_hint(listed, TagSortMode.NONE) is None
    assert time_order_hint(listed, TagSortMode.LATEST_FIRST) == {"c": 3, "b": 2, "a": 1}


def test_order_hint_missing_tag_and_other_strategies() -> None:
    selection = choose(Policy(named("newest-build")), names("a", "b"), {"a": 1})
    assert chosen(selection) == "a"
    assert selection.verdict("b").reason is TagVerdict.NO_METADATA  # type: ignore[union-attr]
    # The hint only stands in for dates; semver ignores it.
    assert chosen(choose(Policy(), names("1.0", "2.0"), {"1.0": 9, "2.0": 1})) == "2.0"


def test_vs13_digest_follows_the_constraint_tag() -> None:
    tags = [
        TagInfo("latest", digest="sha256:abcdefg", images=(PlatformImage(AMD64),)),
        TagInfo("1.0", digest="sha256:other", images=(PlatformImage(AMD64),)),
    ]
    selection = choose(Policy(named("digest"), "latest"), tags)
    assert selection.chosen == tags[0]
    assert selection.chosen is not None and selection.chosen.digest == "sha256:abcdefg"
    assert selection.verdict("1.0").reason is TagVerdict.NOT_CONSTRAINT_TAG  # type: ignore[union-attr]
    assert selection.summary == "chose 'latest' at digest sha256:abcdefg"


def test_digest_without_digest_or_tag() -> None:
    undigested = choose(Policy(named("digest"), "latest"), names("latest"))
    assert undigested.chosen is None
    assert undigested.counts() == {TagVerdict.NO_METADATA: 1}
    assert "tag 'latest' is not usable: manifest digest not fetched" in undigested.summary
    missing = choose(Policy(named("digest"), "main"), names("latest"))
    assert missing.summary.startswith("tag 'main' is not in the registry (1 tag:")


def test_vs19_digest_without_constraint() -> None:
    policy = Policy(named("digest"))
    message = (
        "cannot use update strategy 'digest' for image 'quay.io/org/app' without a version "
        "constraint"
    )
    with pytest.raises(PolicyError) as err:
        policy.validate("quay.io/org/app")
    assert str(err.value) == message
    with pytest.raises(PolicyError):
        choose(policy, names("latest"))


def test_other_strategies_accept_any_constraint_text() -> None:
    Policy(named("alphabetical"), "latest").validate("x")
    Policy(named("newest-build"), "not a constraint").validate("x")
    Policy(named("digest"), "main").validate("x")


def test_choice_is_deterministic_under_shuffling() -> None:
    tags = names(*T, "v2.0.3", "2.0.3+meta", "latest", "2.1.0-rc.1")
    expected = choose(Policy(), tags)
    assert chosen(expected) == "v2.0.3"
    rng = random.Random(1234)
    for _ in range(20):
        shuffled = tags[:]
        rng.shuffle(shuffled)
        got = choose(Policy(), shuffled)
        assert got.chosen == expected.chosen and got.summary == expected.summary


def test_ten_thousand_tags() -> None:
    tags = [TagInfo(f"{i // 100}.{i % 100}.{i % 7}") for i in range(10_000)]
    selection = choose(Policy(constraint="^42.0"), tags)
    assert chosen(selection) == "42.99.1"
    assert len(selection.verdicts) == 10_000
