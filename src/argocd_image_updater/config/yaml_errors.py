"""Where a YAML text is broken, said so that the user finds the line to fix.

The parser notices an unclosed quote or bracket only at the end of the file; its own position
is then the last line, which is never the one to fix. The place the unclosed construct starts
(the parser's "context") is reported instead.
"""

from __future__ import annotations

from typing import Final

from ruamel.yaml.error import MarkedYAMLError, YAMLError

_END_OF_INPUT: Final = ("end of stream", "<stream end>", "end of the stream")


def _at(mark: object) -> str:
    line = getattr(mark, "line", 0)
    column = getattr(mark, "column", 0)
    return f"line {line + 1}, column {column + 1}"


def _what(context: str) -> str:
    for prefix in ("while scanning ", "while parsing "):
        if context.startswith(prefix):
            return context.removeprefix(prefix)
    return context


def yaml_error_position(err: YAMLError) -> str:
    """``line L, column C: <problem>``, pointing at where the bad construct starts."""
    if not isinstance(err, MarkedYAMLError) or err.problem_mark is None:
        text = str(err).splitlines()[0] if str(err) else type(err).__name__
        return text
    problem = str(err.problem or "")
    context, start = err.context, err.context_mark
    moved = start is not None and (
        start.line != err.problem_mark.line or start.column != err.problem_mark.column
    )
    if context and moved and any(word in problem for word in _END_OF_INPUT):
        return f"{_at(start)}: {_what(context)} that is never closed (the file ends first)"
    where = f"{_at(err.problem_mark)}: {problem}"
    if context and moved:
        where += f" ({_what(context)} started at {_at(start)})"
    return where
