"""Globs with the semantics of Go's ``path/filepath.Match`` on Unix, as regular expressions.

``*`` matches any run of characters except ``/``, ``?`` one character except ``/``, ``[...]`` a
character class (``^`` negation, ``a-z`` ranges, an empty or reversed range matching nothing),
``\\`` escapes. A pattern Go would reject (``ErrBadPattern``) raises :class:`GlobError`. Python's
``fnmatch`` differs on each of these points. The product's tag filters and application name
patterns use it; this module knows nothing of them.

The expression is compiled with RE2 (:mod:`~argocd_image_updater.kits.re2match`), so matching
takes time linear in the name: with Python's backtracking ``re``, ``*a*a*a*a*a*b`` against a
200-character tag took seconds.
"""

from __future__ import annotations

import functools
import re  # re.escape (its escapes are literals to RE2 too) and the fixed _META
from typing import Final

from argocd_image_updater.kits.re2match import Regexp, RegexpError, compile_re2

_META: Final = re.compile(r"[*?\[\\]")
_NOTHING: Final = "[^\\x00-\\x{10FFFF}]"
"""A class no character is in (RE2 has no look-ahead to spell ``(?!)``)."""


class _BadPattern(Exception):
    pass


class GlobError(ValueError):
    """A glob pattern that Go's ``filepath.Match`` would reject (``ErrBadPattern``)."""


def match_glob(pattern: str, name: str) -> bool:
    """Whether ``name`` matches the glob ``pattern``; :class:`GlobError` when malformed."""
    # Fast paths for the patterns people write (`latest`, `app-*`): one comparison instead of
    # a regular expression, for every tag or Application of every cycle.
    meta = _META.search(pattern)
    if meta is None:
        return pattern == name
    if meta.start() == len(pattern) - 1 and pattern[-1] == "*":
        return name.startswith(pattern[:-1]) and "/" not in name[len(pattern) - 1 :]
    return compile_glob(pattern).matches_whole(name)


def check_glob(pattern: str) -> None:
    """Raise :class:`GlobError` when ``pattern`` is malformed."""
    meta = _META.search(pattern)
    if meta is None or (meta.start() == len(pattern) - 1 and pattern[-1] == "*"):
        return  # `app`, `app-*`: nothing that can be malformed (no regular expression built)
    compile_glob(pattern)


@functools.lru_cache(maxsize=1024)  # each may hold up to re2match.MAX_MEMORY
def compile_glob(pattern: str) -> Regexp:
    """The regular expression equivalent to the glob ``pattern`` (Go ``filepath.Match``
    semantics: ``*`` and ``?`` never match ``/``); :class:`GlobError` when malformed.
    Match names with :meth:`Regexp.matches_whole`."""
    try:
        return compile_re2(_glob_to_regex(pattern))
    except (_BadPattern, RegexpError):
        raise GlobError(f"syntax error in pattern '{pattern}'") from None


def _glob_to_regex(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            regex, i = _glob_class(pattern, i + 1)
            out.append(regex)
        elif c == "\\":
            if i + 1 >= n:
                raise _BadPattern
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _glob_class(pattern: str, i: int) -> tuple[str, int]:
    """Translate ``[...]`` starting after the ``[``; return the regex and the index after ``]``.

    Go's rules: a class is non-empty; ``-`` and ``]`` must be escaped unless ``]`` closes a
    non-empty class; a range whose low end is above its high end matches nothing.
    """
    negated = i < len(pattern) and pattern[i] == "^"
    if negated:
        i += 1
    ranges: list[tuple[str, str]] = []
    while True:
        if i < len(pattern) and pattern[i] == "]" and ranges:
            i += 1
            break
        low, i = _glob_class_char(pattern, i)
        high = low
        if pattern[i] == "-":
            high, i = _glob_class_char(pattern, i + 1)
        ranges.append((low, high))
    parts = [
        re.escape(lo) if lo == hi else f"{re.escape(lo)}-{re.escape(hi)}"
        for lo, hi in ranges
        if lo <= hi
    ]
    if not parts:
        return ("(?s:.)" if negated else _NOTHING), i
    return f"[{'^' if negated else ''}{''.join(parts)}]", i


def _glob_class_char(pattern: str, i: int) -> tuple[str, int]:
    if i >= len(pattern) or pattern[i] in "-]":
        raise _BadPattern
    if pattern[i] == "\\":
        i += 1
        if i >= len(pattern):
            raise _BadPattern
    if i + 1 >= len(pattern):  # the class is never closed
        raise _BadPattern
    return pattern[i], i + 1
