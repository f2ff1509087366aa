"""The ``image-list`` annotation: ``[<alias>=]<image>[:<constraint>]``, comma-separated.

Parsed with the current original's rules: items and the parts around the first ``=`` are trimmed,
empty items are skipped, and the image text is kept raw (it is parsed into an
:class:`~argocd_image_updater.model.image.ImageRef` later).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

IMAGE_LIST_ANNOTATION: Final = "argocd-image-updater.argoproj.io/image-list"
_ENTRY_FORMAT: Final = "[<alias>=]<image>[:<constraint>]"


class ImageListError(ValueError):
    """The ``image-list`` annotation is missing, empty or has an entry without an image."""


@dataclass(frozen=True, slots=True)
class ImageListEntry:
    alias: str
    image: str
    """The raw image text (trimmed), e.g. ``docker.io/library/nginx:~1.21``."""


def split_entries(value: str) -> Iterator[tuple[str, str, str]]:
    """``(entry, alias, reference)`` of each non-empty entry of a comma-separated
    ``[<alias>=]<reference>`` list (``image-list``, ``chart-list``), all trimmed."""
    for raw in value.split(","):
        item = raw.strip()
        if not item:
            continue
        alias, sep, reference = item.partition("=")
        if not sep:
            alias, reference = "", alias
        yield item, alias.strip(), reference.strip()


def parse_image_list(value: str | None) -> list[ImageListEntry]:
    """Split the annotation value into entries; raise :class:`ImageListError` when unusable."""
    if value is None:
        raise ImageListError(
            f"annotation not found: {IMAGE_LIST_ANNOTATION} is required; set it to a "
            f"comma-separated list of {_ENTRY_FORMAT}"
        )
    entries: list[ImageListEntry] = []
    for item, alias, image in split_entries(value):
        if not image:
            raise ImageListError(
                f"empty image name in {IMAGE_LIST_ANNOTATION} entry '{item}': write {_ENTRY_FORMAT}"
            )
        entries.append(ImageListEntry(alias, image))
    if not entries:
        raise ImageListError(
            f"annotation is empty: {IMAGE_LIST_ANNOTATION} value '{value}' names no image; "
            f"give a comma-separated list of {_ENTRY_FORMAT}"
        )
    return entries


def annotation_alias_key(alias: str) -> str:
    """The alias as used in per-image annotation keys: ``/`` becomes ``_`` (``foo/x`` → ``foo_x``)."""
    return alias.replace("/", "_")
