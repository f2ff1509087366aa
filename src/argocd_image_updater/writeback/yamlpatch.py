"""Apply an Application JSON patch (RFC 6902) to the Application's YAML manifest in Git.

The patch is the one :func:`argocd_image_updater.plan.patch.json_patch_ops` sends to the API
server; applied here it changes the manifest file the way the server changes the object, while
every byte outside the changed values stays as it was: comments, blank lines, key order,
quoting, indentation, flow or block style, CRLF line endings and a missing trailing newline.

Why this is written by hand: no YAML library edits text surgically. A round trip through
ruamel.yaml (the only Python library that keeps comments) still re-indents sequences, re-wraps
and re-quotes scalars, moves comments and drops blank lines or document markers, and a JSON-patch
library works on data, not on text. So, like :mod:`.yamledit`, ruamel.yaml's parser is used only
to *locate* nodes (its marks carry exact offsets), and new text is spliced in.

Supported operations (exactly what ``json_patch_ops`` emits):

* ``replace /metadata/resourceVersion`` is ignored: it is the API server's optimistic-lock guard
  and a manifest in Git has no resource version. Only this exact path is ignored.
* ``replace`` of an existing scalar with a string or boolean: the scalar's bytes are rewritten
  (:func:`.yamledit.set_value` rules: quoting style kept where the value allows it).
* ``replace`` of an existing mapping (a list element such as a Helm parameter) with a flat
  mapping of strings/booleans: changed fields are rewritten, new fields appended to the mapping,
  fields no longer present removed (their lines are cut out).
* ``add <list>/-`` with a string or a flat mapping: one item after the last one, in the style
  of the existing items (same dash column and spacing in a block sequence, ``, item`` before the
  ``]`` of a flow sequence, ``[item]`` for ``[]``).
* ``add`` of a key missing from an existing mapping (or holding ``null``), with any JSON value:
  written below the mapping's last key in its indentation (block) or before its ``}`` (flow);
  nested mappings use the file's dominant indentation step and nested sequences the file's
  dominant sequence indentation (``key:\\n- a`` or ``key:\\n  - a``).

Rejected with :class:`YamlPatchError` (the message names the JSON pointer and line/column):
other operations (``remove``, ``move``, ``copy``, ``test``), pointers that do not exist,
inserting in the middle of a sequence, ``add`` over an existing non-null value, a value that is
neither a string, a boolean, a mapping nor a list, replacing a scalar by a mapping (or the
reverse), nested values in a replaced element, and any edit through an alias or of a node whose
anchor an alias shares (the edit would silently change the other places too).

After the edits the file is parsed again and compared with the original data with the patch
applied in plain Python; every other document must be unchanged. On any difference the patch
is refused: a wrong file is never returned.
"""

from __future__ import annotations

import copy
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from argocd_image_updater.writeback.yamledit import (
    PathElem,
    YamlEditError,
    _content_end,
    _Doc,
    _empty_position,
    _indent_step,
    _insert_lines,
    _is_empty_scalar,
    _line_col,
    _line_end,
    _lookup,
    _map_entries,
    _Node,
    _parse,
    _render,
    _value_start,
    set_value,
)

__all__ = ["YamlPatchError", "apply_patch"]

_RESOURCE_VERSION: Final = "/metadata/resourceVersion"
_NULLS: Final = frozenset({"", "~", "null", "Null", "NULL"})
_INDEX: Final = re.compile(r"0|[1-9][0-9]*")


class YamlPatchError(ValueError):
    """The patch cannot be applied to the file; names the JSON pointer and, where known, the
    line and column."""


# ------------------------------------------------------------------------------ pointers


def _tokens(ptr: str) -> list[str]:
    """RFC 6901: ``/a~1b/0`` → ``["a/b", "0"]``."""
    if ptr == "":
        return []
    if not ptr.startswith("/"):
        raise YamlPatchError(f"{ptr!r}: a JSON pointer starts with '/'")
    out = []
    for raw in ptr[1:].split("/"):
        if re.search(r"~(?![01])", raw):
            raise YamlPatchError(f"{ptr}: invalid '~' escape in {raw!r}")
        out.append(raw.replace("~1", "/").replace("~0", "~"))
    return out


def _where(text: str, pos: int) -> str:
    line, col = _line_col(text, pos)
    return f"line {line}, column {col}"


# ---------------------------------------------------------------------------- plain data


def _load_all(text: str) -> list[Any]:
    try:
        return list(YAML(typ="safe", pure=True).load_all(text))
    except YAMLError as exc:
        raise YamlPatchError(f"invalid YAML: {exc}") from None


def _is_index(token: str, size: int, *, end_ok: bool) -> int | None:
    if token == "-" and end_ok:
        return size
    if _INDEX.fullmatch(token) and int(token) < size + (1 if end_ok else 0):
        return int(token)
    return None


def _apply_plain(doc: Any, ops: Sequence[Mapping[str, Any]]) -> Any:
    """RFC 6902 ``add``/``replace`` on plain data (a copy); the reference for verification."""
    doc = copy.deepcopy(doc)
    for op in ops:
        ptr = op["path"]
        tokens = _tokens(ptr)
        if not tokens:
            raise YamlPatchError(f"{ptr or '<root>'}: replacing a whole document is not supported")
        parent = doc
        for n, token in enumerate(tokens[:-1]):
            here = "/" + "/".join(tokens[: n + 1])
            if isinstance(parent, list):
                i = _is_index(token, len(parent), end_ok=False)
                if i is None:
                    raise YamlPatchError(f"{ptr}: {here} does not exist")
                parent = parent[i]
            elif isinstance(parent, dict) and token in parent:
                parent = parent[token]
            else:
                raise YamlPatchError(f"{ptr}: {here} does not exist")
        last, value = tokens[-1], copy.deepcopy(op["value"])
        if isinstance(parent, list):
            i = _is_index(last, len(parent), end_ok=op["op"] == "add")
            if i is None:
                raise YamlPatchError(f"{ptr}: index {last!r} is out of range")
            if op["op"] == "add":
                parent.insert(i, value)
            else:
                parent[i] = value
        elif isinstance(parent, dict):
            if op["op"] == "replace" and last not in parent:
                raise YamlPatchError(f"{ptr}: does not exist")
            parent[last] = value
        else:
            raise YamlPatchError(f"{ptr}: the parent is not a mapping or a sequence")
    return doc


def _same(a: Any, b: Any) -> bool:
    """Data equality that tells ``true`` from ``1`` and ``"1"`` from ``1``."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and bool(a == b)


# ----------------------------------------------------------------------------- rendering


def _scalar_text(value: Any, in_flow: bool, ptr: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _render(value, None, in_flow)
    raise YamlPatchError(
        f"{ptr}: unsupported value {value!r} ({type(value).__name__}); "
        "only strings, booleans, mappings and lists are written"
    )


def _flow(value: Any, ptr: str) -> str:
    if isinstance(value, Mapping):
        body = ", ".join(
            f"{_render(str(k), None, True)}: {_flow(v, ptr)}" for k, v in value.items()
        )
        return "{" + body + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flow(v, ptr) for v in value) + "]"
    return _scalar_text(value, True, ptr)


class _Style:
    """The file's layout: indentation step and sequence indentation below a key."""

    def __init__(self, text: str, docs: list[_Doc]) -> None:
        self.step = _indent_step(text, docs)
        self.seq_offset = _seq_offset(text, docs, self.step)


def _dash_before(text: str, node: _Node) -> int | None:
    """The offset of the ``-`` that introduces the block sequence item ``node``."""
    pos = node.start - 1
    while pos >= 0 and text[pos] in " \t":
        pos -= 1
    return pos if pos >= 0 and text[pos] == "-" else None


def _col(text: str, pos: int) -> int:
    return _line_col(text, pos)[1] - 1


def _seq_offset(text: str, docs: list[_Doc], step: int) -> int:
    counts: Counter[int] = Counter()
    for key, value in _map_entries(docs):
        if value.kind == "seq" and not value.flow and value.children:
            dash = _dash_before(text, value.children[0])
            if dash is not None and _col(text, dash) >= _col(text, key.start):
                counts[_col(text, dash) - _col(text, key.start)] += 1
    return counts.most_common(1)[0][0] if counts else step


def _is_collection(value: Any) -> bool:
    return isinstance(value, Mapping | list | tuple)


def _value_block(value: Any, col: int, style: _Style, ptr: str) -> tuple[str | None, list[str]]:
    """A key's value: inline text (scalars, empty collections) or the lines below the key;
    ``col`` is the key's column."""
    if isinstance(value, Mapping) and value:
        return None, _map_lines(value, col + style.step, style, ptr)
    if isinstance(value, list | tuple) and value:
        return None, _seq_lines(value, col + style.seq_offset, 2, style, ptr)
    return (_flow(value, ptr) if _is_collection(value) else _scalar_text(value, False, ptr)), []


def _key_lines(key: str, value: Any, col: int, style: _Style, ptr: str) -> list[str]:
    head = " " * col + _render(key, None, False) + ":"
    inline, lines = _value_block(value, col, style, ptr)
    return [head + " " + inline] if inline is not None else [head, *lines]


def _map_lines(value: Mapping[str, Any], col: int, style: _Style, ptr: str) -> list[str]:
    out: list[str] = []
    for key, item in value.items():
        out.extend(_key_lines(str(key), item, col, style, ptr))
    return out


def _seq_lines(items: Sequence[Any], dash_col: int, gap: int, style: _Style, ptr: str) -> list[str]:
    out: list[str] = []
    dash = " " * dash_col + "-" + " " * (gap - 1)
    for item in items:
        if isinstance(item, Mapping) and item:
            lines = _map_lines(item, dash_col + gap, style, ptr)
        elif isinstance(item, list | tuple) and item:
            lines = _seq_lines(item, dash_col + gap, 2, style, ptr)
        else:
            text = _flow(item, ptr) if _is_collection(item) else _scalar_text(item, False, ptr)
            lines = [" " * (dash_col + gap) + text]
        out.append(dash + lines[0][dash_col + gap :])
        out.extend(lines[1:])
    return out


# ---------------------------------------------------------------------------- text model


def _splice(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


class _Target:
    """One document of the current text, and where a pointer leads in it."""

    def __init__(self, text: str, index: int, ptr: str) -> None:
        self.text, self.index, self.ptr = text, index, ptr
        self.docs = _parse(text)
        root = self.docs[index].root if index < len(self.docs) else None
        if root is None:
            raise YamlPatchError(f"{ptr}: document {index} is empty")
        self.root = root
        self.shared = _shared_anchors(root)

    def where(self, node: _Node) -> str:
        return _where(self.text, node.start)

    def check_editable(self, node: _Node, here: str) -> None:
        if node.kind == "alias":
            raise YamlPatchError(
                f"{self.ptr}: {here} is the alias *{node.anchor} at {self.where(node)}; "
                "editing through an alias would change the anchored node as well"
            )
        if node.anchor is not None and node.anchor in self.shared:
            raise YamlPatchError(
                f"{self.ptr}: {here} at {self.where(node)} carries the anchor &{node.anchor}, "
                "which an alias shares; editing it would change the alias as well"
            )

    def walk(self, tokens: Sequence[str]) -> tuple[_Node, _Node | None, list[PathElem]]:
        """The node at ``tokens`` (it must exist), its key node and its yamledit path."""
        node, key_node = self.root, None
        path: list[PathElem] = []
        self.check_editable(node, "the document root")
        for n, token in enumerate(tokens):
            here = "/" + "/".join(tokens[: n + 1])
            if node.kind == "seq":
                i = _is_index(token, len(node.children), end_ok=False)
                if i is None:
                    raise YamlPatchError(
                        f"{self.ptr}: {here} does not exist; the sequence at "
                        f"{self.where(node)} has {len(node.children)} item(s)"
                    )
                nxt, key_node = node.children[i], None
                path.append(i)
            elif node.kind == "map":
                hit = self.lookup(node, token)
                if hit is None:
                    raise YamlPatchError(
                        f"{self.ptr}: {here} does not exist in the mapping at {self.where(node)}"
                    )
                key_node, nxt = hit
                path.append(token)
            else:
                raise YamlPatchError(
                    f"{self.ptr}: {here} cannot be looked up in the scalar at {self.where(node)}"
                )
            self.check_editable(nxt, here)
            node = nxt
        return node, key_node, path

    def lookup(self, mapping: _Node, key: str) -> tuple[_Node, _Node] | None:
        try:
            value = _lookup(self.text, mapping, key, self.ptr, merge=False)
        except YamlEditError as exc:
            raise YamlPatchError(f"{self.ptr}: {exc}") from None
        if value is None:
            return None
        return next((k, v) for k, v in mapping.items if v is value)


def _shared_anchors(root: _Node) -> set[str]:
    out: set[str] = set()

    def visit(node: _Node) -> None:
        if node.kind == "alias" and node.anchor:
            out.add(node.anchor)
        for key, value in node.items:
            visit(key)
            visit(value)
        for child in node.children:
            visit(child)

    visit(root)
    return out


def _check_subtree(target: _Target, node: _Node) -> None:
    target.check_editable(node, target.ptr)
    for key, value in node.items:
        _check_subtree(target, key)
        _check_subtree(target, value)
    for child in node.children:
        _check_subtree(target, child)


# ---------------------------------------------------------------------------- operations


def _wrap(ptr: str, exc: YamlEditError) -> YamlPatchError:
    return YamlPatchError(f"{ptr}: {exc}")


def _set_scalar(
    text: str, index: int, path: list[PathElem], value: Any, ptr: str, *, create: bool
) -> str:
    """Set the scalar at ``path`` to a string or boolean (created when ``create``)."""
    if isinstance(value, str):
        try:
            return set_value(text, path, value, create=create, document=index)
        except YamlEditError as exc:
            raise _wrap(ptr, exc) from None
    raw = _scalar_text(value, False, ptr)  # booleans; anything else is rejected here
    node = _existing(text, index, path, ptr)
    if node is None or _is_empty_scalar(node, text):
        try:
            # Create (or fill the empty value) as a string first, then make it a plain boolean.
            text = set_value(text, path, raw, create=create, document=index)
        except YamlEditError as exc:
            raise _wrap(ptr, exc) from None
        node = _existing(text, index, path, ptr)
    assert node is not None
    start = _value_start(text, node)
    if node.kind != "scalar" or node.style in ("|", ">") or start != node.start:
        raise YamlPatchError(f"{ptr}: cannot write a boolean at {_where(text, node.start)}")
    return _splice(text, start, node.end, raw)


def _existing(text: str, index: int, path: list[PathElem], ptr: str) -> _Node | None:
    target = _Target(text, index, ptr)
    tokens = [str(p) for p in path]
    parent, _, _ = target.walk(tokens[:-1])
    if parent.kind == "map" and target.lookup(parent, tokens[-1]) is None:
        return None
    return target.walk(tokens)[0]


def _replace(text: str, index: int, tokens: list[str], value: Any, ptr: str) -> str:
    target = _Target(text, index, ptr)
    node, _, path = target.walk(tokens)
    if node.kind == "scalar" and not _is_collection(value):
        return _set_scalar(text, index, path, value, ptr, create=False)
    if node.kind == "map" and isinstance(value, Mapping):
        return _replace_mapping(target, node, path, value)
    what = {"map": "a mapping", "seq": "a sequence"}.get(node.kind, "a scalar")
    if node.style in ("|", ">"):
        what = "a block scalar"
    wanted = (
        "a mapping"
        if isinstance(value, Mapping)
        else "a sequence"
        if _is_collection(value)
        else "a scalar"
    )
    raise YamlPatchError(
        f"{ptr}: the value at {target.where(node)} is {what}; replacing it with {wanted} "
        "is not supported"
    )


def _replace_mapping(
    target: _Target, node: _Node, path: list[PathElem], value: Mapping[str, Any]
) -> str:
    ptr, index, text = target.ptr, target.index, target.text
    for key, item in value.items():
        if _is_collection(item):
            raise YamlPatchError(
                f"{ptr}: field {key!r} holds a nested value; only flat mappings are replaced"
            )
    if not value:
        raise YamlPatchError(f"{ptr}: replacing a mapping with an empty one is not supported")
    _check_subtree(target, node)
    current: Any = _load_all(text)[index]
    for elem in path:
        current = current[elem]
    for key, item in value.items():
        if key in current and _same(current[key], item):
            continue
        text = _set_scalar(text, index, [*path, key], item, ptr, create=True)
    for key in current:
        if key not in value:
            text = _remove_key(text, index, path, str(key), ptr)
    return text


def _remove_key(text: str, index: int, path: list[PathElem], key: str, ptr: str) -> str:
    target = _Target(text, index, ptr)
    mapping, _, _ = target.walk([str(p) for p in path])
    hit = target.lookup(mapping, key)
    if hit is None:
        raise YamlPatchError(
            f"{ptr}: field {key!r} of the mapping at {target.where(mapping)} is not written in "
            "the mapping itself (a merge key?); cannot remove it"
        )
    key_node, value_node = hit
    n = next(i for i, (k, _) in enumerate(mapping.items) if k is key_node)
    if mapping.flow:
        if n > 0:
            prev_key, prev_value = mapping.items[n - 1]
            start = _content_end(text, prev_value, prev_key)
            return _splice(text, start, _content_end(text, value_node, key_node), "")
        next_key = mapping.items[1][0]
        return _splice(text, key_node.start, next_key.start, "")
    line_start = text.rfind("\n", 0, key_node.start) + 1
    if text[line_start : key_node.start].strip(" \t\ufeff") == "":
        end = _line_end(text, _content_end(text, value_node, key_node))
        return _splice(text, line_start, end, "")
    if n == 0:  # "- name: a" on the item's dash line: the next key moves up to the dash
        next_key = mapping.items[1][0]
        return _splice(text, key_node.start, next_key.start, "")
    raise YamlPatchError(
        f"{ptr}: cannot remove field {key!r} at {target.where(key_node)}: it does not start "
        "its own line"
    )


def _append(text: str, index: int, tokens: list[str], value: Any, ptr: str) -> str:
    target = _Target(text, index, ptr)
    seq, _, _ = target.walk(tokens)
    if _is_collection(value) and not isinstance(value, Mapping):
        raise YamlPatchError(f"{ptr}: appending a nested list is not supported")
    if seq.flow:
        close = seq.end - 1
        if text[close : close + 1] != "]":
            raise YamlPatchError(f"{ptr}: cannot find the ']' closing {target.where(seq)}")
        item = _flow(value, ptr)
        if seq.children:
            pos = _content_end(text, seq.children[-1])
            return _splice(text, pos, pos, ", " + item)
        return _splice(text, close, close, item)
    last = seq.children[-1]
    dash = _dash_before(text, last)
    if dash is None:
        raise YamlPatchError(
            f"{ptr}: cannot find the '-' of the last item at {target.where(last)}; "
            "an item on the line below its dash is not supported"
        )
    dash_col, gap = _col(text, dash), last.start - dash
    style = _Style(text, target.docs)
    if isinstance(value, Mapping) and value and last.kind == "map" and last.flow:
        lines = [" " * dash_col + "-" + " " * (gap - 1) + _flow(value, ptr)]
    else:
        lines = _seq_lines([value], dash_col, gap, style, ptr)
    pos = _line_end(text, _content_end(text, seq))
    start, end, rep = _insert_lines(text, pos, lines)
    return _splice(text, start, end, rep)


def _add_key(text: str, index: int, tokens: list[str], value: Any, ptr: str) -> str:
    target = _Target(text, index, ptr)
    parent, _, path = target.walk(tokens[:-1])
    key = tokens[-1]
    if parent.kind != "map":
        raise YamlPatchError(
            f"{ptr}: the parent at {target.where(parent)} is a scalar, not a mapping"
        )
    hit = target.lookup(parent, key)
    if hit is not None:
        return _fill_null(target, path, key, hit, value)
    if parent.flow:
        close = parent.end - 1
        if text[close : close + 1] != "}":
            raise YamlPatchError(f"{ptr}: cannot find the '}}' closing {target.where(parent)}")
        item = _render(key, None, True) + ": " + _flow(value, ptr)
        if parent.items:
            last_key, last_value = parent.items[-1]
            empty = _is_empty_scalar(last_value, text)
            pos = close if empty else _content_end(text, last_value, last_key)
            return _splice(text, pos, pos, ", " + item)
        return _splice(text, close, close, item)
    style = _Style(text, target.docs)
    col = _col(text, parent.items[0][0].start)
    lines = _key_lines(key, value, col, style, ptr)
    pos = _line_end(text, _content_end(text, parent))
    start, end, rep = _insert_lines(text, pos, lines)
    return _splice(text, start, end, rep)


def _fill_null(
    target: _Target, path: list[PathElem], key: str, hit: tuple[_Node, _Node], value: Any
) -> str:
    """``add`` of a key that exists: allowed when it holds ``null`` (``key:``, ``key: ~``)."""
    text, ptr = target.text, target.ptr
    key_node, node = hit
    if (
        node.kind != "scalar"
        or node.style is not None
        or node.value not in _NULLS
        or _value_start(text, node) != node.start
    ):
        raise YamlPatchError(
            f"{ptr}: already exists at {target.where(node)}; only a missing or null value "
            "can be added"
        )
    target.check_editable(node, ptr)
    if not _is_collection(value):
        return _set_scalar(text, target.index, [*path, key], value, ptr, create=False)
    if node.flow:
        if _is_empty_scalar(node, text):
            pos = _empty_position(text, node, key_node, ptr)
            return _splice(text, pos, pos, " " + _flow(value, ptr))
        return _splice(text, node.start, node.end, _flow(value, ptr))
    style = _Style(text, target.docs)
    if _is_empty_scalar(node, text):  # "key:"
        start = _empty_position(text, node, key_node, ptr)
    else:  # "key: null" → "key:"
        start = node.start
        while text[start - 1] in " \t":
            start -= 1
        text = _splice(text, start, node.end, "")
    inline, lines = _value_block(value, _col(text, key_node.start), style, ptr)
    if inline is not None:
        return _splice(text, start, start, " " + inline)
    s, e, rep = _insert_lines(text, _line_end(text, start), lines)
    return _splice(text, s, e, rep)


def _apply_op(text: str, index: int, op: Mapping[str, Any]) -> str:
    ptr = op["path"]
    tokens = _tokens(ptr)
    value = op["value"]
    if op["op"] == "replace":
        return _replace(text, index, tokens, value, ptr)
    target = _Target(text, index, ptr)
    parent, _, _ = target.walk(tokens[:-1])
    if parent.kind == "seq":
        if _is_index(tokens[-1], len(parent.children), end_ok=True) != len(parent.children):
            raise YamlPatchError(
                f"{ptr}: inserting into the middle of the sequence at {target.where(parent)} "
                "is not supported; append with '/-'"
            )
        return _append(text, index, tokens[:-1], value, ptr)
    return _add_key(text, index, tokens, value, ptr)


# -------------------------------------------------------------------------------- public API


def _checked_ops(ops: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    out = []
    for op in ops:
        kind, ptr = op.get("op"), op.get("path")
        if not isinstance(ptr, str):
            raise YamlPatchError(f"operation {dict(op)!r} has no 'path'")
        if kind not in ("add", "replace"):
            raise YamlPatchError(f"{ptr}: the operation {kind!r} is not supported")
        if "value" not in op:
            raise YamlPatchError(f"{ptr}: the {kind} operation has no 'value'")
        if not _tokens(ptr):
            raise YamlPatchError("replacing a whole document is not supported")
        if kind == "replace" and ptr == _RESOURCE_VERSION:
            continue  # the API server's concurrency guard; a file in Git has no version
        out.append(op)
    return out


def _choose(data: list[Any], ops: Sequence[Mapping[str, Any]], document: int | None) -> int:
    if document is not None:
        if not 0 <= document < len(data):
            raise YamlPatchError(
                f"document {document} does not exist; the file has {len(data)} document(s)"
            )
        return document
    if len(data) == 1:
        return 0
    if not data:
        raise YamlPatchError("the file has no YAML document")
    fits, first_error = [], ""
    for i, doc in enumerate(data):
        try:
            _apply_plain(doc, ops)
        except YamlPatchError as exc:
            first_error = first_error or str(exc)
            continue
        fits.append(i)
    if len(fits) == 1:
        return fits[0]
    if not fits:
        raise YamlPatchError(
            f"the patch applies to none of the {len(data)} documents ({first_error})"
        )
    raise YamlPatchError(
        f"the patch applies to documents {', '.join(map(str, fits))}; choose one with document="
    )


def apply_patch(text: str, ops: Sequence[Mapping[str, Any]], *, document: int | None = None) -> str:
    """Apply JSON-patch ops (the kinds json_patch_ops emits) to one YAML document of ``text``,
    changing only the bytes that must change; raise YamlPatchError (naming the JSON pointer and the
    line:col) when an op cannot be applied or the verification fails.

    ``document`` selects the document of a multi-document file; without it the file must have
    one document, or the patch must apply to exactly one of them.
    """
    effective = _checked_ops(ops)
    try:
        docs = _parse(text)
    except YamlEditError as exc:
        raise YamlPatchError(str(exc)) from None
    data = _load_all(text)
    if len(data) != len(docs):  # pragma: no cover - both read the same stream
        raise YamlPatchError("the documents of the file cannot be told apart")
    if not effective:
        return text
    index = _choose(data, effective, document)
    new = text
    for op in effective:  # on the text first: its errors name the line and column
        new = _apply_op(new, index, op)
    expected = list(data)
    expected[index] = _apply_plain(data[index], effective)
    try:
        result = _load_all(new)
    except YamlPatchError as exc:
        raise YamlPatchError(f"refusing the patch, it would break the file ({exc})") from None
    if len(result) != len(expected) or not all(
        _same(a, b) for a, b in zip(result, expected, strict=True)
    ):
        changed = [
            i for i, (a, b) in enumerate(zip(result, expected, strict=False)) if not _same(a, b)
        ]
        raise YamlPatchError(
            "refusing the patch: the edited file does not hold the patched data "
            f"(document(s) {', '.join(map(str, changed)) or '?'} differ)"
        )
    return new
