"""A Go ``text/template`` interpreter for commit-message and branch-name templates.

No maintained Python library implements Go's ``text/template`` (Jinja2 and friends use a different
syntax and semantics), and users bring templates written for the Go original, so this module
implements the part of the language such templates use. Everything else is rejected by
:meth:`Template.parse` with a ``line:col`` position, so a bad template fails at startup rather
than at commit time.

Supported:

* text, actions ``{{ … }}``, trim markers ``{{- `` / `` -}}`` (all adjacent whitespace, newlines
  included, is removed), comments ``{{/* … */}}``;
* pipelines ``a | b``, parenthesised sub-pipelines, fields ``.A.B`` (also on variables and on
  parenthesised results), ``.``, ``$``, variables ``$x := …``, ``$x = …``,
  ``$i, $e := range …``;
* ``if`` / ``else if`` / ``else`` / ``end``, ``with`` / ``else with`` / ``else``, ``range`` (over
  lists, over maps in sorted key order, over a non-negative int) with ``else``, ``break`` and
  ``continue``;
* string (``"…"`` with Go escapes, raw ``\\`…\\```), character, number (int, float, hex, octal,
  binary, ``_`` separators), ``true``/``false``/``nil`` literals;
* functions ``and or not len index slice eq ne lt le gt ge print println printf``; ``printf``
  knows the verbs ``%v %s %d %q %x %X %t %c %b %o %U %e %f %g %T %%`` with flags ``+ - # 0``,
  width and precision.

Opt-in extensions (:meth:`Template.parse` arguments):

* ``funcs``: extra functions by name (Go's ``Template.Funcs``), looked up before the builtins;
  their arity is checked at parse time from their signature; an exception they raise is an
  execution error ``error calling NAME: …``;
* ``templates``: a dict shared by every template parsed with it (Go's associated templates);
  with it ``{{define "name"}}…{{end}}`` (top level only), ``{{template "name" [pipeline]}}`` and
  ``{{block "name" pipeline}}…{{end}}`` are supported, and :meth:`Template.render` of a defined
  template executes it with any value as ``.``.

Not supported (parse error): ``define``, ``template`` and ``block`` without ``templates``,
``html``, ``js``, ``urlquery``, ``call``, complex numbers, methods.

Data model: a :class:`~collections.abc.Mapping` behaves like a Go map (a missing key yields
``<no value>``; ``index`` of a missing key yields ``""`` when every value of the map is a string,
like ``map[string]string``), a dataclass instance like a Go struct (an unknown field is an
error), ``list``/``tuple`` like a slice, ``None`` like ``nil``. Values print like Go's ``%v``.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NoReturn

__all__ = ["Template", "TemplateError", "go_quote", "go_sprint"]


class TemplateError(ValueError):
    """A template could not be parsed or executed; the message carries ``name:line:col``."""


# --------------------------------------------------------------------------------------- lexer

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
class _Tok:
    kind: str
    val: str
    pos: int
    end: int
    value: Any = None


def _is_alnum(ch: str) -> bool:
    return ch == "_" or ch.isalpha() or ch.isdecimal()


def _describe(ch: str) -> str:
    return f"U+{ord(ch):04X} {_go_quote(ch, chr(39))}"


class _Lexer:
    def __init__(self, src: str, fail: Callable[[int, str], NoReturn]) -> None:
        self.src = src
        self.fail = fail
        self.toks: list[_Tok] = []

    def run(self) -> list[_Tok]:
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
                self.toks.append(_Tok("text", text, pos, pos + len(text)))
            if i < 0:
                break
            p = i + (4 if left_trim else 2)
            if src.startswith("/*", p):
                pos, trim_next = self._comment(i, p)
                continue
            self.toks.append(_Tok("{{", "{{", i, p))
            pos, trim_next = self._action(i, p)
        self.toks.append(_Tok("eof", "", n, n))
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
        self.toks.append(_Tok(kind, self.src[start:end], start, end, value))
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
            self.fail(p, f"bad number syntax: {_go_quote(self.src[p : q + 1])}")
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
        fail(f"bad number syntax: {_go_quote(text)}")
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
        fail(f"illegal number syntax: {_go_quote(text)}")


# ---------------------------------------------------------------------------------- parse tree


@dataclass(slots=True)
class _Text:
    text: str


@dataclass(slots=True)
class _Literal:
    value: Any  # bool, int, float or str


@dataclass(slots=True)
class _Dot:
    pass


@dataclass(slots=True)
class _Nil:
    pass


@dataclass(slots=True)
class _Field:
    names: list[str]


@dataclass(slots=True)
class _Variable:
    name: str
    names: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Function:
    name: str


@dataclass(slots=True)
class _Chain:
    node: _Pipe
    names: list[str]


@dataclass(slots=True)
class _Command:
    pos: int
    src: str
    args: list[Any]  # _Literal, _Dot, _Nil, _Field, _Variable, _Function, _Chain or _Pipe


@dataclass(slots=True)
class _Pipe:
    pos: int
    decl: list[str]
    is_assign: bool
    cmds: list[_Command]


@dataclass(slots=True)
class _Action:
    pipe: _Pipe


@dataclass(slots=True)
class _Control:
    kind: str  # "if", "with" or "range"
    pipe: _Pipe
    body: list[Any]
    else_body: list[Any]


@dataclass(slots=True)
class _Loop:
    kind: str  # "break" or "continue"


@dataclass(slots=True)
class _Invoke:
    """``{{template "name" pipeline}}``."""

    pos: int
    src: str
    name: str
    pipe: _Pipe | None


_MAX_TEMPLATE_DEPTH = 100


# Arity of the builtins: (minimum, maximum or None).
_ARITY: dict[str, tuple[int, int | None]] = {
    "and": (1, None),
    "or": (1, None),
    "not": (1, 1),
    "len": (1, 1),
    "index": (1, None),
    "slice": (1, None),
    "print": (0, None),
    "println": (0, None),
    "printf": (1, None),
    "eq": (2, None),
    "ne": (2, 2),
    "lt": (2, 2),
    "le": (2, 2),
    "gt": (2, 2),
    "ge": (2, 2),
}
_UNSUPPORTED_FUNCS = frozenset({"html", "js", "urlquery", "call"})


def _arity_of(func: Callable[..., Any]) -> tuple[int, int | None]:
    """(minimum, maximum or None) positional arguments of an extra function."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return 0, None
    low, high = 0, 0
    for param in params:
        if param.kind == param.VAR_POSITIONAL:
            return low, None
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            high += 1
            if param.default is param.empty:
                low += 1
    return low, high


class _Parser:
    def __init__(
        self,
        tmpl: Template,
        toks: list[_Tok],
        fail: Callable[[int, str], NoReturn],
    ) -> None:
        self.tmpl = tmpl
        self.src = tmpl.source
        self.toks = toks
        self.i = 0
        self.fail = fail
        self.vars = ["$"]
        self.range_depth = 0
        self.arity = dict(_ARITY)
        self.arity.update({name: _arity_of(f) for name, f in tmpl._funcs.items()})

    # token helpers -------------------------------------------------------------------------

    def next(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def skip_space(self) -> None:
        if self.toks[self.i].kind == "space":
            self.i += 1

    def next_non_space(self) -> _Tok:
        self.skip_space()
        return self.next()

    def peek_non_space(self) -> _Tok:
        self.skip_space()
        return self.peek()

    def unexpected(self, tok: _Tok, context: str) -> NoReturn:
        shown = "EOF" if tok.kind == "eof" else _go_quote(tok.val)
        self.fail(tok.pos, f"unexpected {shown} in {context}")

    def expect_close(self, context: str) -> None:
        tok = self.next_non_space()
        if tok.kind != "}}":
            self.unexpected(tok, context)

    # structure -----------------------------------------------------------------------------

    def parse(self) -> list[Any]:
        nodes, _ = self.item_list(top=True)
        return nodes

    def item_list(self, top: bool) -> tuple[list[Any], str]:
        nodes: list[Any] = []
        while True:
            tok = self.next()
            if tok.kind == "eof":
                if top:
                    return nodes, "eof"
                self.fail(tok.pos, "unexpected EOF: missing {{end}}")
            if tok.kind == "text":
                nodes.append(_Text(tok.val))
                continue
            word = self.next_non_space()
            if word.kind in ("end", "else"):
                if top:
                    self.fail(word.pos, f"unexpected {{{{{word.kind}}}}}")
                if word.kind == "end":
                    self.expect_close("end")
                return nodes, word.kind
            if word.kind in ("if", "with", "range"):
                nodes.append(self.control(word))
            elif word.kind in ("break", "continue"):
                if not self.range_depth:
                    self.fail(word.pos, f"{{{{{word.kind}}}}} outside {{{{range}}}}")
                self.expect_close(word.kind)
                nodes.append(_Loop(word.kind))
            elif word.kind in ("define", "template", "block"):
                if self.tmpl._templates is None:
                    self.fail(word.pos, f"{{{{{word.kind}}}}} is not supported")
                if word.kind == "define":
                    if not top:
                        self.fail(word.pos, "unexpected {{define}} inside an action")
                    self.define(word)
                else:
                    nodes.append(self.invoke(word))
            else:
                self.i -= 1
                nodes.append(_Action(self.pipeline("command", "}}")))

    def template_name(self, word: _Tok) -> str:
        tok = self.next_non_space()
        if tok.kind != "string":
            self.unexpected(tok, f"{word.kind} clause")
        return str(tok.value)

    def named_body(self, word: _Tok, name: str) -> None:
        """Parse a define/block body up to its {{end}} and register it as template ``name``."""
        saved_vars, saved_depth = self.vars, self.range_depth
        self.vars, self.range_depth = ["$"], 0
        body, term = self.item_list(top=False)
        if term != "end":
            self.fail(self.toks[self.i - 1].pos, f"unexpected {{{{else}}}} in {word.kind}")
        self.vars, self.range_depth = saved_vars, saved_depth
        self.tmpl._associate(name, body)

    def define(self, word: _Tok) -> None:
        name = self.template_name(word)
        self.expect_close("define clause")
        self.named_body(word, name)

    def invoke(self, word: _Tok) -> _Invoke:
        name = self.template_name(word)
        pipe: _Pipe | None = None
        if self.peek_non_space().kind == "}}":
            self.next()
        else:
            pipe = self.pipeline(f"{word.kind} clause", "}}")
        src = self.src[word.pos : self.toks[self.i - 1].pos].strip()
        node = _Invoke(word.pos, "{{" + src + "}}", name, pipe)
        if word.kind == "block":
            if pipe is None:
                self.fail(word.pos, "missing pipeline in block clause")
            self.named_body(word, name)
        return node

    def control(self, word: _Tok) -> _Control:
        mark = len(self.vars)
        pipe = self.pipeline(word.kind, "}}")
        if word.kind == "range":
            self.range_depth += 1
        body, term = self.item_list(top=False)
        if word.kind == "range":
            self.range_depth -= 1
        else_body: list[Any] = []
        if term == "else":
            nxt = self.peek_non_space()
            if word.kind != "range" and nxt.kind == word.kind:
                # "{{else if …}}" is "{{else}}{{if …}}" sharing the one {{end}}.
                self.next_non_space()
                else_body = [self.control(nxt)]
            else:
                self.expect_close("else")
                else_body, term = self.item_list(top=False)
                if term != "end":
                    self.fail(self.toks[self.i - 1].pos, "expected {{end}}; found {{else}}")
        del self.vars[mark:]
        return _Control(word.kind, pipe, body, else_body)

    def pipeline(self, context: str, end: str) -> _Pipe:
        start = self.peek_non_space()
        decl: list[str] = []
        is_assign = False
        if start.kind == "var":
            decl, is_assign = self.declarations(context)
        cmds: list[_Command] = []
        while True:
            tok = self.peek_non_space()
            if tok.kind == end:
                self.next()
                break
            if tok.kind not in (
                "bool",
                "number",
                "dot",
                "field",
                "ident",
                "nil",
                "string",
                "var",
                "(",
            ):
                self.unexpected(tok, context)
            cmds.append(self.command(stage=len(cmds)))
            if self.toks[self.i - 1].kind == "|" and self.peek_non_space().kind == end:
                self.fail(self.peek().pos, "missing command after |")
        if not cmds:
            self.fail(start.pos, f"missing value for {context}")
        if not is_assign:
            self.vars.extend(decl)
        return _Pipe(start.pos, decl, is_assign, cmds)

    def declarations(self, context: str) -> tuple[list[str], bool]:
        save = self.i
        first = self.next_non_space()
        op = self.next_non_space()
        if op.kind in (":=", "="):
            names = [first.val]
        elif op.kind == ",":
            if context != "range":
                self.fail(op.pos, f"too many declarations in {context}")
            second = self.next_non_space()
            if second.kind != "var":
                self.unexpected(second, "range declaration")
            op = self.next_non_space()
            if op.kind not in (":=", "="):
                self.unexpected(op, "range declaration")
            names = [first.val, second.val]
        else:
            self.i = save
            return [], False
        if op.kind == "=":
            for name in names:
                if name not in self.vars:
                    self.fail(first.pos, f"undefined variable {_go_quote(name)}")
        return names, op.kind == "="

    def command(self, stage: int) -> _Command:
        start = self.peek_non_space().pos
        args: list[Any] = []
        end = start
        while True:
            self.skip_space()
            operand = self.operand()
            if operand is not None:
                args.append(operand)
                end = self.toks[self.i - 1].end
            tok = self.next()
            if tok.kind == "space":
                continue
            if tok.kind in ("}}", ")"):
                self.i -= 1
            elif tok.kind != "|":
                self.unexpected(tok, "operand")
            break
        cmd = _Command(start, self.src[start:end], args)
        self.check_command(cmd, stage)
        return cmd

    def check_command(self, cmd: _Command, stage: int) -> None:
        for arg in cmd.args[1:]:
            if isinstance(arg, _Function):  # a function name as an argument is called bare
                self.check_arity(arg.name, 0, cmd.pos)
        first = cmd.args[0]
        if isinstance(first, _Function):
            self.check_arity(first.name, len(cmd.args) - 1 + (1 if stage else 0), cmd.pos)
            return
        if isinstance(first, _Nil):
            self.fail(cmd.pos, "nil is not a command")
        if stage and isinstance(first, _Literal | _Dot):
            self.fail(cmd.pos, f"non executable command in pipeline stage {stage + 1}")
        if len(cmd.args) > 1 or stage:
            self.fail(cmd.pos, f"can't give argument to non-function {cmd.src.split()[0]}")

    def check_arity(self, name: str, got: int, pos: int) -> None:
        low, high = self.arity[name]
        if got < low or (high is not None and got > high):
            want = f"{low}" if low == high else f"at least {low}"
            self.fail(pos, f"wrong number of args for {name}: want {want} got {got}")

    def operand(self) -> Any:
        node = self.term()
        if node is None or self.peek().kind != "field":
            return node
        names: list[str] = []
        while self.peek().kind == "field":
            names.append(self.next().val[1:])
        if isinstance(node, _Field):
            return _Field(node.names + names)
        if isinstance(node, _Variable):
            return _Variable(node.name, node.names + names)
        if isinstance(node, _Pipe):
            return _Chain(node, names)
        self.fail(self.toks[self.i - len(names)].pos, "unexpected . after term")

    def term(self) -> Any:
        tok = self.next_non_space()
        kind = tok.kind
        if kind == "ident":
            if tok.val in _UNSUPPORTED_FUNCS and tok.val not in self.tmpl._funcs:
                self.fail(tok.pos, f"function {_go_quote(tok.val)} is not supported")
            if tok.val not in self.arity:
                self.fail(tok.pos, f"function {_go_quote(tok.val)} not defined")
            return _Function(tok.val)
        if kind == "dot":
            return _Dot()
        if kind == "nil":
            return _Nil()
        if kind == "var":
            if tok.val not in self.vars:
                self.fail(tok.pos, f"undefined variable {_go_quote(tok.val)}")
            return _Variable(tok.val)
        if kind == "field":
            return _Field([tok.val[1:]])
        if kind in ("bool", "number", "string"):
            return _Literal(tok.value)
        if kind == "(":
            return self.pipeline("parenthesized pipeline", ")")
        self.i -= 1
        return None


# ------------------------------------------------------------------------------- value helpers


class _NoValue:
    """Go's invalid ``reflect.Value``: the result of a missing map key; prints ``<no value>``."""

    def __repr__(self) -> str:
        return "<no value>"


_NO_VALUE = _NoValue()
_NO_FINAL = object()  # no value piped in from a previous command


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _ExecError(Exception):
    pass


def _is_struct(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _truth(value: Any) -> bool:
    if value is None or value is _NO_VALUE:
        return False
    if isinstance(value, bool | int | float):
        return value != 0
    if isinstance(value, str | list | tuple | Mapping):
        return len(value) > 0
    return True


def _type_name(value: Any) -> str:
    if value is None or value is _NO_VALUE:
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


def _sorted_items(mapping: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
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


def _go_quote(text: str, quote: str = '"') -> str:
    """Go's ``strconv.Quote`` / ``QuoteRune``."""
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


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote`` (what ``printf "%q"`` prints for a string)."""
    return _go_quote(text)


def go_sprint(value: Any) -> str:
    """Go's ``fmt.Sprint`` of one value, as a template prints it (``%v``)."""
    return _format_v(value)


def _format_v(value: Any, plus: bool = False) -> str:
    """Go's ``fmt`` ``%v`` (``%+v`` with ``plus``) for the supported value types."""
    return _format(value, "v", {"V"} if plus else set(), None)


def _bad_verb(value: Any, verb: str) -> str:
    if value is None or value is _NO_VALUE:
        return f"%!{verb}(<nil>)"
    return f"%!{verb}({_type_name(value)}={_format_v(value)})"


def _format(value: Any, verb: str, flags: set[str], prec: int | None) -> str:
    if verb == "T":
        return _type_name(value)
    if value is None or value is _NO_VALUE:
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
            for k, v in _sorted_items(value)
        )
        return "map[" + " ".join(items) + "]"
    if _is_struct(value):
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
            return _go_quote(ch, "'")
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
        return _go_quote(value)
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


def _sprintf(fmt: str, args: Sequence[Any]) -> str:
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
            "<nil>" if a is None else f"{_type_name(a)}={_format_v(a)}" for a in args[argi:]
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


def _sprint(args: Sequence[Any], line: bool) -> str:
    out: list[str] = []
    for k, arg in enumerate(args):
        if k and (line or not (isinstance(arg, str) or isinstance(args[k - 1], str))):
            out.append(" ")
        out.append(_format_v(arg))
    return "".join(out) + ("\n" if line else "")


# -------------------------------------------------------------------------------- builtins


def _basic_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "nil"
    return "other"


def _eq(first: Any, *others: Any) -> bool:
    k1 = _basic_kind(first)
    for other in others:
        k2 = _basic_kind(other)
        if k1 != k2:
            if k1 != "nil" and k2 != "nil":
                raise _ExecError("incompatible types for comparison")
            continue
        if k1 == "other":
            raise _ExecError(f"non-comparable types {_type_name(first)} and {_type_name(other)}")
        if first == other:
            return True
    return False


def _less(a: Any, b: Any) -> bool:
    ka, kb = _basic_kind(a), _basic_kind(b)
    if ka not in ("int", "float", "string") or kb not in ("int", "float", "string"):
        raise _ExecError("invalid type for comparison")
    if ka != kb:
        raise _ExecError("incompatible types for comparison")
    return bool(a < b)


def _length(item: Any) -> int:
    if item is None:
        raise _ExecError("len of nil pointer")
    if isinstance(item, str):
        return len(item.encode())
    if isinstance(item, list | tuple | Mapping):
        return len(item)
    raise _ExecError(f"len of type {_type_name(item)}")


def _index_int(index: Any, kind: str) -> int:
    if isinstance(index, bool) or not isinstance(index, int):
        raise _ExecError(f"cannot index {kind} with type {_type_name(index)}")
    return index


def _index(item: Any, *indexes: Any) -> Any:
    if item is None:
        raise _ExecError("index of untyped nil")
    for index in indexes:
        if isinstance(item, str):
            data = item.encode()
            i = _index_int(index, "string")
            if not 0 <= i < len(data):
                raise _ExecError(f"index out of range: {i}")
            item = data[i]
        elif isinstance(item, list | tuple):
            i = _index_int(index, "slice/array")
            if not 0 <= i < len(item):
                raise _ExecError(f"index out of range: {i}")
            item = item[i]
        elif isinstance(item, Mapping):
            try:
                present = index in item
            except TypeError:
                raise _ExecError(f"cannot use {_type_name(index)} as a map key") from None
            if present:
                item = item[index]
            elif all(isinstance(v, str) for v in item.values()):
                item = ""  # zero value of a map[string]string
            else:
                item = _NO_VALUE
        elif item is _NO_VALUE:
            raise _ExecError("index of nil pointer")
        else:
            raise _ExecError(f"can't index item of type {_type_name(item)}")
    return item


def _slice(item: Any, *indexes: Any) -> Any:
    if item is None:
        raise _ExecError("slice of untyped nil")
    if len(indexes) > 3:
        raise _ExecError(f"too many slice indexes: {len(indexes)}")
    if isinstance(item, str):
        if len(indexes) == 3:
            raise _ExecError("cannot 3-index slice a string")
        seq: Any = item.encode()
    elif isinstance(item, list | tuple):
        seq = item
    else:
        raise _ExecError(f"can't slice item of type {_type_name(item)}")
    bounds = [_index_int(i, "slice") for i in indexes]
    cap = len(seq)
    for b in bounds:
        if not 0 <= b <= cap:
            raise _ExecError(f"index out of range: {b}")
    if len(bounds) >= 2 and bounds[0] > bounds[1]:
        raise _ExecError(f"invalid slice index: {bounds[0]} > {bounds[1]}")
    if len(bounds) == 3 and bounds[1] > bounds[2]:
        raise _ExecError(f"invalid slice index: {bounds[1]} > {bounds[2]}")
    low = bounds[0] if bounds else 0
    high = bounds[1] if len(bounds) >= 2 else len(seq)
    result = seq[low:high]
    if isinstance(result, bytes):
        return result.decode("utf-8", errors="replace")
    return list(result)


def _printf(fmt: Any, *args: Any) -> str:
    if not isinstance(fmt, str):
        raise _ExecError(f"wrong type for value; expected string; got {_type_name(fmt)}")
    return _sprintf(fmt, args)


_FUNCS: dict[str, Callable[..., Any]] = {
    "not": lambda x: not _truth(x),
    "len": _length,
    "index": _index,
    "slice": _slice,
    "print": lambda *a: _sprint(a, line=False),
    "println": lambda *a: _sprint(a, line=True),
    "printf": _printf,
    "eq": _eq,
    "ne": lambda a, b: not _eq(a, b),
    "lt": _less,
    "le": lambda a, b: _less(a, b) or _eq(a, b),
    "gt": lambda a, b: not (_less(a, b) or _eq(a, b)),
    "ge": lambda a, b: not _less(a, b),
}


# ------------------------------------------------------------------------------- execution


class _State:
    def __init__(self, tmpl: Template, data: Any, depth: int = 0) -> None:
        self.tmpl = tmpl
        self.vars: list[list[Any]] = [["$", data]]
        self.out: list[str] = []
        self.depth = depth

    def fail(self, cmd_pos: int, src: str, msg: str) -> NoReturn:
        line, col = self.tmpl._line_col(cmd_pos)
        name, file = self.tmpl.name, self.tmpl._file
        raise TemplateError(f'template: {file}:{line}:{col}: executing "{name}" at <{src}>: {msg}')

    def invoke(self, dot: Any, node: _Invoke) -> None:
        templates = self.tmpl._templates or {}
        target = templates.get(node.name)
        if target is None:
            self.fail(node.pos, node.src, f"template {_go_quote(node.name)} not defined")
        if self.depth >= _MAX_TEMPLATE_DEPTH:
            self.fail(
                node.pos, node.src, f"exceeded maximum template depth ({_MAX_TEMPLATE_DEPTH})"
            )
        value = None if node.pipe is None else self.pipeline(dot, node.pipe)
        if value is _NO_VALUE:
            value = None
        inner = _State(target, value, self.depth + 1)
        inner.out = self.out
        try:
            inner.walk(value, target._nodes)
        except _ExecError as exc:
            raise TemplateError(
                f'template: {target._file}: executing "{target.name}": {exc}'
            ) from None

    def walk(self, dot: Any, nodes: list[Any]) -> None:
        for node in nodes:
            if isinstance(node, _Text):
                self.out.append(node.text)
            elif isinstance(node, _Action):
                value = self.pipeline(dot, node.pipe)
                if not node.pipe.decl:
                    self.out.append("<no value>" if value is _NO_VALUE else _format_v(value))
            elif isinstance(node, _Invoke):
                self.invoke(dot, node)
            elif isinstance(node, _Control):
                mark = len(self.vars)
                try:
                    if node.kind == "range":
                        self.walk_range(dot, node)
                    else:
                        value = self.pipeline(dot, node.pipe)
                        if _truth(value):
                            self.walk(value if node.kind == "with" else dot, node.body)
                        else:
                            self.walk(dot, node.else_body)
                finally:
                    del self.vars[mark:]
            else:
                raise _Break() if node.kind == "break" else _Continue()

    def walk_range(self, dot: Any, node: _Control) -> None:
        value = self.pipeline(dot, node.pipe)
        if value is _NO_VALUE or value is None:
            self.walk(dot, node.else_body)
            return
        if isinstance(value, list | tuple):
            items: list[tuple[Any, Any]] = list(enumerate(value))
        elif isinstance(value, Mapping):
            items = _sorted_items(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            if len(node.pipe.decl) > 1:
                cmd = node.pipe.cmds[0]
                self.fail(cmd.pos, cmd.src, "can't use two iteration variables with an int")
            items = [(i, i) for i in range(value)]
        else:
            cmd = node.pipe.cmds[0]
            self.fail(cmd.pos, cmd.src, f"range can't iterate over {_format_v(value)}")
        if not items:
            self.walk(dot, node.else_body)
            return
        decl = node.pipe.decl
        for key, elem in items:
            if decl:
                pairs = [(decl[-1], elem)] + ([(decl[0], key)] if len(decl) == 2 else [])
                for name, v in pairs:
                    if node.pipe.is_assign:
                        self.set_var(name, v)
                    else:
                        self.vars[len(self.vars) - len(decl) + decl.index(name)][1] = v
            mark = len(self.vars)
            try:
                self.walk(elem, node.body)
            except _Break:
                break
            except _Continue:
                continue
            finally:
                del self.vars[mark:]

    def set_var(self, name: str, value: Any) -> None:
        for entry in reversed(self.vars):
            if entry[0] == name:
                entry[1] = value
                return
        raise _ExecError(f"undefined variable: {name}")

    def var(self, name: str, cmd: _Command) -> Any:
        for entry in reversed(self.vars):
            if entry[0] == name:
                return entry[1]
        self.fail(cmd.pos, cmd.src, f"undefined variable: {name}")

    def pipeline(self, dot: Any, pipe: _Pipe) -> Any:
        value: Any = _NO_FINAL
        for cmd in pipe.cmds:
            value = self.command(dot, cmd, value)
        if value is None:
            value = _NO_VALUE  # a nil interface value prints as "<no value>", like Go
        for name in pipe.decl:
            if pipe.is_assign:
                self.set_var(name, value)
            else:
                self.vars.append([name, value])
        return value

    def command(self, dot: Any, cmd: _Command, final: Any) -> Any:
        try:
            first = cmd.args[0]
            if isinstance(first, _Function):
                return self.call(dot, first.name, cmd, cmd.args[1:], final)
            return self.operand(dot, first, cmd)
        except _ExecError as exc:
            self.fail(cmd.pos, cmd.src, str(exc))

    def operand(self, dot: Any, node: Any, cmd: _Command) -> Any:
        if isinstance(node, _Literal):
            return node.value
        if isinstance(node, _Dot):
            return dot
        if isinstance(node, _Field):
            return self.fields(dot, node.names)
        if isinstance(node, _Variable):
            return self.fields(self.var(node.name, cmd), node.names)
        if isinstance(node, _Pipe):
            return self.pipeline(dot, node)
        if isinstance(node, _Chain):
            return self.fields(self.pipeline(dot, node.node), node.names)
        if isinstance(node, _Function):
            return self.call(dot, node.name, cmd, [], _NO_FINAL)
        return None  # _Nil as an argument

    def argument(self, dot: Any, node: Any, cmd: _Command) -> Any:
        value = self.operand(dot, node, cmd)
        return None if value is _NO_VALUE else value

    def fields(self, receiver: Any, names: list[str]) -> Any:
        for name in names:
            if receiver is _NO_VALUE:
                return _NO_VALUE
            if receiver is None:
                raise _ExecError(f"nil pointer evaluating interface {{}}.{name}")
            if isinstance(receiver, Mapping):
                receiver = receiver.get(name, _NO_VALUE)
            elif _is_struct(receiver) and name in {f.name for f in dataclasses.fields(receiver)}:
                receiver = getattr(receiver, name)
            else:
                raise _ExecError(f"can't evaluate field {name} in type {_type_name(receiver)}")
        return receiver

    def call(self, dot: Any, name: str, cmd: _Command, args: list[Any], final: Any) -> Any:
        extra = self.tmpl._funcs.get(name)
        if extra is not None:
            values = [self.argument(dot, node, cmd) for node in args]
            if final is not _NO_FINAL:
                values.append(None if final is _NO_VALUE else final)
            try:
                return extra(*values)
            except Exception as exc:
                raise _ExecError(f"error calling {name}: {exc}") from None
        if name in ("and", "or"):
            # Go evaluates and/or lazily: stop at the first falsy (and) / truthy (or) argument.
            result: Any = None
            for node in args:
                result = self.argument(dot, node, cmd)
                if _truth(result) == (name == "or"):
                    return result
            if final is not _NO_FINAL:
                result = None if final is _NO_VALUE else final
            return result
        values = [self.argument(dot, node, cmd) for node in args]
        if final is not _NO_FINAL:
            values.append(None if final is _NO_VALUE else final)
        try:
            return _FUNCS[name](*values)
        except _ExecError as exc:
            raise _ExecError(f"error calling {name}: {exc}") from None


# ------------------------------------------------------------------------------------- API


class Template:
    """A parsed template; parse once (at startup) and render many times."""

    __slots__ = ("_file", "_funcs", "_line_starts", "_nodes", "_templates", "name", "source")

    def __init__(
        self,
        name: str,
        source: str,
        funcs: Mapping[str, Callable[..., Any]] | None = None,
        templates: dict[str, Template] | None = None,
    ) -> None:
        self.name = name
        self.source = source
        self._file = name
        self._funcs: Mapping[str, Callable[..., Any]] = dict(funcs or {})
        self._templates = templates
        self._line_starts = [0] + [i + 1 for i, ch in enumerate(source) if ch == "\n"]
        self._nodes: list[Any] = []

    def _associate(self, name: str, body: list[Any]) -> None:
        """Register a {{define}}/{{block}} body; like Go, an empty body never replaces another."""
        assert self._templates is not None
        empty = all(isinstance(n, _Text) and not n.text.strip() for n in body)
        if empty and name in self._templates:
            return
        named = Template(name, self.source, self._funcs, self._templates)
        named._file = self._file
        named._line_starts = self._line_starts
        named._nodes = body
        self._templates[name] = named

    def _line_col(self, pos: int) -> tuple[int, int]:
        line = 0
        lo, hi = 0, len(self._line_starts) - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            if self._line_starts[mid] <= pos:
                line, lo = mid, mid + 1
            else:
                hi = mid - 1
        return line + 1, pos - self._line_starts[line] + 1

    def _fail(self, pos: int, msg: str) -> NoReturn:
        line, col = self._line_col(pos)
        raise TemplateError(f"template: {self._file}:{line}:{col}: {msg}")

    @classmethod
    def parse(
        cls,
        text: str,
        name: str = "template",
        *,
        funcs: Mapping[str, Callable[..., Any]] | None = None,
        templates: dict[str, Template] | None = None,
    ) -> Template:
        """Parse ``text``; raise :class:`TemplateError` for syntax outside the supported subset.

        ``funcs`` adds functions; ``templates`` (a dict shared by related templates, which
        receives every ``{{define}}``) enables ``define``, ``template`` and ``block``.
        """
        tmpl = cls(name, text, funcs, templates)
        toks = _Lexer(text, tmpl._fail).run()
        tmpl._nodes = _Parser(tmpl, toks, tmpl._fail).parse()
        return tmpl

    def render(self, data: Any) -> str:
        """Execute the template with ``data`` as ``.`` and ``$``; raise :class:`TemplateError`."""
        state = _State(self, data)
        try:
            state.walk(data, self._nodes)
        except _ExecError as exc:  # raised outside a command, e.g. by a variable assignment
            raise TemplateError(f'template: {self.name}: executing "{self.name}": {exc}') from None
        except RecursionError:
            raise TemplateError(
                f'template: {self.name}: executing "{self.name}": value nested too deeply'
            ) from None
        return "".join(state.out)
