"""Go-style durations (``2m``, ``1h30m``, ``500ms``): parsing and printing.

The original reads ``credsexpire``, ``--interval`` and ``IMAGE_UPDATER_INTERVAL`` with Go's
``time.ParseDuration`` and prints them with ``time.Duration.String``. Python has no parser for
this syntax (``datetime``/``isodate`` speak ISO 8601, ``pytimeparse`` accepts other spellings and
is not a dependency), so both directions are written here by hand, following Go's rules exactly:
an optional sign, then one or more ``<decimal number><unit>`` terms with units ``ns``, ``us``
(``µs``, ``μs``), ``ms``, ``s``, ``m``, ``h``; ``0`` alone needs no unit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta
from fractions import Fraction
from typing import Final

from argocd_image_updater.observe.log import get_logger

_NS: Final = 1
_US: Final = 1_000
_MS: Final = 1_000_000
_S: Final = 1_000_000_000
_M: Final = 60 * _S
_H: Final = 60 * _M
_UNITS: Final[Mapping[str, int]] = {
    "ns": _NS,
    "us": _US,
    "µs": _US,  # U+00B5 micro sign
    "μs": _US,  # U+03BC Greek small letter mu
    "ms": _MS,
    "s": _S,
    "m": _M,
    "h": _H,
}
_MAX_NS: Final = (1 << 63) - 1
_UNIT_HINT: Final = (
    "use a number with a unit such as 30s, 2m, 1h30m or 500ms (units: ns, us, ms, s, m, h)"
)

_log = get_logger(__name__)


class DurationError(ValueError):
    """A text that is not a Go duration; the message names the text."""


def _digits(text: str, pos: int) -> int:
    end = pos
    while end < len(text) and "0" <= text[end] <= "9":
        end += 1
    return end


def parse_go_duration_ns(text: str) -> int:
    """Parse ``text`` like Go's ``time.ParseDuration`` and return whole nanoseconds."""
    s = text.strip()
    neg = False
    if s[:1] in ("-", "+"):
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise DurationError(f"invalid duration '{text}': {_UNIT_HINT}")
    total = Fraction(0)
    pos = 0
    while pos < len(s):
        start = pos
        pos = _digits(s, pos)
        whole = s[start:pos]
        frac = ""
        if pos < len(s) and s[pos] == ".":
            frac_start = pos + 1
            pos = _digits(s, frac_start)
            frac = s[frac_start:pos]
        if not whole and not frac:
            raise DurationError(f"invalid duration '{text}': {_UNIT_HINT}")
        unit_start = pos
        while pos < len(s) and s[pos] != "." and not ("0" <= s[pos] <= "9"):
            pos += 1
        unit = s[unit_start:pos]
        if not unit:
            raise DurationError(f"missing unit in duration '{text}': {_UNIT_HINT}")
        if unit not in _UNITS:
            raise DurationError(f"unknown unit '{unit}' in duration '{text}': {_UNIT_HINT}")
        value = Fraction(int(whole or "0"))
        if frac:
            value += Fraction(int(frac), 10 ** len(frac))
        total += value * _UNITS[unit]
    ns = int(total)  # truncates the sub-nanosecond part, as Go does
    if ns > _MAX_NS + (1 if neg else 0):
        raise DurationError(f"duration '{text}' is out of range (at most about 292 years)")
    return -ns if neg else ns


def parse_go_duration(text: str) -> timedelta:
    """Parse a Go duration (``2m``, ``1h30m``, ``1.5h``, ``-3s``, ``0``) into a timedelta.

    Surrounding whitespace is ignored. A ``timedelta`` holds microseconds, so parts below one
    microsecond (``500ns``) are dropped. Raises :class:`DurationError` naming ``text``.
    """
    ns = parse_go_duration_ns(text)
    us = abs(ns) // _US
    return timedelta(microseconds=-us if ns < 0 else us)


def _frac(value: int, prec: int) -> tuple[str, int]:
    """Split ``value`` into ``value // 10**prec`` and its fraction, without trailing zeros."""
    scale = 10**prec
    digits = f"{value % scale:0{prec}d}".rstrip("0") if prec else ""
    return ("." + digits if digits else ""), value // scale


def format_go_duration_ns(ns: int) -> str:
    """Print nanoseconds like Go's ``time.Duration.String`` (``1m0s``, ``1.5s``, ``250ms``)."""
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u == 0:
        return "0s"
    if u < _S:
        if u < _US:
            return f"{sign}{u}ns"
        if u < _MS:
            frac, whole = _frac(u, 3)
            return f"{sign}{whole}{frac}µs"
        frac, whole = _frac(u, 6)
        return f"{sign}{whole}{frac}ms"
    frac, seconds = _frac(u, 9)
    minutes, seconds = divmod(seconds, 60)
    out = f"{seconds}{frac}s"
    if minutes:
        hours, minutes = divmod(minutes, 60)
        out = f"{minutes}m{out}"
        if hours:
            out = f"{hours}h{out}"
    return sign + out


def format_go_duration(td: timedelta) -> str:
    """Print ``td`` like Go: 1m → ``1m0s``, 1h → ``1h0m0s``, 1s → ``1s``, 0 → ``0s``."""
    ns = ((td.days * 86_400 + td.seconds) * 1_000_000 + td.microseconds) * _US
    return format_go_duration_ns(ns)


def duration_from_env(
    name: str, default: timedelta, env: Mapping[str, str] | None = None
) -> timedelta:
    """Read a duration from the environment variable ``name`` like the original does.

    Unset or empty gives ``default``; an invalid value logs a warning naming the variable and
    gives ``default`` too (the original's ``GetDurationVal``).
    """
    value = (os.environ if env is None else env).get(name, "")
    if not value.strip():
        return default
    try:
        return parse_go_duration(value)
    except DurationError as exc:
        _log.warning(
            "%s: %s; using the default %s", name, exc, format_go_duration(default), env_var=name
        )
        return default
