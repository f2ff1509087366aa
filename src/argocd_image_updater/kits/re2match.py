"""Regular expressions with the syntax of Go's ``regexp`` package, matched in linear time.

Every regular expression a user supplies (and every pattern built from user input, such as a
glob) is compiled here. Python's ``re`` backtracks: ``^(a+)+$`` against a 30-character text
takes seconds and against 40 characters never ends, so one hostile expression would freeze
the whole event loop. RE2 (the ``google-re2`` package, Google's C++ library; unlike some other
RE2 bindings it never falls back to a backtracking engine) runs in time linear in the text,
and its syntax is the one Go's ``regexp`` takes: POSIX classes (``[[:digit:]]``), ``\\z``,
``\\pL`` and ``\\p{Greek}``, flags anywhere (``a(?i)b``), ``(?P<name>…)``; no back-references
and no look-around.

The one construct C++ RE2 takes and Go refuses, ``\\C`` (any single byte, which can split a
UTF-8 sequence), is refused here too, with RE2's own wording for it. Expressions and texts are
matched as UTF-8; a lone surrogate in either (a string Go's decoders would never produce: they
give U+FFFD) is read as U+FFFD. RE2 refuses expressions whose compiled program would exceed
its memory budget (:data:`MAX_MEMORY`) with ``pattern too large - compile failed``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Final

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information
from re2 import _re2


class RegexpError(ValueError):
    """An expression RE2 refuses; the message is RE2's (``missing ): (``)."""


MAX_MEMORY: Final = 4 << 20
"""The memory one compiled expression may use (its program and the automaton it builds while
matching), in bytes. RE2's default is 8 MiB; measured with 20 expressions whose automaton grows
with every tag (``(a|b)*a(a|b){n}c`` over 5,000 tags of 128 characters) the process grew by
36 MB at 8 MiB, 6 MB at 2 MiB. At 4 MiB every expression a tag filter needs compiles (even
``^[\\pL\\pN]{128}$``, refused at 2 MiB), and the compiled expressions kept
(:data:`KEPT`, and the globs of :mod:`~argocd_image_updater.kits.globs`) stay bounded."""
KEPT: Final = 128
"""How many compiled expressions are kept for reuse."""


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused expression to stderr
    options.max_mem = MAX_MEMORY
    return options


_OPTIONS: Final = _options()
_SEARCH: Final = _re2.RE2.Anchor.UNANCHORED
_WHOLE: Final = _re2.RE2.Anchor.ANCHOR_BOTH
_NO_MATCH: Final = (-1, -1)


@dataclass(frozen=True, slots=True, eq=False)
class Regexp:
    """A compiled expression; both matchers answer whether the text matches.

    They call the binding's ``RE2.Match`` (the compiled C++ object) directly: the module's
    ``search`` wraps each call in a generator and a match object, which more than doubles the
    cost of a yes-or-no answer (1.1 µs a tag against 0.45 µs).
    """

    expression: str
    _compiled: Any

    def found_in(self, text: str) -> bool:
        """Whether the expression matches somewhere in ``text`` (Go's ``MatchString``)."""
        data = _utf8(text)
        return bool(self._compiled.Match(_SEARCH, data, 0, len(data))[0] != _NO_MATCH)

    def matches_whole(self, text: str) -> bool:
        """Whether the expression matches all of ``text`` (anchored at both ends)."""
        data = _utf8(text)
        return bool(self._compiled.Match(_WHOLE, data, 0, len(data))[0] != _NO_MATCH)


@functools.lru_cache(maxsize=KEPT)
def compile_re2(expression: str) -> Regexp:
    """Compile ``expression`` with RE2; :class:`RegexpError` with RE2's message when refused.

    Kept compiled: RE2 builds its matching automaton lazily, as texts are matched, within the
    memory budget; past it, matching goes on in the slower (still linear) way."""
    _refuse_any_byte(expression)
    compiled = _re2.RE2(_utf8(expression), _OPTIONS)
    if not compiled.ok():
        raise RegexpError(_message(compiled.error()))
    return Regexp(expression, compiled)


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:  # lone surrogates: U+FFFD, as Go's JSON and YAML decoders read them
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode()


def _message(error: bytes | str) -> str:
    return error.decode(errors="replace") if isinstance(error, bytes) else error


def _refuse_any_byte(expression: str) -> None:
    """Refuse ``\\C`` outside ``\\Q…\\E`` quoting, as Go does (RE2 itself refuses it in a class).

    Written here because RE2 has no option to turn ``\\C`` off; only escapes and quoting
    matter, since every other place a ``\\C`` could stand is an error to RE2 already.
    """
    i, n = 0, len(expression)
    while i < n:
        if expression[i] != "\\":
            i += 1
            continue
        escaped = expression[i + 1 : i + 2]
        if escaped == "C":
            raise RegexpError("invalid escape sequence: \\C")
        if escaped == "Q":
            end = expression.find("\\E", i + 2)
            if end == -1:
                return
            i = end + 2
            continue
        i += 2
