"""Go's ``fmt`` printing as templates print values: ``%v``, ``Sprint``, ``Quote`` (``Sprintf``'s
format parsing is in :mod:`.printf`).

Values follow the package's data model: a mapping prints like a Go map (sorted keys),
a dataclass like a struct, a list or tuple like a slice, ``None`` like ``nil``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from argocd_image_updater.kits.gotemplate.errors import TextTooLong


class NoValue:
    """Go's invalid ``reflect.Value``: the result of a missing map key; prints ``<no value>``."""

    def __repr__(self) -> str:
        return "<no value>"


NO_VALUE = NoValue()


def is_struct(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def type_name(value: Any) -> str:
    if value is None or value is NO_VALUE:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "[]interface {}"
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    return type(value).__name__


def _sort_key(key: Any) -> tuple[int, Any]:
    if isinstance(key, bool):
        return (0, key)
    if isinstance(key, int | float):
        return (1, key)
    return (2, str(key))


def sorted_items(mapping: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    return sorted(mapping.items(), key=lambda kv: _sort_key(kv[0]))


def _go_float(value: float) -> str:
    """Go's ``%v`` for float64: shortest digits, exponent form below 1e-4 or from 1e6 on."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digit_tuple, exp = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exp, int)
    exp += len(digit_tuple) - len(digits)
    point = len(digits) + exp  # position of the decimal point relative to the digits
    prefix = "-" if sign else ""
    x = point - 1
    if x < -4 or x >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return prefix + digits + "0" * (point - len(digits))
    return f"{prefix}{digits[:point]}.{digits[point:]}"


def go_quote(text: str, quote: str = '"') -> str:
    """Go's ``strconv.Quote`` (what ``printf "%q"`` prints for a string); with ``quote="'"``
    Go's ``QuoteRune``."""
    out = [quote]
    for ch in text:
        code = ord(ch)
        if ch in (quote, "\\"):
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ch in "\a\b\f\n\r\t\v":
            out.append("\\" + "abfnrtv"["\a\b\f\n\r\t\v".index(ch)])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append(quote)
    return "".join(out)


def go_sprint(value: Any) -> str:
    """Go's ``fmt.Sprint`` of one value, as a template prints it (``%v``)."""
    return format_v(value)


def format_v(value: Any, plus: bool = False) -> str:
    """Go's ``fmt`` ``%v`` (``%+v`` with ``plus``) for the supported value types."""
    return format_value(value, Spec("v", frozenset({"V"}) if plus else frozenset()))


@dataclass(frozen=True, slots=True)
class Spec:
    """One verb with its flags (``+ - # 0`` and space; ``V`` for ``%+v``), precision and width,
    and ``room``: the most characters the value may print (:class:`TextTooLong` beyond)."""

    verb: str
    flags: frozenset[str]
    prec: int | None = None
    width: int | None = None
    room: int | None = None


def _bad_verb(value: Any, verb: str) -> str:
    if value is None or value is NO_VALUE:
        return f"%!{verb}(<nil>)"
    return f"%!{verb}({type_name(value)}={format_v(value)})"


def _check(spec: Spec, size: int) -> None:
    if spec.room is not None and size > spec.room:
        raise TextTooLong()


def _pad(text: str, spec: Spec, zero: bool = False) -> str:
    """``text`` padded to the width (Go pads every scalar, also inside a slice or map); with
    ``zero`` and the ``0`` flag, zeros go between the sign and the digits."""
    width = spec.width
    if width is None or len(text) >= width:
        return text
    _check(spec, width)
    if "-" in spec.flags:
        return text.ljust(width)
    if zero and "0" in spec.flags:
        sign = text[0] if text[:1] in ("-", "+", " ") else ""
        return sign + text[len(sign) :].rjust(width - len(sign), "0")
    return text.rjust(width)


def _join(texts: Iterable[str], spec: Spec, sep: str = " ") -> str:
    """The texts joined, checking their running size against ``spec.room``."""
    out: list[str] = []
    size = 0
    for text in texts:
        size += len(text) + len(sep)
        _check(spec, size)
        out.append(text)
    return sep.join(out)


def format_value(value: Any, spec: Spec) -> str:
    """Go's ``fmt`` formatting of one value with ``spec``."""
    verb = spec.verb
    if verb == "T":
        return _pad(type_name(value), spec)
    if value is None or value is NO_VALUE:
        return _pad("<nil>", spec) if verb == "v" else _bad_verb(value, verb)
    if isinstance(value, bool):
        return _pad("true" if value else "false", spec) if verb in "vt" else _bad_verb(value, verb)
    if isinstance(value, int):
        return _format_int(value, spec)
    if isinstance(value, float):
        return _format_float(value, spec)
    if isinstance(value, str):
        return _format_str(value, spec)
    if isinstance(value, list | tuple):
        return "[" + _join((format_value(v, spec) for v in value), spec) + "]"
    if isinstance(value, Mapping):
        items = (f"{format_value(k, spec)}:{format_value(v, spec)}" for k, v in sorted_items(value))
        return "map[" + _join(items, spec) + "]"
    if is_struct(value):
        fields = (
            (f"{f.name}:" if "V" in spec.flags else "") + format_value(getattr(value, f.name), spec)
            for f in dataclasses.fields(value)
        )
        return "{" + _join(fields, spec) + "}"
    return _pad(str(value), spec) if verb in "vs" else _bad_verb(value, verb)


def _sign(negative: bool, flags: frozenset[str]) -> str:
    if negative:
        return "-"
    return "+" if "+" in flags else (" " if " " in flags else "")


def _format_int(value: int, spec: Spec) -> str:
    verb, flags, prec, width = spec.verb, spec.flags, spec.prec, spec.width
    if verb in "cqU":
        ch = chr(value) if 0 <= value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF else "\ufffd"
        text = ch if verb == "c" else go_quote(ch, "'") if verb == "q" else f"U+{value:04X}"
        return _pad(text, spec)
    if verb not in "vdxXobO":
        return _bad_verb(value, verb)
    sign = _sign(value < 0, flags)
    digits = str(abs(value)) if verb in "vd" else format(abs(value), "o" if verb == "O" else verb)
    if prec is not None:
        # Go: a precision is the minimum number of digits, and cancels the 0 flag.
        if prec == 0 and value == 0:
            digits = ""
        _check(spec, prec)
        digits = digits.rjust(prec, "0")
    elif width is not None and "0" in flags and "-" not in flags:
        digits = digits.rjust(width - len(sign), "0")
    prefix = ""
    if verb == "O":
        prefix = "0o"
    elif "#" in flags:
        prefix = {"x": "0x", "X": "0X", "b": "0b", "o": "" if digits[:1] == "0" else "0"}.get(
            verb, ""
        )
    return _pad(sign + prefix + digits, spec)


def _format_float(value: float, spec: Spec) -> str:
    verb, prec = spec.verb, spec.prec
    if verb not in "vgGeEfF":
        return _bad_verb(value, verb)
    special = math.isnan(value) or math.isinf(value)
    if special or (verb in "vgG" and prec is None):
        text = _go_float(value)
        text = text.upper() if verb == "G" else text
    else:
        kind = "g" if verb == "v" else verb
        digits = 6 if prec is None else prec
        _check(spec, digits)
        text = f"{value:.{digits}{kind}}"
        if kind in "gG" and "e" in text.lower():
            mantissa, _, exp = text.partition("e" if kind == "g" else "E")
            text = f"{mantissa}{'e' if kind == 'g' else 'E'}{exp[0]}{int(exp[1:]):02d}"
    if not text.startswith(("-", "+")):
        text = _sign(False, spec.flags) + text
    return _pad(text, spec, zero=not special)


def _format_str(value: str, spec: Spec) -> str:
    verb, prec = spec.verb, spec.prec
    if verb in "vs":
        return _pad(value if prec is None else value[:prec], spec)
    if verb == "q":
        text = value if prec is None else value[:prec]
        if (
            "#" in spec.flags
            and "`" not in text
            and all(c.isprintable() or c == "\t" for c in text)
        ):
            return _pad(f"`{text}`", spec)
        return _pad(go_quote(text), spec)
    if verb in "xX":
        data = value.encode()
        if prec is not None:
            data = data[:prec]
        text = data.hex()
        return _pad(text.upper() if verb == "X" else text, spec)
    return _bad_verb(value, verb)


def sprint(args: Sequence[Any], line: bool, limit: int | None = None) -> str:
    """Go's ``fmt.Sprint`` (``Sprintln`` with ``line``); :class:`TextTooLong` past ``limit``
    characters."""
    spec = Spec("v", frozenset(), room=limit)
    out: list[str] = []
    size = 0
    for k, arg in enumerate(args):
        if k and (line or not (isinstance(arg, str) or isinstance(args[k - 1], str))):
            out.append(" ")
        text = format_value(arg, spec)
        size += len(text) + 1
        _check(spec, size)
        out.append(text)
    return "".join(out) + ("\n" if line else "")
