"""The lexer: template text to tokens (text, delimiters, words, literals, spaces).

Go string, character and number literals are decoded here (``strconv.Unquote`` escapes, hex,
octal, binary and ``_`` separators). Errors go to the ``fail(pos, message)`` callback, which
reports the position and never returns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from argocd_image_updater.kits.gotemplate.formatting import go_quote

_SPACE = " \t\r\n"
_KEYWORDS = frozenset(
    {"if", "else", "end", "range", "with", "break", "continue", "define", "template", "block"}
)
_NUMBER = re.compile(
    r"[+-]?(?:0[xX][0-9a-fA-F_]*(?:\.[0-9a-fA-F_]*)?(?:[pP][+-]?[0-9_]+)?"
    r"|0[oO][0-7_]*|0[bB][01_]*"
    r"|[0-9_]*(?:\.[0-9_]*)?(?:[eE][+-]?[0-9_]+)?)i?"
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str
    val: str
    pos: int
    end: int
    value: Any = None


def _is_alnum(ch: str) -> bool:
    return ch == "_" or ch.isalpha() or ch.isdecimal()


def _describe(ch: str) -> str:
    return f"U+{ord(ch):04X} {go_quote(ch, chr(39))}"


class Lexer:
    def __init__(self, src: str, fail: Callable[[int, str], NoReturn]) -> None:
        self.src = src
        self.fail = fail
        self.toks: list[Token] = []

    def run(self) -> list[Token]:
        src, n, pos, trim_next = self.src, len(self.src), 0, False
        while True:
            i = src.find("{{", pos)
            text = src[pos : n if i < 0 else i]
            left_trim = (
                i >= 0 and src.startswith("-", i + 2) and src[i + 3 : i + 4] in tuple(_SPACE)
            )
            if trim_next:
                text = text.lstrip(_SPACE)
            if left_trim:
                text = text.rstrip(_SPACE)
            if text:
                self.toks.append(Token("text", text, pos, pos + len(text)))
            if i < 0:
                break
            p = i + (4 if left_trim else 2)
            if src.startswith("/*", p):
                pos, trim_next = self._comment(i, p)
                continue
            self.toks.append(Token("{{", "{{", i, p))
            pos, trim_next = self._action(i, p)
        self.toks.append(Token("eof", "", n, n))
        return self.toks

    def _right_delim(self, p: int) -> int:
        """Length of the closing delimiter at ``p`` (4 with a trim marker), else 0."""
        src = self.src
        if src[p : p + 1] in tuple(_SPACE) and src.startswith("-}}", p + 1):
            return 4
        return 2 if src.startswith("}}", p) else 0

    def _comment(self, start: int, p: int) -> tuple[int, bool]:
        close = self.src.find("*/", p + 2)
        if close < 0:
            self.fail(start, "unclosed comment")
        q = close + 2
        width = self._right_delim(q)
        if not width:
            self.fail(q, "comment ends before closing delimiter")
        return q + width, width == 4

    def _at_terminator(self, p: int) -> bool:
        return p >= len(self.src) or self.src[p] in _SPACE + ".,|:()" or self.src[p : p + 2] == "}}"

    def _emit(self, kind: str, start: int, end: int, value: Any = None) -> int:
        self.toks.append(Token(kind, self.src[start:end], start, end, value))
        return end

    def _action(self, start: int, p: int) -> tuple[int, bool]:
        src, n, depth = self.src, len(self.src), 0
        while True:
            width = self._right_delim(p)
            if width:
                if depth:
                    self.fail(p, "unclosed left paren")
                self._emit("}}", p, p + width)
                return p + width, width == 4
            if p >= n:
                self.fail(start, "unclosed action")
            ch = src[p]
            if ch in _SPACE:
                q = p
                while q < n and src[q] in _SPACE:
                    q += 1
                if src.startswith("-}}", q):
                    q -= 1  # keep the last space: it belongs to the " -}}" trim marker
                p = self._emit("space", p, q) if q > p else p
            elif ch == "=":
                p = self._emit("=", p, p + 1)
            elif ch == ":":
                if not src.startswith(":=", p):
                    self.fail(p, "expected :=")
                p = self._emit(":=", p, p + 2)
            elif ch in "|,":
                p = self._emit(ch, p, p + 1)
            elif ch == "(":
                depth += 1
                p = self._emit("(", p, p + 1)
            elif ch == ")":
                depth -= 1
                if depth < 0:
                    self.fail(p, "unexpected right paren")
                p = self._emit(")", p, p + 1)
            elif ch == '"':
                p = self._quoted(p)
            elif ch == "`":
                close = src.find("`", p + 1)
                if close < 0:
                    self.fail(p, "unterminated raw quoted string")
                # Go discards carriage returns inside raw strings.
                raw = src[p + 1 : close].replace("\r", "")
                p = self._emit("string", p, close + 1, raw)
            elif ch == "'":
                p = self._char(p)
            elif ch in "$.":
                p = self._field_or_variable(p)
            elif ch in "+-" or "0" <= ch <= "9":
                p = self._number(p)
            elif _is_alnum(ch):
                p = self._identifier(p)
            else:
                self.fail(p, f"unrecognized character in action: {_describe(ch)}")

    def _field_or_variable(self, p: int) -> int:
        src, ch = self.src, self.src[p]
        if ch == "." and src[p + 1 : p + 2].isdigit():
            return self._number(p)
        q = p + 1
        while q < len(src) and _is_alnum(src[q]):
            q += 1
        if not self._at_terminator(q):
            self.fail(q, f"bad character {_describe(src[q])}")
        if q == p + 1:
            return self._emit("dot" if ch == "." else "var", p, q)
        return self._emit("field" if ch == "." else "var", p, q)

    def _identifier(self, p: int) -> int:
        src, q = self.src, p
        while q < len(src) and _is_alnum(src[q]):
            q += 1
        if not self._at_terminator(q):
            self.fail(q, f"bad character {_describe(src[q])}")
        word = src[p:q]
        if word in ("true", "false"):
            return self._emit("bool", p, q, word == "true")
        if word == "nil" or word in _KEYWORDS:
            return self._emit(word, p, q)
        return self._emit("ident", p, q)

    def _number(self, p: int) -> int:
        m = _NUMBER.match(self.src, p)
        q = m.end() if m else p
        if q < len(self.src) and _is_alnum(self.src[q]):
            self.fail(p, f"bad number syntax: {go_quote(self.src[p : q + 1])}")
        text = self.src[p:q]
        return self._emit("number", p, q, _number_value(text, lambda msg: self.fail(p, msg)))

    def _quoted(self, p: int) -> int:
        src, q = self.src, p + 1
        while True:
            if q >= len(src) or src[q] == "\n":
                self.fail(p, "unterminated quoted string")
            if src[q] == "\\":
                q += 2
                continue
            if src[q] == '"':
                break
            q += 1
        value = _unescape(src[p + 1 : q], '"', lambda msg: self.fail(p, msg))
        return self._emit("string", p, q + 1, value)

    def _char(self, p: int) -> int:
        src, q = self.src, p + 1
        while True:
            if q >= len(src) or src[q] == "\n":
                self.fail(p, "unterminated character constant")
            if src[q] == "\\":
                q += 2
                continue
            if src[q] == "'":
                break
            q += 1
        value = _unescape(src[p + 1 : q], "'", lambda msg: self.fail(p, msg))
        if len(value) != 1:
            self.fail(p, f"malformed character constant: {src[p : q + 1]}")
        return self._emit("number", p, q + 1, ord(value))


_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _unescape(body: str, quote: str, fail: Callable[[str], NoReturn]) -> str:
    """Decode Go string escapes (``strconv.Unquote``); ``\\x``/octal escapes are bytes."""
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode()
            i += 1
            continue
        esc = body[i + 1 : i + 2]
        if esc in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[esc].encode()
            i += 2
        elif esc in ("\\", quote):
            out += esc.encode()
            i += 2
        elif esc in ("x", "u", "U"):
            size = {"x": 2, "u": 4, "U": 8}[esc]
            digits = body[i + 2 : i + 2 + size]
            if len(digits) != size or not all(c in "0123456789abcdefABCDEF" for c in digits):
                fail(f"invalid escape sequence \\{esc}{digits}")
            code = int(digits, 16)
            if esc == "x":
                out.append(code)
            elif code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                fail(f"invalid Unicode code point \\{esc}{digits}")
            else:
                out += chr(code).encode()
            i += 2 + size
        elif esc and esc in "01234567":
            digits = body[i + 1 : i + 4]
            if len(digits) != 3 or not all(c in "01234567" for c in digits) or int(digits, 8) > 255:
                fail(f"invalid octal escape \\{digits}")
            out.append(int(digits, 8))
            i += 4
        else:
            fail(f"invalid escape sequence \\{esc}")
    return out.decode("utf-8", errors="replace")


def _number_value(text: str, fail: Callable[[str], NoReturn]) -> int | float:
    if not any(c.isdigit() for c in text):
        fail(f"bad number syntax: {go_quote(text)}")
    if text.endswith("i"):
        fail(f"complex numbers are not supported: {text}")
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-").replace("_", "").lower()
    try:
        if body.startswith("0x"):
            if "." in body or "p" in body:
                return sign * float.fromhex(body)
            return sign * int(body[2:], 16)
        if body.startswith(("0o", "0b")):
            return sign * int(body[2:], 8 if body[1] == "o" else 2)
        if any(c in body for c in ".e"):
            return sign * float(body)
        if len(body) > 1 and body.startswith("0"):
            return sign * int(body, 8)
        return sign * int(body)
    except ValueError:
        fail(f"illegal number syntax: {go_quote(text)}")
