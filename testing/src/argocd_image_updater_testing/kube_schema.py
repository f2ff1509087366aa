"""What the Kubernetes API fake accepts: resource types, structural-schema admission, object meta.

A write goes through :func:`admit` the way it goes through a real apiserver: decoding (type errors
in built-in types are a 400), pruning of unknown fields, defaulting, then validation against the
OpenAPI v3 schema and the CRD's CEL rules (each failure a :class:`Cause`, reported as a 422).
The CEL rules of the shipped CRDs are implemented by hand in :data:`CEL_RULES`.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import importlib
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

from ruamel.yaml import YAML

Schema = Mapping[str, Any]
_DROP: Final = object()


@dataclass(frozen=True, eq=False)
class ResourceType:
    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    schema: Schema
    custom: bool = False  # custom resource: CRD schema, 422 on schema errors, generation, Status
    status_subresource: bool = False
    short_names: tuple[str, ...] = ()
    definition: Mapping[str, Any] | None = None  # the CustomResourceDefinition it comes from

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``applications.argoproj.io`` / ``secrets``, as in NotFound and Conflict messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def group_kind(self) -> str:
        """``Application.argoproj.io`` / ``Secret``, as in Invalid messages."""
        return f"{self.kind}.{self.group}" if self.group else self.kind


@dataclass(frozen=True)
class Cause:
    """One field error, like the apiserver's ``details.causes[]`` entries."""

    reason: str
    field: str
    message: str

    def render(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message

    def as_json(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


class DecodeError(ValueError):
    """The body cannot be decoded into the built-in type at all (the apiserver answers 400)."""


@dataclass
class Admission:
    obj: dict[str, Any]
    causes: list[Cause] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # pruned field paths


def go_value(value: Any) -> str:
    """A value the way apiserver messages print it (``"x"``, ``3``, ``true``, ``"object"``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    return json.dumps(_json_type(value))


def required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", path, "Required value" + (f": {detail}" if detail else ""))


def invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", path, f"Invalid value: {go_value(value)}: {detail}")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _is_type(value: Any, typ: str) -> bool:
    actual = _json_type(value)
    if typ == "number":
        return actual in ("integer", "number")
    if typ == "integer" and actual == "number":
        return float(value).is_integer()
    return actual == typ


# --- CEL rules of the shipped CRDs, by hand -------------------------------------------------------


def _has(obj: Any, key: str) -> bool:
    return isinstance(obj, Mapping) and key in obj


def _exactly_one(*keys: str) -> Callable[[Any], bool]:
    return lambda o: sum(_has(o, k) for k in keys) == 1


CEL_RULES: Final[Mapping[str, Callable[[Any], bool]]] = {
    "self.enabled == false || has(self.cosignKey) || has(self.keyless)": (
        lambda o: o.get("enabled") is False or _has(o, "cosignKey") or _has(o, "keyless")
    ),
    # the original's CRD (a cluster that still serves it): cosign only, GitHub or GitLab only
    "self.enabled == false || has(self.cosignKey)": (
        lambda o: o.get("enabled") is False or _has(o, "cosignKey")
    ),
    "(has(self.github) ? 1 : 0) + (has(self.gitlab) ? 1 : 0) == 1": _exactly_one(
        "github", "gitlab"
    ),
    "!(has(self.useAnnotations) && self.useAnnotations == true) ? "
    "(has(self.images) && size(self.images) > 0) : true": (
        lambda o: o.get("useAnnotations") is True or len(o.get("images") or ()) > 0
    ),
    "has(self.spec) || has(self.name)": lambda o: _has(o, "spec") or _has(o, "name"),
    "(has(self.helm) ? 1 : 0) + (has(self.kustomize) ? 1 : 0) + (has(self.plugin) ? 1 : 0) == 1": (
        _exactly_one("helm", "kustomize", "plugin")
    ),
    "(has(self.github) ? 1 : 0) + (has(self.gitlab) ? 1 : 0) + (has(self.gitea) ? 1 : 0) + "
    "(has(self.bitbucket) ? 1 : 0) + (has(self.bitbucketServer) ? 1 : 0) + "
    "(has(self.azureDevOps) ? 1 : 0) == 1": _exactly_one(
        "github", "gitlab", "gitea", "bitbucket", "bitbucketServer", "azureDevOps"
    ),
    "self.type != 'webhook' || has(self.signingSecret)": (
        lambda o: o.get("type") != "webhook" or _has(o, "signingSecret")
    ),
    "!has(self.signingSecret) || self.type == 'webhook' || self.type == 'cloudevents'": (
        lambda o: not _has(o, "signingSecret") or o.get("type") in ("webhook", "cloudevents")
    ),
    "!(has(self.useAnnotations) && self.useAnnotations == true) ? "
    "((has(self.images) && size(self.images) > 0) || (has(self.charts) && "
    "size(self.charts) > 0)) : true": (
        lambda o: (
            o.get("useAnnotations") is True
            or len(o.get("images") or ()) > 0
            or len(o.get("charts") or ()) > 0
        )
    ),
}


def _rule_key(rule: str) -> str:
    return " ".join(rule.split())


# --- formats ------------------------------------------------------------------------------------

_DATE_TIME = re.compile(r"^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$")
_MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$")
_GO_TIME_LAYOUT: Final = {
    "date-time": "2006-01-02T15:04:05Z07:00",
    "micro-time": "2006-01-02T15:04:05.000000Z07:00",
}
_GO_TYPES: Final = {"string": "string", "boolean": "bool", "array": "[]", "object": "struct"}


@functools.cache
def _pattern(expr: str) -> re.Pattern[str]:
    return re.compile(expr)


class _Walker:
    """Prune, default and validate one value against a structural schema."""

    def __init__(self, rt: ResourceType) -> None:
        self.rt = rt
        self.causes: list[Cause] = []
        self.unknown: list[str] = []

    def decode_error(self, path: str, value: Any, schema: Schema) -> DecodeError:
        typ = str(schema.get("type", "object"))
        go_type = schema.get("format") if typ == "integer" else _GO_TYPES.get(typ, typ)
        owner = f"{self.rt.kind}.{path}" if path else self.rt.kind
        return DecodeError(
            f'{self.rt.kind} in version "{self.rt.version}" cannot be handled as a '
            f"{self.rt.kind}: json: cannot unmarshal {_json_type(value)} into Go struct field "
            f"{owner} of type {go_type or 'int64'}"
        )

    def value(self, value: Any, schema: Schema, path: str) -> Any:
        if schema.get("x-kubernetes-int-or-string"):
            if not (isinstance(value, str) or _is_type(value, "integer")):
                self.type_error(value, schema, path, "integer or string")
            return value
        typ = schema.get("type")
        if typ and not _is_type(value, typ):
            self.type_error(value, schema, path, typ)
            return value
        if isinstance(value, dict):
            value = self.object(value, schema, path)
        elif isinstance(value, list):
            value = self.array(value, schema, path)
        else:
            self.scalar(value, schema, path)
        for rule in schema.get("x-kubernetes-validations", ()):
            if not CEL_RULES[_rule_key(rule["rule"])](value):
                self.causes.append(invalid(path, value, rule.get("message") or rule["rule"]))
        return value

    def type_error(self, value: Any, schema: Schema, path: str, typ: str) -> None:
        if not self.rt.custom:
            raise self.decode_error(path, value, schema)
        shown = _json_type(value)
        self.causes.append(
            Cause(
                "FieldValueTypeInvalid",
                path,
                f'Invalid value: "{shown}": {path} in body must be of type {typ}: "{shown}"',
            )
        )

    def object(self, obj: dict[str, Any], schema: Schema, path: str) -> dict[str, Any]:
        props: Mapping[str, Schema] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        keep_unknown = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or extra is True
        out: dict[str, Any] = {}
        for key, item in obj.items():
            sub = props.get(key)
            sub_path = f"{path}.{key}" if path else key
            if sub is None and isinstance(extra, Mapping):
                sub, sub_path = extra, f"{path}[{key}]"
            if sub is None:
                if keep_unknown:
                    out[key] = item
                else:
                    self.unknown.append(sub_path)
                continue
            if item is None:  # nulls of non-nullable fields are pruned
                if sub.get("nullable"):
                    out[key] = None
                continue
            if not path and key == "metadata":
                out[key] = self.value(item, OBJECT_META, key)
                continue
            out[key] = self.value(item, sub, sub_path)
        for key, sub in props.items():
            if key not in out and "default" in sub:
                sub_path = f"{path}.{key}" if path else key
                out[key] = self.value(copy.deepcopy(sub["default"]), sub, sub_path)
        for key in schema.get("required", ()):
            if key not in out:
                self.causes.append(required(f"{path}.{key}" if path else key))
        return out

    def array(self, items: list[Any], schema: Schema, path: str) -> list[Any]:
        item_schema = schema.get("items")
        out = [
            self.value(item, item_schema, f"{path}[{i}]") if item_schema else item
            for i, item in enumerate(items)
        ]
        if "minItems" in schema and len(out) < schema["minItems"]:
            self.causes.append(
                invalid(
                    path,
                    len(out),
                    f"{path} in body should have at least {schema['minItems']} items",
                )
            )
        if "maxItems" in schema and len(out) > schema["maxItems"]:
            self.causes.append(
                Cause(
                    "FieldValueTooMany",
                    path,
                    f"Too many: {len(out)}: must have at most {schema['maxItems']} items",
                )
            )
        list_type = schema.get("x-kubernetes-list-type")
        if list_type in ("map", "set"):
            keys: list[str] = schema.get("x-kubernetes-list-map-keys") or []
            seen: set[str] = set()
            for i, item in enumerate(out):
                if list_type == "map" and isinstance(item, Mapping):
                    ident = {k: item.get(k) for k in keys}
                    shown = "map[string]interface {}" + json.dumps(ident, separators=(",", ":"))
                else:
                    ident, shown = item, go_value(item)
                token = json.dumps(ident, sort_keys=True)
                if token in seen:
                    self.causes.append(
                        Cause("FieldValueDuplicate", f"{path}[{i}]", f"Duplicate value: {shown}")
                    )
                seen.add(token)
        return out

    def scalar(self, value: Any, schema: Schema, path: str) -> None:
        enum = schema.get("enum")
        if enum is not None and value not in enum:
            allowed = ", ".join(go_value(v) for v in enum)
            self.causes.append(
                Cause(
                    "FieldValueNotSupported",
                    path,
                    f"Unsupported value: {go_value(value)}: supported values: {allowed}",
                )
            )
        if isinstance(value, str):
            self.string(value, schema, path)
        elif not isinstance(value, bool) and isinstance(value, (int, float)):
            if "minimum" in schema and value < schema["minimum"]:
                msg = f"{path} in body should be greater than or equal to {schema['minimum']}"
                self.causes.append(invalid(path, value, msg))
            if "maximum" in schema and value > schema["maximum"]:
                msg = f"{path} in body should be less than or equal to {schema['maximum']}"
                self.causes.append(invalid(path, value, msg))
            fmt = schema.get("format")
            if not self.rt.custom and fmt in ("int32", "int64"):
                bits = 31 if fmt == "int32" else 63
                if not -(2**bits) <= value < 2**bits or not float(value).is_integer():
                    raise self.decode_error(path, value, schema)

    def string(self, value: str, schema: Schema, path: str) -> None:
        if "minLength" in schema and len(value) < schema["minLength"]:
            msg = f"{path} in body should be at least {schema['minLength']} chars long"
            self.causes.append(invalid(path, value, msg))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            msg = f"Too long: may not be more than {schema['maxLength']} bytes"
            self.causes.append(Cause("FieldValueTooLong", path, msg))
        if "pattern" in schema and not _pattern(schema["pattern"]).search(value):
            msg = f"{path} in body should match '{schema['pattern']}'"
            self.causes.append(invalid(path, value, msg))
        fmt = schema.get("format")
        if fmt in _GO_TIME_LAYOUT:
            regex = _MICRO_TIME if fmt == "micro-time" else _DATE_TIME
            if not regex.match(value):
                if not self.rt.custom:
                    raise DecodeError(
                        f'{self.rt.kind} in version "{self.rt.version}" cannot be handled as a '
                        f'{self.rt.kind}: parsing time "{value}" as "{_GO_TIME_LAYOUT[fmt]}": '
                        "cannot parse"
                    )
                msg = f'{path} in body must be of type date-time: "{value}"'
                self.causes.append(invalid(path, value, msg))
        elif fmt == "byte":
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError) as exc:
                if not self.rt.custom:
                    raise DecodeError(
                        f'{self.rt.kind} in version "{self.rt.version}" cannot be handled as a '
                        f"{self.rt.kind}: illegal base64 data in {path}: {exc}"
                    ) from None
                self.causes.append(invalid(path, value, f"{path} in body must be of type byte"))


# --- object meta --------------------------------------------------------------------------------

_STR: Final[Schema] = {"type": "string"}
_INT32: Final[Schema] = {"type": "integer", "format": "int32"}
_INT64: Final[Schema] = {"type": "integer", "format": "int64"}
_BOOL: Final[Schema] = {"type": "boolean"}
_STR_MAP: Final[Schema] = {"type": "object", "additionalProperties": _STR}
_STR_LIST: Final[Schema] = {"type": "array", "items": _STR}
_TIME: Final[Schema] = {"type": "string", "format": "date-time", "nullable": True}
_MICRO: Final[Schema] = {"type": "string", "format": "micro-time", "nullable": True}
_ANY_OBJECT: Final[Schema] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}

OBJECT_META: Final[Schema] = {
    "type": "object",
    "properties": {
        **{k: _STR for k in ("name", "generateName", "namespace", "uid", "resourceVersion")},
        "selfLink": _STR,
        "generation": _INT64,
        "creationTimestamp": _TIME,
        "deletionTimestamp": _TIME,
        "deletionGracePeriodSeconds": _INT64,
        "labels": _STR_MAP,
        "annotations": _STR_MAP,
        "finalizers": _STR_LIST,
        "ownerReferences": {"type": "array", "items": _ANY_OBJECT},
        "managedFields": {"type": "array", "items": _ANY_OBJECT},
    },
}

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")

SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    r"for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_NAME_PART_MSG: Final = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_LABEL_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value', "
    " or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_CONFIG_KEY_MSG: Final = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)


def _qualified_name_errors(path: str, key: str) -> Iterator[Cause]:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        yield invalid(path, key, "prefix part " + SUBDOMAIN_MSG)
    if not name:
        yield invalid(path, key, "name part must be non-empty")
    elif len(name) > 63:
        yield invalid(path, key, "name part must be no more than 63 characters")
    elif not _QUALIFIED_NAME.match(name):
        yield invalid(path, key, _NAME_PART_MSG)


def validate_metadata(rt: ResourceType, obj: Mapping[str, Any]) -> list[Cause]:
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    causes: list[Cause] = []
    name = meta.get("name")
    if not name:
        causes.append(required("metadata.name", "name or generateName is required"))
    elif rt.kind == "Namespace" and (len(name) > 63 or not _DNS1123_LABEL.match(name)):
        causes.append(invalid("metadata.name", name, _LABEL_MSG))
    elif len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        causes.append(invalid("metadata.name", name, SUBDOMAIN_MSG))
    for key, value in (meta.get("labels") or {}).items():
        causes.extend(_qualified_name_errors("metadata.labels", key))
        if len(value) > 63:
            causes.append(invalid("metadata.labels", value, "must be no more than 63 characters"))
        elif not _LABEL_VALUE.match(value):
            causes.append(invalid("metadata.labels", value, _LABEL_VALUE_MSG))
    annotations: Mapping[str, str] = meta.get("annotations") or {}
    for key in annotations:
        causes.extend(_qualified_name_errors("metadata.annotations", key.lower()))
    if sum(len(k) + len(v) for k, v in annotations.items()) > 262144:
        causes.append(
            Cause(
                "FieldValueTooLong",
                "metadata.annotations",
                "Too long: must have at most 262144 bytes",
            )
        )
    return causes


# --- built-in types -----------------------------------------------------------------------------


def _obj(**props: Schema) -> Schema:
    return {"type": "object", "properties": props}


def _builtin(
    group: str,
    plural: str,
    kind: str,
    props: Mapping[str, Schema],
    *,
    cluster: bool = False,
    short: str = "",
) -> ResourceType:
    schema = _obj(apiVersion=_STR, kind=_STR, metadata=OBJECT_META, **props)
    short_names = (short,) if short else ()
    return ResourceType(
        group, "v1", plural, kind.lower(), kind, not cluster, schema, False, False, short_names
    )


_REF = _obj(**{k: _STR for k in ("kind", "namespace", "name", "uid", "apiVersion", "fieldPath")})
_SOURCE = _obj(component=_STR, host=_STR)
_BYTES_MAP: Final[Schema] = {
    "type": "object",
    "additionalProperties": {"type": "string", "format": "byte"},
}
_EVENT: Final[dict[str, Schema]] = {
    "eventTime": _MICRO,
    "series": _obj(count=_INT32, lastObservedTime=_MICRO),
    **{k: _STR for k in ("action", "reason", "type")},
    "related": _REF,
}
_LEASE_SPEC = _obj(
    holderIdentity=_STR,
    leaseDurationSeconds=_INT32,
    acquireTime=_MICRO,
    renewTime=_MICRO,
    leaseTransitions=_INT32,
    strategy=_STR,
    preferredHolder=_STR,
)

_CORE_EVENT = dict(
    involvedObject=_REF,
    message=_STR,
    source=_SOURCE,
    firstTimestamp=_TIME,
    lastTimestamp=_TIME,
    count=_INT32,
    reportingComponent=_STR,
    reportingInstance=_STR,
    **_EVENT,
)
_EVENTS_V1_EVENT = dict(
    reportingController=_STR,
    reportingInstance=_STR,
    regarding=_REF,
    note=_STR,
    deprecatedSource=_SOURCE,
    deprecatedFirstTimestamp=_TIME,
    deprecatedLastTimestamp=_TIME,
    deprecatedCount=_INT32,
    **_EVENT,
)
_NAMESPACE = dict(
    spec=_obj(finalizers=_STR_LIST),
    status=_obj(phase=_STR, conditions={"type": "array", "items": _ANY_OBJECT}),
)
BUILTIN_TYPES: Final[tuple[ResourceType, ...]] = (
    _builtin("", "namespaces", "Namespace", _NAMESPACE, cluster=True, short="ns"),
    _builtin(
        "",
        "secrets",
        "Secret",
        dict(data=_BYTES_MAP, stringData=_STR_MAP, type=_STR, immutable=_BOOL),
    ),
    _builtin(
        "",
        "configmaps",
        "ConfigMap",
        dict(data=_STR_MAP, binaryData=_BYTES_MAP, immutable=_BOOL),
        short="cm",
    ),
    _builtin("", "events", "Event", _CORE_EVENT, short="ev"),
    _builtin("coordination.k8s.io", "leases", "Lease", dict(spec=_LEASE_SPEC)),
    _builtin("events.k8s.io", "events", "Event", _EVENTS_V1_EVENT, short="ev"),
)


def _prepare_builtin(rt: ResourceType, obj: dict[str, Any], create: bool) -> None:
    """What typed decoding and the type's strategy do before validation."""
    if rt.kind == "Secret":
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, Mapping):
            data = obj["data"] = dict(obj.get("data") or {})
            for key, text in string_data.items():
                if isinstance(text, str):
                    data[key] = base64.b64encode(text.encode()).decode()
        obj.setdefault("type", "Opaque")
    elif rt.kind == "Namespace":
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")


MAX_CONFIG_BYTES: Final = 1024 * 1024


def _config_size(kind: str, obj: Mapping[str, Any]) -> int:
    """Bytes of a Secret's (base64-decoded) or a ConfigMap's data and binaryData, keys included."""
    size = 0
    for section in ("data", "binaryData"):
        for key, value in (obj.get(section) or {}).items():
            if not isinstance(value, str):
                continue
            encoded = kind == "Secret" or section == "binaryData"
            size += len(key) + (len(value) * 3 // 4 if encoded else len(value.encode()))
    return size


def _validate_builtin(rt: ResourceType, obj: Mapping[str, Any], create: bool) -> list[Cause]:
    causes: list[Cause] = []
    if rt.kind in ("Secret", "ConfigMap"):
        for section in ("data", "binaryData"):
            for key in obj.get(section) or {}:
                if not _CONFIG_KEY.match(key):
                    causes.append(invalid(f"{section}[{key}]", key, _CONFIG_KEY_MSG))
                if section == "binaryData" and key in (obj.get("data") or {}):
                    causes.append(
                        Cause("FieldValueDuplicate", f"data[{key}]", f'Duplicate value: "{key}"')
                    )
        if _config_size(rt.kind, obj) > MAX_CONFIG_BYTES:
            # The API server's bound on a Secret's or ConfigMap's keys and values together.
            causes.append(
                Cause(
                    "FieldValueTooLong", "", f"Too long: must have at most {MAX_CONFIG_BYTES} bytes"
                )
            )
    if rt.kind == "Secret":
        wanted = {
            "kubernetes.io/dockerconfigjson": ".dockerconfigjson",
            "kubernetes.io/dockercfg": ".dockercfg",
        }.get(obj.get("type", ""))
        data = obj.get("data") or {}
        if wanted and wanted not in data:
            causes.append(required(f"data[{wanted}]"))
        elif wanted:
            try:
                json.loads(base64.b64decode(data[wanted]))
            except ValueError as exc:
                causes.append(invalid(f"data[{wanted}]", "<secret contents redacted>", str(exc)))
    elif rt.kind == "Lease":
        spec = obj.get("spec") or {}
        duration, transitions = spec.get("leaseDurationSeconds"), spec.get("leaseTransitions")
        if duration is not None and duration <= 0:
            causes.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
        if transitions is not None and transitions < 0:
            msg = "must be greater than or equal to 0"
            causes.append(invalid("spec.leaseTransitions", transitions, msg))
    elif rt.kind == "Event" and rt.group == "":
        involved_ns = (obj.get("involvedObject") or {}).get("namespace")
        namespace = (obj.get("metadata") or {}).get("namespace")
        if involved_ns and involved_ns != namespace:
            causes.append(
                invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
            )
    elif rt.kind == "Event" and create:
        for key in ("eventTime", "reportingController", "reportingInstance", "action", "reason"):
            if not obj.get(key):
                causes.append(required(key))
        if len(obj.get("note") or "") > 1024:
            causes.append(
                Cause("FieldValueTooLong", "note", "Too long: may not be more than 1024 bytes")
            )
    return causes


def admit(rt: ResourceType, obj: Mapping[str, Any], *, create: bool = False) -> Admission:
    """Decode, prune, default and validate ``obj`` (ObjectMeta rules excluded: see
    :func:`validate_metadata`). Raises :class:`DecodeError` for a body a built-in type cannot
    decode."""
    walker = _Walker(rt)
    body = copy.deepcopy(dict(obj))
    if not rt.custom:
        _prepare_builtin(rt, body, create)
    result = walker.value(body, rt.schema, "")
    if not isinstance(result, dict):
        raise DecodeError(f"the body of the request is not a JSON object: {_json_type(obj)}")
    causes = walker.causes if rt.custom else walker.causes + _validate_builtin(rt, result, create)
    return Admission(result, causes, walker.unknown)


# --- custom resource definitions ----------------------------------------------------------------


def _check_rules(schema: Any, path: str) -> Any:
    """Strip descriptions and refuse CEL rules that :data:`CEL_RULES` does not implement."""
    if isinstance(schema, list):
        return [_check_rules(s, path) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    for rule in schema.get("x-kubernetes-validations", ()):
        if _rule_key(rule["rule"]) not in CEL_RULES:
            raise ValueError(f"unsupported x-kubernetes-validations rule at {path}: {rule['rule']}")
    return {
        k: (v if k in ("default", "enum") else _check_rules(v, f"{path}.{k}"))
        for k, v in schema.items()
        if not (k == "description" and isinstance(v, str))
    }


def crd_resource_type(crd: Mapping[str, Any]) -> ResourceType:
    """A :class:`ResourceType` for a CustomResourceDefinition (its storage version)."""
    spec = crd["spec"]
    names = spec["names"]
    version = next(v for v in spec["versions"] if v.get("storage", True))
    return ResourceType(
        group=spec["group"],
        version=version["name"],
        plural=names["plural"],
        singular=names.get("singular") or names["kind"].lower(),
        kind=names["kind"],
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        schema=_check_rules(version["schema"]["openAPIV3Schema"], crd["metadata"]["name"]),
        custom=True,
        status_subresource="status" in (version.get("subresources") or {}),
        short_names=tuple(names.get("shortNames") or ()),
        definition=crd,
    )


# The project's own ImageUpdater CRD comes from its one source in the repository (this package is
# used from a checkout only); Argo CD's Application CRD is reference data shipped here.
PROJECT_ROOT: Final = Path(__file__).resolve().parents[3]
IMAGEUPDATER_CRD: Final = (
    PROJECT_ROOT
    / "config"
    / "crd"
    / "bases"
    / "argocd-image-updater.argoproj.io_imageupdaters.yaml"
)
APPLICATION_CRD: Final = "argocd-application-crd.yaml"
ORIGINAL_IMAGEUPDATER_CRD: Final = (
    Path(__file__).resolve().parent / "data" / ("original-imageupdater-crd.yaml")
)
"""The original project's ImageUpdater CRD (no ``status.shipments``, ``spec.holds``, …)."""


@functools.cache
def shipped_crd_types(imageupdater_crd: Path = IMAGEUPDATER_CRD) -> tuple[ResourceType, ...]:
    """Application (Argo CD's CRD) and ImageUpdater (the project's CRD, or the one given: the
    original project's, say, as a cluster that kept it serves it)."""
    application = resources.files("argocd_image_updater_testing.data").joinpath(APPLICATION_CRD)
    return tuple(
        crd_resource_type(_load_yaml(text))
        for text in (application.read_text(), Path(imageupdater_crd).read_text())
    )


def _load_yaml(text: str) -> Any:
    """ruamel.yaml, or PyYAML's much faster C loader where installed (kubernetes-asyncio's)."""
    try:
        pyyaml: Any = importlib.import_module("yaml")
    except ImportError:
        pyyaml = None
    loader = getattr(pyyaml, "CSafeLoader", None)
    if loader is not None:
        return pyyaml.load(text, Loader=loader)
    return YAML(typ="safe", pure=True).load(text)


CUSTOM_RESOURCE_DEFINITIONS: Final = ResourceType(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "customresourcedefinition",
    "CustomResourceDefinition",
    False,
    _obj(apiVersion=_STR, kind=_STR, metadata=OBJECT_META, spec=_ANY_OBJECT, status=_ANY_OBJECT),
    short_names=("crd", "crds"),
)
"""Served read-only in effect: the store holds the definitions of its custom types."""


def default_types(imageupdater_crd: Path = IMAGEUPDATER_CRD) -> tuple[ResourceType, ...]:
    """The built-in types, the CustomResourceDefinitions and the shipped CRDs' types, with the
    ImageUpdater type of ``imageupdater_crd``."""
    return (*BUILTIN_TYPES, CUSTOM_RESOURCE_DEFINITIONS, *shipped_crd_types(imageupdater_crd))
