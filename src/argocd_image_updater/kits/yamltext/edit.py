"""Surgical edits of YAML text: change the bytes of one scalar and nothing else.

Round-tripping through a YAML library (ruamel.yaml included) rewrites more than the edited value:
blank lines, quoting, indentation, comment alignment, ``---`` markers. Reviewers then distrust
automated diffs. So ruamel.yaml's parser is used only to *locate* nodes (its events carry exact
start/end offsets); the new value is spliced into the original text and every other byte is kept
(comments, blank lines, key order, indentation, anchors, document markers, CRLF, a BOM and the
presence or absence of a trailing newline).

Rules:

* A plain scalar stays plain when the new value is safe as a plain scalar (see
  :func:`.scalars.is_safe_plain`), otherwise it becomes double-quoted; single-quoted stays
  single-quoted (``''`` escaping) unless the value has characters only double quotes can express;
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
* Every edit is verified; unless the target holds the new value and every other scalar is
  unchanged, :class:`YamlEditError` is raised. A wrong file is never returned. Replacing a
  scalar by one of the same style (the edit of every later cycle) is verified on the new token
  alone, in O(its size) (see :func:`_verified_in_place`); any other edit (new keys, a change
  of quoting style, block scalars) parses the whole result again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final

from argocd_image_updater.kits.yamltext.errors import OutOfRange, YamlEditError
from argocd_image_updater.kits.yamltext.layout import indent_step, insert_lines, line_end
from argocd_image_updater.kits.yamltext.lookup import (
    Resolved,
    doc_is_blank,
    lookup,
    resolve,
    select,
)
from argocd_image_updater.kits.yamltext.paths import PathElem, format_path, parse_dot_path
from argocd_image_updater.kits.yamltext.scalars import double_quoted, plain_syntax_ok, render
from argocd_image_updater.kits.yamltext.tree import (
    Doc,
    Node,
    canonical_paths,
    content_end,
    deref,
    empty_position,
    is_empty_scalar,
    kind_name,
    line_col,
    parse,
    value_start,
    walk_tree,
    where,
)

_BLOCK_HEADER = re.compile(r"[|>][1-9+-]{0,2}[ \t]*\r?\n")


def _scalar_splice(
    text: str, node: Node, key: Node | None, value: str, path_text: str
) -> tuple[int, int, str]:
    start = value_start(text, node)
    if is_empty_scalar(node, text):
        pos = empty_position(text, node, key, path_text)
        rendered = render(value, None, node.flow)
        if text[pos - 1 : pos] in (" ", "\t"):
            return pos, pos, rendered
        if text[pos : pos + 1] in (" ", "\t"):  # "key: " → "key: value"
            return pos + 1, pos + 1, rendered
        return pos, pos, " " + rendered
    if node.style in ("|", ">"):
        if not _BLOCK_HEADER.match(text, start):
            raise YamlEditError(
                f"{path_text}: the block scalar at {where(text, node)} has a comment on its "
                "header line; refusing to replace it"
            )
        content_end = start + len(text[start : node.end].rstrip(" \t\r\n"))
        return start, content_end, double_quoted(value)
    props = text[node.start : start].split()
    str_tag = "!!str" in props or "!<tag:yaml.org,2002:str>" in props
    if node.style is None and str_tag and plain_syntax_ok(value, node.flow):
        return start, node.end, value  # the explicit tag keeps "1.0" or "yes" a string
    return start, node.end, render(value, node.style, node.flow)


def _block_lines(rest: Sequence[PathElem], value: str, column: int, step: int) -> list[str]:
    lines = []
    for depth, key in enumerate(rest):
        head = " " * (column + depth * step) + render(str(key), None, False) + ":"
        lines.append(head + (" " + render(value, None, False) if depth == len(rest) - 1 else ""))
    return lines


def _flow_body(rest: Sequence[PathElem], value: str) -> str:
    body = render(value, None, True)
    for key in reversed(rest[1:]):
        body = "{" + render(str(key), None, True) + ": " + body + "}"
    return render(str(rest[0]), None, True) + ": " + body


def _create_splice(
    text: str,
    docs: list[Doc],
    doc: Doc | None,
    res: Resolved | None,
    value: str,
    path: Sequence[PathElem],
) -> tuple[int, int, str]:
    path_text = format_path(path)
    rest = res.rest if res is not None else list(path)
    if any(isinstance(elem, int) for elem in rest):
        raise YamlEditError(f"{path_text}: not found, and sequence items are never created")
    step = indent_step(text, docs)
    if res is None:  # no document at all, or one without content
        pos = len(text)
        if doc is not None and doc.root is not None:
            pos = doc.root.start
            if pos and text[pos - 1] != "\n":
                pos = line_end(text, pos)
        return insert_lines(text, pos, _block_lines(rest, value, 0, step))
    parent = res.parent
    if parent.kind == "map" and parent.flow:
        close = parent.end - 1
        if text[close : close + 1] != "}":
            raise YamlEditError(f"{path_text}: cannot find the '}}' closing {where(text, parent)}")
        if parent.items:
            last_key, last_value = parent.items[-1]
            # After an empty last value ("{a: }") go just before the brace: "a:," is no value.
            empty = is_empty_scalar(last_value, text)
            pos = close if empty else content_end(text, last_value, last_key)
            return pos, pos, ", " + _flow_body(rest, value)
        return close, close, _flow_body(rest, value)
    if parent.kind == "map":
        column = line_col(text, parent.items[0][0].start)[1] - 1
        pos = line_end(text, content_end(text, parent))
        return insert_lines(text, pos, _block_lines(rest, value, column, step))
    if res.parent_key is None:
        raise YamlEditError(
            f"{path_text}: cannot add keys to the empty value at {where(text, parent)}"
        )
    # An empty value ("key:") becomes a block mapping below its key.
    column = line_col(text, res.parent_key.start)[1] - 1 + step
    pos = line_end(text, empty_position(text, parent, res.parent_key, path_text))
    return insert_lines(text, pos, _block_lines(rest, value, column, step))


_Splice = tuple[int, int, str, Node]
"""A scalar replaced in place: start, end, the new token and the node it replaces."""


def _plan(
    text: str, path: Sequence[PathElem], value: str, create: bool, document: int | None
) -> tuple[str, int, Callable[[], tuple[PathElem, ...]], _Splice | None]:
    """Apply one edit; return the new text, the document index, the canonical path (aliases
    resolved to their anchors) of the edited leaf (computed when asked: only a full
    verification needs it) and, when an existing scalar was replaced, the splice."""
    path = list(path)
    path_text = format_path(path)
    if not path:
        raise YamlEditError("cannot replace a whole document: the path is empty")
    docs = parse(text)
    index = select(text, docs, path, document, create)
    if index is None:
        raise YamlEditError(f"{path_text}: not found in any of the {len(docs)} documents")
    doc = docs[index] if index < len(docs) else None
    if doc is None or doc.root is None or doc_is_blank(text, doc):
        if not create:
            raise YamlEditError(f"{path_text}: not found (the document is empty)")
        start, end, rep = _create_splice(text, docs, doc, None, value, path)
        return text[:start] + rep + text[end:], index, lambda: tuple(path), None
    res = resolve(text, doc.root, path)
    root = doc.root

    def canonical(node: Node) -> tuple[PathElem, ...]:
        canon: dict[int, tuple[PathElem, ...]] = {}
        canonical_paths(root, (), canon)
        return canon[id(node)]

    if res.node is None:
        if not create:
            found = format_path(path[: len(path) - len(res.rest)])
            raise YamlEditError(f"{path_text}: not found; {found} has no key {res.rest[0]!r}")
        start, end, rep = _create_splice(text, docs, doc, res, value, path)
        parent, rest = res.parent, tuple(res.rest)
        return text[:start] + rep + text[end:], index, lambda: (*canonical(parent), *rest), None
    if res.node.kind != "scalar":
        raise YamlEditError(
            f"{path_text}: the target at {where(text, res.node)} is "
            f"{kind_name(res.node)}, not a scalar value"
        )
    node = res.node
    start, end, rep = _scalar_splice(text, node, res.parent_key, value, path_text)
    return text[:start] + rep + text[end:], index, lambda: canonical(node), (start, end, rep, node)


_PLAIN_ENDS: Final = frozenset(" \t\r\n")
_FLOW_ENDS: Final = frozenset(",]}")


def _verified_in_place(text: str, splice: _Splice, value: str) -> bool:
    """Whether replacing one scalar token by another of the same style provably changes
    nothing but that scalar's value, by looking at the new token alone (O(its size)).

    Every byte outside the token is kept, so the file reads the same elsewhere when the new
    token is one scalar of the same style holding ``value``, on one line, and the text after
    it still ends it: a quoted token ends at its closing quote; a plain one (which never
    starts with an indicator nor holds ``": "``, ``" #"`` or a final ``:``) ends where the old
    one ended when a blank, a line break, the end of the text or, in a flow collection, a
    flow indicator follows. False (the caller then parses the whole result) for anything
    else: a style change, a block scalar, an empty value, a plain token at column 0 (``...``
    would end the document), new keys.
    """
    start, end, rep, node = splice
    if node.kind != "scalar" or node.style not in (None, "'", '"') or not rep:
        return False
    if is_empty_scalar(node, text) or "\n" in rep or "\r" in rep:
        return False
    style = rep[0] if rep[0] in "'\"" else None
    if style != node.style:
        return False
    if style is None:
        if start == 0 or text[start - 1] in "\r\n":
            return False
        after = text[end : end + 1]
        if after and after not in _PLAIN_ENDS and not (node.flow and after in _FLOW_ENDS):
            return False
    probe = f"[{rep}]" if node.flow else rep
    try:
        docs = parse(probe)
    except YamlEditError:
        return False
    if len(docs) != 1 or docs[0].root is None:
        return False
    token = docs[0].root
    if node.flow:
        if token.kind != "seq" or len(token.children) != 1:
            return False
        token = token.children[0]
    offset = 1 if node.flow else 0
    return (
        token.kind == "scalar"
        and token.style == style
        and token.anchor is None
        and token.value == value
        and (token.start, token.end) == (offset, offset + len(rep))
    )


def replace_scalars(text: str, edits: Sequence[tuple[Node, str]]) -> str | None:
    """``text`` with each scalar ``node`` (of a tree of ``text``) replaced by one of the same
    style holding its new value, verified on each new token alone like :func:`set_value`'s
    in-place edits; ``None`` when a replacement cannot be verified that way (a style change,
    a block scalar, an empty value, an anchor, overlapping nodes): the caller then edits with
    :func:`set_value`, which verifies on a full parse."""
    splices: list[_Splice] = []
    for node, value in edits:
        if node.kind != "scalar" or node.anchor is not None or is_empty_scalar(node, text):
            return None
        start, end, rep = _scalar_splice(text, node, None, value, "")
        splice = (start, end, rep, node)
        if not _verified_in_place(text, splice, value):
            return None
        splices.append(splice)
    splices.sort(key=lambda splice: splice[0])
    out: list[str] = []
    pos = 0
    for start, end, rep, _ in splices:
        if start < pos:
            return None
        out += (text[pos:start], rep)
        pos = end
    return "".join(out) + text[pos:]


def _snapshot(docs: list[Doc]) -> list[dict[tuple[object, ...], str]]:
    return [dict(walk_tree(d.root, ())) if d.root is not None else {} for d in docs]


def _verify(
    old: str,
    new: str,
    path: Sequence[PathElem],
    value: str,
    index: int,
    leaf: tuple[PathElem, ...],
) -> None:
    """Re-parse ``new``: only the leaf at ``leaf`` (canonical path) may differ from ``old``."""
    path_text = format_path(path)
    try:
        new_docs = parse(new)
    except YamlEditError as exc:
        raise YamlEditError(
            f"{path_text}: refusing the edit, it would break the file ({exc})"
        ) from None
    expected = _snapshot(parse(old)) or [{}]
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
    new, index, leaf, splice = _plan(text, path, value, create, document)
    if splice is None or not _verified_in_place(text, splice, value):
        _verify(text, new, path, value, index, leaf())
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
    docs = parse(text)
    path = list(path)
    index = select(text, docs, path, document, create=False)
    if index is None or index >= len(docs) or docs[index].root is None:
        return None
    root = docs[index].root
    assert root is not None
    res = _resolve_for_get(text, root, path)
    if res is None:
        return None
    if res.kind != "scalar":
        raise YamlEditError(
            f"{format_path(path)}: the value at {where(text, res)} is {kind_name(res)}, "
            "not a scalar value"
        )
    return res.value


def _resolve_for_get(text: str, root: Node, path: Sequence[PathElem]) -> Node | None:
    try:
        return resolve(text, root, path, merge=True).node
    except OutOfRange:
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
    docs = parse(text)
    chosen = docs if document is None else docs[document : document + 1]
    for doc in chosen:
        if doc.root is not None:
            root = deref(doc.root)
            if root.kind == "map" and lookup(text, root, expr, expr, merge=False) is not None:
                return [expr]
    return parse_dot_path(expr)
