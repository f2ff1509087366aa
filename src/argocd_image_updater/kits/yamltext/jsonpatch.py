"""JSON pointers (RFC 6901) and JSON-patch ``add``/``replace`` (RFC 6902) on plain data: the
operations accepted, the document they apply to, and the reference result a text edit is
verified against."""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from argocd_image_updater.kits.yamltext.errors import YamlPatchError

_RESOURCE_VERSION: Final = "/metadata/resourceVersion"  # ignored when replaced, see checked_ops
_INDEX: Final = re.compile(r"0|[1-9][0-9]*")


def pointer_tokens(ptr: str) -> list[str]:
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


def load_all(text: str) -> list[Any]:
    try:
        return list(YAML(typ="safe", pure=True).load_all(text))
    except YAMLError as exc:
        raise YamlPatchError(f"invalid YAML: {exc}") from None


def is_index(token: str, size: int, *, end_ok: bool) -> int | None:
    if token == "-" and end_ok:
        return size
    if _INDEX.fullmatch(token) and int(token) < size + (1 if end_ok else 0):
        return int(token)
    return None


def apply_plain(doc: Any, ops: Sequence[Mapping[str, Any]]) -> Any:
    """RFC 6902 ``add``/``replace`` (and ``remove`` of a mapping key) on plain data (a copy);
    the reference for verification."""
    doc = copy.deepcopy(doc)
    for op in ops:
        ptr = op["path"]
        tokens = pointer_tokens(ptr)
        if not tokens:
            raise YamlPatchError(f"{ptr or '<root>'}: replacing a whole document is not supported")
        parent = doc
        for n, token in enumerate(tokens[:-1]):
            here = "/" + "/".join(tokens[: n + 1])
            if isinstance(parent, list):
                i = is_index(token, len(parent), end_ok=False)
                if i is None:
                    raise YamlPatchError(f"{ptr}: {here} does not exist")
                parent = parent[i]
            elif isinstance(parent, dict) and token in parent:
                parent = parent[token]
            else:
                raise YamlPatchError(f"{ptr}: {here} does not exist")
        last, value = tokens[-1], copy.deepcopy(op.get("value"))
        if op["op"] == "remove":
            if not isinstance(parent, dict) or last not in parent:
                raise YamlPatchError(f"{ptr}: does not exist (only mapping keys are removed)")
            del parent[last]
        elif isinstance(parent, list):
            i = is_index(last, len(parent), end_ok=op["op"] == "add")
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


def same(a: Any, b: Any) -> bool:
    """Data equality that tells ``true`` from ``1`` and ``"1"`` from ``1``."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and bool(a == b)


def checked_ops(ops: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    out = []
    for op in ops:
        kind, ptr = op.get("op"), op.get("path")
        if not isinstance(ptr, str):
            raise YamlPatchError(f"operation {dict(op)!r} has no 'path'")
        if kind not in ("add", "replace", "remove"):
            raise YamlPatchError(f"{ptr}: the operation {kind!r} is not supported")
        if "value" not in op and kind != "remove":
            raise YamlPatchError(f"{ptr}: the {kind} operation has no 'value'")
        if not pointer_tokens(ptr):
            raise YamlPatchError("replacing a whole document is not supported")
        if kind == "replace" and ptr == _RESOURCE_VERSION:
            continue  # the API server's concurrency guard; a file in Git has no version
        out.append(op)
    return out


def choose(data: list[Any], ops: Sequence[Mapping[str, Any]], document: int | None) -> int:
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
            apply_plain(doc, ops)
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
