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

from argocd_image_updater.kits.globs import GlobError, check_glob, match_glob


class PatternError(ValueError):
    """A malformed glob pattern."""


class SelectorError(ValueError):
    """A label selector Kubernetes would reject."""


def _bad(pattern: str) -> PatternError:
    return PatternError(f"syntax error in pattern '{pattern}'")


def go_path_match(pattern: str, name: str) -> bool:
    """Whether ``name`` matches the glob ``pattern`` (Go ``filepath.Match`` semantics);
    :class:`PatternError` when the pattern is malformed."""
    try:
        return match_glob(pattern, name)
    except GlobError:
        raise _bad(pattern) from None


def check_pattern(pattern: str) -> None:
    """Raise :class:`PatternError` when ``pattern`` is malformed."""
    try:
        check_glob(pattern)
    except GlobError:
        raise _bad(pattern) from None


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
