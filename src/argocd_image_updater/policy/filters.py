"""Tag filters: the ``allowTags`` match function and the ``ignoreTags`` glob patterns.

``allowTags`` is ``regexp:<expression>`` or ``any`` (an empty value means any). Anything else,
including a bare regular expression, matches no tag at all, as in the original; the matcher
carries the reason so that it can be reported. The expression is searched for anywhere in the
tag (unanchored). The original uses Go's RE2 syntax; expressions are run with Python's ``re``
after translating RE2's POSIX classes (``[[:digit:]]``) and ``\\z``. Differences left are rare
in tag filters: RE2 rejects back-references and look-around (accepted here), and Python rejects
``\\pN`` classes and flags such as ``(?i)`` that are not at the start (such an expression then
matches no tag and the matcher's ``error`` says why).

``ignoreTags`` entries are globs with the semantics of Go's ``filepath.Match``: ``*`` and ``?``
do not match ``/``, ``[...]`` classes take ranges and ``^`` negation, ``\\`` escapes, and a
malformed pattern matches nothing. Python's ``fnmatch`` differs on each of these points, hence
the translator in :mod:`argocd_image_updater.kits.globs`.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from argocd_image_updater.kits.globs import GlobError, compile_glob

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
        compiled = _compile_regexp(self.pattern)
        return compiled is not None and compiled.search(tag) is not None

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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            re.compile(_translate_re2(expression))
    except (re.error, ValueError) as err:
        return TagMatcher(
            "none",
            error=f"could not compile regexp '{expression}' in '{text}': {err}; fix the expression",
        )
    return TagMatcher("regexp", expression)


@functools.lru_cache(maxsize=256)
def _compile_regexp(expression: str) -> re.Pattern[str] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return re.compile(_translate_re2(expression))
    except (re.error, ValueError):
        return None


_POSIX_CLASSES: Final = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}


def _translate_re2(expression: str) -> str:
    """RE2 syntax Python spells differently: POSIX classes inside ``[...]`` and ``\\z``."""
    out: list[str] = []
    i, n = 0, len(expression)
    in_class = False
    while i < n:
        c = expression[i]
        if c == "\\" and i + 1 < n:
            pair = expression[i : i + 2]
            out.append("\\Z" if pair == "\\z" and not in_class else pair)
            i += 2
            continue
        if not in_class:
            out.append(c)
            i += 1
            if c == "[":
                in_class = True
                if i < n and expression[i] == "^":
                    out.append("^")
                    i += 1
                if i < n and expression[i] == "]":  # a leading ']' is a literal
                    out.append("\\]")
                    i += 1
            continue
        if c == "[" and expression.startswith(":", i + 1):
            end = expression.find(":]", i + 2)
            if end != -1:
                name = expression[i + 2 : end]
                if name not in _POSIX_CLASSES:
                    raise ValueError(f"unsupported character class [:{name}:]")
                out.append(_POSIX_CLASSES[name])
                i = end + 2
                continue
        if c == "]":
            in_class = False
            out.append(c)
        elif c in "[&~|":  # literal in a class; escaped so Python reads no set operation
            out.append("\\" + c)
        else:
            out.append(c)
        i += 1
    return "".join(out)


def glob_match(pattern: str, name: str) -> bool:
    """Whether ``name`` matches the glob ``pattern`` (Go ``filepath.Match``; bad pattern: no)."""
    compiled = _compile_glob(pattern)
    return compiled is not None and compiled.fullmatch(name) is not None


def is_ignored(tag: str, patterns: Iterable[str]) -> str | None:
    """The first ignore pattern that matches ``tag``, or ``None``."""
    for pattern in patterns:
        if glob_match(pattern, tag):
            return pattern
    return None


def _compile_glob(pattern: str) -> re.Pattern[str] | None:
    try:
        return compile_glob(pattern)
    except GlobError:
        return None
