"""Paths into a YAML document: lists of keys and indexes, and their Helm-style dotted text."""

from __future__ import annotations

import re
from collections.abc import Sequence

from argocd_image_updater.kits.yamltext.errors import YamlEditError

PathElem = str | int


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
