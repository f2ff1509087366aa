"""Finding a path in a document: keys (merge keys ``<<`` optionally followed), indexes, and the
document of a file a path belongs to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from argocd_image_updater.kits.yamltext.errors import OutOfRange, YamlEditError
from argocd_image_updater.kits.yamltext.paths import PathElem, format_path
from argocd_image_updater.kits.yamltext.tree import (
    Doc,
    Node,
    deref,
    is_empty_scalar,
    kind_name,
    where,
)


def lookup(
    text: str,
    mapping: Node,
    key: str,
    path_text: str,
    merge: bool,
    seen: frozenset[int] = frozenset(),
) -> Node | None:
    """The value of ``key`` in ``mapping``; with ``merge`` also from ``<<`` merged mappings."""
    found: Node | None = None
    for key_node, value in mapping.items:
        k = deref(key_node)
        if k.kind == "scalar" and k.value == key:
            if found is not None:
                raise YamlEditError(
                    f"{path_text}: duplicate key {key!r} at {where(text, key_node)}"
                )
            found = value
    if found is None and merge:
        for key_node, value in mapping.items:
            if key_node.kind == "scalar" and key_node.value == "<<" and key_node.style is None:
                target = deref(value)
                sources = [deref(c) for c in target.children] if target.kind == "seq" else [target]
                for source in sources:
                    if source.kind == "map" and id(source) not in seen | {id(mapping)}:
                        hit = lookup(text, source, key, path_text, merge, seen | {id(mapping)})
                        if hit is not None:
                            return hit
    return found


@dataclass(slots=True)
class Resolved:
    node: Node | None  # the target (aliases followed) when it exists
    parent: Node  # deepest existing node on the path (aliases followed)
    parent_key: Node | None  # the key node holding ``parent`` in its mapping, if any
    rest: list[PathElem]  # the missing tail of the path


def resolve(text: str, root: Node, path: Sequence[PathElem], *, merge: bool = False) -> Resolved:
    path_text = format_path(path)
    node, key_node = deref(root), None
    for i, elem in enumerate(path):
        here = format_path(path[:i]) if i else "the document root"
        if isinstance(elem, int):
            if node.kind != "seq":
                raise YamlEditError(
                    f"{path_text}: index [{elem}] used on {here}, which is "
                    f"{kind_name(node)} at {where(text, node)}, not a sequence"
                )
            size = len(node.children)
            if not 0 <= elem < size:
                raise OutOfRange(
                    f"{path_text}: index {elem} is out of range [0, {size}) for the sequence "
                    f"{here} at {where(text, node)}"
                )
            nxt, key_node = node.children[elem], None
        elif node.kind == "map":
            hit = lookup(text, node, elem, path_text, merge)
            if hit is None:
                return Resolved(None, node, key_node, list(path[i:]))
            key_node = next(k for k, v in node.items if v is hit) if not merge else None
            nxt = hit
        elif node.kind == "seq":
            raise YamlEditError(
                f"{path_text}: {here} is a sequence at {where(text, node)}; "
                f"select an item with an index, e.g. {format_path([*path[:i], 0])}"
            )
        elif is_empty_scalar(node, text) and not node.flow:
            return Resolved(None, node, key_node, list(path[i:]))
        else:
            raise YamlEditError(
                f"{path_text}: {here} is a scalar at {where(text, node)}, not a mapping"
            )
        node = deref(nxt)
    return Resolved(node, node, key_node, [])


def _doc_has(text: str, doc: Doc, path: Sequence[PathElem]) -> bool:
    if doc.root is None:
        return False
    try:
        return resolve(text, doc.root, path).node is not None
    except YamlEditError:
        return False


def doc_is_blank(text: str, doc: Doc) -> bool:
    return doc.root is None or is_empty_scalar(deref(doc.root), text)


def select(
    text: str, docs: list[Doc], path: Sequence[PathElem], document: int | None, create: bool
) -> int | None:
    if document is not None:
        if not 0 <= document < max(len(docs), 1):
            raise YamlEditError(
                f"document {document} does not exist; the file has {len(docs)} document(s)"
            )
        return document
    if len(docs) <= 1:
        return 0
    hits = [i for i, doc in enumerate(docs) if _doc_has(text, doc, path)]
    if len(hits) > 1:
        raise YamlEditError(
            f"ambiguous path {format_path(path)}: it exists in documents "
            f"{', '.join(map(str, hits))}; choose one with document="
        )
    if hits:
        return hits[0]
    if not create:
        return None
    filled = [i for i, doc in enumerate(docs) if not doc_is_blank(text, doc)]
    if len(filled) == 1:
        return filled[0]
    raise YamlEditError(
        f"ambiguous path {format_path(path)}: it exists in none of the {len(docs)} documents; "
        "choose one with document="
    )
