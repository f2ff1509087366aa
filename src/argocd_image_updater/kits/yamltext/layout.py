"""The file's layout conventions new text follows: line ending, indentation step, sequence
indentation below a key, and inserting whole lines."""

from __future__ import annotations

from collections import Counter

from argocd_image_updater.kits.yamltext.tree import Doc, Node, line_col, map_entries


def _newline(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def line_end(text: str, pos: int) -> int:
    nl = text.find("\n", pos)
    return len(text) if nl < 0 else nl + 1


def insert_lines(text: str, pos: int, lines: list[str]) -> tuple[int, int, str]:
    """Insert whole lines at ``pos`` (a line start, or the end of a text without newline)."""
    nl = _newline(text)
    block = nl.join(lines)
    if pos == len(text) and text and not text.endswith("\n"):
        return pos, pos, nl + block  # keep the file's missing trailing newline missing
    return pos, pos, block + nl


def indent_step(text: str, docs: list[Doc]) -> int:
    counts: Counter[int] = Counter()
    for key, value in map_entries(docs):
        if value.kind == "map" and not value.flow and value.items:
            step = line_col(text, value.items[0][0].start)[1] - line_col(text, key.start)[1]
            if step > 0:
                counts[step] += 1
    return counts.most_common(1)[0][0] if counts else 2


def column_at(text: str, pos: int) -> int:
    return line_col(text, pos)[1] - 1


def dash_before(text: str, node: Node) -> int | None:
    """The offset of the ``-`` that introduces the block sequence item ``node``."""
    pos = node.start - 1
    while pos >= 0 and text[pos] in " \t":
        pos -= 1
    return pos if pos >= 0 and text[pos] == "-" else None


def _seq_offset(text: str, docs: list[Doc], step: int) -> int:
    counts: Counter[int] = Counter()
    for key, value in map_entries(docs):
        if value.kind == "seq" and not value.flow and value.children:
            dash = dash_before(text, value.children[0])
            if dash is not None and column_at(text, dash) >= column_at(text, key.start):
                counts[column_at(text, dash) - column_at(text, key.start)] += 1
    return counts.most_common(1)[0][0] if counts else step


class Style:
    """The file's layout: indentation step and sequence indentation below a key."""

    def __init__(self, text: str, docs: list[Doc]) -> None:
        self.step = indent_step(text, docs)
        self.seq_offset = _seq_offset(text, docs, self.step)
