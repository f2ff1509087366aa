"""A kustomization's images as an Application names them (``[name=]image[:tag][@digest]``, pure):
the element of the ``images:`` list each string sets, the strings a plan leaves in the
Application's source, and where the kustomization file is. The file itself is edited by
:mod:`~argocd_image_updater.writeback.kustomization`."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from argocd_image_updater.model.application import AppSource
from argocd_image_updater.plan.model import ParamEdit
from argocd_image_updater.plan.params import apply_edits, kustomize_images

KUSTOMIZATION_FILE_NAMES: Final = ("kustomization.yaml", "kustomization.yml", "Kustomization")
"""The file names kustomize recognises, in the order they are looked for."""

IMAGE_FIELDS: Final = ("name", "newName", "newTag", "digest")
"""The fields of an ``images:`` element this module sets, in kustomize's order."""


class KustomizationError(ValueError):
    """The kustomization cannot be found, read or updated; the message names the file."""


@dataclass(frozen=True, slots=True)
class KustomizeImage:
    """One element of a kustomization's ``images:`` list (``""`` = field absent)."""

    name: str
    new_name: str = ""
    new_tag: str = ""
    digest: str = ""

    def fields(self) -> tuple[tuple[str, str], ...]:
        """The present fields in kustomize's order: name, newName, newTag, digest."""
        values = (self.name, self.new_name, self.new_tag, self.digest)
        return tuple((k, v) for k, v in zip(IMAGE_FIELDS, values, strict=True) if k == "name" or v)


def parse_image_override(text: str) -> KustomizeImage:
    """``[name=]image[:tag][@digest]`` → the ``images:`` element it sets.

    The tag is the text after the last ``:`` that follows the last ``/`` (so a registry port is
    not a tag); the digest is the text after ``@``.
    """
    name, sep, image = text.strip().partition("=")
    if not sep:
        image = name
    image, _, digest = image.partition("@")
    slash = image.rfind("/")
    colon = image.rfind(":")
    tag = ""
    if colon > slash:
        image, tag = image[:colon], image[colon + 1 :]
    if not sep:
        return KustomizeImage(name=image, new_tag=tag, digest=digest)
    return KustomizeImage(name=name, new_name=image, new_tag=tag, digest=digest)


def images_for_plan(source: AppSource, managed: Sequence[ParamEdit]) -> tuple[str, ...]:
    """The source's ``kustomize.images`` once the plan's kustomize edits are made.

    ``managed`` are every parameter edit of the plan (up-to-date images included), so the
    result names every image the kustomization should hold.
    """
    edits = [e for e in managed if e.kind == "kustomize"]
    return tuple(kustomize_images(apply_edits(source.raw, edits)))


def find_kustomization(names_present: Iterable[str], directory: str = ".") -> str:
    """The kustomization file among ``names_present`` (base names found in ``directory``).

    Looked for in kustomize's order: ``kustomization.yaml``, ``kustomization.yml``,
    ``Kustomization``. Raise :class:`KustomizationError` when there is none.
    """
    present = set(names_present)
    for name in KUSTOMIZATION_FILE_NAMES:
        if name in present:
            return name
    raise KustomizationError(
        f"could not find kustomization in {directory}: expected one of "
        f"{', '.join(KUSTOMIZATION_FILE_NAMES)}"
    )


def kustomization_path(directory: str, name: str) -> str:
    """``directory/name`` relative to the repository root (``name`` alone for the root)."""
    return name if directory in ("", ".") else posixpath.join(directory, name)
