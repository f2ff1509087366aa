"""Apply a JSON patch (RFC 6902) to a Kubernetes object's YAML manifest.

The patch is the one a client sends to the API server to update the object (an Argo CD
Application's image overrides); applied here it changes the manifest file the way the server
changes the object, while every byte outside the changed values stays as it was: comments,
blank lines, key order, quoting, indentation, flow or block style, CRLF line endings and a
missing trailing newline.

Why this is written by hand: no YAML library edits text surgically. A round trip through
ruamel.yaml (the only Python library that keeps comments) still re-indents sequences, re-wraps
and re-quotes scalars, moves comments and drops blank lines or document markers, and a JSON-patch
library works on data, not on text. So, like :mod:`.edit`, ruamel.yaml's parser is used only
to *locate* nodes (its marks carry exact offsets), and new text is spliced in.

Supported operations (exactly what such an image-override update emits):

* ``replace /metadata/resourceVersion`` is ignored: it is the API server's optimistic-lock guard
  and a manifest in Git has no resource version. Only this exact path is ignored.
* ``replace`` of an existing scalar with a string or boolean: the scalar's bytes are rewritten
  (:func:`.edit.set_value` rules: quoting style kept where the value allows it).
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

from collections.abc import Mapping, Sequence
from typing import Any, Final

from argocd_image_updater.kits.yamltext.edit import set_value
from argocd_image_updater.kits.yamltext.errors import YamlEditError, YamlPatchError
from argocd_image_updater.kits.yamltext.jsonpatch import (
    apply_plain,
    checked_ops,
    choose,
    is_index,
    load_all,
    pointer_tokens,
    same,
)
from argocd_image_updater.kits.yamltext.layout import (
    Style,
    column_at,
    dash_before,
    insert_lines,
    line_end,
)
from argocd_image_updater.kits.yamltext.lookup import lookup
from argocd_image_updater.kits.yamltext.paths import PathElem
from argocd_image_updater.kits.yamltext.render import (
    flow,
    is_collection,
    key_lines,
    scalar_text,
    seq_lines,
    value_block,
)
from argocd_image_updater.kits.yamltext.scalars import render
from argocd_image_updater.kits.yamltext.tree import (
    Node,
    content_end,
    empty_position,
    is_empty_scalar,
    parse,
    position,
    value_start,
)

_NULLS: Final = frozenset({"", "~", "null", "Null", "NULL"})


def _splice(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


class _Target:
    """One document of the current text, and where a pointer leads in it."""

    def __init__(self, text: str, index: int, ptr: str) -> None:
        self.text, self.index, self.ptr = text, index, ptr
        self.docs = parse(text)
        root = self.docs[index].root if index < len(self.docs) else None
        if root is None:
            raise YamlPatchError(f"{ptr}: document {index} is empty")
        self.root = root
        self.shared = _shared_anchors(root)

    def where(self, node: Node) -> str:
        return position(self.text, node.start)

    def check_editable(self, node: Node, here: str) -> None:
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

    def walk(self, tokens: Sequence[str]) -> tuple[Node, Node | None, list[PathElem]]:
        """The node at ``tokens`` (it must exist), its key node and its path."""
        node, key_node = self.root, None
        path: list[PathElem] = []
        self.check_editable(node, "the document root")
        for n, token in enumerate(tokens):
            here = "/" + "/".join(tokens[: n + 1])
            if node.kind == "seq":
                i = is_index(token, len(node.children), end_ok=False)
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

    def lookup(self, mapping: Node, key: str) -> tuple[Node, Node] | None:
        try:
            value = lookup(self.text, mapping, key, self.ptr, merge=False)
        except YamlEditError as exc:
            raise YamlPatchError(f"{self.ptr}: {exc}") from None
        if value is None:
            return None
        return next((k, v) for k, v in mapping.items if v is value)


def _shared_anchors(root: Node) -> set[str]:
    out: set[str] = set()

    def visit(node: Node) -> None:
        if node.kind == "alias" and node.anchor:
            out.add(node.anchor)
        for key, value in node.items:
            visit(key)
            visit(value)
        for child in node.children:
            visit(child)

    visit(root)
    return out


def _check_subtree(target: _Target, node: Node) -> None:
    target.check_editable(node, target.ptr)
    for key, value in node.items:
        _check_subtree(target, key)
        _check_subtree(target, value)
    for child in node.children:
        _check_subtree(target, child)


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
    raw = scalar_text(value, False, ptr)  # booleans; anything else is rejected here
    node = _existing(text, index, path, ptr)
    if node is None or is_empty_scalar(node, text):
        try:
            # Create (or fill the empty value) as a string first, then make it a plain boolean.
            text = set_value(text, path, raw, create=create, document=index)
        except YamlEditError as exc:
            raise _wrap(ptr, exc) from None
        node = _existing(text, index, path, ptr)
    assert node is not None
    start = value_start(text, node)
    if node.kind != "scalar" or node.style in ("|", ">") or start != node.start:
        raise YamlPatchError(f"{ptr}: cannot write a boolean at {position(text, node.start)}")
    return _splice(text, start, node.end, raw)


def _existing(text: str, index: int, path: list[PathElem], ptr: str) -> Node | None:
    target = _Target(text, index, ptr)
    tokens = [str(p) for p in path]
    parent, _, _ = target.walk(tokens[:-1])
    if parent.kind == "map" and target.lookup(parent, tokens[-1]) is None:
        return None
    return target.walk(tokens)[0]


def _replace(text: str, index: int, tokens: list[str], value: Any, ptr: str) -> str:
    target = _Target(text, index, ptr)
    node, _, path = target.walk(tokens)
    if node.kind == "scalar" and not is_collection(value):
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
        if is_collection(value)
        else "a scalar"
    )
    raise YamlPatchError(
        f"{ptr}: the value at {target.where(node)} is {what}; replacing it with {wanted} "
        "is not supported"
    )


def _replace_mapping(
    target: _Target, node: Node, path: list[PathElem], value: Mapping[str, Any]
) -> str:
    ptr, index, text = target.ptr, target.index, target.text
    for key, item in value.items():
        if is_collection(item):
            raise YamlPatchError(
                f"{ptr}: field {key!r} holds a nested value; only flat mappings are replaced"
            )
    if not value:
        raise YamlPatchError(f"{ptr}: replacing a mapping with an empty one is not supported")
    _check_subtree(target, node)
    current: Any = load_all(text)[index]
    for elem in path:
        current = current[elem]
    for key, item in value.items():
        if key in current and same(current[key], item):
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
            start = content_end(text, prev_value, prev_key)
            return _splice(text, start, content_end(text, value_node, key_node), "")
        next_key = mapping.items[1][0]
        return _splice(text, key_node.start, next_key.start, "")
    line_start = text.rfind("\n", 0, key_node.start) + 1
    if text[line_start : key_node.start].strip(" \t\ufeff") == "":
        end = line_end(text, content_end(text, value_node, key_node))
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
    if is_collection(value) and not isinstance(value, Mapping):
        raise YamlPatchError(f"{ptr}: appending a nested list is not supported")
    if seq.flow:
        close = seq.end - 1
        if text[close : close + 1] != "]":
            raise YamlPatchError(f"{ptr}: cannot find the ']' closing {target.where(seq)}")
        item = flow(value, ptr)
        if seq.children:
            pos = content_end(text, seq.children[-1])
            return _splice(text, pos, pos, ", " + item)
        return _splice(text, close, close, item)
    last = seq.children[-1]
    dash = dash_before(text, last)
    if dash is None:
        raise YamlPatchError(
            f"{ptr}: cannot find the '-' of the last item at {target.where(last)}; "
            "an item on the line below its dash is not supported"
        )
    dash_col, gap = column_at(text, dash), last.start - dash
    style = Style(text, target.docs)
    if isinstance(value, Mapping) and value and last.kind == "map" and last.flow:
        lines = [" " * dash_col + "-" + " " * (gap - 1) + flow(value, ptr)]
    else:
        lines = seq_lines([value], dash_col, gap, style, ptr)
    pos = line_end(text, content_end(text, seq))
    start, end, rep = insert_lines(text, pos, lines)
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
        item = render(key, None, True) + ": " + flow(value, ptr)
        if parent.items:
            last_key, last_value = parent.items[-1]
            empty = is_empty_scalar(last_value, text)
            pos = close if empty else content_end(text, last_value, last_key)
            return _splice(text, pos, pos, ", " + item)
        return _splice(text, close, close, item)
    style = Style(text, target.docs)
    col = column_at(text, parent.items[0][0].start)
    lines = key_lines(key, value, col, style, ptr)
    pos = line_end(text, content_end(text, parent))
    start, end, rep = insert_lines(text, pos, lines)
    return _splice(text, start, end, rep)


def _fill_null(
    target: _Target, path: list[PathElem], key: str, hit: tuple[Node, Node], value: Any
) -> str:
    """``add`` of a key that exists: allowed when it holds ``null`` (``key:``, ``key: ~``)."""
    text, ptr = target.text, target.ptr
    key_node, node = hit
    if (
        node.kind != "scalar"
        or node.style is not None
        or node.value not in _NULLS
        or value_start(text, node) != node.start
    ):
        raise YamlPatchError(
            f"{ptr}: already exists at {target.where(node)}; only a missing or null value "
            "can be added"
        )
    target.check_editable(node, ptr)
    if not is_collection(value):
        return _set_scalar(text, target.index, [*path, key], value, ptr, create=False)
    if node.flow:
        if is_empty_scalar(node, text):
            pos = empty_position(text, node, key_node, ptr)
            return _splice(text, pos, pos, " " + flow(value, ptr))
        return _splice(text, node.start, node.end, flow(value, ptr))
    style = Style(text, target.docs)
    if is_empty_scalar(node, text):  # "key:"
        start = empty_position(text, node, key_node, ptr)
    else:  # "key: null" → "key:"
        start = node.start
        while text[start - 1] in " \t":
            start -= 1
        text = _splice(text, start, node.end, "")
    inline, lines = value_block(value, column_at(text, key_node.start), style, ptr)
    if inline is not None:
        return _splice(text, start, start, " " + inline)
    s, e, rep = insert_lines(text, line_end(text, start), lines)
    return _splice(text, s, e, rep)


def _apply_op(text: str, index: int, op: Mapping[str, Any]) -> str:
    ptr = op["path"]
    tokens = pointer_tokens(ptr)
    if op["op"] == "remove":
        parent, _, path = _Target(text, index, ptr).walk(tokens[:-1])
        if parent.kind != "map":
            raise YamlPatchError(f"{ptr}: only a key of a mapping can be removed")
        return _remove_key(text, index, path, tokens[-1], ptr)
    value = op["value"]
    if op["op"] == "replace":
        return _replace(text, index, tokens, value, ptr)
    target = _Target(text, index, ptr)
    parent, _, _ = target.walk(tokens[:-1])
    if parent.kind == "seq":
        if is_index(tokens[-1], len(parent.children), end_ok=True) != len(parent.children):
            raise YamlPatchError(
                f"{ptr}: inserting into the middle of the sequence at {target.where(parent)} "
                "is not supported; append with '/-'"
            )
        return _append(text, index, tokens[:-1], value, ptr)
    return _add_key(text, index, tokens, value, ptr)


def apply_patch(text: str, ops: Sequence[Mapping[str, Any]], *, document: int | None = None) -> str:
    """Apply JSON-patch ops (``add``, ``replace``, and ``remove`` of a mapping key with its
    whole value) to one YAML document of ``text``,
    changing only the bytes that must change; raise YamlPatchError (naming the JSON pointer and the
    line:col) when an op cannot be applied or the verification fails.

    ``document`` selects the document of a multi-document file; without it the file must have
    one document, or the patch must apply to exactly one of them.
    """
    effective = checked_ops(ops)
    try:
        docs = parse(text)
    except YamlEditError as exc:
        raise YamlPatchError(str(exc)) from None
    data = load_all(text)
    if len(data) != len(docs):  # pragma: no cover - both read the same stream
        raise YamlPatchError("the documents of the file cannot be told apart")
    if not effective:
        return text
    index = choose(data, effective, document)
    new = text
    for op in effective:  # on the text first: its errors name the line and column
        new = _apply_op(new, index, op)
    expected = list(data)
    expected[index] = apply_plain(data[index], effective)
    try:
        result = load_all(new)
    except YamlPatchError as exc:
        raise YamlPatchError(f"refusing the patch, it would break the file ({exc})") from None
    if len(result) != len(expected) or not all(
        same(a, b) for a, b in zip(result, expected, strict=True)
    ):
        changed = [
            i for i, (a, b) in enumerate(zip(result, expected, strict=False)) if not same(a, b)
        ]
        raise YamlPatchError(
            "refusing the patch: the edited file does not hold the patched data "
            f"(document(s) {', '.join(map(str, changed)) or '?'} differ)"
        )
    return new
