"""Writing a string as a YAML scalar: plain when it reads back as the same string, else quoted."""

from __future__ import annotations

import re

_PLAIN_SPECIAL = re.compile(
    r"""(?x)
    (?i:y|yes|n|no|true|false|on|off|null|~)
    | [-+]?0b[01_]+ | [-+]?0o?[0-7_]+ | [-+]?0x[0-9a-fA-F_]+ | [-+]?[0-9][0-9_]*
    | [-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?
    | [-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    | [-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+
    | [-+]?\.(?i:inf) | \.(?i:nan)
    | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}.*)?
    | <<|=
    """
)


_INDICATORS = "-?:,[]{}#&*!|>'\"%@`"


def is_safe_plain(value: str, in_flow: bool = False) -> bool:
    """True when ``value`` reads back as the same string if written as a plain scalar.

    Rejects the empty string, anything YAML 1.1 or 1.2 would resolve to a bool, null, number or
    timestamp (``yes``, ``on``, ``0755``, ``1.20``, ``~``…), a leading indicator character,
    ``": "``, ``" #"``, a trailing ``:``, surrounding spaces and non-printable characters; inside a
    flow collection also ``,[]{}``.
    """
    return not _PLAIN_SPECIAL.fullmatch(value) and plain_syntax_ok(value, in_flow)


def plain_syntax_ok(value: str, in_flow: bool) -> bool:
    """The characters of ``value`` can form a plain scalar (its type resolution aside)."""
    if not value or value != value.strip(" "):
        return False
    if value[0] in _INDICATORS or ": " in value or " #" in value or value.endswith(":"):
        return False
    if not value.isprintable():
        return False
    return not (in_flow and any(c in value for c in ",[]{}"))


_DOUBLE_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\0": "\\0",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    "\x1b": "\\e",
    "\x85": "\\N",
    "\xa0": "\\_",
    "\u2028": "\\L",
    "\u2029": "\\P",
}


def double_quoted(value: str) -> str:
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch in _DOUBLE_ESCAPES:
            out.append(_DOUBLE_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out) + '"'


def render(value: str, style: str | None, in_flow: bool) -> str:
    if style is None and is_safe_plain(value, in_flow):
        return value
    if style == "'" and value.isprintable():
        return "'" + value.replace("'", "''") + "'"
    return double_quoted(value)
