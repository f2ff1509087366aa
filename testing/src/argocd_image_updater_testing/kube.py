"""A Kubernetes API server stand-in that real clients (the product's, kubernetes_asyncio, kubectl) talk to.

It keeps objects in memory and behaves like kube-apiserver for what the product uses: discovery,
list (label and field selectors, pagination), get, create, replace, merge / JSON / strategic merge
patch, delete (with finalizers), watch; resourceVersion (one global counter), uid, generation,
the status subresource, optimistic concurrency (409 Conflict), structural schemas of the shipped
CRDs with pruning, defaulting and CEL rules (422 Invalid), the CustomResourceDefinitions
themselves (of the project's ImageUpdater CRD, or another one such as the original project's),
and Status bodies shaped like the real ones. Tests can count requests, inject faults (an error
status with or without ``Retry-After``, a connection reset before or after the request is
applied) and latency, see the ``Impersonate-*`` fields requests carried
(:attr:`KubeApiServer.impersonations`), and change objects directly through
:attr:`KubeApiServer.store`; direct changes emit watch events too.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import copy
import json
import random
import re
import socket
import ssl
import threading
import uuid
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Self
from urllib.parse import unquote

from aiohttp import web

from argocd_image_updater_testing import managed_fields
from argocd_image_updater_testing.in_thread import InThread
from argocd_image_updater_testing.kube_schema import (
    Cause,
    DecodeError,
    ResourceType,
    admit,
    default_types,
    validate_metadata,
)

JSON = dict[str, Any]
Objects = list[JSON]
Events = list["WatchEvent"]
SYSTEM_NAMESPACES: Final = ("default", "kube-system", "kube-public", "kube-node-lease")
VERSION_INFO: Final = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-08-13T00:00:00Z",
    "goVersion": "go1.22.5",
    "compiler": "gc",
    "platform": "linux/amd64",
}
REASONS: Final = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
_MODIFIED: Final = (
    "the object has been modified; please apply your changes to the latest version and try again"
)
_NO_RESOURCE: Final = "the server could not find the requested resource"
_NS_MISMATCH: Final = (
    "the namespace of the provided object does not match the namespace sent on the request"
)


class KubeError(Exception):
    """A failed API call; :meth:`status` is the ``Status`` body the apiserver answers with."""

    def __init__(
        self, code: int, message: str, *, reason: str = "", details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code, self.message = code, message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = dict(details) if details is not None else None

    def status(self) -> JSON:
        body: JSON = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
        body.update(message=self.message, reason=self.reason)
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _details(rt: ResourceType, name: str, *, by_kind: bool = False) -> JSON:
    group = {"group": rt.group} if rt.group else {}
    return {"name": name, **group, "kind": rt.kind if by_kind else rt.plural}


def not_found(rt: ResourceType, name: str) -> KubeError:
    return KubeError(404, f'{rt.group_resource} "{name}" not found', details=_details(rt, name))


def conflict(rt: ResourceType, name: str, why: str = _MODIFIED) -> KubeError:
    message = f'Operation cannot be fulfilled on {rt.group_resource} "{name}": {why}'
    return KubeError(409, message, details=_details(rt, name))


def invalid(rt: ResourceType, name: str, causes: Sequence[Cause]) -> KubeError:
    shown = [c.render() for c in causes]
    text = shown[0] if len(shown) == 1 else "[" + ", ".join(shown) + "]"
    details = {**_details(rt, name, by_kind=True), "causes": [c.as_json() for c in causes]}
    return KubeError(422, f'{rt.group_kind} "{name}" is invalid: {text}', details=details)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _meta(obj: Mapping[str, Any]) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


# --- selectors ----------------------------------------------------------------------------------

_SET_REQ = re.compile(r"^(?P<key>[^\s!=(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_EQ_REQ = re.compile(r"^(?P<key>[^\s!=(),]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=(),]*)$")
_EXISTS_REQ = re.compile(r"^(?P<neg>!?)\s*(?P<key>[^\s!=(),]+)$")


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector: ``a=b,c==d,e!=f,g in (x,y),h notin (z),i,!j``."""

    requirements: tuple[tuple[str, str, frozenset[str]], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        reqs: list[tuple[str, str, frozenset[str]]] = []
        for part in _split_top(text or ""):
            if m := _SET_REQ.match(part):
                values = frozenset(v.strip() for v in m["values"].split(",") if v.strip())
                reqs.append((m["key"], m["op"], values))
            elif m := _EQ_REQ.match(part):
                op = "notin" if m["op"] == "!=" else "in"
                reqs.append((m["key"], op, frozenset([m["value"]])))
            elif m := _EXISTS_REQ.match(part):
                reqs.append((m["key"], "!exists" if m["neg"] else "exists", frozenset()))
            else:
                raise KubeError(
                    400, f"unable to parse requirement: invalid label selector {part!r}"
                )
        return cls(tuple(reqs))

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, op, values in self.requirements:
            present = key in labels
            if (op == "exists" and not present) or (op == "!exists" and present):
                return False
            if op == "in" and (not present or labels[key] not in values):
                return False
            if op == "notin" and present and labels[key] in values:
                return False
        return True


_EVENT_FIELDS: Final = frozenset(
    {f"involvedObject.{k}" for k in ("kind", "namespace", "name", "uid", "apiVersion", "fieldPath")}
    | {"reason", "type", "source", "reportingComponent"}
)


@dataclass(frozen=True)
class Selector:
    """Label and field selector of a list or watch."""

    labels: LabelSelector
    fields: tuple[tuple[str, bool, str], ...]

    @classmethod
    def parse(cls, rt: ResourceType, labels: str | None, fields: str | None) -> Selector:
        allowed = {"metadata.name", "metadata.namespace"}
        allowed |= _EVENT_FIELDS if rt.kind == "Event" and not rt.group else set()
        allowed |= {"type"} if rt.kind == "Secret" else set()
        terms = []
        for part in _split_top(fields or ""):
            m = re.match(r"^([^!=]+?)\s*(==|=|!=)\s*(.*)$", part)
            if not m:
                raise KubeError(400, f"invalid field selector: {part!r}")
            if m[1] not in allowed:
                raise KubeError(400, f"field label not supported: {m[1]}")
            terms.append((m[1], m[2] != "!=", m[3]))
        return cls(LabelSelector.parse(labels), tuple(terms))

    def matches(self, obj: Mapping[str, Any]) -> bool:
        if not self.labels.matches(_meta(obj).get("labels") or {}):
            return False
        for path, equal, wanted in self.fields:
            value: Any = obj
            for part in ("source.component" if path == "source" else path).split("."):
                value = value.get(part) if isinstance(value, Mapping) else None
            if (("" if value is None else str(value)) == wanted) != equal:
                return False
        return True


# --- patches ------------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise KubeError(400, f"invalid JSON pointer {path!r}: must be empty or start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def _rejected() -> KubeError:
    """What the apiserver answers for any JSON patch operation that does not apply."""
    message = "the server rejected our request due to an error in our request"
    return KubeError(422, message, details={})


def _locate(doc: Any, tokens: list[str]) -> tuple[Any, str | int]:
    """The container of the pointer's target and the key/index in it (must exist)."""
    node: Any = doc
    for i, token in enumerate(tokens):
        key: str | int = token
        if isinstance(node, list):
            key = int(token) if token.isdigit() else -1 if token != "-" else len(node)
        if i == len(tokens) - 1:
            return node, key
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            node = node[key]
        else:
            raise _rejected()
    raise _rejected()


def _get(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        return doc
    node, key = _locate(doc, tokens)
    if isinstance(node, dict) and key in node:
        return node[key]
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        return node[key]
    raise _rejected()


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 JSON patch; an operation that does not apply (e.g. ``test``) is a 422."""
    if not isinstance(ops, list):
        raise KubeError(400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(doc)
    for i, op in enumerate(ops):
        kind = op.get("op") if isinstance(op, dict) else None
        if kind not in ("add", "remove", "replace", "move", "copy", "test"):
            raise KubeError(400, f"invalid JSON patch operation {i}: {json.dumps(op)}")
        if kind in ("add", "replace", "test") and "value" not in op:
            raise KubeError(400, f"JSON patch operation {i} ({kind}) has no value")
        tokens = _pointer(op.get("path"))
        if kind in ("move", "copy"):
            source = _pointer(op.get("from"))
            value = copy.deepcopy(_get(doc, source))
            if kind == "move" and source:
                node, key = _locate(doc, source)
                del node[key]
            kind, op = "add", {"value": value}
        if kind == "test":
            current = _get(doc, tokens)
            if json.dumps(current, sort_keys=True) != json.dumps(op["value"], sort_keys=True):
                raise _rejected()
        elif not tokens:
            if kind == "remove":
                raise _rejected()
            doc = copy.deepcopy(op["value"])
        elif kind == "remove":
            _get(doc, tokens)
            node, key = _locate(doc, tokens)
            del node[key]
        else:
            node, key = _locate(doc, tokens)
            if kind == "replace":
                _get(doc, tokens)
            if isinstance(node, dict) and isinstance(key, str):
                node[key] = copy.deepcopy(op["value"])
            elif isinstance(node, list) and isinstance(key, int) and 0 <= key <= len(node):
                if kind == "replace":
                    node[key] = copy.deepcopy(op["value"])
                else:
                    node.insert(key, copy.deepcopy(op["value"]))
            else:
                raise _rejected()
    return doc


# --- the store ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class WatchEvent:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    rt: ResourceType
    obj: JSON
    old: JSON | None


@dataclass(eq=False)
class _Watch:
    rt: ResourceType
    namespace: str | None
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[WatchEvent | None]
    start_rv: int  # every change up to here is in the replay
    scheduled: int = 0  # events put (or being put) into the queue
    received: int = 0  # events taken from it


@dataclass
class Write:
    """Options of a write: ``dryRun=All``, ``fieldValidation`` (Ignore, Warn, Strict) and the
    warnings collected for the ``Warning`` response header."""

    dry_run: bool = False
    field_validation: str = "Ignore"
    warnings: list[str] = field(default_factory=list)
    manager: str = ""
    """The field manager of the write (``managedFields`` are kept for it); "" keeps them as
    they are (test code seeding the store)."""
    subresource: str = ""


class KubeStore:
    """Thread-safe in-memory object store with the apiserver's write semantics.

    Methods take a resource reference: a :class:`ResourceType`, or a name such as ``"applications"``,
    ``"Application"``, ``"app"``, ``"secrets"``, ``"leases"``, ``"events.events.k8s.io"``. They
    return deep copies and raise :class:`KubeError` as the HTTP API would answer.
    """

    def __init__(
        self,
        types: Iterable[ResourceType] | None = None,
        *,
        namespaces: Iterable[str] = (),
        history_limit: int = 10_000,
    ) -> None:
        self._lock = threading.RLock()
        self.types: list[ResourceType] = list(types if types is not None else default_types())
        self._objects: dict[ResourceType, dict[tuple[str, str], JSON]] = {t: {} for t in self.types}
        self._rv = 0
        self._history: deque[WatchEvent] = deque()
        self._history_limit = history_limit
        self._compacted = 0
        self._watches: set[_Watch] = set()
        for namespace in (*SYSTEM_NAMESPACES, *namespaces):
            self.ensure_namespace(namespace)
        self._define_custom_types()

    def resolve(self, ref: str | ResourceType) -> ResourceType:
        if isinstance(ref, ResourceType):
            return ref
        for rt in self.types:
            names = (rt.plural, rt.singular, rt.kind.lower(), rt.group_resource, *rt.short_names)
            if ref.lower() in names:
                return rt
        known = ", ".join(rt.group_resource for rt in self.types)
        raise ValueError(f"unknown resource {ref!r}: use one of {known}")

    def type_of(self, obj: Mapping[str, Any]) -> ResourceType:
        for rt in self.types:
            if rt.api_version == obj.get("apiVersion") and rt.kind == obj.get("kind"):
                return rt
        raise ValueError(f"unknown apiVersion={obj.get('apiVersion')!r} kind={obj.get('kind')!r}")

    @property
    def resource_version(self) -> str:
        return str(self._rv)

    @property
    def watchers(self) -> int:
        """Open watches (tests wait for a watch to be established with this)."""
        return len(self._watches)

    def _key(self, rt: ResourceType, namespace: str | None, name: str) -> tuple[str, str]:
        return ((namespace or "default") if rt.namespaced else "", name)

    def _current(self, rt: ResourceType, namespace: str | None, name: str) -> JSON:
        obj = self._objects[rt].get(self._key(rt, namespace, name))
        if obj is None:
            raise not_found(rt, name)
        return obj

    def _define_custom_types(self) -> None:
        """Store the CustomResourceDefinition of each custom type, as the API server serves it
        (``get``/``list``/``watch customresourcedefinitions``)."""
        if not any(rt.plural == "customresourcedefinitions" for rt in self.types):
            return
        for rt in self.types:
            if rt.definition is not None:
                crd = copy.deepcopy(dict(rt.definition))
                crd["status"] = {
                    "acceptedNames": dict(crd["spec"]["names"]),
                    "conditions": [
                        {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"}
                    ],
                    "storedVersions": [rt.version],
                }
                self.put(crd)

    # -- reads --

    def get(self, ref: str | ResourceType, namespace: str | None, name: str) -> JSON:
        with self._lock:
            return copy.deepcopy(self._current(self.resolve(ref), namespace, name))

    def list(
        self,
        ref: str | ResourceType,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Objects:
        rt = self.resolve(ref)
        return copy.deepcopy(
            self.query(rt, namespace, Selector.parse(rt, label_selector, field_selector))[0]
        )

    def query(
        self, rt: ResourceType, namespace: str | None, selector: Selector | None = None
    ) -> tuple[Objects, str]:
        """Matching objects (shared: do not modify) in etcd key order, and the list's RV."""
        with self._lock:
            items = [
                obj
                for (ns, _), obj in sorted(self._objects[rt].items())
                if namespace in (None, ns) and (selector is None or selector.matches(obj))
            ]
            return items, self.resource_version

    # -- writes --

    def ensure_namespace(self, name: str) -> None:
        with self._lock:
            if ("", name) not in self._objects[self.resolve("namespaces")]:
                self.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def put(self, obj: Mapping[str, Any], *, validate: bool = True, manager: str = "") -> JSON:
        """Create or overwrite ``obj`` as given (status included, no resourceVersion check), the
        way test code seeds or changes the cluster. Creates a missing namespace. ``manager``:
        record the change in ``managedFields`` as that field manager's Update."""
        rt = self.type_of(obj)
        body = copy.deepcopy(dict(obj))
        meta = body.setdefault("metadata", {})
        namespace = (meta.get("namespace") or "default") if rt.namespaced else None
        with self._lock:
            if namespace:
                self.ensure_namespace(namespace)
            if validate:
                body = self._admit(rt, body, Write(), create=True)
            old = self._objects[rt].get(self._key(rt, namespace, meta.get("name", "")))
            self._system_fields(rt, body, old, namespace)
            if manager:
                body["metadata"]["managedFields"] = managed_fields.updated(old, body, manager)
            return copy.deepcopy(self._commit(rt, body, old))

    def create(
        self, ref: str | ResourceType, namespace: str | None, body: Any, opts: Write | None = None
    ) -> JSON:
        rt, opts = self.resolve(ref), opts or Write()
        obj = self._checked_body(rt, body)
        meta = obj["metadata"]
        if rt.namespaced and meta.get("namespace") not in (None, "", namespace):
            raise KubeError(400, _NS_MISMATCH)
        meta.pop("namespace", None)
        if rt.namespaced:
            meta["namespace"] = namespace
        if meta.get("resourceVersion"):
            raise KubeError(400, "resourceVersion should not be set on objects to be created")
        for key in ("uid", "creationTimestamp", "generation", "deletionTimestamp"):
            meta.pop(key, None)
        if rt.status_subresource:
            obj.pop("status", None)
        with self._lock:
            if not meta.get("name") and meta.get("generateName"):
                while (
                    not meta.get("name")
                    or self._key(rt, namespace, meta["name"]) in self._objects[rt]
                ):
                    meta["name"] = meta["generateName"] + "".join(
                        random.choices("bcdfghjklmnpqrstvwxz2456789", k=5)
                    )
            obj = self._admit(rt, obj, opts, create=True)
            name = _meta(obj)["name"]
            if namespace and ("", namespace) not in self._objects[self.resolve("namespaces")]:
                details = {"name": namespace, "kind": "namespaces"}
                raise KubeError(404, f'namespaces "{namespace}" not found', details=details)
            if self._key(rt, namespace, name) in self._objects[rt]:
                message = f'{rt.group_resource} "{name}" already exists'
                raise KubeError(409, message, reason="AlreadyExists", details=_details(rt, name))
            self._system_fields(rt, obj, None, namespace)
            if opts.manager:
                obj["metadata"]["managedFields"] = managed_fields.updated(None, obj, opts.manager)
            return copy.deepcopy(obj if opts.dry_run else self._commit(rt, obj, None))

    def replace(
        self,
        ref: str | ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        opts: Write | None = None,
        *,
        subresource: str | None = None,
    ) -> JSON:
        rt = self.resolve(ref)
        obj = self._checked_body(rt, body)
        meta = obj["metadata"]
        if meta.get("name", name) != name:
            message = f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            raise KubeError(400, message)
        if rt.namespaced and meta.get("namespace") not in (None, "", namespace):
            raise KubeError(400, _NS_MISMATCH)
        with self._lock:
            old = self._current(rt, namespace, name)
            given = meta.get("resourceVersion")
            if not given and rt.custom:  # custom resources allow no unconditional update
                msg = "Invalid value: 0x0: must be specified for an update"
                raise invalid(
                    rt, name, [Cause("FieldValueInvalid", "metadata.resourceVersion", msg)]
                )
            if given and given != _meta(old)["resourceVersion"]:
                raise conflict(rt, name)
            return self._update(rt, old, self._with_subresource(rt, old, obj, subresource), opts)

    def patch(
        self,
        ref: str | ResourceType,
        namespace: str | None,
        name: str,
        patch: Any,
        opts: Write | None = None,
        *,
        patch_type: str | None = None,
        subresource: str | None = None,
    ) -> JSON:
        """``patch_type``: ``merge``, ``json`` or ``strategic`` (default: json for a list)."""
        rt = self.resolve(ref)
        kind = patch_type or ("json" if isinstance(patch, list) else "merge")
        if kind == "strategic" and rt.custom:
            raise KubeError(
                415,
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, "
                "application/apply-patch+yaml",
            )
        if kind != "json" and not isinstance(patch, dict):
            raise KubeError(400, f"a {kind} merge patch must be a JSON object")
        with self._lock:
            old = self._current(rt, namespace, name)
            patched = json_patch(old, patch) if kind == "json" else merge_patch(old, patch)
            if not isinstance(patched, dict):
                raise _rejected()
            patched = self._checked_body(rt, patched)
            given = patched["metadata"].get("resourceVersion")
            if given and given != _meta(old)["resourceVersion"]:
                raise conflict(rt, name)
            return self._update(
                rt, old, self._with_subresource(rt, old, patched, subresource), opts
            )

    def delete(
        self,
        ref: str | ResourceType,
        namespace: str | None,
        name: str,
        *,
        preconditions: Mapping[str, Any] | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """Delete; with finalizers only mark it (deletionTimestamp). Returns the last state."""
        rt = self.resolve(ref)
        with self._lock:
            old = self._current(rt, namespace, name)
            meta = _meta(old)
            for key, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
                wanted = (preconditions or {}).get(key)
                if wanted and wanted != meta.get(key):
                    why = f"Precondition failed: {label} in precondition: {wanted}, {label} in object meta: {meta.get(key)}"
                    raise conflict(rt, name, why)
            if dry_run or meta.get("deletionTimestamp"):
                return copy.deepcopy(old)
            if not meta.get("finalizers"):
                return copy.deepcopy(self._remove(rt, old))
            new = copy.deepcopy(old)
            new["metadata"].update(deletionTimestamp=_now(), deletionGracePeriodSeconds=0)
            if rt.custom:
                new["metadata"]["generation"] = meta.get("generation", 1) + 1
            return copy.deepcopy(self._commit(rt, new, old))

    def compact(self) -> None:
        """Forget the event history: watches from an older resourceVersion get 410 Gone."""
        with self._lock:
            self._history.clear()
            self._compacted = self._rv

    # -- internals --

    def _checked_body(self, rt: ResourceType, body: Any) -> JSON:
        if not isinstance(body, Mapping):
            raise KubeError(400, f"the body of the request must be a JSON object, not {body!r:.80}")
        obj = copy.deepcopy(dict(body))
        for key, wanted in (("apiVersion", rt.api_version), ("kind", rt.kind)):
            given = obj.setdefault(key, wanted)
            if given != wanted:
                message = (
                    f"the {key} in the data ({given}) does not match the expected {key} ({wanted})"
                )
                raise KubeError(400, message)
        if not isinstance(obj.setdefault("metadata", {}), dict):
            raise KubeError(400, "metadata must be a JSON object")
        return obj

    def _admit(self, rt: ResourceType, obj: JSON, opts: Write, *, create: bool) -> JSON:
        try:
            result = admit(rt, obj, create=create)
        except DecodeError as exc:
            raise KubeError(400, str(exc)) from None
        unknown = [f'unknown field "{p}"' for p in result.unknown]
        if unknown and opts.field_validation == "Strict":
            raise KubeError(400, "strict decoding error: " + ", ".join(unknown))
        if opts.field_validation == "Warn":
            opts.warnings.extend(unknown)
        causes = validate_metadata(rt, result.obj) + result.causes
        if causes:
            raise invalid(rt, _meta(result.obj).get("name") or "", causes)
        return result.obj

    def _with_subresource(self, rt: ResourceType, old: JSON, new: JSON, sub: str | None) -> JSON:
        if sub not in (None, "status") or (sub and not rt.status_subresource):
            raise KubeError(404, _NO_RESOURCE, details={})
        if sub == "status":  # only status changes; everything else stays as stored
            result = {k: v for k, v in copy.deepcopy(old).items() if k != "status"}
            return {**result, "status": new["status"]} if "status" in new else result
        if rt.status_subresource:  # the main resource ignores status changes
            new.pop("status", None)
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
        return new

    def _system_fields(self, rt: ResourceType, obj: JSON, old: JSON | None, ns: str | None) -> None:
        meta = obj["metadata"]
        if ns:
            meta["namespace"] = ns
        if old is None:
            meta.update(uid=str(uuid.uuid4()), creationTimestamp=_now())
            if rt.custom:
                meta["generation"] = 1
            return
        old_meta = _meta(old)
        for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(key, None)
            if key in old_meta:
                meta[key] = old_meta[key]
        if rt.custom:  # generation follows spec changes: all but metadata (and status)
            ignored = ("metadata", "status") if rt.status_subresource else ("metadata",)
            before = {k: v for k, v in old.items() if k not in ignored}
            after = {k: v for k, v in obj.items() if k not in ignored}
            meta["generation"] = old_meta.get("generation", 1) + (before != after)
        meta["resourceVersion"] = old_meta["resourceVersion"]

    def _update(self, rt: ResourceType, old: JSON, new: JSON, opts: Write | None) -> JSON:
        opts = opts or Write()
        new = self._admit(rt, new, opts, create=False)
        meta = _meta(old)
        new["metadata"]["name"] = meta["name"]
        self._system_fields(rt, new, old, meta.get("namespace"))
        if opts.manager:
            new["metadata"]["managedFields"] = managed_fields.updated(
                old, new, opts.manager, opts.subresource
            )
        elif "managedFields" in meta:
            new["metadata"]["managedFields"] = copy.deepcopy(meta["managedFields"])
        if new == old or opts.dry_run:  # a no-op write changes nothing, not even the RV
            return copy.deepcopy(new)
        if meta.get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            return copy.deepcopy(self._remove(rt, new))
        return copy.deepcopy(self._commit(rt, new, old))

    def _commit(self, rt: ResourceType, obj: JSON, old: JSON | None) -> JSON:
        self._rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self._rv)
        self._objects[rt][self._key(rt, meta.get("namespace"), meta["name"])] = obj
        self._emit(WatchEvent(self._rv, "ADDED" if old is None else "MODIFIED", rt, obj, old))
        return obj

    def _remove(self, rt: ResourceType, obj: JSON) -> JSON:
        meta = _meta(obj)
        self._objects[rt].pop(self._key(rt, meta.get("namespace"), meta["name"]), None)
        self._rv += 1
        final = copy.deepcopy(obj)
        final["metadata"]["resourceVersion"] = str(self._rv)
        self._emit(WatchEvent(self._rv, "DELETED", rt, final, obj))
        if rt.kind == "Namespace":  # the namespace controller removes what it held
            for other in self.types:
                for (ns, _), item in list(self._objects[other].items()):
                    if other.namespaced and ns == meta["name"]:
                        self._remove(other, item)
        return final

    def _emit(self, event: WatchEvent) -> None:
        self._history.append(event)
        while len(self._history) > self._history_limit:
            self._compacted = self._history.popleft().rv
        namespace = _meta(event.obj).get("namespace")
        for watch in list(self._watches):
            if watch.rt is event.rt and watch.namespace in (None, namespace):
                try:
                    watch.loop.call_soon_threadsafe(watch.queue.put_nowait, event)
                    watch.scheduled += 1
                except RuntimeError:  # its event loop is gone
                    self._watches.discard(watch)

    def subscribe(
        self,
        rt: ResourceType,
        namespace: str | None,
        resource_version: str | None,
        queue: asyncio.Queue[WatchEvent | None],
    ) -> tuple[Events, _Watch]:
        """Events to replay, and a registration that puts later events into ``queue`` (pass it
        to :meth:`unsubscribe`). Without a resourceVersion (or "0") the replay is a synthetic
        ADDED per existing object; a compacted resourceVersion is a 410."""
        with self._lock:
            if resource_version in (None, "", "0"):
                objects = self.query(rt, namespace)[0]
                replay = [
                    WatchEvent(int(_meta(o)["resourceVersion"]), "ADDED", rt, o, None)
                    for o in objects
                ]
            else:
                try:
                    since = int(resource_version or "")
                except ValueError:
                    raise KubeError(400, f'invalid resource version "{resource_version}"') from None
                if since < self._compacted:
                    message = f"too old resource version: {since} ({self._compacted + 1})"
                    raise KubeError(410, message, details={})
                replay = [
                    e
                    for e in self._history
                    if e.rv > since
                    and e.rt is rt
                    and namespace in (None, _meta(e.obj).get("namespace"))
                ]
            watch = _Watch(rt, namespace, asyncio.get_running_loop(), queue, self._rv)
            self._watches.add(watch)
            return replay, watch

    def progress(self, watch: _Watch) -> int | None:
        """The resourceVersion a bookmark of ``watch`` may carry: the store's, when every
        event before it has reached the watch (as the API server's watch cache reports its
        progress); None while some are on their way."""
        with self._lock:
            return self._rv if watch.received == watch.scheduled else None

    def unsubscribe(self, watch: _Watch) -> None:
        with self._lock:
            self._watches.discard(watch)


# --- HTTP plumbing shared with the Argo CD fake -------------------------------------------------


@dataclass
class _Fault:
    verb: str | None
    resource: str | None
    status: int
    message: str | None
    remaining: int  # -1: a latency rule
    delay: float = 0.0
    retry_after: str | None = "1"  # sent with a 429 or 503
    reset: str = ""  # "before" / "after" the request is applied: the connection is dropped

    def matches(self, verb: str, resource: str) -> bool:
        return self.verb in (None, verb) and self.resource in (None, resource)


class ServedApp(InThread):
    """An aiohttp application on 127.0.0.1 and a free port: ``async with`` it, or run it in a
    background thread with its own event loop (:meth:`start_in_thread` / :meth:`stop`).

    Counts requests by ``(verb, resource)`` and can fail or slow down matching requests."""

    def __init__(self, *, ssl_context: ssl.SSLContext | None = None) -> None:
        self.host, self.port, self.ssl_context = "127.0.0.1", 0, ssl_context
        self.requests: Counter[tuple[str, str]] = Counter()
        self.abandoned: Counter[tuple[str, str]] = Counter()
        """Requests whose client went away while they were delayed (never served)."""
        self._faults: list[_Fault] = []
        self._fault_lock = threading.Lock()
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.ssl_context else 'http'}://{self.host}:{self.port}"

    def build_app(self) -> web.Application:
        raise NotImplementedError

    async def before_close(self) -> None:
        """Hook: end long-running responses so that shutdown is quick."""

    async def start(self) -> Self:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        app = self.build_app()
        runner = web.AppRunner(
            app, shutdown_timeout=1.0, handler_cancellation=True, access_log=None
        )
        await runner.setup()
        await web.SockSite(runner, sock, ssl_context=self.ssl_context).start()
        self._runner = runner
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self.before_close()
            await self._runner.cleanup()
            self._runner = None

    # -- test hooks --

    def fail_next(
        self,
        count: int = 1,
        *,
        verb: str | None = None,
        resource: str | None = None,
        status: int = 500,
        message: str | None = None,
        retry_after: str | None = "1",
    ) -> None:
        """Answer the next ``count`` requests matching ``verb``/``resource`` (None: any) with
        ``status`` (a 429 or 503 with ``Retry-After: retry_after``, unless None). Verbs: get,
        list, watch, create, update, patch, delete."""
        with self._fault_lock:
            self._faults.append(_Fault(verb, resource, status, message, count, 0.0, retry_after))

    def clear_faults(self) -> None:
        """Forget the failures still to inject (latency rules stay)."""
        with self._fault_lock:
            self._faults = [f for f in self._faults if f.remaining < 0]

    def set_latency(
        self, seconds: float, *, verb: str | None = None, resource: str | None = None
    ) -> None:
        """Delay every matching request by ``seconds`` (0 removes that rule)."""
        with self._fault_lock:
            rule = (verb, resource)
            self._faults = [
                f for f in self._faults if not (f.delay and (f.verb, f.resource) == rule)
            ]
            if seconds > 0:
                self._faults.append(_Fault(verb, resource, 0, None, -1, seconds))

    def request_count(self, verb: str | None = None, resource: str | None = None) -> int:
        counts = list(self.requests.items())
        return sum(n for (v, r), n in counts if verb in (None, v) and resource in (None, r))

    async def _account(self, verb: str, resource: str) -> _Fault | None:
        """Count the request and apply latency; returns the injected failure, if any."""
        self.requests[(verb, resource)] += 1
        with self._fault_lock:
            matching = [f for f in self._faults if f.matches(verb, resource)]
            delay = max((f.delay for f in matching), default=0.0)
            fault = next((f for f in matching if f.remaining > 0), None)
            if fault is not None:
                fault.remaining -= 1
                self._faults = [f for f in self._faults if f.remaining != 0]
        if delay:
            try:
                await asyncio.sleep(delay)
            except asyncio.CancelledError:  # the client gave up: the request is never served
                self.abandoned[(verb, resource)] += 1
                raise
        return fault


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


def json_response(body: Any, status: int = 200) -> web.Response:
    data = json.dumps(body, separators=(",", ":")).encode()
    return web.Response(body=data, status=status, content_type="application/json")


_PATCH_TYPES: Final = {
    "application/merge-patch+json": "merge",
    "application/json-patch+json": "json",
    "application/strategic-merge-patch+json": "strategic",
}
_VERBS: Final = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


class KubeApiServer(ServedApp):
    """The Kubernetes API fake. ``token``: require ``Authorization: Bearer <token>``;
    ``namespaces``: created besides the system ones; ``ca_pem``: the CA of ``ssl_context``'s
    certificate, for :meth:`write_kubeconfig`; ``imageupdater_crd``: the ImageUpdater CRD to
    serve and prune by (the project's by default; the original project's one, say)."""

    def __init__(
        self,
        store: KubeStore | None = None,
        *,
        imageupdater_crd: str | Path | None = None,
        token: str | None = None,
        namespaces: Iterable[str] = ("argocd",),
        bookmark_interval: float = 60.0,
        ssl_context: ssl.SSLContext | None = None,
        ca_pem: bytes | None = None,
    ) -> None:
        super().__init__(ssl_context=ssl_context)
        if store is None and imageupdater_crd is not None:
            store = KubeStore(default_types(Path(imageupdater_crd)))
        self.store = store or KubeStore()
        for namespace in namespaces:
            self.store.ensure_namespace(namespace)
        self.token, self.bookmark_interval, self.ca_pem = token, bookmark_interval, ca_pem
        self._streams: set[asyncio.Queue[WatchEvent | None]] = set()
        self._watch_gate = asyncio.Event()
        self._watch_gate.set()
        self.impersonations: list[Impersonation] = []
        """The ``Impersonate-*`` fields of each request that carried them, in order."""
        self.client_users: list[str] = []
        """The common name of each request's client certificate (the user the API server's
        x509 authenticator names), in order."""

    def reset_next(
        self,
        count: int = 1,
        *,
        verb: str | None = None,
        resource: str | None = None,
        after_apply: bool = False,
    ) -> None:
        """Drop the connection of the next ``count`` matching requests without an answer:
        before doing anything, or (``after_apply``) once a write has been applied, as when an
        API server or a load balancer in front of it fails at the worst moment."""
        with self._fault_lock:
            reset = "after" if after_apply else "before"
            self._faults.append(_Fault(verb, resource, 0, None, count, reset=reset))

    def build_app(self) -> web.Application:
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        return app

    async def before_close(self) -> None:
        self._watch_gate.set()
        for queue in list(self._streams):
            queue.put_nowait(None)

    def hold_watch_events(self) -> None:
        """Deliver no watch event from now on (they wait, in order), as a lagging watch cache
        would, until :meth:`release_watch_events` (call both from the server's event loop)."""
        self._watch_gate.clear()

    def release_watch_events(self) -> None:
        self._watch_gate.set()

    def end_watches(self) -> None:
        """End every open watch, as the API server does at a watch's timeout (call from the
        server's event loop)."""
        for queue in list(self._streams):
            queue.put_nowait(None)

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path:
        """A kubeconfig for this server (JSON, which every YAML loader reads)."""
        cluster: JSON = {"server": self.url}
        if self.ca_pem:
            cluster["certificate-authority-data"] = base64.b64encode(self.ca_pem).decode()
        context = {"cluster": "sandbox", "user": "sandbox", "namespace": namespace}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "sandbox", "cluster": cluster}],
            "users": [{"name": "sandbox", "user": {"token": self.token} if self.token else {}}],
            "contexts": [{"name": "sandbox", "context": context}],
            "current-context": "sandbox",
        }
        target = Path(path)
        target.write_text(json.dumps(config, indent=2))
        return target

    # -- routing --

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        try:
            response = await self._serve(request)
        except _Reset:
            return _reset(request)
        except KubeError as exc:
            response = json_response(exc.status(), exc.code)
            after = request.get(_RETRY_AFTER, "1")
            if exc.code in (429, 503) and after is not None:
                response.headers["Retry-After"] = after
            return response
        if request.get(_RESET_AFTER):
            return _reset(request)
        return response

    def _impersonation(self, request: web.Request) -> None:
        """Record the request's ``Impersonate-*`` fields; as the API server, refuse groups,
        a uid or extras without a user."""
        headers = request.headers
        prefix = "impersonate-extra-"
        extra: dict[str, list[str]] = {}
        for name in dict.fromkeys(k.lower() for k in headers if k.lower().startswith(prefix)):
            extra[unquote(name[len(prefix) :])] = headers.getall(name)
        user, uid = headers.get("Impersonate-User", ""), headers.get("Impersonate-Uid", "")
        groups = tuple(headers.getall("Impersonate-Group", []))
        if not user and (groups or uid or extra):
            raise KubeError(400, "requested impersonation without impersonating a user")
        if user:
            self.impersonations.append(Impersonation(user, groups, uid, extra))

    def _discovery(self, parts: list[str]) -> JSON | None:
        groups: dict[str, list[ResourceType]] = {}
        for rt in self.store.types:
            groups.setdefault(rt.group, []).append(rt)
        if parts == ["api"]:
            address = [{"clientCIDR": "0.0.0.0/0", "serverAddress": f"{self.host}:{self.port}"}]
            return {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": address,
            }
        if parts and parts[0] == "apis" and len(parts) <= 2:
            docs = []
            for group, types in groups.items():
                if group and parts[1:] in ([], [group]):
                    gv = {
                        "groupVersion": f"{group}/{types[0].version}",
                        "version": types[0].version,
                    }
                    docs.append({"name": group, "versions": [gv], "preferredVersion": gv})
            if len(parts) == 1:
                return {"kind": "APIGroupList", "apiVersion": "v1", "groups": docs}
            return {"kind": "APIGroup", "apiVersion": "v1", **docs[0]} if docs else None
        wanted = "" if parts == ["api", "v1"] else None
        if len(parts) == 3 and parts[0] == "apis":
            wanted = parts[1]
        members = groups.get(wanted) if wanted is not None else None
        if not members or (wanted and parts[2] != members[0].version):
            return None
        resources: Objects = []
        for rt in members:
            entry = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced}
            short = {"shortNames": list(rt.short_names)} if rt.short_names else {}
            resources.append({**entry, "kind": rt.kind, "verbs": _VERBS, **short})
            if rt.status_subresource:
                entry = {
                    "name": f"{rt.plural}/status",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                }
                resources.append({**entry, "kind": rt.kind, "verbs": ["get", "patch", "update"]})
        version = members[0].api_version
        return {"kind": "APIResourceList", "groupVersion": version, "resources": resources}

    def _target(self, parts: list[str]) -> tuple[ResourceType, str | None, str | None, str | None]:
        """(type, namespace, name, subresource) addressed by a resource path; 404 otherwise."""
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise KubeError(404, _NO_RESOURCE, details={})
        types = {
            rt.plural: rt for rt in self.store.types if (rt.group, rt.version) == (group, version)
        }
        namespace = None
        if (
            len(rest) >= 3
            and rest[0] == "namespaces"
            and rest[2] in types
            and types[rest[2]].namespaced
        ):
            namespace, rest = rest[1], rest[2:]
        if not rest or rest[0] not in types or len(rest) > 3:
            raise KubeError(404, _NO_RESOURCE, details={})
        rt = types[rest[0]]
        name = rest[1] if len(rest) > 1 else None
        if name is not None and rt.namespaced != (namespace is not None):
            raise KubeError(404, _NO_RESOURCE, details={})
        return rt, namespace, name, rest[2] if len(rest) > 2 else None

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if parts in (["healthz"], ["livez"], ["readyz"]):
            return web.Response(text="ok")
        if parts == ["version"]:
            return json_response(VERSION_INFO)
        if self.token and request.headers.get("Authorization") != f"Bearer {self.token}":
            raise KubeError(401, "Unauthorized")
        if request.transport is not None and (peer := request.transport.get_extra_info("peercert")):
            names = [v for rdn in peer.get("subject", ()) for k, v in rdn if k == "commonName"]
            self.client_users.append(names[0] if names else "")
        self._impersonation(request)
        if request.method == "GET" and (doc := self._discovery(parts)) is not None:
            return json_response(doc)
        rt, namespace, name, sub = self._target(parts)
        query = request.query
        verb = {
            "GET": "get" if name else "watch" if _truthy(query.get("watch")) else "list",
            "POST": "create",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete",
        }.get(request.method, request.method.lower())
        fault = await self._account(verb, rt.plural + (f"/{sub}" if sub else ""))
        if fault is not None and fault.reset == "before":
            raise _Reset
        if fault is not None and fault.reset == "after":
            request[_RESET_AFTER] = True
        elif fault is not None:
            request[_RETRY_AFTER] = fault.retry_after
            raise KubeError(fault.status, fault.message or REASONS.get(fault.status, "injected"))
        if verb == "list":
            return self._list(rt, namespace, query)
        if verb == "watch":
            return await self._watch(request, rt, namespace)
        if (name is None) != (verb == "create"):
            raise KubeError(405, f"{request.method} is not supported on this path")
        name = name or ""
        if verb == "get":
            self._check_sub(rt, sub)
            return json_response(self.store.get(rt, namespace, name))
        body = await self._body(request)
        opts = Write(
            "All" in query.getall("dryRun", []),
            query.get("fieldValidation", "Warn"),
            manager=managed_fields.manager_of(
                request.headers.get("User-Agent"), query.get("fieldManager")
            ),
            subresource=sub or "",
        )
        if verb == "delete":
            preconditions = body.get("preconditions") if isinstance(body, dict) else None
            obj = self.store.delete(
                rt, namespace, name, preconditions=preconditions, dry_run=opts.dry_run
            )
            if rt.custom or _meta(obj).get("deletionTimestamp"):
                return json_response(obj)
            details = {**_details(rt, name), "uid": _meta(obj).get("uid")}
            return json_response(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                }
            )
        if verb == "create":
            response = json_response(self.store.create(rt, namespace, body, opts), 201)
        elif verb == "update":
            response = json_response(
                self.store.replace(rt, namespace, name, body, opts, subresource=sub)
            )
        elif verb == "patch":
            patch_type = _PATCH_TYPES.get(request.content_type)
            if patch_type is None:
                types = ", ".join(_PATCH_TYPES)
                message = f"the body of the request was in an unknown format - accepted media types include: {types}"
                raise KubeError(415, message)
            result = self.store.patch(
                rt, namespace, name, body, opts, patch_type=patch_type, subresource=sub
            )
            response = json_response(result)
        else:
            raise KubeError(405, f"{request.method} is not supported")
        for warning in opts.warnings:
            response.headers.add("Warning", "299 - " + json.dumps(warning))
        return response

    @staticmethod
    def _check_sub(rt: ResourceType, sub: str | None) -> None:
        if sub not in (None, "status") or (sub and not rt.status_subresource):
            raise KubeError(404, _NO_RESOURCE, details={})

    @staticmethod
    async def _body(request: web.Request) -> Any:
        raw = await request.read()
        try:
            return json.loads(raw) if raw else None
        except (ValueError, UnicodeDecodeError) as exc:
            raise KubeError(400, f"couldn't get version/kind; json parse error: {exc}") from None

    def _list(
        self, rt: ResourceType, namespace: str | None, query: Mapping[str, str]
    ) -> web.Response:
        selector = Selector.parse(rt, query.get("labelSelector"), query.get("fieldSelector"))
        items, rv = self.store.query(rt, namespace, selector)
        meta: JSON = {"resourceVersion": rv}
        if cont := query.get("continue"):
            try:
                start = json.loads(base64.urlsafe_b64decode(cont))["start"]
            except (ValueError, KeyError, TypeError, binascii.Error):
                raise KubeError(400, f"invalid continue token {cont!r}") from None
            items = [o for o in items if [_meta(o).get("namespace", ""), _meta(o)["name"]] > start]
        limit = int(query.get("limit") or 0)
        if 0 < limit < len(items):
            last = _meta(items[limit - 1])
            start = [last.get("namespace", ""), last["name"]]
            meta["continue"] = base64.urlsafe_b64encode(
                json.dumps({"start": start}).encode()
            ).decode()
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        if not rt.custom:  # typed lists carry no kind/apiVersion per item
            items = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} for o in items]
        kind = f"{rt.kind}List"
        return json_response(
            {"apiVersion": rt.api_version, "kind": kind, "metadata": meta, "items": items}
        )

    async def _watch(
        self, request: web.Request, rt: ResourceType, namespace: str | None
    ) -> web.StreamResponse:
        query = request.query
        selector = Selector.parse(rt, query.get("labelSelector"), query.get("fieldSelector"))
        timeout = float(query.get("timeoutSeconds") or random.uniform(1800, 3600))
        bookmarks = _truthy(query.get("allowWatchBookmarks"))
        queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue()
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            replay, watch = self.store.subscribe(rt, namespace, query.get("resourceVersion"), queue)
        except KubeError as exc:
            await response.write(_line({"type": "ERROR", "object": exc.status()}))
            return response
        self._streams.add(queue)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        # bookmarks come periodically, and once about 2 s before the watch times out
        never = float("inf")
        next_mark = loop.time() + self.bookmark_interval if bookmarks else never
        last_mark = deadline - 2.0 if bookmarks and timeout > 4.0 else never
        seen = max(watch.start_rv, int(query.get("resourceVersion") or 0))
        try:
            for old in replay:
                await self._send(response, old, selector)
            while (now := loop.time()) < deadline:
                wait = max(0.0, min(deadline, next_mark, last_mark) - now)
                try:
                    event = await asyncio.wait_for(queue.get(), wait)
                except TimeoutError:
                    now = loop.time()
                    if now < deadline and now >= min(next_mark, last_mark):
                        next_mark = now + self.bookmark_interval if now >= next_mark else next_mark
                        last_mark = never if now >= last_mark else last_mark
                        seen = max(seen, self.store.progress(watch) or 0)
                        meta = {"resourceVersion": str(seen)}
                        mark = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
                        await response.write(_line({"type": "BOOKMARK", "object": mark}))
                    continue
                if event is None:
                    break
                await self._watch_gate.wait()
                watch.received += 1
                seen = max(seen, event.rv)
                await self._send(response, event, selector)
        except ConnectionResetError:
            pass
        finally:
            self.store.unsubscribe(watch)
            self._streams.discard(queue)
        return response

    @staticmethod
    async def _send(response: web.StreamResponse, event: WatchEvent, selector: Selector) -> None:
        """Write ``event`` as the watcher sees it: leaving the selection is a DELETED,
        entering it an ADDED."""
        now = selector.matches(event.obj)
        before = event.old is not None and selector.matches(event.old)
        kind = event.type
        if kind == "MODIFIED" and now != before:
            kind = "ADDED" if now else "DELETED"
        if now or (before and kind == "DELETED"):
            await response.write(_line({"type": kind, "object": event.obj}))


@dataclass(frozen=True)
class Impersonation:
    """What one request asked to be done as: ``Impersonate-User``, ``-Group`` (each),
    ``-Uid`` and ``-Extra-<key>`` (keys percent-decoded)."""

    user: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict)


_RESET_AFTER: Final = web.RequestKey("reset_after", bool)
_RETRY_AFTER: Final = web.RequestKey[str | None]("retry_after")


class _Reset(Exception):
    """Drop the connection without an answer."""


def _reset(request: web.Request) -> web.Response:
    transport = request.transport
    if transport is not None:
        transport.abort()
    return web.Response(status=500)  # never reaches the client


def _line(body: JSON) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"
