"""Manifests, indexes and image configs as returned by a registry, parsed into plain values (pure).

Parse functions raise :class:`ManifestFormatError`; the client turns it into a
:class:`~argocd_image_updater.registry.errors.RegistryProtocolError` naming registry and repository.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from argocd_image_updater.model.platform import Platform

# The media types and digests (defined where a request needs them without parsing content).
from argocd_image_updater.registry.media import CREATED_ANNOTATION as CREATED_ANNOTATION
from argocd_image_updater.registry.media import DOCKER_IMAGE_CONFIG as DOCKER_IMAGE_CONFIG
from argocd_image_updater.registry.media import DOCKER_MANIFEST as DOCKER_MANIFEST
from argocd_image_updater.registry.media import DOCKER_MANIFEST_LIST as DOCKER_MANIFEST_LIST
from argocd_image_updater.registry.media import IMAGE_CONFIG_TYPES as IMAGE_CONFIG_TYPES
from argocd_image_updater.registry.media import IMAGE_MANIFEST_TYPES as IMAGE_MANIFEST_TYPES
from argocd_image_updater.registry.media import INDEX_TYPES as INDEX_TYPES
from argocd_image_updater.registry.media import MANIFEST_ACCEPT as MANIFEST_ACCEPT
from argocd_image_updater.registry.media import OCI_IMAGE_CONFIG as OCI_IMAGE_CONFIG
from argocd_image_updater.registry.media import OCI_INDEX as OCI_INDEX
from argocd_image_updater.registry.media import OCI_MANIFEST as OCI_MANIFEST
from argocd_image_updater.registry.media import is_digest as is_digest
from argocd_image_updater.registry.media import sha256_digest as sha256_digest

_EMPTY: Mapping[str, str] = MappingProxyType({})


class ManifestFormatError(ValueError):
    """Registry output that is not a valid manifest, index or image config."""


@dataclass(frozen=True, slots=True)
class Descriptor:
    media_type: str
    digest: str
    size: int
    platform: Platform | None = None
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, slots=True)
class Manifest:
    """An image manifest (``config`` set) or an index/manifest list (``manifests`` set)."""

    media_type: str
    digest: str
    config: Descriptor | None = None
    manifests: tuple[Descriptor, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    """The manifest's own ``annotations`` (``org.opencontainers.image.created`` of artifacts)."""

    @property
    def is_image(self) -> bool:
        """A runnable image (its config is an image config), not another OCI artifact such as a
        Helm chart, whose config says nothing of platform or build date."""
        return self.config is not None and self.config.media_type in IMAGE_CONFIG_TYPES

    @property
    def created(self) -> datetime | None:
        """The ``org.opencontainers.image.created`` annotation, when set and valid."""
        text = self.annotations.get(CREATED_ANNOTATION, "")
        try:
            return parse_rfc3339(text) if text else None
        except ManifestFormatError:
            return None

    @property
    def is_index(self) -> bool:
        return self.media_type in INDEX_TYPES


@dataclass(frozen=True, slots=True)
class ImageConfig:
    """What an image config blob says about the image."""

    platform: Platform
    created: datetime | None = None
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)


def _object(data: Any, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ManifestFormatError(f"{what} is not a JSON object")
    return data


def _load(body: bytes, what: str) -> dict[str, Any]:
    try:
        return _object(json.loads(body), what)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ManifestFormatError(f"{what} is not valid JSON ({exc})") from None


def _str(data: Mapping[str, Any], key: str, what: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise ManifestFormatError(f"{what}: '{key}' is not a string")
    return value


def _descriptor(data: Any, what: str) -> Descriptor:
    obj = _object(data, what)
    digest = _str(obj, "digest", what)
    if not is_digest(digest):
        raise ManifestFormatError(f"{what}: digest '{digest}' is not sha256:<64 hex digits>")
    size = obj.get("size", 0)
    if not isinstance(size, int) or isinstance(size, bool):
        raise ManifestFormatError(f"{what}: 'size' is not an integer")
    platform = None
    if "platform" in obj:
        p = _object(obj["platform"], f"{what} platform")
        platform = Platform(
            _str(p, "os", what), _str(p, "architecture", what), _str(p, "variant", what)
        )
    annotations = obj.get("annotations") or {}
    if not isinstance(annotations, dict):
        raise ManifestFormatError(f"{what}: 'annotations' is not an object")
    return Descriptor(
        _str(obj, "mediaType", what),
        digest,
        size,
        platform,
        MappingProxyType({str(k): str(v) for k, v in annotations.items()}),
    )


def parse_manifest(body: bytes, content_type: str) -> Manifest:
    """Parse manifest bytes; the digest is the sha256 of exactly these bytes.

    The media type comes from ``Content-Type``, or from the document's ``mediaType`` when the
    header is generic (``application/json``) or missing.
    """
    data = _load(body, "manifest")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type not in IMAGE_MANIFEST_TYPES | INDEX_TYPES:
        declared = data.get("mediaType")
        if isinstance(declared, str) and declared in IMAGE_MANIFEST_TYPES | INDEX_TYPES:
            media_type = declared
        else:
            raise ManifestFormatError(
                f"unsupported manifest media type '{media_type or declared}' (supported: "
                f"{MANIFEST_ACCEPT}; Docker schema 1 manifests are not supported)"
            )
    digest = sha256_digest(body)
    if media_type in INDEX_TYPES:
        entries = data.get("manifests")
        if not isinstance(entries, list):
            raise ManifestFormatError("index has no 'manifests' list")
        return Manifest(
            media_type,
            digest,
            manifests=tuple(_descriptor(e, f"index entry {i}") for i, e in enumerate(entries)),
        )
    if "config" not in data:
        raise ManifestFormatError("image manifest has no 'config'")
    annotations = data.get("annotations") or {}
    if not isinstance(annotations, dict):
        raise ManifestFormatError("manifest: 'annotations' is not an object")
    return Manifest(
        media_type,
        digest,
        config=_descriptor(data["config"], "manifest config"),
        annotations=MappingProxyType({str(k): str(v) for k, v in annotations.items()}),
    )


# RFC 3339 date-time; Go writes up to nine fractional digits, Python keeps six.
_RFC3339 = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$"
)


def parse_rfc3339(text: str) -> datetime:
    match = _RFC3339.match(text.strip())
    if match is None:
        raise ManifestFormatError(f"created '{text}' is not an RFC 3339 date-time")
    date, clock, fraction, zone = match.groups()
    micro = f".{(fraction or '0')[:6]:0<6}"
    zone = "+00:00" if zone in ("Z", "z") else zone
    try:
        return datetime.fromisoformat(f"{date}T{clock}{micro}{zone}").astimezone(UTC)
    except ValueError as exc:
        raise ManifestFormatError(f"created '{text}' is not a valid date-time ({exc})") from None


def parse_config(body: bytes) -> ImageConfig:
    """Parse an image config blob: ``os``, ``architecture``, ``variant``, ``created``, labels."""
    data = _load(body, "image config")
    created_text = _str(data, "created", "image config")
    created = parse_rfc3339(created_text) if created_text else None
    inner = data.get("config") or {}
    if not isinstance(inner, dict):
        raise ManifestFormatError("image config: 'config' is not an object")
    labels = inner.get("Labels") or {}
    if not isinstance(labels, dict):
        raise ManifestFormatError("image config: 'config.Labels' is not an object")
    platform = Platform(
        _str(data, "os", "image config"),
        _str(data, "architecture", "image config"),
        _str(data, "variant", "image config"),
    )
    return ImageConfig(
        platform, created, MappingProxyType({str(k): str(v) for k, v in labels.items()})
    )
