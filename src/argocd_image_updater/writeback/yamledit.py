"""Surgical edits of YAML text: change the bytes of one scalar and nothing else.

Round-tripping through a YAML library (ruamel.yaml included) rewrites more than the edited value:
blank lines, quoting, indentation, comment alignment, ``---`` markers. Reviewers then distrust
automated diffs. So ruamel.yaml's parser is used only to *locate* nodes (its events carry exact
start/end offsets); the new value is spliced into the original text and every other byte is kept
(comments, blank lines, key order, indentation, anchors, document markers, CRLF, a BOM and the
presence or absence of a trailing newline).

Rules:

* A plain scalar stays plain when the new value is safe as a plain scalar (see
  :func:`is_safe_plain`), otherwise it becomes double-quoted; single-quoted stays single-quoted
  (``''`` escaping) unless the value has characters only double quotes can express;
  double-quoted stays double-quoted. A block scalar (``|``/``>``) target is replaced by a
  double-quoted scalar when its header line carries no comment, otherwise it is an error.
  An explicit tag (``!!str``) or anchor on the target is kept.
* Aliases are followed: writing through ``*ref`` edits the anchored node, so every alias of it
  sees the new value. Merge keys (``<<``) are followed when reading; writing a key that only
  exists through a merge adds it to the mapping itself, which overrides the merged value.
* Missing keys are created when ``create`` is true: appended at the end of the parent mapping in
  the parent's child indentation (deeper levels use the file's dominant indentation step), with
  the file's line ending; inside a flow mapping ``{…}`` they are added inside the braces. An
  empty value (``key:``) becomes a mapping. Sequence items are never created.
* Multi-document files: ``document`` picks one; without it the path must exist in exactly one
  document (or the file must have exactly one document with content).
* After every edit the result is parsed again; unless the target holds the new value and every
  other scalar is unchanged, :class:`YamlEditError` is raised. A wrong file is never returned.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
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

__all__ = [
    "YamlEditError",
    "format_path",
    "get_dotted_value",
    "get_value",
    "is_safe_plain",
    "parse_dot_path",
    "resolve_path",
    "set_value",
    "set_values",
]

PathElem = str | int


class YamlEditError(ValueError):
    """The edit cannot be made; the message names the path and, where known, line and column."""


class _OutOfRange(YamlEditError):
    pass


# ------------------------------------------------------------------------------------ paths


def format_path(path: Sequence[PathElem]) -> str:
    """``["images", 0, "tag"]`` → ``images[0].tag`` (dots inside keys are escaped)."""
    out = ""
    for elem in path:
        if isinstance(elem, int):
            out += f"[{elem}]"
        else:
            key = elem.replace("\\", "\\\\").replace(".", "\\.").replace("[", "\\[")
            out += ("." if out else "") + key
    return out or "<root>"


def parse_dot_path(expr: str) -> list[PathElem]:
    """Parse a Helm-style path: ``image.tag``, ``images[0].name``, ``a\\.b.c`` (escaped dot)."""
    out: list[PathElem] = []
    buf: list[str] = []
    i, n = 0, len(expr)
    after_index = False  # the previous token was "[n]"

    def fail(msg: str) -> YamlEditError:
        return YamlEditError(f"invalid path {expr!r}: {msg}")

    if not expr:
        raise fail("empty path")
    while i < n:
        ch = expr[i]
        if ch == "\\" and i + 1 < n:
            buf.append(expr[i + 1])
            i += 2
            after_index = False
        elif ch == ".":
            if buf:
                out.append("".join(buf))
                buf = []
            elif not after_index:
                raise fail(f"empty key at position {i + 1}")
            if i + 1 >= n:
                raise fail("ends with '.'")
            after_index = False
            i += 1
            if expr[i] in ".[":
                raise fail(f"empty key at position {i + 1}")
        elif ch == "[":
            if buf:
                out.append("".join(buf))
                buf = []
            elif not out:
                raise fail("an index needs a key before it")
            close = expr.find("]", i)
            if close < 0:
                raise fail(f"unclosed '[' at position {i + 1}")
            text = expr[i + 1 : close]
            if not re.fullmatch(r"-?[0-9]+", text):
                raise fail(f"index {text!r} is not an integer")
            out.append(int(text))
            i = close + 1
            if i < n and expr[i] not in ".[":
                raise fail(f"expected '.' or '[' after ']' at position {i + 1}")
            after_index = True
        else:
            buf.append(ch)
            i += 1
            after_index = False
    if buf:
        out.append("".join(buf))
    return out


# ------------------------------------------------------------------------------ node tree


@dataclass(eq=False, slots=True)
class _Node:
    kind: str  # "scalar", "map", "seq" or "alias"
    start: int  # first character, anchor/tag included
    end: int
    value: str = ""
    style: str | None = None
    flow: bool = False  # a flow collection, or a node inside one
    anchor: str | None = None
    items: list[tuple[_Node, _Node]] = field(default_factory=list)
    children: list[_Node] = field(default_factory=list)
    target: _Node | None = None  # aliases: the anchored node


@dataclass(slots=True)
class _Doc:
    start: int
    root: _Node | None = None


def _deref(node: _Node) -> _Node:
    while node.kind == "alias" and node.target is not None:
        node = node.target
    return node


def _line_col(text: str, index: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, index) + 1
    if line_start == 0 and text.startswith("\ufeff"):
        line_start = 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def _where(text: str, node: _Node) -> str:
    line, col = _line_col(text, node.start)
    return f"line {line}, column {col}"


def _parse(text: str) -> list[_Doc]:
    return list(_parse_cached(text))


# An edit parses the same text several times (locate, verify old and new, read back); parsing
# is the costly part and the parsed tree is never changed after it is built, so keep a few.
@functools.lru_cache(maxsize=32)
def _parse_cached(text: str) -> tuple[_Doc, ...]:
    try:
        events = list(YAML(typ="rt", pure=True).parse(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        raise YamlEditError(f"invalid YAML at {where}: {exc.problem or exc.context}") from None
    except YAMLError as exc:
        raise YamlEditError(f"invalid YAML: {exc}") from None
    return tuple(_build(events))


def _build(events: list[Event]) -> list[_Doc]:
    docs: list[_Doc] = []
    anchors: dict[str, _Node] = {}
    stack: list[_Node] = []
    pending: dict[int, _Node | None] = {}  # id(open mapping) → key waiting for its value
    doc = _Doc(0)

    def attach(node: _Node) -> None:
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
            doc = _Doc(start)
        elif isinstance(ev, DocumentEndEvent):
            docs.append(doc)
        elif isinstance(ev, ScalarEvent):
            node = _Node("scalar", start, end, value=ev.value, style=ev.style, anchor=ev.anchor)
            attach(node)
        elif isinstance(ev, AliasEvent):
            attach(_Node("alias", start, end, anchor=ev.anchor, target=anchors.get(ev.anchor)))
            continue
        elif isinstance(ev, MappingStartEvent | SequenceStartEvent):
            kind = "map" if isinstance(ev, MappingStartEvent) else "seq"
            node = _Node(kind, start, end, flow=bool(ev.flow_style), anchor=ev.anchor)
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


def _walk_tree(node: _Node, path: tuple[PathElem, ...]) -> Iterator[tuple[tuple[object, ...], str]]:
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
            yield from _walk_tree(value, (*path, k))
    else:
        if not node.children:
            yield path, "[]"
        for n, child in enumerate(node.children):
            yield from _walk_tree(child, (*path, n))


def _canonical_paths(
    node: _Node, path: tuple[PathElem, ...], out: dict[int, tuple[PathElem, ...]]
) -> None:
    if node.kind == "alias" or id(node) in out:
        return
    out[id(node)] = path
    if node.kind == "map":
        for key, value in node.items:
            if key.kind == "scalar":
                _canonical_paths(value, (*path, key.value), out)
    elif node.kind == "seq":
        for n, child in enumerate(node.children):
            _canonical_paths(child, (*path, n), out)


# ------------------------------------------------------------------------------- lookup


def _is_empty_scalar(node: _Node, text: str) -> bool:
    """A plain null scalar with no text of its own (``key:`` or ``key: &anchor``)."""
    return (
        node.kind == "scalar"
        and node.style is None
        and node.value == ""
        and _value_start(text, node) >= node.end
    )


def _kind_name(node: _Node) -> str:
    return {"map": "a mapping", "seq": "a sequence", "scalar": "a scalar"}.get(
        node.kind, "an alias"
    )


def _lookup(
    text: str,
    mapping: _Node,
    key: str,
    path_text: str,
    merge: bool,
    seen: frozenset[int] = frozenset(),
) -> _Node | None:
    """The value of ``key`` in ``mapping``; with ``merge`` also from ``<<`` merged mappings."""
    found: _Node | None = None
    for key_node, value in mapping.items:
        k = _deref(key_node)
        if k.kind == "scalar" and k.value == key:
            if found is not None:
                raise YamlEditError(
                    f"{path_text}: duplicate key {key!r} at {_where(text, key_node)}"
                )
            found = value
    if found is None and merge:
        for key_node, value in mapping.items:
            if key_node.kind == "scalar" and key_node.value == "<<" and key_node.style is None:
                target = _deref(value)
                sources = [_deref(c) for c in target.children] if target.kind == "seq" else [target]
                for source in sources:
                    if source.kind == "map" and id(source) not in seen | {id(mapping)}:
                        hit = _lookup(text, source, key, path_text, merge, seen | {id(mapping)})
                        if hit is not None:
                            return hit
    return found


@dataclass(slots=True)
class _Resolved:
    node: _Node | None  # the target (aliases followed) when it exists
    parent: _Node  # deepest existing node on the path (aliases followed)
    parent_key: _Node | None  # the key node holding ``parent`` in its mapping, if any
    rest: list[PathElem]  # the missing tail of the path


def _resolve(text: str, root: _Node, path: Sequence[PathElem], *, merge: bool = False) -> _Resolved:
    path_text = format_path(path)
    node, key_node = _deref(root), None
    for i, elem in enumerate(path):
        here = format_path(path[:i]) if i else "the document root"
        if isinstance(elem, int):
            if node.kind != "seq":
                raise YamlEditError(
                    f"{path_text}: index [{elem}] used on {here}, which is "
                    f"{_kind_name(node)} at {_where(text, node)}, not a sequence"
                )
            size = len(node.children)
            if not 0 <= elem < size:
                raise _OutOfRange(
                    f"{path_text}: index {elem} is out of range [0, {size}) for the sequence "
                    f"{here} at {_where(text, node)}"
                )
            nxt, key_node = node.children[elem], None
        elif node.kind == "map":
            hit = _lookup(text, node, elem, path_text, merge)
            if hit is None:
                return _Resolved(None, node, key_node, list(path[i:]))
            key_node = next(k for k, v in node.items if v is hit) if not merge else None
            nxt = hit
        elif node.kind == "seq":
            raise YamlEditError(
                f"{path_text}: {here} is a sequence at {_where(text, node)}; "
                f"select an item with an index, e.g. {format_path([*path[:i], 0])}"
            )
        elif _is_empty_scalar(node, text) and not node.flow:
            return _Resolved(None, node, key_node, list(path[i:]))
        else:
            raise YamlEditError(
                f"{path_text}: {here} is a scalar at {_where(text, node)}, not a mapping"
            )
        node = _deref(nxt)
    return _Resolved(node, node, key_node, [])


def _doc_has(text: str, doc: _Doc, path: Sequence[PathElem]) -> bool:
    if doc.root is None:
        return False
    try:
        return _resolve(text, doc.root, path).node is not None
    except YamlEditError:
        return False


def _doc_is_blank(text: str, doc: _Doc) -> bool:
    return doc.root is None or _is_empty_scalar(_deref(doc.root), text)


def _select(
    text: str, docs: list[_Doc], path: Sequence[PathElem], document: int | None, create: bool
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
    filled = [i for i, doc in enumerate(docs) if not _doc_is_blank(text, doc)]
    if len(filled) == 1:
        return filled[0]
    raise YamlEditError(
        f"ambiguous path {format_path(path)}: it exists in none of the {len(docs)} documents; "
        "choose one with document="
    )


# ------------------------------------------------------------------------- scalar rendering

_PLAIN_SPECIAL = re.compile(
    r"""(?x)
    (?i:y|yes|n|no|true|false|on|off|null|~)
    | [-+]?0b[01_]+ | [-+]?0o?[0-7_]+ | [-+]?0x[0-9a-fA-F_]+ | [-+]?[0-9][0-9_]*
    | [-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?
    | [-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    | [-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+
    | [-+]?\.(?i:inf) | \.(?i:nan)
    | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}.*)?
    | <<|=
    """
)
_INDICATORS = "-?:,[]{}#&*!|>'\"%@`"


def is_safe_plain(value: str, in_flow: bool = False) -> bool:
    """True when ``value`` reads back as the same string if written as a plain scalar.

    Rejects the empty string, anything YAML 1.1 or 1.2 would resolve to a bool, null, number or
    timestamp (``yes``, ``on``, ``0755``, ``1.20``, ``~``…), a leading indicator character,
    ``": "``, ``" #"``, a trailing ``:``, surrounding spaces and non-printable characters; inside a
    flow collection also ``,[]{}``.
    """
    return not _PLAIN_SPECIAL.fullmatch(value) and _plain_syntax_ok(value, in_flow)


def _plain_syntax_ok(value: str, in_flow: bool) -> bool:
    """The characters of ``value`` can form a plain scalar (its type resolution aside)."""
    if not value or value != value.strip(" "):
        return False
    if value[0] in _INDICATORS or ": " in value or " #" in value or value.endswith(":"):
        return False
    if not value.isprintable():
        return False
    return not (in_flow and any(c in value for c in ",[]{}"))


_DOUBLE_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\0": "\\0",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    "\x1b": "\\e",
    "\x85": "\\N",
    "\xa0": "\\_",
    "\u2028": "\\L",
    "\u2029": "\\P",
}


def _double_quoted(value: str) -> str:
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch in _DOUBLE_ESCAPES:
            out.append(_DOUBLE_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out) + '"'


def _render(value: str, style: str | None, in_flow: bool) -> str:
    if style is None and is_safe_plain(value, in_flow):
        return value
    if style == "'" and value.isprintable():
        return "'" + value.replace("'", "''") + "'"
    return _double_quoted(value)


# ----------------------------------------------------------------------------- splicing


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


def _value_start(text: str, node: _Node) -> int:
    return _skip_props(text, node.start, node.end)


def _empty_position(text: str, node: _Node, key: _Node | None, path_text: str) -> int:
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
    raise YamlEditError(f"{path_text}: cannot locate the empty value at {_where(text, node)}")


_BLOCK_HEADER = re.compile(r"[|>][1-9+-]{0,2}[ \t]*\r?\n")


def _scalar_splice(
    text: str, node: _Node, key: _Node | None, value: str, path_text: str
) -> tuple[int, int, str]:
    start = _value_start(text, node)
    if _is_empty_scalar(node, text):
        pos = _empty_position(text, node, key, path_text)
        rendered = _render(value, None, node.flow)
        if text[pos - 1 : pos] in (" ", "\t"):
            return pos, pos, rendered
        if text[pos : pos + 1] in (" ", "\t"):  # "key: " → "key: value"
            return pos + 1, pos + 1, rendered
        return pos, pos, " " + rendered
    if node.style in ("|", ">"):
        if not _BLOCK_HEADER.match(text, start):
            raise YamlEditError(
                f"{path_text}: the block scalar at {_where(text, node)} has a comment on its "
                "header line; refusing to replace it"
            )
        content_end = start + len(text[start : node.end].rstrip(" \t\r\n"))
        return start, content_end, _double_quoted(value)
    props = text[node.start : start].split()
    str_tag = "!!str" in props or "!<tag:yaml.org,2002:str>" in props
    if node.style is None and str_tag and _plain_syntax_ok(value, node.flow):
        return start, node.end, value  # the explicit tag keeps "1.0" or "yes" a string
    return start, node.end, _render(value, node.style, node.flow)


def _content_end(text: str, node: _Node, key: _Node | None = None) -> int:
    """Offset just after the last character that belongs to ``node`` (``key`` holds it)."""
    if node.kind == "scalar":
        if _is_empty_scalar(node, text):
            return _empty_position(text, node, key, "")
        if node.style in ("|", ">"):
            start = _value_start(text, node)
            if "+" in text[start : text.find("\n", start)].split("#")[0]:
                return node.end - 1  # kept trailing newlines are content
            return start + len(text[start : node.end].rstrip(" \t\r\n"))
        return node.end
    if node.kind == "alias" or node.flow:
        return node.end
    if node.kind == "map":
        last_key, last_value = node.items[-1]
        return _content_end(text, last_value, last_key)
    return _content_end(text, node.children[-1])


def _newline(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def _map_entries(docs: Sequence[_Doc]) -> Iterator[tuple[_Node, _Node]]:
    """Every ``(key, value)`` of every mapping in ``docs``, depth first."""

    def visit(node: _Node) -> Iterator[tuple[_Node, _Node]]:
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


def _indent_step(text: str, docs: list[_Doc]) -> int:
    counts: Counter[int] = Counter()
    for key, value in _map_entries(docs):
        if value.kind == "map" and not value.flow and value.items:
            step = _line_col(text, value.items[0][0].start)[1] - _line_col(text, key.start)[1]
            if step > 0:
                counts[step] += 1
    return counts.most_common(1)[0][0] if counts else 2


def _block_lines(rest: Sequence[PathElem], value: str, column: int, step: int) -> list[str]:
    lines = []
    for depth, key in enumerate(rest):
        head = " " * (column + depth * step) + _render(str(key), None, False) + ":"
        lines.append(head + (" " + _render(value, None, False) if depth == len(rest) - 1 else ""))
    return lines


def _flow_body(rest: Sequence[PathElem], value: str) -> str:
    body = _render(value, None, True)
    for key in reversed(rest[1:]):
        body = "{" + _render(str(key), None, True) + ": " + body + "}"
    return _render(str(rest[0]), None, True) + ": " + body


def _insert_lines(text: str, pos: int, lines: list[str]) -> tuple[int, int, str]:
    """Insert whole lines at ``pos`` (a line start, or the end of a text without newline)."""
    nl = _newline(text)
    block = nl.join(lines)
    if pos == len(text) and text and not text.endswith("\n"):
        return pos, pos, nl + block  # keep the file's missing trailing newline missing
    return pos, pos, block + nl


def _line_end(text: str, pos: int) -> int:
    nl = text.find("\n", pos)
    return len(text) if nl < 0 else nl + 1


def _create_splice(
    text: str,
    docs: list[_Doc],
    doc: _Doc | None,
    res: _Resolved | None,
    value: str,
    path: Sequence[PathElem],
) -> tuple[int, int, str]:
    path_text = format_path(path)
    rest = res.rest if res is not None else list(path)
    if any(isinstance(elem, int) for elem in rest):
        raise YamlEditError(f"{path_text}: not found, and sequence items are never created")
    step = _indent_step(text, docs)
    if res is None:  # no document at all, or one without content
        pos = len(text)
        if doc is not None and doc.root is not None:
            pos = doc.root.start
            if pos and text[pos - 1] != "\n":
                pos = _line_end(text, pos)
        return _insert_lines(text, pos, _block_lines(rest, value, 0, step))
    parent = res.parent
    if parent.kind == "map" and parent.flow:
        close = parent.end - 1
        if text[close : close + 1] != "}":
            raise YamlEditError(f"{path_text}: cannot find the '}}' closing {_where(text, parent)}")
        if parent.items:
            last_key, last_value = parent.items[-1]
            # After an empty last value ("{a: }") go just before the brace: "a:," is no value.
            empty = _is_empty_scalar(last_value, text)
            pos = close if empty else _content_end(text, last_value, last_key)
            return pos, pos, ", " + _flow_body(rest, value)
        return close, close, _flow_body(rest, value)
    if parent.kind == "map":
        column = _line_col(text, parent.items[0][0].start)[1] - 1
        pos = _line_end(text, _content_end(text, parent))
        return _insert_lines(text, pos, _block_lines(rest, value, column, step))
    if res.parent_key is None:
        raise YamlEditError(
            f"{path_text}: cannot add keys to the empty value at {_where(text, parent)}"
        )
    # An empty value ("key:") becomes a block mapping below its key.
    column = _line_col(text, res.parent_key.start)[1] - 1 + step
    pos = _line_end(text, _empty_position(text, parent, res.parent_key, path_text))
    return _insert_lines(text, pos, _block_lines(rest, value, column, step))


# -------------------------------------------------------------------------------- public API


def _plan(
    text: str, path: Sequence[PathElem], value: str, create: bool, document: int | None
) -> tuple[str, int, tuple[PathElem, ...]]:
    """Apply one edit; return the new text, the document index and the canonical path (aliases
    resolved to their anchors) of the edited leaf."""
    path = list(path)
    path_text = format_path(path)
    if not path:
        raise YamlEditError("cannot replace a whole document: the path is empty")
    docs = _parse(text)
    index = _select(text, docs, path, document, create)
    if index is None:
        raise YamlEditError(f"{path_text}: not found in any of the {len(docs)} documents")
    doc = docs[index] if index < len(docs) else None
    if doc is None or doc.root is None or _doc_is_blank(text, doc):
        if not create:
            raise YamlEditError(f"{path_text}: not found (the document is empty)")
        start, end, rep = _create_splice(text, docs, doc, None, value, path)
        return text[:start] + rep + text[end:], index, tuple(path)
    res = _resolve(text, doc.root, path)
    canon: dict[int, tuple[PathElem, ...]] = {}
    _canonical_paths(doc.root, (), canon)
    if res.node is None:
        if not create:
            found = format_path(path[: len(path) - len(res.rest)])
            raise YamlEditError(f"{path_text}: not found; {found} has no key {res.rest[0]!r}")
        start, end, rep = _create_splice(text, docs, doc, res, value, path)
        return text[:start] + rep + text[end:], index, (*canon[id(res.parent)], *res.rest)
    if res.node.kind != "scalar":
        raise YamlEditError(
            f"{path_text}: the target at {_where(text, res.node)} is "
            f"{_kind_name(res.node)}, not a scalar value"
        )
    start, end, rep = _scalar_splice(text, res.node, res.parent_key, value, path_text)
    return text[:start] + rep + text[end:], index, canon[id(res.node)]


def _snapshot(docs: list[_Doc]) -> list[dict[tuple[object, ...], str]]:
    return [dict(_walk_tree(d.root, ())) if d.root is not None else {} for d in docs]


def _verify(
    old: str, new: str, path: Sequence[PathElem], value: str, index: int, leaf: tuple[PathElem, ...]
) -> None:
    """Re-parse ``new``: only the leaf at ``leaf`` (canonical path) may differ from ``old``."""
    path_text = format_path(path)
    try:
        new_docs = _parse(new)
    except YamlEditError as exc:
        raise YamlEditError(
            f"{path_text}: refusing the edit, it would break the file ({exc})"
        ) from None
    expected = _snapshot(_parse(old)) or [{}]
    target = expected[index]
    for key in [k for k in target if len(k) < len(leaf) and leaf[: len(k)] == k]:
        del target[key]  # the empty parent ("{}", "key:") that now holds the new key
    target[leaf] = "=" + value
    if _snapshot(new_docs) != expected:
        raise YamlEditError(
            f"{path_text}: refusing the edit, it would change more than the target value"
        )
    if get_value(new, path, document=index) != value:
        raise YamlEditError(f"{path_text}: refusing the edit, the new value does not read back")


def set_value(
    text: str,
    path: Sequence[PathElem],
    value: str,
    *,
    create: bool = True,
    document: int | None = None,
) -> str:
    """Return ``text`` with the scalar at ``path`` set to the string ``value``."""
    new, index, leaf = _plan(text, path, value, create, document)
    _verify(text, new, path, value, index, leaf)
    return new


def set_values(
    text: str,
    edits: Sequence[tuple[Sequence[PathElem], str]],
    *,
    create: bool = True,
    document: int | None = None,
) -> str:
    """Apply ``edits`` in order and return the result only if every one succeeds.

    A later edit sees the earlier ones (keys created together share their new parent mapping);
    each edit is verified like :func:`set_value`.
    """
    for path, value in edits:
        text = set_value(text, path, value, create=create, document=document)
    return text


def get_value(text: str, path: Sequence[PathElem], *, document: int | None = None) -> str | None:
    """The scalar's string value at ``path`` (merge keys ``<<`` followed), ``None`` if missing.

    The value is returned as YAML text-level data (``1.0`` → ``"1.0"``, ``key:`` → ``""``).
    Raises :class:`YamlEditError` when the path crosses a value of the wrong kind or the target
    is a mapping or sequence.
    """
    docs = _parse(text)
    path = list(path)
    index = _select(text, docs, path, document, create=False)
    if index is None or index >= len(docs) or docs[index].root is None:
        return None
    root = docs[index].root
    assert root is not None
    res = _resolve_for_get(text, root, path)
    if res is None:
        return None
    if res.kind != "scalar":
        raise YamlEditError(
            f"{format_path(path)}: the value at {_where(text, res)} is {_kind_name(res)}, "
            "not a scalar value"
        )
    return res.value


def _resolve_for_get(text: str, root: _Node, path: Sequence[PathElem]) -> _Node | None:
    try:
        return _resolve(text, root, path, merge=True).node
    except _OutOfRange:
        return None


def get_dotted_value(text: str, expr: str, *, document: int | None = None) -> str | None:
    """Read a Helm-style key: the nested path first, then a literal dotted root key."""
    try:
        nested = get_value(text, parse_dot_path(expr), document=document)
    except YamlEditError:
        nested = None
    if nested is not None or ("." not in expr and "[" not in expr):
        return nested
    return get_value(text, [expr], document=document)


def resolve_path(text: str, expr: str, *, document: int | None = None) -> list[PathElem]:
    """The path to write for a Helm-style key: a literal root key ``a.b.c`` wins when it exists,
    otherwise the dotted path ``a`` → ``b`` → ``c``."""
    docs = _parse(text)
    chosen = docs if document is None else docs[document : document + 1]
    for doc in chosen:
        if doc.root is not None:
            root = _deref(doc.root)
            if root.kind == "map" and _lookup(text, root, expr, expr, merge=False) is not None:
                return [expr]
    return parse_dot_path(expr)
