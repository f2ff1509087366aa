"""The builtin functions (``and or not len index slice eq ne lt le gt ge print println printf``),
their arities, and Go's truth of a value."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from argocd_image_updater.kits.gotemplate.errors import ExecError
from argocd_image_updater.kits.gotemplate.formatting import NO_VALUE, sprint, type_name
from argocd_image_updater.kits.gotemplate.printf import sprintf


def truth(value: Any) -> bool:
    if value is None or value is NO_VALUE:
        return False
    if isinstance(value, bool | int | float):
        return value != 0
    if isinstance(value, str | list | tuple | Mapping):
        return len(value) > 0
    return True


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
                raise ExecError("incompatible types for comparison")
            continue
        if k1 == "other":
            raise ExecError(f"non-comparable types {type_name(first)} and {type_name(other)}")
        if first == other:
            return True
    return False


def _less(a: Any, b: Any) -> bool:
    ka, kb = _basic_kind(a), _basic_kind(b)
    if ka not in ("int", "float", "string") or kb not in ("int", "float", "string"):
        raise ExecError("invalid type for comparison")
    if ka != kb:
        raise ExecError("incompatible types for comparison")
    return bool(a < b)


def _length(item: Any) -> int:
    if item is None:
        raise ExecError("len of nil pointer")
    if isinstance(item, str):
        return len(item.encode())
    if isinstance(item, list | tuple | Mapping):
        return len(item)
    raise ExecError(f"len of type {type_name(item)}")


def _index_int(index: Any, kind: str) -> int:
    if isinstance(index, bool) or not isinstance(index, int):
        raise ExecError(f"cannot index {kind} with type {type_name(index)}")
    return index


def _index(item: Any, *indexes: Any) -> Any:
    if item is None:
        raise ExecError("index of untyped nil")
    for index in indexes:
        if isinstance(item, str):
            data = item.encode()
            i = _index_int(index, "string")
            if not 0 <= i < len(data):
                raise ExecError(f"index out of range: {i}")
            item = data[i]
        elif isinstance(item, list | tuple):
            i = _index_int(index, "slice/array")
            if not 0 <= i < len(item):
                raise ExecError(f"index out of range: {i}")
            item = item[i]
        elif isinstance(item, Mapping):
            try:
                present = index in item
            except TypeError:
                raise ExecError(f"cannot use {type_name(index)} as a map key") from None
            if present:
                item = item[index]
            elif all(isinstance(v, str) for v in item.values()):
                item = ""  # zero value of a map[string]string
            else:
                item = NO_VALUE
        elif item is NO_VALUE:
            raise ExecError("index of nil pointer")
        else:
            raise ExecError(f"can't index item of type {type_name(item)}")
    return item


def _slice(item: Any, *indexes: Any) -> Any:
    if item is None:
        raise ExecError("slice of untyped nil")
    if len(indexes) > 3:
        raise ExecError(f"too many slice indexes: {len(indexes)}")
    if isinstance(item, str):
        if len(indexes) == 3:
            raise ExecError("cannot 3-index slice a string")
        seq: Any = item.encode()
    elif isinstance(item, list | tuple):
        seq = item
    else:
        raise ExecError(f"can't slice item of type {type_name(item)}")
    bounds = [_index_int(i, "slice") for i in indexes]
    cap = len(seq)
    for b in bounds:
        if not 0 <= b <= cap:
            raise ExecError(f"index out of range: {b}")
    if len(bounds) >= 2 and bounds[0] > bounds[1]:
        raise ExecError(f"invalid slice index: {bounds[0]} > {bounds[1]}")
    if len(bounds) == 3 and bounds[1] > bounds[2]:
        raise ExecError(f"invalid slice index: {bounds[1]} > {bounds[2]}")
    low = bounds[0] if bounds else 0
    high = bounds[1] if len(bounds) >= 2 else len(seq)
    result = seq[low:high]
    if isinstance(result, bytes):
        return result.decode("utf-8", errors="replace")
    return list(result)


def _printf(fmt: Any, *args: Any, limit: int | None = None) -> str:
    if not isinstance(fmt, str):
        raise ExecError(f"wrong type for value; expected string; got {type_name(fmt)}")
    return sprintf(fmt, args, limit)


FUNCS: dict[str, Callable[..., Any]] = {
    "not": lambda x: not truth(x),
    "len": _length,
    "index": _index,
    "slice": _slice,
    "print": lambda *a, limit=None: sprint(a, line=False, limit=limit),
    "println": lambda *a, limit=None: sprint(a, line=True, limit=limit),
    "printf": _printf,
    "eq": _eq,
    "ne": lambda a, b: not _eq(a, b),
    "lt": _less,
    "le": lambda a, b: _less(a, b) or _eq(a, b),
    "gt": lambda a, b: not (_less(a, b) or _eq(a, b)),
    "ge": lambda a, b: not _less(a, b),
}


BUILDS_TEXT = frozenset({"print", "println", "printf"})
"""The builtins that build text: they take a ``limit`` keyword (see :mod:`.limits`)."""

# Arity of the builtins: (minimum, maximum or None).
ARITY: dict[str, tuple[int, int | None]] = {
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
UNSUPPORTED_FUNCS = frozenset({"html", "js", "urlquery", "call"})


def arity_of(func: Callable[..., Any]) -> tuple[int, int | None]:
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
