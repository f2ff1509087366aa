"""A Go ``text/template`` interpreter.

No maintained Python library implements Go's ``text/template`` (Jinja2 and friends use a different
syntax and semantics), and users bring templates written for the Go original, so this package
implements the part of the language such templates use. Everything else is rejected by
:meth:`Template.parse` with a ``line:col`` position, so a bad template fails when it is parsed
rather than when it is rendered.

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
  knows the verbs ``%v %s %d %q %x %X %t %c %b %o %O %U %e %E %f %F %g %G %T %%`` with flags
  ``+ - # 0`` and space, width and precision (digits or ``*``) and argument indexes ``%[n]d``,
  read exactly as Go's ``fmt`` reads them (:mod:`.printf`).

Bounds (:mod:`.limits`): a width or precision past one million is refused as Go's ``fmt``
refuses it, and each :meth:`Template.render` is held to a cap on the bytes it writes and on its
execution steps (:class:`Limits`; 1 MiB and 100,000 by default), raising
:class:`OutputLimitError` or :class:`StepLimitError` (both :class:`TemplateError`).

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

Modules: :mod:`.lexer` (text to tokens), :mod:`.parser` (parse tree, parse-time checks),
:mod:`.exec` (execution), :mod:`.funcs` (builtin functions), :mod:`.formatting` and
:mod:`.printf` (Go's ``fmt``), :mod:`.limits` (the bounds), :mod:`.template`
(:class:`Template`). The package depends on nothing outside the standard library.
"""

from argocd_image_updater.kits.gotemplate.errors import (
    LimitError,
    OutputLimitError,
    StepLimitError,
    TemplateError,
)
from argocd_image_updater.kits.gotemplate.formatting import go_quote, go_sprint
from argocd_image_updater.kits.gotemplate.limits import DEFAULT_LIMITS, Limits
from argocd_image_updater.kits.gotemplate.template import Template

__all__ = [
    "DEFAULT_LIMITS",
    "LimitError",
    "Limits",
    "OutputLimitError",
    "StepLimitError",
    "Template",
    "TemplateError",
    "go_quote",
    "go_sprint",
]
