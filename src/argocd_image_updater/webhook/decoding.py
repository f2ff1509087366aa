"""Webhook payloads decoded like the original decodes them into Go structs (pure).

A schema names the fields a type reads: :data:`STR`, :data:`INT` (int64), :data:`MAP` (any JSON
object), :data:`STRS` (a list of strings), a nested schema (a struct) or a one-element list of a
schema (a slice of structs). Unknown fields are ignored, field names match case-insensitively,
``null`` leaves a field empty, and a value of the wrong JSON type makes the whole payload invalid
(``failed to parse webhook payload: …``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, TypeAlias, cast

from argocd_image_updater.webhook.events import RejectionReason, WebhookRejected, reject

STR: Final = "string"
INT: Final = "int"
MAP: Final = "map"
STRS: Final = "strings"

Spec: TypeAlias = "str | Mapping[str, Spec] | list[Mapping[str, Spec]]"
Schema: TypeAlias = Mapping[str, Spec]


class _Object:
    """A JSON object as its key/value pairs in document order (duplicates kept)."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[str, object]]) -> None:
        self.pairs = pairs


def _reject_constant(name: str) -> object:
    raise ValueError(f"invalid JSON number {name}")


def _json_kind(value: object) -> str:
    if isinstance(value, _Object):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    return "number"


def _type_error(value: object, path: str, wanted: str) -> WebhookRejected:
    return reject(
        f"failed to parse webhook payload: cannot unmarshal {_json_kind(value)} "
        f"into field {path} of type {wanted}",
        RejectionReason.MALFORMED_JSON,
    )


def _plain(value: object) -> object:
    """A decoded JSON value with objects turned into dicts (the last duplicate key wins)."""
    if isinstance(value, _Object):
        return {key: _plain(item) for key, item in value.pairs}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _field_for(schema: Schema, key: str) -> str | None:
    if key in schema:
        return key
    folded = key.lower()
    for name in schema:
        if name.lower() == folded:
            return name
    return None


def _conform_struct(
    obj: _Object, schema: Schema, path: str, into: dict[str, object]
) -> dict[str, object]:
    for key, value in obj.pairs:
        name = _field_for(schema, key)
        if name is None:
            continue
        where = f"{path}.{name}" if path else name
        into[name] = _conform(value, schema[name], where, into.get(name))
    return into


def _zero(spec: Spec) -> object:
    if isinstance(spec, str):
        return {STR: "", INT: 0, MAP: {}, STRS: []}[spec]
    if isinstance(spec, list):
        return []
    return {name: _zero(sub) for name, sub in spec.items()}


def _conform(value: object, spec: Spec, path: str, current: object) -> object:
    """``value`` decoded into ``spec`` the way Go's encoding/json fills a struct field."""
    if value is None:  # null clears maps and slices, leaves everything else untouched
        if isinstance(spec, list) or spec in (MAP, STRS):
            return _zero(spec)
        return current if current is not None else _zero(spec)
    if spec == STR:
        if not isinstance(value, str):
            raise _type_error(value, path, "string")
        return value
    if spec == INT:
        if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value < 2**63:
            raise _type_error(value, path, "int64")
        return value
    if spec == MAP:
        if not isinstance(value, _Object):
            raise _type_error(value, path, "map[string]interface {}")
        merged = dict(current) if isinstance(current, dict) else {}
        merged.update(cast("dict[str, object]", _plain(value)))
        return merged
    if spec == STRS:
        if not isinstance(value, list):
            raise _type_error(value, path, "[]string")
        return [cast(str, _conform(item, STR, path, "")) for item in value]
    if isinstance(spec, list):
        if not isinstance(value, list):
            raise _type_error(value, path, "[]struct")
        return [_conform(item, spec[0], path, None) for item in value]
    assert not isinstance(spec, str)
    if not isinstance(value, _Object):
        raise _type_error(value, path, "struct")
    into = dict(cast("dict[str, object]", current)) if isinstance(current, dict) else None
    return _conform_struct(value, spec, path, into or cast("dict[str, object]", _zero(spec)))


@dataclass(frozen=True, slots=True)
class Payload:
    """A decoded payload (or part of one) with typed accessors."""

    data: Mapping[str, object]

    def _get(self, path: str) -> object:
        value: object = self.data
        for part in path.split("."):
            value = cast("Mapping[str, object]", value)[part]
        return value

    def text(self, path: str) -> str:
        return cast(str, self._get(path))

    def strings(self, path: str) -> list[str]:
        return cast("list[str]", self._get(path))

    def mapping(self, path: str) -> Mapping[str, object]:
        return cast("Mapping[str, object]", self._get(path))

    def docs(self, path: str) -> list[Payload]:
        return [
            Payload(cast("Mapping[str, object]", item))
            for item in cast(list[object], self._get(path))
        ]


def decode_payload(body: bytes, schema: Schema) -> Payload:
    """Decode ``body`` into ``schema`` like Go's ``json.Unmarshal`` into a struct."""
    try:
        value = json.loads(
            body.decode("utf-8", errors="replace"),
            object_pairs_hook=_Object,
            parse_constant=_reject_constant,
        )
    except (ValueError, RecursionError) as exc:
        raise reject(
            f"failed to parse webhook payload: {exc}", RejectionReason.MALFORMED_JSON
        ) from None
    if value is None:
        value = _Object([])
    if not isinstance(value, _Object):
        raise reject(
            f"failed to parse webhook payload: cannot unmarshal {_json_kind(value)} "
            "into the payload object",
            RejectionReason.MALFORMED_JSON,
        )
    zero = cast("dict[str, object]", _zero(schema))
    return Payload(_conform_struct(value, schema, "", zero))
