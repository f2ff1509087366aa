"""The executor: walks a parsed template with a value as ``.``, writing Go's output."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn, Protocol

from argocd_image_updater.kits.gotemplate.errors import (
    ExecError,
    OutputLimitError,
    StepLimitError,
    TemplateError,
    TextTooLong,
)
from argocd_image_updater.kits.gotemplate.formatting import (
    NO_VALUE,
    format_v,
    go_quote,
    is_struct,
    sorted_items,
    type_name,
)
from argocd_image_updater.kits.gotemplate.funcs import BUILDS_TEXT, FUNCS, truth
from argocd_image_updater.kits.gotemplate.limits import MAX_TEMPLATE_DEPTH, STEP_BYTES, Limits
from argocd_image_updater.kits.gotemplate.parser import (
    Action,
    Chain,
    Command,
    Control,
    Dot,
    Field,
    Function,
    Invoke,
    Literal,
    Pipe,
    Text,
    Variable,
)


class Parsed(Protocol):
    """What execution reads of a parsed template (:class:`~.template.Template` is one): the
    names it gives in errors, its source for error positions, its parse tree, its extra
    functions and the templates ``{{template}}`` may call."""

    @property
    def name(self) -> str: ...
    @property
    def file(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def nodes(self) -> list[Any]: ...
    @property
    def funcs(self) -> Mapping[str, Callable[..., Any]]: ...
    @property
    def templates(self) -> Mapping[str, Parsed] | None: ...
    def line_col(self, pos: int) -> tuple[int, int]: ...


_NO_FINAL = object()  # no value piped in from a previous command


_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _field_names(cls: type) -> frozenset[str]:
    """The field names of a dataclass (a Go struct), computed once per class."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    return names


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class Budget:
    """What is left of one expansion's :class:`~.limits.Limits`; the states of nested
    ``{{template}}`` calls share it. ``tmpl`` is the template being expanded (named in errors)."""

    __slots__ = ("limits", "steps", "tmpl", "written")

    def __init__(self, tmpl: Parsed, limits: Limits) -> None:
        self.tmpl = tmpl
        self.limits = limits
        self.steps = limits.max_steps
        self.written = 0

    def _prefix(self) -> str:
        return f'template: {self.tmpl.file}: executing "{self.tmpl.name}"'

    def step(self, count: int = 1) -> None:
        self.steps -= count
        if self.steps < 0:
            raise StepLimitError(
                f"{self._prefix()}: execution exceeds the limit of {self.limits.max_steps} steps"
            )

    def too_long(self) -> OutputLimitError:
        return OutputLimitError(
            f"{self._prefix()}: output exceeds the limit of {self.limits.max_output} bytes"
        )

    def write(self, out: list[str], text: str) -> None:
        self.written += _utf8_len(text)
        if self.written > self.limits.max_output:
            raise self.too_long()
        out.append(text)

    def built(self, text: str) -> None:
        """Account for a text a function built: held to the output limit, one step per
        ``STEP_BYTES``."""
        size = _utf8_len(text)
        if size > self.limits.max_output:
            raise self.too_long()
        self.step(size // STEP_BYTES)


class State:
    def __init__(self, tmpl: Parsed, data: Any, budget: Budget, depth: int = 0) -> None:
        self.tmpl = tmpl
        self.vars: list[list[Any]] = [["$", data]]
        self.out: list[str] = []
        self.budget = budget
        self.depth = depth

    def fail(self, cmd_pos: int, src: str, msg: str) -> NoReturn:
        # Like Go's ErrorContext: the line, and the byte offset within it (0-based).
        line, col = self.tmpl.line_col(cmd_pos)
        start = cmd_pos - col + 1
        offset = len(self.tmpl.source[start:cmd_pos].encode("utf-8", "surrogatepass"))
        name, file = self.tmpl.name, self.tmpl.file
        raise TemplateError(
            f'template: {file}:{line}:{offset}: executing "{name}" at <{src}>: {msg}'
        )

    def invoke(self, dot: Any, node: Invoke) -> None:
        templates = self.tmpl.templates or {}
        target = templates.get(node.name)
        if target is None:
            self.fail(node.pos, node.src, f"template {go_quote(node.name)} not defined")
        if self.depth >= MAX_TEMPLATE_DEPTH:
            self.fail(node.pos, node.src, f"exceeded maximum template depth ({MAX_TEMPLATE_DEPTH})")
        value = None if node.pipe is None else self.pipeline(dot, node.pipe)
        if value is NO_VALUE:
            value = None
        inner = State(target, value, self.budget, self.depth + 1)
        inner.out = self.out
        try:
            inner.walk(value, target.nodes)
        except ExecError as exc:
            raise TemplateError(
                f'template: {target.file}: executing "{target.name}": {exc}'
            ) from None

    def walk(self, dot: Any, nodes: list[Any]) -> None:
        budget = self.budget
        for node in nodes:
            budget.step()
            if isinstance(node, Text):
                budget.write(self.out, node.text)
            elif isinstance(node, Action):
                value = self.pipeline(dot, node.pipe)
                if not node.pipe.decl:
                    text = "<no value>" if value is NO_VALUE else format_v(value)
                    budget.write(self.out, text)
            elif isinstance(node, Invoke):
                self.invoke(dot, node)
            elif isinstance(node, Control):
                mark = len(self.vars)
                try:
                    if node.kind == "range":
                        self.walk_range(dot, node)
                    else:
                        value = self.pipeline(dot, node.pipe)
                        if truth(value):
                            self.walk(value if node.kind == "with" else dot, node.body)
                        else:
                            self.walk(dot, node.else_body)
                finally:
                    del self.vars[mark:]
            else:
                raise _Break() if node.kind == "break" else _Continue()

    def walk_range(self, dot: Any, node: Control) -> None:
        value = self.pipeline(dot, node.pipe)
        if value is NO_VALUE or value is None:
            self.walk(dot, node.else_body)
            return
        items: Iterable[tuple[Any, Any]]
        if isinstance(value, list | tuple):
            items, empty = enumerate(value), not value
        elif isinstance(value, Mapping):
            items, empty = sorted_items(value), not value
        elif isinstance(value, int) and not isinstance(value, bool):
            if len(node.pipe.decl) > 1:
                cmd = node.pipe.cmds[0]
                self.fail(cmd.pos, cmd.src, "can't use two iteration variables with an int")
            # Lazily: the step limit, not the memory, bounds "{{range 100000000}}".
            items, empty = ((i, i) for i in range(value)), value <= 0
        else:
            cmd = node.pipe.cmds[0]
            self.fail(cmd.pos, cmd.src, f"range can't iterate over {format_v(value)}")
        if empty:
            self.walk(dot, node.else_body)
            return
        decl = node.pipe.decl
        for key, elem in items:
            self.budget.step()
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
        raise ExecError(f"undefined variable: {name}")

    def var(self, name: str, cmd: Command) -> Any:
        for entry in reversed(self.vars):
            if entry[0] == name:
                return entry[1]
        self.fail(cmd.pos, cmd.src, f"undefined variable: {name}")

    def pipeline(self, dot: Any, pipe: Pipe) -> Any:
        value: Any = _NO_FINAL
        for cmd in pipe.cmds:
            value = self.command(dot, cmd, value)
        if value is None:
            value = NO_VALUE  # a nil interface value prints as "<no value>", like Go
        for name in pipe.decl:
            if pipe.is_assign:
                self.set_var(name, value)
            else:
                self.vars.append([name, value])
        return value

    def command(self, dot: Any, cmd: Command, final: Any) -> Any:
        try:
            first = cmd.args[0]
            if isinstance(first, Function):
                return self.call(dot, first.name, cmd, cmd.args[1:], final)
            return self.operand(dot, first, cmd)
        except ExecError as exc:
            self.fail(cmd.pos, cmd.src, str(exc))

    def operand(self, dot: Any, node: Any, cmd: Command) -> Any:
        if isinstance(node, Literal):
            return node.value
        if isinstance(node, Dot):
            return dot
        if isinstance(node, Field):
            return self.fields(dot, node.names)
        if isinstance(node, Variable):
            return self.fields(self.var(node.name, cmd), node.names)
        if isinstance(node, Pipe):
            return self.pipeline(dot, node)
        if isinstance(node, Chain):
            return self.fields(self.pipeline(dot, node.node), node.names)
        if isinstance(node, Function):
            return self.call(dot, node.name, cmd, [], _NO_FINAL)
        return None  # Nil as an argument

    def argument(self, dot: Any, node: Any, cmd: Command) -> Any:
        value = self.operand(dot, node, cmd)
        return None if value is NO_VALUE else value

    def fields(self, receiver: Any, names: list[str]) -> Any:
        for name in names:
            if receiver is NO_VALUE:
                return NO_VALUE
            if receiver is None:
                raise ExecError(f"nil pointer evaluating interface {{}}.{name}")
            if isinstance(receiver, Mapping):
                receiver = receiver.get(name, NO_VALUE)
            elif is_struct(receiver) and name in _field_names(type(receiver)):
                receiver = getattr(receiver, name)
            else:
                raise ExecError(f"can't evaluate field {name} in type {type_name(receiver)}")
        return receiver

    def call(self, dot: Any, name: str, cmd: Command, args: list[Any], final: Any) -> Any:
        self.budget.step()
        result = self._call(dot, name, cmd, args, final)
        if isinstance(result, str) and (name in BUILDS_TEXT or name in self.tmpl.funcs):
            self.budget.built(result)  # "index" or "and" hand back data, built by no one
        return result

    def _call(self, dot: Any, name: str, cmd: Command, args: list[Any], final: Any) -> Any:
        extra = self.tmpl.funcs.get(name)
        if extra is not None:
            values = [self.argument(dot, node, cmd) for node in args]
            if final is not _NO_FINAL:
                values.append(None if final is NO_VALUE else final)
            try:
                return extra(*values)
            except Exception as exc:
                raise ExecError(f"error calling {name}: {exc}") from None
        if name in ("and", "or"):
            # Go evaluates and/or lazily: stop at the first falsy (and) / truthy (or) argument.
            result: Any = None
            for node in args:
                result = self.argument(dot, node, cmd)
                if truth(result) == (name == "or"):
                    return result
            if final is not _NO_FINAL:
                result = None if final is NO_VALUE else final
            return result
        values = [self.argument(dot, node, cmd) for node in args]
        if final is not _NO_FINAL:
            values.append(None if final is NO_VALUE else final)
        try:
            if name in BUILDS_TEXT:
                return FUNCS[name](*values, limit=self.budget.limits.max_output)
            return FUNCS[name](*values)
        except TextTooLong:
            raise self.budget.too_long() from None
        except ExecError as exc:
            raise ExecError(f"error calling {name}: {exc}") from None
