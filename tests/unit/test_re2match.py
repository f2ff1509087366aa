"""User-supplied regular expressions: Go's RE2 syntax and semantics, linear-time matching, and
RE2's reason when an expression is refused (kits.re2match and the allowTags filter over it)."""

from __future__ import annotations

import pytest

from argocd_image_updater.kits.globs import compile_glob
from argocd_image_updater.kits.re2match import RegexpError, compile_re2
from argocd_image_updater.policy.filters import is_ignored, parse_allow_tags

# (expression, text, whether Go's regexp.MatchString finds it). Where Python's ``re`` answers
# differently, the case says so: each is one the old translation to ``re`` got wrong.
GO_CASES = [
    pytest.param(r"^[[:digit:]]+$", "2024", True, id="posix-digit"),
    pytest.param(r"^[[:digit:]]+$", "v2024", False, id="posix-digit-no"),
    pytest.param(r"^[[:^alpha:]]+$", "1.2.3", True, id="posix-negated"),
    pytest.param(r"^[^[:alpha:]]+$", "1.2a", False, id="posix-in-negated-class"),
    pytest.param(r"^[[:alnum:]_.-]+$", "a_b.c-1", True, id="posix-with-extras"),
    pytest.param(r"^[[:word:]]+$", "a_1", True, id="posix-word"),
    pytest.param(r"^1\.2\z", "1.2", True, id="end-of-text"),
    pytest.param(r"^1\.2\z", "1.2\n", False, id="end-of-text-not-before-newline"),
    pytest.param(r"^v1$", "v1\n", False, id="dollar-is-end-of-text"),  # re: True
    pytest.param(r"(?m)^v1$", "x\nv1\ny", True, id="multi-line-flag"),
    pytest.param(r"\pL", "1é", True, id="unicode-letter"),
    pytest.param(r"^\pL+$", "v1", False, id="unicode-letter-no"),
    pytest.param(r"\PL", "abc", False, id="unicode-non-letter"),
    pytest.param(r"\pN", "v٣", True, id="unicode-number"),
    pytest.param(r"\p{Greek}", "αβ", True, id="script"),
    pytest.param(r"\p{Greek}", "ab", False, id="script-no"),
    pytest.param(r"\p{^Greek}", "α", False, id="script-negated"),
    pytest.param(r"^a(?i)b$", "aB", True, id="flag-mid-expression"),
    pytest.param(r"^a(?i)b$", "AB", False, id="flag-mid-expression-scope"),
    pytest.param(r"^(?i:rc)[0-9]$", "RC1", True, id="flag-group"),
    pytest.param(r"^(?P<major>\d+)\.(?P<minor>\d+)$", "1.2", True, id="named-group"),
    pytest.param(r"^(?<major>\d+)$", "12", True, id="named-group-angle"),
    pytest.param(r"^\w+$", "é", False, id="word-is-ascii"),  # re: True
    pytest.param(r"\d", "٣", False, id="digit-is-ascii"),  # re: True
    pytest.param(r"\bv1\b", "x-v1-y", True, id="word-boundary"),
    pytest.param(r"^.$", "é", True, id="dot-is-one-character"),
    pytest.param(r"^..$", "é", False, id="dot-not-a-byte"),
    pytest.param(r"a.b", "a\nb", False, id="dot-not-newline"),
    pytest.param(r"(?s)a.b", "a\nb", True, id="dot-newline-flag"),
    pytest.param(r"[^x]", "\n", True, id="negated-class-takes-newline"),
    pytest.param(r"^[]x]$", "]", True, id="leading-bracket-literal"),
    pytest.param(r"^[a|b&&c~]+$", "|&~", True, id="set-operators-are-literals"),
    pytest.param(r"^[a[b]+$", "[", True, id="bracket-in-class"),
    pytest.param(r"^\x{1F600}$", "😀", True, id="hex-escape"),
    pytest.param(r"^\Q1.2+\E$", "1.2+", True, id="quoted"),
    pytest.param(r"^\Q\C\E$", "\\C", True, id="quoted-backslash-c"),
    pytest.param(r"^(?U)a+", "aaa", True, id="ungreedy"),
    pytest.param(r"^\_$", "_", True, id="escaped-underscore"),
    pytest.param(r"[0-9]", "v1", True, id="unanchored"),
    pytest.param(r"", "anything", True, id="empty"),
    pytest.param(r"^.$", "\ud800", True, id="lone-surrogate-is-one-character"),
    pytest.param(r"^\x{FFFD}$", "\ud800", True, id="lone-surrogate-is-replacement"),
]


@pytest.mark.parametrize(("expression", "text", "expected"), GO_CASES)
def test_go_syntax_and_semantics(expression: str, text: str, expected: bool) -> None:
    assert compile_re2(expression).found_in(text) is expected
    matcher = parse_allow_tags(f"regexp:{expression}")
    assert matcher.kind == "regexp", matcher.error
    assert matcher.matches(text) is expected


# Expressions Go's regexp.Compile refuses, with the part of RE2's reason the error must carry.
REFUSED = [
    pytest.param(r"(a)\1", r"invalid escape sequence: \1", id="backreference"),
    pytest.param(r"(?P<v>a)(?P=v)", "invalid perl operator: (?P", id="named-backreference"),
    pytest.param(r"v(?=1)", "invalid perl operator: (?=", id="lookahead"),
    pytest.param(r"v(?!1)", "invalid perl operator: (?!", id="negative-lookahead"),
    pytest.param(r"(?<=v)1", "invalid perl operator: (?<=", id="lookbehind"),
    pytest.param(r"a\C", r"invalid escape sequence: \C", id="any-byte"),
    pytest.param(r"\Qx\Ea\C", r"invalid escape sequence: \C", id="any-byte-after-quote"),
    pytest.param(r"[\C]", r"invalid escape sequence: \C", id="any-byte-in-class"),
    pytest.param(r"1\Z", r"invalid escape sequence: \Z", id="python-end-of-text"),
    pytest.param(r"[[:bogus:]]", "[:bogus:]", id="unknown-posix-class"),
    pytest.param(r"\p{Bogus}", r"\p{Bogus}", id="unknown-unicode-class"),
    pytest.param(r"a++", "bad repetition operator: ++", id="possessive"),
    pytest.param(r"a{1001}", "invalid repetition size: {1001}", id="repeat-over-1000"),
    pytest.param(r"(?x) a", "invalid perl operator: (?x", id="verbose-flag"),
    pytest.param(r"[aA-zZ", "missing ]", id="unclosed-class"),
    pytest.param("/foo\\", "trailing \\", id="trailing-backslash"),
    pytest.param(r"(", "missing ): (", id="unclosed-group"),
]


@pytest.mark.parametrize(("expression", "reason"), REFUSED)
def test_refused_expressions_give_re2s_reason(expression: str, reason: str) -> None:
    with pytest.raises(RegexpError) as refused:
        compile_re2(expression)
    assert reason in str(refused.value)
    value = f"regexp:{expression}"
    matcher = parse_allow_tags(value)
    assert matcher.kind == "none" and not matcher.matches("v1") and not matcher.matches("")
    assert matcher.error == (
        f"could not compile regexp '{expression}' in '{value}': {refused.value}; fix the expression"
    )


def test_refused_expressions_print_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(RegexpError, match="missing"):
        compile_re2("(unclosed-and-never-seen-before")
    assert parse_allow_tags("regexp:[also-unclosed").kind == "none"
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_nested_quantifiers_match_in_linear_time() -> None:
    """``^(a+)+$`` took seconds in Python's ``re`` for 27 characters and never ended for 40."""
    matcher = parse_allow_tags("regexp:^(a+)+$")
    assert matcher.matches("a" * 10_000)
    assert not matcher.matches("a" * 10_000 + "!")
    assert not compile_re2(r"^(\w+\s?)*$").found_in("a " * 5_000 + "!")
    assert compile_re2(r"(x+x+)+y").found_in("x" * 10_000 + "y")


def test_globs_match_in_linear_time() -> None:
    """``*a*a*a*a*a*b`` took seconds in Python's ``re`` against a 200-character tag."""
    assert not compile_glob("*a" * 12 + "b").matches_whole("a" * 10_000)
    assert is_ignored("a" * 10_000 + "b", ["*a" * 12 + "b"]) == "*a" * 12 + "b"


def test_a_glob_class_that_takes_nothing_matches_nothing() -> None:
    assert not compile_glob("v[b-a]").matches_whole("va")
    assert compile_glob("v[^b-a]").matches_whole("v\n")


def test_every_character_is_a_literal_in_a_glob() -> None:
    for code in [*range(0x80), 0xE9, 0x3B1, 0x1F600]:
        char = chr(code)
        if char in "*?[\\":
            continue
        assert compile_glob(f"x{char}y").matches_whole(f"x{char}y"), repr(char)
        if char not in "-]^":  # [-], []] and [^] are malformed (Go's ErrBadPattern)
            assert compile_glob(f"[{char}]").matches_whole(char), repr(char)
            assert compile_glob(f"[\\{char}]").matches_whole(char), repr(char)
        assert compile_glob(f"[^\\{char}]").matches_whole("z") is (char != "z"), repr(char)
