"""The parse tree and the parser: tokens to nodes, checked as Go checks them at parse time
(declared variables, known functions and their arity, ``break``/``continue`` inside ``range``,
``define``/``template``/``block`` only with associated templates)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from argocd_image_updater.kits.gotemplate.formatting import go_quote
from argocd_image_updater.kits.gotemplate.funcs import ARITY, UNSUPPORTED_FUNCS, arity_of
from argocd_image_updater.kits.gotemplate.lexer import Token
from argocd_image_updater.kits.gotemplate.limits import MAX_PARSE_DEPTH


@dataclass(slots=True)
class Text:
    text: str


@dataclass(slots=True)
class Literal:
    value: Any  # bool, int, float or str


@dataclass(slots=True)
class Dot:
    pass


@dataclass(slots=True)
class Nil:
    pass


@dataclass(slots=True)
class Field:
    names: list[str]


@dataclass(slots=True)
class Variable:
    name: str
    names: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Function:
    name: str


@dataclass(slots=True)
class Chain:
    node: Pipe
    names: list[str]


@dataclass(slots=True)
class Command:
    pos: int
    src: str
    args: list[Any]  # Literal, Dot, Nil, Field, Variable, Function, Chain or Pipe


@dataclass(slots=True)
class Pipe:
    pos: int
    decl: list[str]
    is_assign: bool
    cmds: list[Command]


@dataclass(slots=True)
class Action:
    pipe: Pipe


@dataclass(slots=True)
class Control:
    kind: str  # "if", "with" or "range"
    pipe: Pipe
    body: list[Any]
    else_body: list[Any]


@dataclass(slots=True)
class Loop:
    kind: str  # "break" or "continue"


@dataclass(slots=True)
class Invoke:
    """``{{template "name" pipeline}}``."""

    pos: int
    src: str
    name: str
    pipe: Pipe | None


class Parser:
    """Parses one template's tokens; ``associate(name, body)`` receives each ``{{define}}`` and
    ``{{block}}`` body, and without it those actions are a parse error."""

    def __init__(
        self,
        source: str,
        toks: list[Token],
        fail: Callable[[int, str], NoReturn],
        funcs: Mapping[str, Callable[..., Any]],
        associate: Callable[[str, list[Any]], None] | None,
    ) -> None:
        self.src = source
        self.toks = toks
        self.i = 0
        self.fail = fail
        self.funcs = funcs
        self.associate = associate
        self.vars = ["$"]
        self.range_depth = 0
        self.nesting = 0
        self.arity = dict(ARITY)
        self.arity.update({name: arity_of(f) for name, f in funcs.items()})

    # token helpers -------------------------------------------------------------------------

    def next(self) -> Token:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def peek(self) -> Token:
        return self.toks[self.i]

    def skip_space(self) -> None:
        if self.toks[self.i].kind == "space":
            self.i += 1

    def next_non_space(self) -> Token:
        self.skip_space()
        return self.next()

    def peek_non_space(self) -> Token:
        self.skip_space()
        return self.peek()

    def unexpected(self, tok: Token, context: str) -> NoReturn:
        shown = "EOF" if tok.kind == "eof" else go_quote(tok.val)
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
                nodes.append(Text(tok.val))
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
                nodes.append(Loop(word.kind))
            elif word.kind in ("define", "template", "block"):
                if self.associate is None:
                    self.fail(word.pos, f"{{{{{word.kind}}}}} is not supported")
                if word.kind == "define":
                    if not top:
                        self.fail(word.pos, "unexpected {{define}} inside an action")
                    self.define(word)
                else:
                    nodes.append(self.invoke(word))
            else:
                self.i -= 1
                nodes.append(Action(self.pipeline("command", "}}")))

    def template_name(self, word: Token) -> str:
        tok = self.next_non_space()
        if tok.kind != "string":
            self.unexpected(tok, f"{word.kind} clause")
        return str(tok.value)

    def named_body(self, word: Token, name: str) -> None:
        """Parse a define/block body up to its {{end}} and register it as template ``name``."""
        saved_vars, saved_depth = self.vars, self.range_depth
        self.vars, self.range_depth = ["$"], 0
        body, term = self.item_list(top=False)
        if term != "end":
            self.fail(self.toks[self.i - 1].pos, f"unexpected {{{{else}}}} in {word.kind}")
        self.vars, self.range_depth = saved_vars, saved_depth
        assert self.associate is not None
        self.associate(name, body)

    def define(self, word: Token) -> None:
        name = self.template_name(word)
        self.expect_close("define clause")
        self.named_body(word, name)

    def invoke(self, word: Token) -> Invoke:
        name = self.template_name(word)
        name_pos = self.toks[self.i - 1].pos  # Go places a {{template}} node at its name
        pipe: Pipe | None = None
        if self.peek_non_space().kind == "}}":
            self.next()
        else:
            pipe = self.pipeline(f"{word.kind} clause", "}}")
        src = self.src[word.pos : self.toks[self.i - 1].pos].strip()
        node = Invoke(name_pos, "{{" + src + "}}", name, pipe)
        if word.kind == "block":
            if pipe is None:
                self.fail(word.pos, "missing pipeline in block clause")
            self.nest(word.pos, 1)
            self.named_body(word, name)
            self.nest(word.pos, -1)
        return node

    def nest(self, pos: int, step: int) -> None:
        """Enter (``step`` 1) or leave (-1) a nested control, block or parenthesized pipeline.
        Go caps only parentheses (at 10,000, on growable stacks); here every kind of nesting
        counts against :data:`~.limits.MAX_PARSE_DEPTH`, below Python's recursion limit."""
        self.nesting += step
        if self.nesting > MAX_PARSE_DEPTH:
            self.fail(pos, "max expression depth exceeded")

    def control(self, word: Token) -> Control:
        self.nest(word.pos, 1)
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
        self.nest(word.pos, -1)
        return Control(word.kind, pipe, body, else_body)

    def pipeline(self, context: str, end: str) -> Pipe:
        start = self.peek_non_space()
        decl: list[str] = []
        is_assign = False
        if start.kind == "var":
            decl, is_assign = self.declarations(context)
        cmds: list[Command] = []
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
        return Pipe(start.pos, decl, is_assign, cmds)

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
                    self.fail(first.pos, f"undefined variable {go_quote(name)}")
        return names, op.kind == "="

    def command(self, stage: int) -> Command:
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
        cmd = Command(start, self.src[start:end], args)
        self.check_command(cmd, stage)
        return cmd

    def check_command(self, cmd: Command, stage: int) -> None:
        for arg in cmd.args[1:]:
            if isinstance(arg, Function):  # a function name as an argument is called bare
                self.check_arity(arg.name, 0, cmd.pos)
        first = cmd.args[0]
        if isinstance(first, Function):
            self.check_arity(first.name, len(cmd.args) - 1 + (1 if stage else 0), cmd.pos)
            return
        if isinstance(first, Nil):
            self.fail(cmd.pos, "nil is not a command")
        if stage and isinstance(first, Literal | Dot):
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
        if isinstance(node, Field):
            return Field(node.names + names)
        if isinstance(node, Variable):
            return Variable(node.name, node.names + names)
        if isinstance(node, Pipe):
            return Chain(node, names)
        if isinstance(node, Function):  # "fn.Field": call fn, then take the field, like Go
            tok = self.toks[self.i - len(names) - 1]
            call = Command(tok.pos, tok.val, [node])
            self.check_command(call, 0)
            return Chain(Pipe(tok.pos, [], False, [call]), names)
        self.fail(self.toks[self.i - len(names)].pos, "unexpected . after term")

    def term(self) -> Any:
        tok = self.next_non_space()
        kind = tok.kind
        if kind == "ident":
            if tok.val in UNSUPPORTED_FUNCS and tok.val not in self.funcs:
                self.fail(tok.pos, f"function {go_quote(tok.val)} is not supported")
            if tok.val not in self.arity:
                self.fail(tok.pos, f"function {go_quote(tok.val)} not defined")
            return Function(tok.val)
        if kind == "dot":
            return Dot()
        if kind == "nil":
            return Nil()
        if kind == "var":
            if tok.val not in self.vars:
                self.fail(tok.pos, f"undefined variable {go_quote(tok.val)}")
            return Variable(tok.val)
        if kind == "field":
            return Field([tok.val[1:]])
        if kind in ("bool", "number", "string"):
            return Literal(tok.value)
        if kind == "(":
            self.nest(tok.pos, 1)
            pipe = self.pipeline("parenthesized pipeline", ")")
            self.nest(tok.pos, -1)
            return pipe
        self.i -= 1
        return None
