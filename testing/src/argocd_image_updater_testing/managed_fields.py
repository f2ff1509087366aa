"""``metadata.managedFields`` as the API server keeps them on Update operations.

Every write records, for its field manager, the fields it changed (``FieldsV1``: maps are
descended key by key, a list is one field — the custom resources here declare no list merge
keys —, a scalar is one field); those fields leave every other manager's set. An entry whose
set becomes empty is dropped. Status writes are recorded with ``subresource: status``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

Path = tuple[str, ...]

_IGNORED_META = frozenset(
    {
        "managedFields",
        "resourceVersion",
        "generation",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
        "name",
        "namespace",
    }
)


def _leaves(value: Any, prefix: Path, out: dict[Path, Any]) -> None:
    if isinstance(value, Mapping) and value:
        for key, child in value.items():
            if prefix == ("metadata",) and key in _IGNORED_META:
                continue
            _leaves(child, (*prefix, str(key)), out)
    else:
        out[prefix] = value


def fields_of(obj: Mapping[str, Any], subresource: str = "") -> dict[Path, Any]:
    """The fields of ``obj`` (of its ``status`` for a status write) with their values."""
    out: dict[Path, Any] = {}
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if (key == "status") != (subresource == "status"):
            continue
        _leaves(value, (key,), out)
    return out


def _tree(paths: set[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for step in path:
            node = node.setdefault(f"f:{step}", {})
    return root


def _paths(tree: Any, prefix: Path = ()) -> set[Path]:
    if not isinstance(tree, Mapping) or not tree:
        return {prefix} if prefix else set()
    out: set[Path] = set()
    for key, child in tree.items():
        if key.startswith("f:"):
            out |= _paths(child, (*prefix, key[2:]))
    return out


def updated(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    manager: str,
    subresource: str = "",
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """The ``managedFields`` of ``new`` after ``manager`` wrote it over ``old`` (None: a
    create)."""
    before = fields_of(old or {}, subresource)
    after = fields_of(new, subresource)
    changed = {p for p in after if p not in before or before[p] != after[p]}
    removed = {p for p in before if p not in after}
    meta = (old or {}).get("metadata") or {}
    entries = copy.deepcopy(list(meta.get("managedFields") or []))
    if not changed and not removed:
        return entries
    moment = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    out: list[dict[str, Any]] = []
    mine: set[Path] = set()
    for entry in entries:
        owned = _paths(entry.get("fieldsV1"))
        ours = (
            entry.get("manager") == manager
            and entry.get("operation") == "Update"
            and (entry.get("subresource") or "") == subresource
        )
        owned = {p for p in owned if p not in removed and not _under_any(p, changed)}
        if ours:
            mine = owned
            continue
        if owned:
            out.append({**entry, "fieldsV1": _tree(owned)})
    mine |= changed
    if mine:
        entry = {
            "manager": manager,
            "operation": "Update",
            "apiVersion": str(new.get("apiVersion", "")),
            "time": moment,
            "fieldsType": "FieldsV1",
            "fieldsV1": _tree(mine),
        }
        if subresource:
            entry["subresource"] = subresource
        out.append(entry)
    return out


def _under_any(path: Path, changed: set[Path]) -> bool:
    """``path`` is a changed field, or lies below or above one (a map became a scalar)."""
    return any(path[: len(c)] == c or c[: len(path)] == path for c in changed)


def manager_of(user_agent: str | None, field_manager: str | None) -> str:
    """The manager of a request: ``fieldManager``, else the User-Agent up to its first ``/``."""
    if field_manager:
        return field_manager
    return (user_agent or "unknown").split("/", 1)[0]
