"""Setting images in a ``kustomization.yaml``, changing only the bytes that must change.

For every kustomize image string (``[name=]image[:tag][@digest]``, as in an Application's
``kustomize.images``) :func:`update_kustomization` upserts an element of the file's ``images:``
list keyed by ``name``, like ``kustomize edit set image``:

* ``name`` — the override name, or the image itself; ``newName`` — only for ``name=image``
  overrides; ``newTag`` and ``digest`` — when the string has them;
* an element with the same ``name`` is replaced: its fields are set in place, fields the new
  entry does not have are removed, fields it adds are appended to the element (other keys an
  element may carry are kept); elements for new names are appended to the list in the list's own
  indentation style (a new ``images:`` list follows the style of the file's other lists);
* values that YAML would not read back as the same string (``"123"``, ``"1.10"``) are quoted.

Changed values go through :mod:`~argocd_image_updater.kits.yamltext.edit`; added or removed
elements and fields are spliced into the text at line boundaries. When only values change (every
cycle after the first), the file is parsed once (by :mod:`~argocd_image_updater.kits.yamltext.quick`
when it is plain block YAML: no full parser) and each new value is verified on its own token.
Comments, blank lines, key order, a leading comment, ``%YAML`` directive or ``---`` marker and everything outside
``images:`` keep their bytes. After structural changes the result is parsed again and must hold
exactly the expected data, otherwise :class:`KustomizationError` is raised: a wrong file is
never returned.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from argocd_image_updater.kits.yamltext import PathElem, YamlEditError, is_safe_plain, set_value
from argocd_image_updater.kits.yamltext.edit import replace_scalars
from argocd_image_updater.kits.yamltext.quick import quick_parse
from argocd_image_updater.kits.yamltext.tree import Doc, is_empty_scalar
from argocd_image_updater.kits.yamltext.tree import Node as TreeNode
from argocd_image_updater.kits.yamltext.tree import parse as parse_tree
from argocd_image_updater.writeback.kustomize_images import (
    IMAGE_FIELDS,
    KUSTOMIZATION_FILE_NAMES,
    KustomizationError,
    KustomizeImage,
    find_kustomization,
    images_for_plan,
    kustomization_path,
    parse_image_override,
)
from argocd_image_updater.writeback.override_file import document_prefix

__all__ = [
    "KUSTOMIZATION_FILE_NAMES",
    "KustomizationError",
    "KustomizeImage",
    "find_kustomization",
    "images_for_plan",
    "kustomization_path",
    "parse_image_override",
    "update_kustomization",
]


def _merge(images: Sequence[str]) -> list[KustomizeImage]:
    """One element per name, at the position of the name's first entry; later entries win."""
    by_name: dict[str, KustomizeImage] = {}
    for text in images:
        entry = parse_image_override(text)
        if not entry.name:
            raise KustomizationError(f"invalid kustomize image '{text}': it names no image")
        by_name[entry.name] = entry
    return list(by_name.values())


# --------------------------------------------------------------------------- text positions


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _line_end(text: str, pos: int) -> int:
    nl = text.find("\n", pos)
    return len(text) if nl < 0 else nl + 1


def _column(text: str, pos: int) -> int:
    return pos - _line_start(text, pos)


def _is_empty(node: Node) -> bool:
    return (
        isinstance(node, ScalarNode)
        and node.value == ""
        and node.style is None
        and node.start_mark.index == node.end_mark.index
    )


def _after_colon(text: str, key: Node) -> int:
    pos = end = int(key.end_mark.index)
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    return pos + 1 if text.startswith(":", pos) else end


def _value_end(text: str, key: Node, value: Node) -> int:
    """Offset just after the last character of ``value`` (``key`` holds it)."""
    if _is_empty(value):
        return _after_colon(text, key)
    return _content_end(text, value)


def _content_end(text: str, node: Node) -> int:
    if isinstance(node, ScalarNode):
        if node.style in ("|", ">"):
            start, end = int(node.start_mark.index), int(node.end_mark.index)
            return start + len(text[start:end].rstrip(" \t\r\n"))
        return int(node.end_mark.index)
    if getattr(node, "flow_style", False) or not node.value:
        return int(node.end_mark.index)
    if isinstance(node, MappingNode):
        key, value = node.value[-1]
        return _value_end(text, key, value)
    return _content_end(text, node.value[-1])


def _render(value: str) -> str:
    return value if is_safe_plain(value) else json.dumps(value, ensure_ascii=False)


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _insert_lines(text: str, pos: int, lines: Sequence[str]) -> str:
    nl = _newline(text)
    block = nl.join(lines)
    if pos == len(text) and text and not text.endswith("\n"):
        return text + nl + block
    return text[:pos] + block + nl + text[pos:]


def _item_lines(entry: KustomizeImage, dash_col: int, key_col: int) -> list[str]:
    lines = []
    for i, (key, value) in enumerate(entry.fields()):
        if i == 0:
            head = " " * dash_col + "-" + " " * max(key_col - dash_col - 1, 1)
        else:
            head = " " * max(key_col, dash_col + 2)
        lines.append(f"{head}{key}: {_render(value)}")
    return lines


# ------------------------------------------------------------------------------- the update


@functools.lru_cache(maxsize=32)
def _compose(text: str) -> tuple[Node, ...]:
    """The documents' node trees (read only; the same text is looked at several times)."""
    return tuple(d for d in YAML(typ="rt", pure=True).compose_all(text) if d is not None)


class _Doc:
    """The parsed kustomization: its root mapping and the ``images`` key and value."""

    def __init__(self, text: str, path: str) -> None:
        self.path = path
        try:
            docs = list(_compose(text))
        except YAMLError as err:
            raise KustomizationError(f"{path}: invalid YAML: {err}") from None
        except NotImplementedError as err:  # ruamel.yaml's answer to some odd comments
            raise KustomizationError(f"{path}: unsupported YAML: {err}") from None
        filled = [d for d in docs if not _is_empty(d)]
        if len(filled) > 1:
            raise KustomizationError(
                f"{path}: target parameter file should contain a single YAML document, "
                f"found {len(filled)}"
            )
        self.root: Node | None = filled[0] if filled else None
        if self.root is not None and not isinstance(self.root, MappingNode):
            raise KustomizationError(
                f"{path}: the document must be a mapping (a kustomization), not a "
                f"{type(self.root).__name__.removesuffix('Node').lower()}"
            )
        if self.root is not None and self.root.flow_style:
            raise KustomizationError(
                f"{path}: the kustomization is written in flow style ({{...}}); write it in "
                "block style to let images be set"
            )
        self.key: Node | None = None
        self.images: Node | None = None
        if self.root is not None:
            for key, value in self.root.value:
                if isinstance(key, ScalarNode) and key.value == "images":
                    self.key, self.images = key, value
                    break

    def fail(self, problem: str) -> KustomizationError:
        return KustomizationError(f"{self.path}: images: {problem}")

    def items(self) -> list[MappingNode]:
        if not isinstance(self.images, SequenceNode):
            return []
        out = []
        for i, item in enumerate(self.images.value):
            if not isinstance(item, MappingNode) or item.flow_style:
                raise self.fail(f"element [{i}] is not a block mapping with name/newTag/digest")
            out.append(item)
        return out


def _scalar_fields(item: MappingNode) -> dict[str, tuple[Node, Node]]:
    out: dict[str, tuple[Node, Node]] = {}
    for key, value in item.value:
        if isinstance(key, ScalarNode) and key.value not in out:
            out[key.value] = (key, value)
    return out


def _name_of(item: MappingNode) -> str | None:
    pair = _scalar_fields(item).get("name")
    if pair is None or not isinstance(pair[1], ScalarNode):
        return None
    return str(pair[1].value)


def _find(doc: _Doc, name: str) -> int:
    for i, item in enumerate(doc.items()):
        if _name_of(item) == name:
            return i
    return -1


def _remove_field(text: str, item: MappingNode, field: str) -> str:
    pairs = item.value
    index = next(i for i, (k, _) in enumerate(pairs) if k.value == field)
    key, value = pairs[index]
    start = key.start_mark.index
    if text[_line_start(text, start) : start].strip() and index + 1 < len(pairs):
        # The first field of an element ("- field: x"): pull the next field onto this line.
        return text[:start] + text[pairs[index + 1][0].start_mark.index :]
    end = _line_end(text, _value_end(text, key, value))
    return text[: _line_start(text, start)] + text[end:]


def _sequence_style(text: str, root: Node | None) -> int:
    """The indentation of ``-`` relative to the parent key in the file's block lists."""
    if not isinstance(root, MappingNode):
        return 0
    for key, value in root.value:
        if isinstance(value, SequenceNode) and not value.flow_style and value.value:
            first = value.value[0].start_mark.index
            dash = text.rfind("-", 0, first)
            return max(_column(text, dash) - _column(text, key.start_mark.index), 0)
    return 0


def _empty_images_block(text: str, doc: _Doc, entries: Sequence[KustomizeImage]) -> str:
    """Put ``entries`` into an ``images:`` key that is missing, empty, ``null`` or ``[]``."""
    offset = _sequence_style(text, doc.root)
    if doc.key is None:
        if doc.root is None or not doc.root.value:
            col, pos = 0, len(text)
        else:
            col = _column(text, doc.root.value[0][0].start_mark.index)
            pos = _line_end(text, _content_end(text, doc.root))
        lines = [" " * col + "images:"]
    else:
        col = _column(text, doc.key.start_mark.index)
        value = doc.images
        assert value is not None
        if not _is_empty(value):
            start, end = value.start_mark.index, value.end_mark.index
            while start > 0 and text[start - 1] in " \t":
                start -= 1
            text = text[:start] + text[end:]
        pos = _line_end(text, doc.key.end_mark.index)
        lines = []
    for entry in entries:
        lines.extend(_item_lines(entry, col + offset, col + offset + 2))
    return _insert_lines(text, pos, lines)


def _append_items(text: str, doc: _Doc, entries: Sequence[KustomizeImage]) -> str:
    items = doc.items()
    last = items[-1]
    key_col = _column(text, last.start_mark.index)
    dash = text.rfind("-", _line_start(text, last.start_mark.index), last.start_mark.index)
    dash_col = _column(text, dash) if dash >= 0 else max(key_col - 2, 0)
    assert doc.images is not None
    pos = _line_end(text, _content_end(text, doc.images))
    lines: list[str] = []
    for entry in entries:
        lines.extend(_item_lines(entry, dash_col, key_col))
    return _insert_lines(text, pos, lines)


def _update_item(text: str, path: str, index: int, entry: KustomizeImage) -> str:
    wanted = dict(entry.fields())
    fields = _scalar_fields(_Doc(text, path).items()[index])
    for key, value in wanted.items():
        current = fields.get(key)
        if (
            current is not None
            and isinstance(current[1], ScalarNode)
            and current[1].value == value
            and not _is_empty(current[1])
        ):
            continue
        try:
            text = set_value(text, ["images", index, key], value)
        except YamlEditError as err:
            raise KustomizationError(f"{path}: {err}") from None
    for key in IMAGE_FIELDS:
        if key not in wanted and key in fields:
            text = _remove_field(text, _Doc(text, path).items()[index], key)
    return text


def _load(text: str) -> Any:
    return YAML(typ="base", pure=True).load(text)


def _expected(original: Any, entries: Sequence[KustomizeImage]) -> dict[str, Any]:
    data = dict(original) if isinstance(original, dict) else {}
    current = data.get("images")
    images = [dict(i) for i in current] if isinstance(current, list) else []
    for entry in entries:
        element = dict(entry.fields())
        for i, item in enumerate(images):
            if item.get("name") == entry.name:
                kept = {k: v for k, v in item.items() if k not in IMAGE_FIELDS}
                images[i] = kept | element
                break
        else:
            images.append(element)
    data["images"] = images
    return data


def update_kustomization(
    text: str, images: Sequence[str], *, path: str = "kustomization.yaml"
) -> str | None:
    """``text`` with ``images`` set; ``None`` when the file already holds them.

    ``images`` are kustomize image strings (``[name=]image[:tag][@digest]``); ``path`` names the
    file in errors. Raise :class:`KustomizationError` for a file that is not a single YAML
    mapping document or whose ``images`` cannot be edited.
    """
    entries = _merge(images)
    if not entries:
        return None
    # Leading comments, directives and the "---" marker are kept aside (they hold no data).
    prefix = document_prefix(text)
    body = _update_body(text[len(prefix) :], entries, path)
    return None if body is None else prefix + body


def _in_place_edits(
    text: str, entries: Sequence[KustomizeImage], docs: Sequence[Doc] | None = None
) -> list[tuple[list[PathElem], TreeNode, str]] | None:
    """The value edits that set ``entries`` when each names an element of a plain block
    ``images:`` list that already has exactly the fields it needs (the case of every cycle
    after the first): (path, value) pairs, ``[]`` when the file holds them already. ``None``
    for anything else (elements or fields to add or remove, flow style, anchors, aliases or
    merge keys, several documents): :func:`_update_body` then takes the general way.

    Found on the one parse :func:`~argocd_image_updater.kits.yamltext.set_value` uses anyway,
    so a file is parsed once; each edit is verified by ``set_value``, and every other byte is
    kept, so the result holds exactly the expected images.
    """
    if docs is None:
        try:
            docs = parse_tree(text)
        except YamlEditError:
            return None
    if len(docs) != 1 or docs[0].root is None:
        return None
    root = docs[0].root
    if root.kind != "map" or root.flow or root.anchor is not None:
        return None
    found = [value for key, value in root.items if key.kind == "scalar" and key.value == "images"]
    if len(found) != 1 or any(key.kind != "scalar" for key, _ in root.items):
        return None
    images = found[0]
    if images.kind != "seq" or images.flow or images.anchor is not None or not images.children:
        return None
    fields: list[dict[str, TreeNode]] = []
    for item in images.children:
        if item.kind != "map" or item.flow or item.anchor is not None:
            return None
        keys = [key.value if key.kind == "scalar" else None for key, _ in item.items]
        if None in keys or "<<" in keys or len(set(keys)) != len(keys):
            return None
        fields.append({key.value: value for key, value in item.items})
    names = [
        f["name"].value if f.get("name") and f["name"].kind == "scalar" else None for f in fields
    ]
    edits: list[tuple[list[PathElem], TreeNode, str]] = []
    for entry in entries:
        if entry.name not in names:
            return None
        index = names.index(entry.name)
        wanted = dict(entry.fields())
        if {k for k in IMAGE_FIELDS if k in fields[index]} != wanted.keys():
            return None
        for key, value in wanted.items():
            node = fields[index][key]
            if node.kind != "scalar" or node.anchor is not None or node.style in ("|", ">"):
                return None
            if node.value != value or is_empty_scalar(node, text):
                edits.append((["images", index, key], node, value))
    return edits


def _update_body(text: str, entries: Sequence[KustomizeImage], path: str) -> str | None:
    quick = quick_parse(text)
    if quick is not None:
        # Plain block YAML, read without the full parser: each value token is replaced and
        # verified on its own.
        found = _in_place_edits(text, entries, quick)
        if found == []:
            return None
        if found:
            new = replace_scalars(text, [(node, wanted) for _, node, wanted in found])
            if new is not None:
                return None if new == text else new
    edits = _in_place_edits(text, entries)
    if edits is not None:
        new = text
        for where, _, wanted in edits:
            try:
                new = set_value(new, where, wanted, create=False)
            except YamlEditError as err:
                raise KustomizationError(f"{path}: {err}") from None
        return None if new == text else new
    doc = _Doc(text, path)
    if doc.images is not None and not _is_empty(doc.images):
        value = doc.images
        is_null = isinstance(value, ScalarNode) and (value.tag or "").endswith(":null")
        is_empty_flow = isinstance(value, SequenceNode) and value.flow_style and not value.value
        if not (isinstance(value, SequenceNode) or is_null):
            raise doc.fail("expected a list")
        if isinstance(value, SequenceNode) and value.flow_style and not is_empty_flow:
            raise doc.fail("the list is written in flow style ([...]); write it in block style")
    original = _load(text)
    new = text
    if doc.images is None or not isinstance(doc.images, SequenceNode) or not doc.images.value:
        new = _empty_images_block(new, doc, entries)
    else:
        missing: list[KustomizeImage] = []
        for entry in entries:
            index = _find(_Doc(new, path), entry.name)
            if index < 0:
                missing.append(entry)
            else:
                new = _update_item(new, path, index, entry)
        if missing:
            new = _append_items(new, _Doc(new, path), missing)
    if new == text:
        return None
    if _load(new) != _expected(original, entries):
        raise KustomizationError(
            f"{path}: refusing to write the kustomization: the edited text does not read back "
            "as the expected images"
        )
    return new
