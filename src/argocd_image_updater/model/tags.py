"""What a registry scan knows about one tag.

The scanner fills these; the policy reads them. ``images`` is empty when no metadata was fetched
(strategies ``semver`` and ``alphabetical`` only need tag names). For a manifest list / OCI index
``images`` has one entry per platform listed in the index; ``created``/``labels`` are only set for
the children whose config blob was fetched (those matching the wanted platforms).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from argocd_image_updater.model.platform import Platform

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class PlatformImage:
    """One runnable image: a platform-specific manifest and what its config blob says."""

    platform: Platform
    digest: str = ""
    created: datetime | None = None
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, slots=True)
class TagInfo:
    """A tag in a repository.

    ``digest`` is the digest of the manifest bytes the tag points to (the list/index digest for
    multi-platform images), ``""`` when not fetched.
    """

    name: str
    digest: str = ""
    images: tuple[PlatformImage, ...] = ()

    @property
    def has_metadata(self) -> bool:
        return bool(self.images)
