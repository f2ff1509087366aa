"""``registries.conf``: the file that configures the registries.

The file is YAML with a top-level ``registries:`` list, parsed strictly (unknown keys are errors).
:func:`parse_registries_conf` turns its text into a
:class:`~argocd_image_updater.config.registries.RegistryConfig`. docs/registries.md describes
every key. Reading the file (and only then importing this parser) is
:mod:`argocd_image_updater.config.registries_file`'s part.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator
from ruamel.yaml import YAML
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from argocd_image_updater.config.credentials import CredentialRefError, parse_credential_ref
from argocd_image_updater.config.durations import DurationError, parse_go_duration
from argocd_image_updater.config.registries import (
    DEFAULT_TLS_DIR,
    RegistriesConfError,
    RegistryConfig,
    canonical_registry,
)
from argocd_image_updater.config.yaml_errors import yaml_error_position
from argocd_image_updater.model.registry import (
    DEFAULT_REQUEST_DEADLINE,
    RegistryEndpoint,
    TagSortMode,
)
from argocd_image_updater.observe.log import get_logger

_TAG_SORT_MODES: Final[Mapping[str, TagSortMode]] = {
    "": TagSortMode.NONE,
    "none": TagSortMode.NONE,
    "latest-first": TagSortMode.LATEST_FIRST,
    "latest-last": TagSortMode.LATEST_LAST,
}

_log = get_logger(__name__)


class RegistryEntry(BaseModel):
    """One item of ``registries:`` as written (see docs/registries.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)

    name: str = ""
    api_url: str = ""
    ping: bool = False
    credentials: str = ""
    credsexpire: timedelta = timedelta(0)
    tagsortmode: str = ""
    prefix: str = ""
    insecure: bool = False
    ca_file: str = ""
    ca_data: str = ""
    defaultns: str = ""
    limit: float = 0.0
    default: bool = False
    timeout: timedelta | None = None

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        # An empty YAML value (``prefix:``) means "not set", as in the original.
        if isinstance(data, Mapping):
            return {k: v for k, v in data.items() if v is not None}
        return data

    @field_validator("limit", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(f"'{value}' is not a number; write requests per second, e.g. 10")
        return value

    @field_validator("credsexpire", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(f"'{value}' is not a duration; write one like '5h' or '30m'")
        if isinstance(value, int | float):
            if value == 0:
                return timedelta(0)
            raise ValueError(f"{value} has no unit; write a duration like '5h', '30m' or '90s'")
        if isinstance(value, str):
            try:
                parsed = parse_go_duration(value)
            except DurationError as exc:
                raise ValueError(str(exc)) from None
            if parsed < timedelta(0):
                raise ValueError(f"'{value}' is negative; use 0 to keep credentials forever")
            return parsed
        return value

    @field_validator("timeout", mode="before")
    @classmethod
    def _deadline(cls, value: Any) -> Any:
        if isinstance(value, int | float):  # bool included
            raise ValueError(f"{value} is not a duration; write one like '30s' or '2m'")
        if isinstance(value, str):
            try:
                parsed = parse_go_duration(value)
            except DurationError as exc:
                raise ValueError(str(exc)) from None
            if parsed <= timedelta(0):
                raise ValueError(f"'{value}' is not positive; write a duration like '30s' or '2m'")
            return parsed
        return value


_KEYS: Final = tuple(RegistryEntry.model_fields)


def _entry_label(index: int, name: str) -> str:
    return f"registries[{index}] ({name})" if name else f"registries[{index}]"


def _validation_problems(exc: ValidationError) -> list[str]:
    problems: list[str] = []
    for error in exc.errors(include_url=False):
        key = ".".join(str(part) for part in error["loc"]) or "entry"
        if error["type"] == "extra_forbidden":
            hint = difflib.get_close_matches(key, _KEYS, n=1)
            did_you_mean = f" (did you mean '{hint[0]}'?)" if hint else ""
            problems.append(f"unknown key '{key}'{did_you_mean}; known keys: {', '.join(_KEYS)}")
        elif error["type"] == "value_error":
            problems.append(f"key '{key}': {error.get('ctx', {}).get('error', error['msg'])}")
        else:
            problems.append(f"key '{key}': {error['msg'].lower()}, got {error['input']!r}")
    return problems


def _pem_problem(data: bytes) -> bool:
    from cryptography import x509  # only when a CA is configured (~60 ms to import)

    try:
        x509.load_pem_x509_certificates(data)
    except ValueError:
        return True
    return False


def _tls_settings(entry: RegistryEntry, tls_dir: str | Path) -> tuple[str, str, list[str]]:
    """``(ca_file, ca_data, problems)``; the CA file may be found in ``tls_dir``."""
    if entry.insecure:
        return "", "", []  # TLS is not verified, so no CA is loaded (as in the original)
    problems: list[str] = []
    ca_file = entry.ca_file
    if not ca_file:
        host = urlsplit(entry.api_url).hostname or ""
        candidate = Path(tls_dir) / host
        if host and candidate.is_file():
            ca_file = str(candidate)
    if ca_file:
        try:
            pem = Path(ca_file).read_bytes()
        except OSError as exc:
            problems.append(
                f"ca_file '{ca_file}' cannot be read ({exc.strerror or exc}); "
                "mount the CA certificate there or fix the path"
            )
        else:
            if _pem_problem(pem):
                problems.append(
                    f"ca_file '{ca_file}' does not contain a valid PEM certificate; "
                    "it needs at least one -----BEGIN CERTIFICATE----- block"
                )
    if entry.ca_data and _pem_problem(entry.ca_data.encode()):
        problems.append(
            "ca_data does not contain a valid PEM certificate; "
            "it needs at least one -----BEGIN CERTIFICATE----- block"
        )
    return ca_file, entry.ca_data, problems


def _check_api_url(entry: RegistryEntry) -> str | None:
    parts = urlsplit(entry.api_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return (
            f"api_url '{entry.api_url}' of registry {entry.name} must be an http:// or https:// "
            "URL with a host name, e.g. https://registry.example.com"
        )
    return None


def _check_prefix(prefix: str) -> str | None:
    if "://" in prefix:
        return (
            f"prefix '{prefix}' must be written without a scheme, as in image names "
            "(e.g. 'ghcr.io' or 'registry.example.com:5000/team')"
        )
    if any(c.isspace() for c in prefix):
        return f"prefix '{prefix}' must not contain spaces"
    return None


def _entries(doc: Any) -> tuple[list[Any], list[str]]:
    if doc is None:
        return [], []
    if not isinstance(doc, Mapping):
        return [], ["the file must be a mapping with a 'registries:' list"]
    problems = []
    for key in doc:
        if key != "registries":
            hint = " (did you mean 'registries'?)" if str(key).lower().startswith("reg") else ""
            problems.append(f"unknown top-level key '{key}'{hint}; only 'registries' is allowed")
    items = doc.get("registries")
    if items is None:
        return [], problems
    if not isinstance(items, list):
        return [], [*problems, "'registries' must be a list of registry entries"]
    return items, problems


def _build_endpoints(
    items: list[Any], tls_dir: str | Path
) -> tuple[list[RegistryEndpoint], list[str]]:
    problems: list[str] = []
    endpoints: list[RegistryEndpoint] = []
    prefixless = ""
    default_prefix: str | None = None
    seen: dict[str, str] = {}
    for index, item in enumerate(items):
        raw_name = item.get("name") if isinstance(item, Mapping) else None
        label = _entry_label(index, raw_name if isinstance(raw_name, str) else "")
        if not isinstance(item, Mapping):
            problems.append(f"{label}: must be a mapping with keys like name, api_url, prefix")
            continue
        try:
            entry = RegistryEntry.model_validate(item)
        except ValidationError as exc:
            problems.extend(f"{label}: {p}" for p in _validation_problems(exc))
            continue
        entry_problems: list[str] = []
        if not entry.name:
            problems.append(
                f"registry name is missing for entry registries[{index}] "
                f"(api_url '{entry.api_url}', prefix '{entry.prefix}'); add a 'name'"
            )
            continue
        if not entry.api_url:
            problems.append(
                f"{label}: API URL must be specified for registry {entry.name}; "
                "add 'api_url: https://<registry host>'"
            )
            continue
        url_problem = _check_api_url(entry)
        if url_problem:
            entry_problems.append(url_problem)
        prefix = canonical_registry(entry.prefix)
        prefix_problem = _check_prefix(prefix)
        if prefix_problem:
            entry_problems.append(prefix_problem)
        if not prefix:
            if prefixless:
                entry_problems.append(
                    f"there must be only one default registry (already is {prefixless}), "
                    f"{entry.name} needs a prefix"
                )
            else:
                prefixless = entry.name
        elif prefix in seen:
            entry_problems.append(
                f"prefix '{entry.prefix}' is already used by {seen[prefix]}; "
                "each registry needs its own prefix"
            )
        else:
            seen[prefix] = _entry_label(index, entry.name)
        mode = _TAG_SORT_MODES.get(entry.tagsortmode.strip().lower())
        if mode is None:
            entry_problems.append(
                f"unknown tag sort mode for registry {entry.name}: {entry.tagsortmode} "
                "(use latest-first, latest-last or none)"
            )
        if entry.credentials.strip():
            try:
                parse_credential_ref(entry.credentials)
            except CredentialRefError as exc:
                entry_problems.append(f"key 'credentials': {exc}")
        ca_file, ca_data, tls_problems = _tls_settings(entry, tls_dir)
        entry_problems.extend(tls_problems)
        if entry.default:
            shown = prefix or entry.name
            if default_prefix is not None:
                entry_problems.append(
                    f"cannot set registry {shown} as default - only one default registry "
                    f"allowed, currently set to {default_prefix}"
                )
            else:
                default_prefix = shown
        if entry_problems:
            problems.extend(f"{label}: {p}" for p in entry_problems)
            continue
        assert mode is not None
        if mode.is_time_sorted:
            _log.warning(
                "registry %s lists tags sorted by time (tagsortmode %s): tag metadata is not "
                "fetched, the list position stands in for the creation date",
                entry.name,
                mode.value,
                registry=prefix,
            )
        endpoints.append(
            RegistryEndpoint(
                prefix=prefix,
                name=entry.name,
                api_url=entry.api_url.strip().rstrip("/"),
                credentials=entry.credentials.strip(),
                creds_expire=entry.credsexpire,
                default_ns=entry.defaultns.strip().strip("/"),
                insecure=entry.insecure,
                ca_file=ca_file,
                ca_data=ca_data,
                limit=max(entry.limit, 0.0),
                tag_sort_mode=mode,
                is_default=entry.default,
                timeout=(
                    entry.timeout.total_seconds()
                    if entry.timeout is not None
                    else DEFAULT_REQUEST_DEADLINE
                ),
            )
        )
    return endpoints, problems


def _yaml_problem(exc: YAMLError) -> str:
    if isinstance(exc, MarkedYAMLError) and exc.problem_mark is not None:
        if isinstance(exc, DuplicateKeyError):
            mark = exc.problem_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}"
            return f"invalid YAML at {where}: duplicate key; each key may appear only once"
        return f"invalid YAML at {yaml_error_position(exc)}"
    return f"invalid YAML: {exc}"


def parse_registries_conf(
    text: str, source: str = "registries.conf", *, tls_dir: str | Path = DEFAULT_TLS_DIR
) -> RegistryConfig:
    """Parse the text of a registries.conf; raise :class:`RegistriesConfError` on any problem.

    CA certificates named by ``ca_file`` (or found as ``<tls_dir>/<api host>``) are read and
    checked here.
    """
    try:
        # pure: the same result whether libyaml is installed or not
        doc = YAML(typ="safe", pure=True).load(text)
    except YAMLError as exc:
        raise RegistriesConfError([f"{source}: {_yaml_problem(exc)}"]) from None
    items, problems = _entries(doc)
    endpoints, entry_problems = _build_endpoints(items, tls_dir)
    problems.extend(entry_problems)
    if problems:
        raise RegistriesConfError([f"{source}: {p}" for p in problems])
    return RegistryConfig(endpoints)


__all__ = ["RegistriesConfError", "RegistryEntry", "parse_registries_conf"]
