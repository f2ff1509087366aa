"""Tag filters: the ``allowTags`` match function and the ``ignoreTags`` glob patterns.

``allowTags`` is ``regexp:<expression>`` or ``any`` (an empty value means any). Anything else,
including a bare regular expression, matches no tag at all, as in the original; the matcher
carries the reason so that it can be reported. The expression is searched for anywhere in the
tag (unanchored). It is compiled with RE2, as the original's Go ``regexp`` is, through
:mod:`argocd_image_updater.kits.re2match`: the same syntax (``[[:digit:]]``, ``\\z``, ``\\pL``,
``(?i)`` anywhere; no back-references or look-around) and matching in time linear in the tag,
whatever the expression. An expression RE2 refuses matches no tag and the matcher's ``error``
gives RE2's reason.

``ignoreTags`` entries are globs with the semantics of Go's ``filepath.Match``: ``*`` and ``?``
do not match ``/``, ``[...]`` classes take ranges and ``^`` negation, ``\\`` escapes, and a
malformed pattern matches nothing. Python's ``fnmatch`` differs on each of these points, hence
the translator in :mod:`argocd_image_updater.kits.globs`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from argocd_image_updater.kits.globs import GlobError, match_glob
from argocd_image_updater.kits.re2match import RegexpError, compile_re2

MatchKind = Literal["any", "none", "regexp"]
_ALLOW_HINT: Final = "use regexp:<expression> or any"


@dataclass(frozen=True, slots=True)
class TagMatcher:
    """Which tags ``allowTags`` lets through."""

    kind: MatchKind
    pattern: str = ""
    error: str | None = None
    """Why the matcher is ``none`` (the configured value was not understood)."""

    def matches(self, tag: str) -> bool:
        if self.kind == "any":
            return True
        if self.kind == "none":
            return False
        try:
            return compile_re2(self.pattern).found_in(tag)
        except RegexpError:
            return False

    def __str__(self) -> str:
        return f"regexp:{self.pattern}" if self.kind == "regexp" else self.kind


MATCH_ANY: Final = TagMatcher("any")


def parse_allow_tags(text: str | None) -> TagMatcher:
    """Read an ``allowTags`` value; unusable values give a ``none`` matcher with an error."""
    if text is None or not text.strip() or text.strip().lower() == "any":
        return MATCH_ANY
    function, sep, expression = text.partition(":")
    if not sep:
        return TagMatcher("none", error=f"invalid match option syntax '{text}': {_ALLOW_HINT}")
    if function.strip().lower() != "regexp":
        return TagMatcher(
            "none", error=f"unknown match function '{function}' in '{text}': {_ALLOW_HINT}"
        )
    try:
        compile_re2(expression)
    except RegexpError as err:
        return TagMatcher(
            "none",
            error=f"could not compile regexp '{expression}' in '{text}': {err}; fix the expression",
        )
    return TagMatcher("regexp", expression)


def glob_match(pattern: str, name: str) -> bool:
    """Whether ``name`` matches the glob ``pattern`` (Go ``filepath.Match``; bad pattern: no)."""
    try:
        return match_glob(pattern, name)
    except GlobError:
        return False


def is_ignored(tag: str, patterns: Iterable[str]) -> str | None:
    """The first ignore pattern that matches ``tag``, or ``None``."""
    for pattern in patterns:
        if glob_match(pattern, tag):
            return pattern
    return None
