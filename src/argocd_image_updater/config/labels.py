"""Name globs and Kubernetes label selectors used to select Applications.

:func:`go_path_match` has the semantics of Go's ``path/filepath.Match`` on Unix: ``*`` matches
any run of characters except ``/``, ``?`` one character except ``/``, ``[...]`` a character class
(``[^...]`` negated, ``a-z`` ranges, ``\\`` escapes), ``\\c`` the character ``c``. A malformed
pattern raises :class:`PatternError`, even when the name already failed to match earlier.

:func:`selector_matches` implements ``metav1.LabelSelector``: ``matchLabels`` and
``matchExpressions`` (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``) all ANDed. A selector that
Kubernetes would reject raises :class:`SelectorError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final


class PatternError(ValueError):
    """A malformed glob pattern."""


class SelectorError(ValueError):
    """A label selector Kubernetes would reject."""


_SEP: Final = "/"
_META: Final = re.compile(r"[*?\[\\]")


def _bad(pattern: str) -> PatternError:
    return PatternError(f"syntax error in pattern '{pattern}'")


def _scan_chunk(pattern: str) -> tuple[bool, str, str]:
    """Split off leading stars and the chunk up to the next star outside a class."""
    star = False
    while pattern.startswith("*"):
        pattern = pattern[1:]
        star = True
    in_range = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 < len(pattern):
                i += 1
        elif c == "[":
            in_range = True
        elif c == "]":
            in_range = False
        elif c == "*" and not in_range:
            break
        i += 1
    return star, pattern[:i], pattern[i:]


def _class_char(chunk: str, whole: str) -> tuple[str, str]:
    """One (possibly escaped) character of a class, and the rest of the chunk."""
    if not chunk or chunk[0] in "-]":
        raise _bad(whole)
    if chunk[0] == "\\":
        chunk = chunk[1:]
        if not chunk:
            raise _bad(whole)
    char, rest = chunk[0], chunk[1:]
    if not rest:
        raise _bad(whole)
    return char, rest


def _match_chunk(chunk: str, s: str, whole: str) -> str | None:
    """Match ``chunk`` at the start of ``s``; the rest of ``s``, or ``None`` on mismatch.

    The whole chunk is always parsed, so syntax errors surface even after a mismatch.
    """
    failed = False
    while chunk:
        if not failed and not s:
            failed = True
        c = chunk[0]
        if c == "[":
            char = ""
            if not failed:
                char, s = s[0], s[1:]
            chunk = chunk[1:]
            negated = chunk.startswith("^")
            if negated:
                chunk = chunk[1:]
            matched = False
            count = 0
            while True:
                if chunk.startswith("]") and count > 0:
                    chunk = chunk[1:]
                    break
                lo, chunk = _class_char(chunk, whole)
                hi = lo
                if chunk[0] == "-":
                    hi, chunk = _class_char(chunk[1:], whole)
                if not failed and lo <= char <= hi:
                    matched = True
                count += 1
            if matched == negated:
                failed = True
        elif c == "?":
            if not failed:
                if s[0] == _SEP:
                    failed = True
                s = s[1:]
            chunk = chunk[1:]
        else:
            if c == "\\":
                chunk = chunk[1:]
                if not chunk:
                    raise _bad(whole)
            if not failed:
                if chunk[0] != s[0]:
                    failed = True
                s = s[1:]
            chunk = chunk[1:]
    return None if failed else s


def go_path_match(pattern: str, name: str) -> bool:
    """Whether ``name`` matches the glob ``pattern`` (Go ``filepath.Match`` semantics)."""
    # Fast paths for the patterns people write (`app`, `app-*`): one comparison instead of
    # the general matcher, which runs for every (ref, Application) pair of every cycle.
    meta = _META.search(pattern)
    if meta is None:
        return pattern == name
    if meta.start() == len(pattern) - 1 and pattern[-1] == "*":
        return name.startswith(pattern[:-1]) and _SEP not in name[len(pattern) - 1 :]
    whole = pattern
    while pattern:
        star, chunk, pattern = _scan_chunk(pattern)
        if star and not chunk:
            return _SEP not in name
        rest = _match_chunk(chunk, name, whole)
        if rest is not None and (not rest or pattern):
            name = rest
            continue
        if star:
            found = False
            i = 0
            while i < len(name) and name[i] != _SEP:
                rest = _match_chunk(chunk, name[i + 1 :], whole)
                if rest is not None:
                    if not pattern and rest:
                        i += 1
                        continue
                    name = rest
                    found = True
                    break
                i += 1
            if found:
                continue
        # No match: still report a malformed remainder of the pattern.
        while pattern:
            _, chunk, pattern = _scan_chunk(pattern)
            _match_chunk(chunk, "", whole)
        return False
    return not name


def check_pattern(pattern: str) -> None:
    """Raise :class:`PatternError` when ``pattern`` is malformed."""
    go_path_match(pattern, "validation")


# --- label selectors --------------------------------------------------------------------------

OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")

_NAME_RE: Final = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN_RE: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` entry."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


def _check_key(key: str) -> None:
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN_RE.match(prefix)):
        raise SelectorError(
            f"invalid label key '{key}': the prefix must be a DNS subdomain (e.g. example.com)"
        )
    if not name or len(name) > 63 or not _NAME_RE.match(name):
        raise SelectorError(
            f"invalid label key '{key}': the name must be 1-63 characters of [A-Za-z0-9-_.], "
            "starting and ending with an alphanumeric character"
        )


def _check_value(key: str, value: str) -> None:
    if value and (len(value) > 63 or not _NAME_RE.match(value)):
        raise SelectorError(
            f"invalid label value '{value}' for key '{key}': use at most 63 characters of "
            "[A-Za-z0-9-_.], starting and ending with an alphanumeric character"
        )


def check_selector(
    match_labels: Mapping[str, str] | None, expressions: Sequence[Requirement] | None
) -> None:
    """Raise :class:`SelectorError` for a selector Kubernetes would reject."""
    for key, value in (match_labels or {}).items():
        _check_key(key)
        _check_value(key, value)
    for req in expressions or ():
        _check_key(req.key)
        if req.operator in ("In", "NotIn"):
            if not req.values:
                raise SelectorError(
                    f"label selector on '{req.key}': operator {req.operator} needs at least "
                    "one value"
                )
            for value in req.values:
                _check_value(req.key, value)
        elif req.operator in ("Exists", "DoesNotExist"):
            if req.values:
                raise SelectorError(
                    f"label selector on '{req.key}': operator {req.operator} takes no values, "
                    f"got {list(req.values)}"
                )
        else:
            raise SelectorError(
                f"label selector on '{req.key}': '{req.operator}' is not a valid operator; "
                f"use one of {', '.join(OPERATORS)}"
            )


def selector_matches(
    match_labels: Mapping[str, str] | None,
    expressions: Sequence[Requirement] | None,
    labels: Mapping[str, str],
) -> bool:
    """Whether ``labels`` satisfy the selector; raises :class:`SelectorError` if invalid."""
    check_selector(match_labels, expressions)
    for key, value in (match_labels or {}).items():
        if labels.get(key) != value:
            return False
    for req in expressions or ():
        present = req.key in labels
        if req.operator == "In":
            ok = present and labels[req.key] in req.values
        elif req.operator == "NotIn":
            ok = not present or labels[req.key] not in req.values
        elif req.operator == "Exists":
            ok = present
        else:
            ok = not present
        if not ok:
            return False
    return True
