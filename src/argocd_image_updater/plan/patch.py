"""A JSON patch (RFC 6902) that applies a plan to the Application object.

Only the parameters that change are touched (and the ``targetRevision`` of each source whose
chart version changes, see ``plan.charts``): an element whose value changes is replaced
(``/value`` alone when nothing else differs), new elements are appended with ``/-``, and a
missing ``helm``/``kustomize``/``plugin`` block or list is created. The patch starts with a
``replace`` of ``/metadata/resourceVersion`` by the version that was read, so the API server
rejects it (409 Conflict) when the object changed in the meantime.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from argocd_image_updater.plan.model import AppPlan, SourcePath
from argocd_image_updater.plan.params import apply_edits

_LISTS: Final = (("helm", "parameters"), ("kustomize", "images"), ("plugin", "env"))


class PatchError(ValueError):
    """The plan's source path does not exist in the Application object."""


def pointer(path: Sequence[str | int]) -> str:
    """The JSON pointer (RFC 6901) of a path."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _lookup(obj: Any, path: SourcePath) -> Mapping[str, Any]:
    node = obj
    for part in path:
        if isinstance(part, int):
            if not isinstance(node, Sequence) or isinstance(node, str) or part >= len(node):
                raise PatchError(f"source {pointer(path)} not found in the Application")
            node = node[part]
        else:
            if not isinstance(node, Mapping) or part not in node:
                raise PatchError(f"source {pointer(path)} not found in the Application")
            node = node[part]
    if not isinstance(node, Mapping):
        raise PatchError(f"source {pointer(path)} is not an object")
    return node


def _as_list(value: Any) -> list[Any] | None:
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return list(value)
    return None


def _element_ops(base: str, old: Any, new: Any) -> list[dict[str, Any]]:
    if old == new:
        return []
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        keys = set(old) | set(new)
        if [k for k in keys if old.get(k) != new.get(k)] == ["value"] and "value" in old:
            return [{"op": "replace", "path": base + "/value", "value": new["value"]}]
    return [{"op": "replace", "path": base, "value": new}]


def _list_ops(
    source_ptr: str, block: str, key: str, old_src: Mapping[str, Any], new_src: Mapping[str, Any]
) -> list[dict[str, Any]]:
    new_block = new_src.get(block)
    if not isinstance(new_block, Mapping):
        return []
    new_items = _as_list(new_block.get(key)) or []
    old_block = old_src.get(block)
    if not isinstance(old_block, Mapping):
        if not new_items:
            return []
        return [{"op": "add", "path": f"{source_ptr}/{block}", "value": {key: new_items}}]
    old_items = _as_list(old_block.get(key))
    list_ptr = f"{source_ptr}/{block}/{key}"
    if old_items is None:
        if not new_items:
            return []
        return [{"op": "add", "path": list_ptr, "value": new_items}]
    ops: list[dict[str, Any]] = []
    for i, new in enumerate(new_items):
        if i < len(old_items):
            ops.extend(_element_ops(f"{list_ptr}/{i}", old_items[i], new))
        else:
            ops.append({"op": "add", "path": f"{list_ptr}/-", "value": new})
    return ops


def revision_ops(app_raw: Mapping[str, Any], plan: AppPlan) -> list[dict[str, Any]]:
    """``targetRevision`` operations for the plan's chart versions that differ from
    ``app_raw`` (one per source path)."""
    ops: list[dict[str, Any]] = []
    seen: set[SourcePath] = set()
    for edit in plan.revisions:
        if edit.source_path in seen:
            continue
        seen.add(edit.source_path)
        source = _lookup(app_raw, edit.source_path)
        if source.get("targetRevision") == edit.new:
            continue
        op = "replace" if "targetRevision" in source else "add"
        path = pointer((*edit.source_path, "targetRevision"))
        ops.append({"op": op, "path": path, "value": edit.new})
    return ops


def json_patch_ops(app_raw: Mapping[str, Any], plan: AppPlan) -> list[dict[str, Any]]:
    """The patch operations for ``plan``; ``[]`` when the plan changes nothing.

    Raises :class:`PatchError` when the plan's source is not in ``app_raw``.
    """
    if not plan.has_changes:
        return []
    ops: list[dict[str, Any]] = []
    changed = [e for e in plan.managed if e.changed]
    if changed or not plan.revisions:
        old_src = _lookup(app_raw, plan.source_path)
        new_src = apply_edits(old_src, changed)
        source_ptr = pointer(plan.source_path)
        for block, key in _LISTS:
            ops.extend(_list_ops(source_ptr, block, key, old_src, new_src))
    ops.extend(revision_ops(app_raw, plan))
    if not ops:
        return []
    metadata = app_raw.get("metadata")
    version = metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None
    if version:
        ops.insert(0, {"op": "replace", "path": "/metadata/resourceVersion", "value": version})
    return ops
