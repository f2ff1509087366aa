"""A quick reading of simple block YAML, without ruamel.yaml's parser.

Most files the updater edits again and again (a kustomization's ``images:``, small values
files) are plain block YAML: keys, plain or simply quoted one-line scalars, block lists and
mappings, comments. :func:`quick_parse` reads exactly that subset line by line and builds the
same :class:`~.tree.Node` tree as :func:`~.tree.parse` (kinds, keys, items, scalar values,
styles and offsets); anything outside the subset makes it answer ``None`` and the caller uses
the full parser. The subset, per line (after its indentation, spaces only):

* blank, or a comment (``#`` first);
* ``key:`` followed by a nested block on the next lines (more indented, or a ``-`` list at
  the key's own column), or ``key: scalar``;
* ``- key: …`` (a mapping as a list item; its further keys at the column of the first) or
  ``- scalar``;
* a scalar is plain (letters, digits and ``._/:@+=~-``, not starting with ``-:@`` nor ending
  with ``:``, no blanks), or double-quoted without ``\\`` and ``"`` inside, or single-quoted
  without ``'`` inside, optionally followed by blanks and a comment;
* keys are plain scalars of letters, digits and ``._/-``;
* no tabs, carriage returns, BOM, directives, document markers, anchors, aliases, tags, flow
  collections, block scalars, empty values, complex keys or multi-line scalars.

Collection nodes end where their last value ends (ruamel's block-end marks are not
reproduced). The result is one document whose root is a mapping.
"""

from __future__ import annotations

import re
from typing import Final

from argocd_image_updater.kits.yamltext.tree import Doc, Node

__all__ = ["quick_parse"]

_KEY: Final = re.compile(r"[A-Za-z0-9_./-]+")
_PLAIN: Final = re.compile(r"[A-Za-z0-9_./+=~][A-Za-z0-9_./:@+=~-]*")
_DOUBLE: Final = re.compile(r'"[^"\\\x00-\x1f\x7f]*"')
_SINGLE: Final = re.compile(r"'[^'\x00-\x1f\x7f]*'")
_FORBIDDEN: Final = re.compile(
    # Anything but line feeds and the characters YAML prints and does not read as a line break
    # (no tabs, CR, NEL, LS, PS, BOM).
    "[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)


class _Unsupported(Exception):
    """The text is outside the subset."""


class _Line:
    __slots__ = ("col", "end", "start")

    def __init__(self, start: int, col: int, end: int) -> None:
        self.start = start  # offset of the line's first character
        self.col = col  # column of its first non-blank character
        self.end = end  # offset of its line break (or the end of the text)


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.lines: list[_Line] = []
        pos = 0
        size = len(text)
        while pos < size:
            end = text.find("\n", pos)
            if end < 0:
                end = size
            col = 0
            while pos + col < end and text[pos + col] == " ":
                col += 1
            if pos + col < end and text[pos + col] != "#":
                self.lines.append(_Line(pos, col, end))
            pos = end + 1
        self.i = 0

    def peek(self) -> _Line | None:
        return self.lines[self.i] if self.i < len(self.lines) else None

    # --- scalars ------------------------------------------------------------------------------

    def scalar(self, pos: int, end: int) -> Node:
        """The scalar starting at ``pos`` and running to the end of its line (``end``), where
        only blanks and a comment may follow it."""
        text = self.text
        first = text[pos : pos + 1]
        if first == '"':
            match = _DOUBLE.match(text, pos, end)
            style: str | None = '"'
        elif first == "'":
            match = _SINGLE.match(text, pos, end)
            style = "'"
        else:
            match = _PLAIN.match(text, pos, end)
            style = None
        if match is None:
            raise _Unsupported
        stop = match.end()
        if style is None and text[stop - 1] == ":":
            raise _Unsupported
        self.tail(stop, end)
        value = match.group()
        return Node("scalar", pos, stop, value=value[1:-1] if style else value, style=style)

    def tail(self, pos: int, end: int) -> None:
        """Only blanks, then nothing or a comment, may follow ``pos`` on its line."""
        text = self.text
        if pos < end and text[pos] != " ":
            raise _Unsupported
        while pos < end and text[pos] == " ":
            pos += 1
        if pos < end and text[pos] != "#":
            raise _Unsupported

    # --- collections --------------------------------------------------------------------------

    def entry(self, pos: int, end: int, col: int, mapping: Node) -> None:
        """The ``key: …`` at ``pos`` (column ``col``) of ``mapping``, with its value."""
        text = self.text
        match = _KEY.match(text, pos, end)
        if match is None or text[match.end() : match.end() + 1] != ":":
            raise _Unsupported
        stop = match.end()
        if text[pos] in "-?:" or stop - pos == 0:
            raise _Unsupported
        key = Node("scalar", pos, stop, value=match.group())
        after = stop + 1
        rest = after
        while rest < end and text[rest] == " ":
            rest += 1
        self.i += 1
        if rest < end and text[rest] != "#":
            if rest == after:  # "key:value" is one plain scalar, not a key
                raise _Unsupported
            value = self.scalar(rest, end)
        else:
            nxt = self.peek()
            if nxt is None or nxt.col < col:
                raise _Unsupported  # an empty value
            if nxt.col == col:
                if not self.is_dash(nxt):
                    raise _Unsupported
                value = self.sequence(nxt.col)
            else:
                value = self.block(nxt)
        mapping.items.append((key, value))
        mapping.end = value.end

    def is_dash(self, line: _Line) -> bool:
        at = line.start + line.col
        return self.text[at] == "-" and self.text[at + 1 : at + 2] in (" ", "\n", "")

    def block(self, line: _Line) -> Node:
        """The block node whose first line is ``line`` (a mapping or a list)."""
        if self.is_dash(line):
            return self.sequence(line.col)
        return self.mapping(line.start + line.col, line.col)

    def mapping(self, first: int, col: int) -> Node:
        """A block mapping whose first key is at ``first`` (column ``col``), maybe after a
        ``- `` on the same line; its further keys are on their own lines at ``col``."""
        node = Node("map", first, first)
        self.entry(first, self.lines[self.i].end, col, node)
        while (line := self.peek()) is not None and line.col == col and not self.is_dash(line):
            self.entry(line.start + col, line.end, col, node)
        if line is not None and line.col > col:
            raise _Unsupported
        return node

    def sequence(self, col: int) -> Node:
        """A block list whose ``-`` are at column ``col``."""
        text = self.text
        node: Node | None = None
        while (line := self.peek()) is not None and line.col == col and self.is_dash(line):
            dash = line.start + col
            pos = dash + 1
            while pos < line.end and text[pos] == " ":
                pos += 1
            if pos >= line.end or text[pos] in "#-":
                raise _Unsupported  # an empty or nested item on its own
            if node is None:
                node = Node("seq", dash, dash)
            item_col = pos - line.start
            match = _KEY.match(text, pos, line.end)
            if match is not None and text[match.end() : match.end() + 1] == ":":
                item = self.mapping(pos, item_col)
            else:
                item = self.scalar(pos, line.end)
                self.i += 1
            node.children.append(item)
            node.end = item.end
        if node is None or (line is not None and line.col > col):
            raise _Unsupported
        return node


def quick_parse(text: str) -> list[Doc] | None:
    """The documents of ``text`` as :func:`~.tree.parse` gives them, or ``None`` when the text
    is outside the subset this module reads (see the module's documentation)."""
    if _FORBIDDEN.search(text):
        return None
    reader = _Reader(text)
    first = reader.peek()
    if first is None or first.col != 0:
        return None
    head = text[first.start : first.start + 3]
    if head in ("---", "...") or text[first.start] in "%-":
        return None
    try:
        root = reader.mapping(first.start, 0)
    except (_Unsupported, IndexError):
        return None
    if reader.peek() is not None:
        return None
    return [Doc(0, root)]
