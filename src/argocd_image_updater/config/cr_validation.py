"""What the ``ImageUpdater`` models (notification targets included) share: their base (the CRD's
camelCase names, strict types, unknown fields refused), the validation error carrying a field
path, and how a pydantic validation error is described as ``<field path>: <problem>`` lines
(the API server's wording)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails, PydanticCustomError


def invalid(detail: str, subpath: str = "") -> PydanticCustomError:
    """A validation error; ``subpath`` extends the field path of the failing model."""
    if subpath:
        return PydanticCustomError(
            "invalid_at", "{subpath}: {detail}", {"subpath": subpath, "detail": detail}
        )
    return PydanticCustomError("invalid", "{detail}", {"detail": detail})


class CRModel(BaseModel):
    """The base of the ImageUpdater models."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        strict=True,
    )


_TYPE_MESSAGES: Final[Mapping[str, str]] = {
    "string_type": "expected a string",
    "bool_type": "expected true or false",
    "int_type": "expected an integer",
    "list_type": "expected a list",
    "dict_type": "expected an object",
    "model_type": "expected an object",
    "model_attributes_type": "expected an object",
}


def _path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _describe(error: ErrorDetails) -> str:
    loc: list[int | str] = list(error["loc"])
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "invalid_at":
        sub = str(ctx["subpath"])
        base = _path(loc)
        joined = f"{base}{sub}" if sub.startswith("[") else f"{base}.{sub}" if base else sub
        return f"{joined}: {ctx['detail']}"
    where = _path(loc) or "<root>"
    if kind == "invalid":
        return f"{where}: {ctx['detail']}"
    if kind == "missing":
        return f"{where}: required field is missing"
    if kind == "extra_forbidden" and loc == ["spec", "namespace"]:
        return (
            f"{where}: field was removed: Applications are looked up in the ImageUpdater's own "
            "metadata.namespace; delete spec.namespace and create the resource there"
        )
    if kind == "extra_forbidden":
        return f"{where}: unknown field; remove it or check its spelling against the CRD"
    if kind in _TYPE_MESSAGES:
        value = error.get("input")
        return f"{where}: {_TYPE_MESSAGES[kind]}, got {type(value).__name__} {value!r}"
    return f"{where}: {error['msg']}"


def describe_errors(exc: ValidationError) -> list[str]:
    """``<field path>: <problem>`` for every error of a validation."""
    return [_describe(e) for e in exc.errors(include_url=False)]
