"""The :class:`Template`: parse once, render many times."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from argocd_image_updater.kits.gotemplate.errors import ExecError, TemplateError
from argocd_image_updater.kits.gotemplate.exec import Budget, State
from argocd_image_updater.kits.gotemplate.formatting import NO_VALUE
from argocd_image_updater.kits.gotemplate.lexer import Lexer
from argocd_image_updater.kits.gotemplate.limits import DEFAULT_LIMITS, Limits
from argocd_image_updater.kits.gotemplate.parser import Parser, Text


class Template:
    """A parsed template; parse once (at startup) and render many times.

    ``name`` and ``file`` name it in errors, ``funcs`` are its extra functions, ``templates``
    the associated templates it shares (``None`` without ``define``), ``nodes`` its parse tree.
    """

    __slots__ = ("_line_starts", "file", "funcs", "name", "nodes", "source", "templates")

    def __init__(
        self,
        name: str,
        source: str,
        funcs: Mapping[str, Callable[..., Any]] | None = None,
        templates: dict[str, Template] | None = None,
    ) -> None:
        self.name = name
        self.source = source
        self.file = name
        self.funcs: Mapping[str, Callable[..., Any]] = dict(funcs or {})
        self.templates = templates
        self._line_starts = [0] + [i + 1 for i, ch in enumerate(source) if ch == "\n"]
        self.nodes: list[Any] = []

    def _associate(self, name: str, body: list[Any]) -> None:
        """Register a {{define}}/{{block}} body; like Go, an empty body never replaces another."""
        assert self.templates is not None
        empty = all(isinstance(n, Text) and not n.text.strip() for n in body)
        if empty and name in self.templates:
            return
        named = Template(name, self.source, self.funcs, self.templates)
        named.file = self.file
        named._line_starts = self._line_starts
        named.nodes = body
        self.templates[name] = named

    def line_col(self, pos: int) -> tuple[int, int]:
        """1-based line and column of offset ``pos`` in the source."""
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
        line, col = self.line_col(pos)
        raise TemplateError(f"template: {self.file}:{line}:{col}: {msg}")

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
        toks = Lexer(text, tmpl._fail).run()
        associate = None if templates is None else tmpl._associate
        try:
            tmpl.nodes = Parser(text, toks, tmpl._fail, tmpl.funcs, associate).parse()
        except RecursionError:  # a safety net: MAX_PARSE_DEPTH stops nesting well before
            raise TemplateError(f"template: {name}: max expression depth exceeded") from None
        return tmpl

    def render(self, data: Any, limits: Limits | None = None) -> str:
        """Execute the template with ``data`` as ``.`` and ``$``; raise :class:`TemplateError`
        (:class:`~.errors.OutputLimitError` or :class:`~.errors.StepLimitError` past ``limits``,
        by default :data:`~.limits.DEFAULT_LIMITS`)."""
        if data is None:  # Go's nil data: an invalid value, whose fields are "<no value>"
            data = NO_VALUE
        state = State(self, data, Budget(self, limits or DEFAULT_LIMITS))
        try:
            state.walk(data, self.nodes)
        except ExecError as exc:  # raised outside a command, e.g. by a variable assignment
            raise TemplateError(f'template: {self.name}: executing "{self.name}": {exc}') from None
        except RecursionError:
            raise TemplateError(
                f'template: {self.name}: executing "{self.name}": value nested too deeply'
            ) from None
        return "".join(state.out)
