"""Who last set a field of a Kubernetes object, from its ``metadata.managedFields`` (pure).

The API server records, per field manager (the ``fieldManager`` of a write, else the first
part of the client's User-Agent), the fields that manager set last, as a ``FieldsV1`` tree
(``{"f:spec": {"f:source": {"f:kustomize": {"f:images": {}}}}}``). A list without merge keys
(an Application's ``kustomize.images``, ``helm.parameters``, ``sources``) is one field: its
manager is whoever set the list last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _depth(fields: Any, path: Sequence[str]) -> int:
    """How many steps of ``path`` the ``FieldsV1`` tree ``fields`` owns (0: none); a leaf
    (``{}``) owns everything below it."""
    node = fields
    for depth, step in enumerate(path):
        if not isinstance(node, Mapping):
            return 0
        if not node and depth:
            return depth  # the tree ends here: this manager owns the whole value
        child = node.get(f"f:{step}")
        if child is None:
            return 0
        node = child
    return len(path)


def field_manager(obj: Mapping[str, Any], path: Sequence[str | int], ignore: str = "") -> str:
    """The manager that set the field at ``path`` (``("spec", "source", "kustomize",
    "images")``; a list index ends the path: such lists are one field) of ``obj`` last;
    ``""`` when ``managedFields`` does not say, or only ``ignore`` (ourselves) did."""
    steps: list[str] = []
    for step in path:
        if isinstance(step, int):
            break
        steps.append(step)
    meta = obj.get("metadata")
    entries = meta.get("managedFields") if isinstance(meta, Mapping) else None
    if not isinstance(entries, Sequence) or not steps:
        return ""
    best: tuple[int, str, str] = (0, "", "")
    for entry in entries:
        if not isinstance(entry, Mapping) or entry.get("subresource"):
            continue
        manager = str(entry.get("manager") or "")
        depth = _depth(entry.get("fieldsV1"), steps)
        if depth and manager:
            candidate = (depth, str(entry.get("time") or ""), manager)
            best = max(best, candidate)
    return "" if best[2] == ignore else best[2]
