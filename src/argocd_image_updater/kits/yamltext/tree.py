"""The node tree of a YAML text, built from ruamel.yaml's parser events, with every node's
exact offsets in the text; and where a node's text starts and ends."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    Event,
    MappingStartEvent,
    ScalarEvent,
    SequenceStartEvent,
)

from argocd_image_updater.kits.yamltext.errors import YamlEditError
from argocd_image_updater.kits.yamltext.paths import PathElem


@dataclass(eq=False, slots=True)
class Node:
    kind: str  # "scalar", "map", "seq" or "alias"
    start: int  # first character, anchor/tag included
    end: int
    value: str = ""
    style: str | None = None
    flow: bool = False  # a flow collection, or a node inside one
    anchor: str | None = None
    items: list[tuple[Node, Node]] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)
    target: Node | None = None  # aliases: the anchored node


@dataclass(slots=True)
class Doc:
    start: int
    root: Node | None = None


def deref(node: Node) -> Node:
    while node.kind == "alias" and node.target is not None:
        node = node.target
    return node


def line_col(text: str, index: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, index) + 1
    if line_start == 0 and text.startswith("\ufeff"):
        line_start = 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def position(text: str, pos: int) -> str:
    line, col = line_col(text, pos)
    return f"line {line}, column {col}"


def where(text: str, node: Node) -> str:
    return position(text, node.start)


def kind_name(node: Node) -> str:
    return {"map": "a mapping", "seq": "a sequence", "scalar": "a scalar"}.get(
        node.kind, "an alias"
    )


def parse(text: str) -> list[Doc]:
    return list(_parse_cached(text))


# An edit parses the same text several times (locate, verify old and new, read back); parsing
# is the costly part and the parsed tree is never changed after it is built, so keep a few.
@functools.lru_cache(maxsize=32)
def _parse_cached(text: str) -> tuple[Doc, ...]:
    try:
        events = list(YAML(typ="rt", pure=True).parse(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        raise YamlEditError(f"invalid YAML at {where}: {exc.problem or exc.context}") from None
    except YAMLError as exc:
        raise YamlEditError(f"invalid YAML: {exc}") from None
    except NotImplementedError as exc:  # ruamel.yaml's answer to some odd comments
        raise YamlEditError(f"unsupported YAML: {exc}") from None
    return tuple(_build(events))


def _build(events: list[Event]) -> list[Doc]:
    docs: list[Doc] = []
    anchors: dict[str, Node] = {}
    stack: list[Node] = []
    pending: dict[int, Node | None] = {}  # id(open mapping) → key waiting for its value
    doc = Doc(0)

    def attach(node: Node) -> None:
        if not stack:
            doc.root = node
            return
        parent = stack[-1]
        node.flow = node.flow or parent.flow
        if parent.kind == "seq":
            parent.children.append(node)
        elif pending[id(parent)] is None:
            pending[id(parent)] = node
        else:
            key = pending[id(parent)]
            assert key is not None
            parent.items.append((key, node))
            pending[id(parent)] = None

    for ev in events:
        start, end = ev.start_mark.index, ev.end_mark.index
        if isinstance(ev, DocumentStartEvent):
            doc = Doc(start)
        elif isinstance(ev, DocumentEndEvent):
            docs.append(doc)
        elif isinstance(ev, ScalarEvent):
            node = Node("scalar", start, end, value=ev.value, style=ev.style, anchor=ev.anchor)
            attach(node)
        elif isinstance(ev, AliasEvent):
            attach(Node("alias", start, end, anchor=ev.anchor, target=anchors.get(ev.anchor)))
            continue
        elif isinstance(ev, MappingStartEvent | SequenceStartEvent):
            kind = "map" if isinstance(ev, MappingStartEvent) else "seq"
            node = Node(kind, start, end, flow=bool(ev.flow_style), anchor=ev.anchor)
            attach(node)
            stack.append(node)
            pending[id(node)] = None
        elif isinstance(ev, CollectionEndEvent):
            stack.pop().end = end
            continue
        else:
            continue
        if isinstance(ev, ScalarEvent | MappingStartEvent | SequenceStartEvent) and ev.anchor:
            anchors[ev.anchor] = node
    return docs


def walk_tree(node: Node, path: tuple[PathElem, ...]) -> Iterator[tuple[tuple[object, ...], str]]:
    """Every leaf under ``node`` as (path, value), without following aliases."""
    if node.kind == "scalar":
        yield path, "=" + node.value
    elif node.kind == "alias":
        yield path, "*" + (node.anchor or "")
    elif node.kind == "map":
        if not node.items:
            yield path, "{}"
        for n, (key, value) in enumerate(node.items):
            k = key.value if key.kind == "scalar" else f"?{n}"
            yield from walk_tree(value, (*path, k))
    else:
        if not node.children:
            yield path, "[]"
        for n, child in enumerate(node.children):
            yield from walk_tree(child, (*path, n))


def canonical_paths(
    node: Node, path: tuple[PathElem, ...], out: dict[int, tuple[PathElem, ...]]
) -> None:
    if node.kind == "alias" or id(node) in out:
        return
    out[id(node)] = path
    if node.kind == "map":
        for key, value in node.items:
            if key.kind == "scalar":
                canonical_paths(value, (*path, key.value), out)
    elif node.kind == "seq":
        for n, child in enumerate(node.children):
            canonical_paths(child, (*path, n), out)


def map_entries(docs: Sequence[Doc]) -> Iterator[tuple[Node, Node]]:
    """Every ``(key, value)`` of every mapping in ``docs``, depth first."""

    def visit(node: Node) -> Iterator[tuple[Node, Node]]:
        if node.kind == "map":
            for key, value in node.items:
                yield key, value
                yield from visit(value)
        elif node.kind == "seq":
            for child in node.children:
                yield from visit(child)

    for doc in docs:
        if doc.root is not None:
            yield from visit(doc.root)


def _skip_props(text: str, pos: int, end: int) -> int:
    """Skip anchors/tags (and the blanks or comments after them) starting at ``pos``."""
    while pos < end and text[pos] in "&!":
        while pos < end and text[pos] not in " \t\r\n,[]{}":
            pos += 1
        while pos < end:
            if text[pos] in " \t\r\n":
                pos += 1
            elif text[pos] == "#":
                nl = text.find("\n", pos)
                pos = end if nl < 0 else nl + 1
            else:
                break
    return pos


def value_start(text: str, node: Node) -> int:
    return _skip_props(text, node.start, node.end)


def is_empty_scalar(node: Node, text: str) -> bool:
    """A plain null scalar with no text of its own (``key:`` or ``key: &anchor``)."""
    return (
        node.kind == "scalar"
        and node.style is None
        and node.value == ""
        and value_start(text, node) >= node.end
    )


def empty_position(text: str, node: Node, key: Node | None, path_text: str) -> int:
    """Where the text of an empty scalar goes: after its props, its ``:`` or its ``-``."""
    if node.end > node.start:  # "key: &anchor" / "key: !tag": the props end the node
        return node.end
    if key is not None:
        pos = key.end
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if text.startswith(":", pos):
            return pos + 1
    elif text[node.start - 1 : node.start] == "-":
        return node.start
    raise YamlEditError(f"{path_text}: cannot locate the empty value at {where(text, node)}")


def content_end(text: str, node: Node, key: Node | None = None) -> int:
    """Offset just after the last character that belongs to ``node`` (``key`` holds it)."""
    if node.kind == "scalar":
        if is_empty_scalar(node, text):
            return empty_position(text, node, key, "")
        if node.style in ("|", ">"):
            start = value_start(text, node)
            if "+" in text[start : text.find("\n", start)].split("#")[0]:
                return node.end - 1  # kept trailing newlines are content
            return start + len(text[start : node.end].rstrip(" \t\r\n"))
        return node.end
    if node.kind == "alias" or node.flow:
        return node.end
    if node.kind == "map":
        last_key, last_value = node.items[-1]
        return content_end(text, last_value, last_key)
    return content_end(text, node.children[-1])
