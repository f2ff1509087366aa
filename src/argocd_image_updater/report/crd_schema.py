"""The ImageUpdater fields the controller knows, and what an installed CRD's schema keeps of them.

An API server prunes every field of a custom resource that the CRD's structural schema does not
declare (unless ``x-kubernetes-preserve-unknown-fields``), on every write, status included. A
cluster that still serves the original project's CRD therefore drops ``status.shipments`` and
spec fields such as ``holds``: the write succeeds, the field is gone. This module is pure: field
paths (``spec.applicationRefs[].images[].alias``: ``[]`` stands for every item of a list), the
known ones, those a schema declares, and the pruning itself, done as the API server does it.
"""

from __future__ import annotations

import functools
import json
import types
import typing
from collections.abc import Collection, Iterator, Mapping
from typing import Any, Final

from pydantic import BaseModel

from argocd_image_updater.config.imageupdater import LAST_APPLIED, ImageUpdaterSpec

CRD_NAME: Final = "imageupdaters.argocd-image-updater.argoproj.io"
CRD_VERSION: Final = "v1alpha1"
INSTALL_COMMAND: Final = (
    "kubectl apply --server-side --force-conflicts "
    "-f config/crd/bases/argocd-image-updater.argoproj.io_imageupdaters.yaml"
)
"""How to install this project's CRD (from its source tree or release; the chart's copy is
``charts/argocd-image-updater/files/imageupdater-crd.yaml``)."""

STATUS_FIELDS: Final = (
    "status.observedGeneration",
    "status.lastCheckedAt",
    "status.lastUpdatedAt",
    "status.applicationsMatched",
    "status.imagesManaged",
    "status.recentUpdates",
    *(
        f"status.recentUpdates[].{key}"
        for key in ("alias", "image", "newVersion", "applicationsUpdated", "updatedAt", "message")
    ),
    "status.conditions",
    *(
        f"status.conditions[].{key}"
        for key in ("type", "status", "reason", "message", "observedGeneration")
    ),
    "status.conditions[].lastTransitionTime",
    "status.shipments",
    *(
        f"status.shipments[].{key}"
        for key in (
            *("application", "alias", "image", "newVersion", "state"),
            *("writtenAt", "syncedAt", "healthyAt", "message"),
        )
    ),
)
"""Every status field the controller writes."""

_NOT_IN_CRD: Final = frozenset(
    f"spec.applicationRefs[].charts[].commonUpdateSettings.{key}"
    for key in ("minAge", "minAgeFrom", "pinDigest")
)
"""Fields the spec's models share but this project's CRD leaves out on purpose (a chart's
settings have no age or digest)."""


def _model_fields(model: type[BaseModel], prefix: str) -> Iterator[str]:
    for name, info in model.model_fields.items():
        path = f"{prefix}.{info.alias or name}"
        yield path
        yield from _type_fields(info.annotation, path)


def _type_fields(annotation: Any, path: str) -> Iterator[str]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            yield from _type_fields(arg, path)
    elif origin is list:
        yield from _type_fields(typing.get_args(annotation)[0], f"{path}[]")
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield from _model_fields(annotation, path)


@functools.cache
def known_fields() -> frozenset[str]:
    """The spec fields the controller reads (from its models of the spec) and the status fields
    it writes."""
    spec = set(_model_fields(ImageUpdaterSpec, "spec")) - _NOT_IN_CRD
    return frozenset({"spec", *spec, "status", *STATUS_FIELDS})


def schema_fields(schema: Mapping[str, Any]) -> tuple[frozenset[str], frozenset[str]]:
    """The field paths ``schema`` (an ``openAPIV3Schema``) declares, and those under which it
    keeps everything (``x-kubernetes-preserve-unknown-fields``, ``additionalProperties``)."""
    declared: set[str] = set()
    open_: set[str] = set()

    def walk(node: Any, path: str) -> None:
        if not isinstance(node, Mapping):
            return
        if node.get("x-kubernetes-preserve-unknown-fields") or node.get("additionalProperties"):
            open_.add(path)
        for key, sub in (node.get("properties") or {}).items():
            child = f"{path}.{key}" if path else str(key)
            declared.add(child)
            walk(sub, child)
        walk(node.get("items"), f"{path}[]")

    walk(schema, "")
    return frozenset(declared), frozenset(open_)


def _covered(path: str, declared: Collection[str], open_: Collection[str]) -> bool:
    if path in declared:
        return True
    return any(path.startswith(prefix + ".") or path.startswith(prefix + "[") for prefix in open_)


def missing_fields(schema: Mapping[str, Any], known: Collection[str] | None = None) -> list[str]:
    """The known fields ``schema`` drops, outermost only (``spec.holds``, not also
    ``spec.holds[].alias``), in order."""
    declared, open_ = schema_fields(schema)
    absent = sorted(p for p in (known or known_fields()) if not _covered(p, declared, open_))
    return outermost(absent)


def outermost(paths: Collection[str]) -> list[str]:
    """``paths`` without those inside another one of them, sorted."""
    chosen: list[str] = []
    for path in sorted(paths):
        if not any(path.startswith(p + ".") or path.startswith(p + "[") for p in chosen):
            chosen.append(path)
    return chosen


def generic(path: str) -> str:
    """``spec.applicationRefs[0].images[1]`` → ``spec.applicationRefs[].images[]``."""
    out, depth = [], 0
    for char in path:
        if char == "[":
            depth += 1
            out.append("[]")
        elif char == "]":
            depth -= 1
        elif depth == 0:
            out.append(char)
    return "".join(out)


def prune(value: Any, schema: Mapping[str, Any] | None, dropped: Collection[str], path: str) -> Any:
    """``value`` at ``path`` as the API server keeps it: the fields ``schema`` does not declare
    are dropped (``schema`` None: nothing is known, everything kept), and so are the generic
    paths in ``dropped`` (learnt from what the server answered)."""
    if isinstance(value, dict):
        props = schema.get("properties") if schema is not None else None
        extra = schema.get("additionalProperties") if schema is not None else None
        keep_all = schema is None or bool(
            schema.get("x-kubernetes-preserve-unknown-fields") or extra is True
        )
        out: dict[str, Any] = {}
        for key, item in value.items():
            child = f"{path}.{key}"
            if child in dropped:
                continue
            sub = (props or {}).get(key)
            if sub is None and isinstance(extra, Mapping):
                sub = extra
            if sub is None and not keep_all:
                continue
            out[key] = prune(item, sub, dropped, child)
        return out
    if isinstance(value, list):
        items = schema.get("items") if schema is not None else None
        sub = items if isinstance(items, Mapping) else None
        return [prune(item, sub, dropped, f"{path}[]") for item in value]
    return value


def dropped_by_server(sent: Any, kept: Any, path: str) -> set[str]:
    """Generic paths of the fields of ``sent`` that are not in ``kept`` (what the server
    answered after a write): fields it pruned. Null values are no fields."""
    found: set[str] = set()
    if isinstance(sent, dict) and isinstance(kept, dict):
        for key, item in sent.items():
            child = f"{path}.{key}"
            if key not in kept:
                if item is not None:
                    found.add(child)
            else:
                found |= dropped_by_server(item, kept[key], child)
    elif isinstance(sent, list) and isinstance(kept, list) and len(sent) == len(kept):
        for mine, theirs in zip(sent, kept, strict=True):
            found |= dropped_by_server(mine, theirs, f"{path}[]")
    return found


def fields_of(value: Any, path: str) -> Iterator[str]:
    """The concrete paths of every field set (not null) in ``value``."""
    if isinstance(value, dict):
        for key, item in value.items():
            if item is not None:
                child = f"{path}.{key}"
                yield child
                yield from fields_of(item, child)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from fields_of(item, f"{path}[{i}]")


def applied_spec(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The spec of ``obj`` as ``kubectl apply`` last sent it (its annotation), when known: the
    only copy of fields the API server dropped."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, Mapping) else None
    if not isinstance(text, str):
        return None
    try:
        applied = json.loads(text)
    except ValueError:
        return None
    spec = applied.get("spec") if isinstance(applied, dict) else None
    return spec if isinstance(spec, dict) else None
