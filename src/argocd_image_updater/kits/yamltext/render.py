"""JSON values (strings, booleans, mappings, lists) as YAML text in the file's layout."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from argocd_image_updater.kits.yamltext.errors import YamlPatchError
from argocd_image_updater.kits.yamltext.layout import Style
from argocd_image_updater.kits.yamltext.scalars import render


def is_collection(value: Any) -> bool:
    return isinstance(value, Mapping | list | tuple)


def scalar_text(value: Any, in_flow: bool, ptr: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return render(value, None, in_flow)
    raise YamlPatchError(
        f"{ptr}: unsupported value {value!r} ({type(value).__name__}); "
        "only strings, booleans, mappings and lists are written"
    )


def flow(value: Any, ptr: str) -> str:
    if isinstance(value, Mapping):
        body = ", ".join(f"{render(str(k), None, True)}: {flow(v, ptr)}" for k, v in value.items())
        return "{" + body + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(flow(v, ptr) for v in value) + "]"
    return scalar_text(value, True, ptr)


def value_block(value: Any, col: int, style: Style, ptr: str) -> tuple[str | None, list[str]]:
    """A key's value: inline text (scalars, empty collections) or the lines below the key;
    ``col`` is the key's column."""
    if isinstance(value, Mapping) and value:
        return None, _map_lines(value, col + style.step, style, ptr)
    if isinstance(value, list | tuple) and value:
        return None, seq_lines(value, col + style.seq_offset, 2, style, ptr)
    return (flow(value, ptr) if is_collection(value) else scalar_text(value, False, ptr)), []


def key_lines(key: str, value: Any, col: int, style: Style, ptr: str) -> list[str]:
    head = " " * col + render(key, None, False) + ":"
    inline, lines = value_block(value, col, style, ptr)
    return [head + " " + inline] if inline is not None else [head, *lines]


def _map_lines(value: Mapping[str, Any], col: int, style: Style, ptr: str) -> list[str]:
    out: list[str] = []
    for key, item in value.items():
        out.extend(key_lines(str(key), item, col, style, ptr))
    return out


def seq_lines(items: Sequence[Any], dash_col: int, gap: int, style: Style, ptr: str) -> list[str]:
    out: list[str] = []
    dash = " " * dash_col + "-" + " " * (gap - 1)
    for item in items:
        if isinstance(item, Mapping) and item:
            lines = _map_lines(item, dash_col + gap, style, ptr)
        elif isinstance(item, list | tuple) and item:
            lines = seq_lines(item, dash_col + gap, 2, style, ptr)
        else:
            text = flow(item, ptr) if is_collection(item) else scalar_text(item, False, ptr)
            lines = [" " * (dash_col + gap) + text]
        out.append(dash + lines[0][dash_col + gap :])
        out.extend(lines[1:])
    return out
