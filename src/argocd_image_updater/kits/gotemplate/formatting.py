"""Go's ``fmt`` printing as templates print values: ``%v``, ``Sprint``, ``Sprintf``, ``Quote``.

Values follow the package's data model: a mapping prints like a Go map (sorted keys),
a dataclass like a struct, a list or tuple like a slice, ``None`` like ``nil``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any


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
    return _format(value, "v", {"V"} if plus else set(), None)


def _bad_verb(value: Any, verb: str) -> str:
    if value is None or value is NO_VALUE:
        return f"%!{verb}(<nil>)"
    return f"%!{verb}({type_name(value)}={format_v(value)})"


def _format(value: Any, verb: str, flags: set[str], prec: int | None) -> str:
    if verb == "T":
        return type_name(value)
    if value is None or value is NO_VALUE:
        return "<nil>" if verb == "v" else _bad_verb(value, verb)
    if isinstance(value, bool):
        return ("true" if value else "false") if verb in "vt" else _bad_verb(value, verb)
    if isinstance(value, int):
        return _format_int(value, verb, flags)
    if isinstance(value, float):
        return _format_float(value, verb, flags, prec)
    if isinstance(value, str):
        return _format_str(value, verb, flags, prec)
    if isinstance(value, list | tuple):
        return "[" + " ".join(_format(v, verb, flags, prec) for v in value) + "]"
    if isinstance(value, Mapping):
        items = (
            f"{_format(k, verb, flags, prec)}:{_format(v, verb, flags, prec)}"
            for k, v in sorted_items(value)
        )
        return "map[" + " ".join(items) + "]"
    if is_struct(value):
        parts = []
        for f in dataclasses.fields(value):
            text = _format(getattr(value, f.name), verb, flags, prec)
            parts.append(f"{f.name}:{text}" if "V" in flags else text)
        return "{" + " ".join(parts) + "}"
    return str(value) if verb in "vs" else _bad_verb(value, verb)


def _format_int(value: int, verb: str, flags: set[str]) -> str:
    sign = "-" if value < 0 else ("+" if "+" in flags else "")
    mag = abs(value)
    if verb in "vd":
        return sign + str(mag)
    if verb in "xXobO":
        base = {"x": "x", "X": "X", "o": "o", "b": "b", "O": "o"}[verb]
        digits = format(mag, base)
        prefix = ""
        if verb == "O":
            prefix = "0o"
        elif "#" in flags:
            prefix = {"x": "0x", "X": "0X", "o": "0", "b": "0b"}[verb]
        return sign + prefix + digits
    if verb in "cqU":
        ch = chr(value) if 0 <= value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF else "\ufffd"
        if verb == "c":
            return ch
        if verb == "q":
            return go_quote(ch, "'")
        return f"U+{value:04X}"
    return _bad_verb(value, verb)


def _format_float(value: float, verb: str, flags: set[str], prec: int | None) -> str:
    if verb not in "vgGeEfF":
        return _bad_verb(value, verb)
    if math.isnan(value) or math.isinf(value) or (verb in "vgG" and prec is None):
        text = _go_float(value)
        text = text.upper() if verb == "G" else text
    else:
        spec = "g" if verb == "v" else verb
        text = f"{value:.{6 if prec is None else prec}{spec}}"
        if spec in "gG" and "e" in text.lower():
            mantissa, _, exp = text.partition("e" if spec == "g" else "E")
            text = f"{mantissa}{'e' if spec == 'g' else 'E'}{exp[0]}{int(exp[1:]):02d}"
    if "+" in flags and not text.startswith(("-", "+")):
        text = "+" + text
    return text


def _format_str(value: str, verb: str, flags: set[str], prec: int | None) -> str:
    if verb in "vs":
        return value if prec is None else value[:prec]
    if verb == "q":
        if "#" in flags and "`" not in value and all(c.isprintable() or c == "\t" for c in value):
            return f"`{value}`"
        return go_quote(value)
    if verb in "xX":
        data = value.encode()
        if prec is not None:
            data = data[:prec]
        text = data.hex()
        return text.upper() if verb == "X" else text
    return _bad_verb(value, verb)


def _pad(text: str, width: int | None, flags: set[str], numeric: bool) -> str:
    if width is None or len(text) >= width:
        return text
    if "-" in flags:
        return text.ljust(width)
    if "0" in flags and numeric:
        sign = text[0] if text[:1] in ("-", "+") else ""
        return sign + text[len(sign) :].rjust(width - len(sign), "0")
    return text.rjust(width)


def sprintf(fmt: str, args: Sequence[Any]) -> str:
    """Go's ``fmt.Sprintf`` for the verbs listed in the module docstring."""
    out: list[str] = []
    argi, i, n = 0, 0, len(fmt)
    while i < n:
        j = fmt.find("%", i)
        if j < 0:
            out.append(fmt[i:])
            break
        out.append(fmt[i:j])
        i = j + 1
        flags: set[str] = set()
        while i < n and fmt[i] in "+-# 0":
            flags.add(fmt[i])
            i += 1
        width, i, argi = _star_or_digits(fmt, i, args, argi, out, "BADWIDTH")
        if width is not None and width < 0:
            flags.add("-")
            width = -width
        prec: int | None = None
        if i < n and fmt[i] == ".":
            prec, i, argi = _star_or_digits(fmt, i + 1, args, argi, out, "BADPREC")
            prec = 0 if prec is None or prec < 0 else prec
        if i >= n:
            out.append("%!(NOVERB)")
            break
        verb = fmt[i]
        i += 1
        if verb == "%":
            out.append("%")
            continue
        if verb == "v":
            # Like Go: "%+v" names struct fields instead of forcing a sign; "%#v" is not modelled.
            if "+" in flags:
                flags.add("V")
            flags -= {"+", "#"}
        if argi >= len(args):
            out.append(f"%!{verb}(MISSING)")
            continue
        arg = args[argi]
        argi += 1
        numeric = isinstance(arg, int | float) and not isinstance(arg, bool)
        out.append(_pad(_format(arg, verb, flags, prec), width, flags, numeric))
    if argi < len(args):
        extra = ", ".join(
            "<nil>" if a is None else f"{type_name(a)}={format_v(a)}" for a in args[argi:]
        )
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)


def _star_or_digits(
    fmt: str, i: int, args: Sequence[Any], argi: int, out: list[str], bad: str
) -> tuple[int | None, int, int]:
    if fmt[i : i + 1] == "*":
        if argi < len(args) and isinstance(args[argi], int) and not isinstance(args[argi], bool):
            return int(args[argi]), i + 1, argi + 1
        out.append(f"%!({bad})")
        return None, i + 1, argi + 1
    j = i
    while j < len(fmt) and fmt[j].isdigit():
        j += 1
    return (int(fmt[i:j]) if j > i else None), j, argi


def sprint(args: Sequence[Any], line: bool) -> str:
    out: list[str] = []
    for k, arg in enumerate(args):
        if k and (line or not (isinstance(arg, str) or isinstance(args[k - 1], str))):
            out.append(" ")
        out.append(format_v(arg))
    return "".join(out) + ("\n" if line else "")
