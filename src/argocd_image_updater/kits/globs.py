"""Globs with the semantics of Go's ``path/filepath.Match`` on Unix, as regular expressions.

``*`` matches any run of characters except ``/``, ``?`` one character except ``/``, ``[...]`` a
character class (``^`` negation, ``a-z`` ranges, an empty or reversed range matching nothing),
``\\`` escapes. A pattern Go would reject (``ErrBadPattern``) raises :class:`GlobError`. Python's
``fnmatch`` differs on each of these points. The product's tag filters and application name
patterns use it; this module knows nothing of them.
"""

from __future__ import annotations

import functools
import re


class _BadPattern(Exception):
    pass


class GlobError(ValueError):
    """A glob pattern that Go's ``filepath.Match`` would reject (``ErrBadPattern``)."""


@functools.lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """The regular expression equivalent to the glob ``pattern`` (Go ``filepath.Match``
    semantics: ``*`` and ``?`` never match ``/``); :class:`GlobError` when malformed."""
    try:
        return re.compile(_glob_to_regex(pattern), re.DOTALL)
    except _BadPattern:
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
        return ("(?s:.)" if negated else "(?!)"), i
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
