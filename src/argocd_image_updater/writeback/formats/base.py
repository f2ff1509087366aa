"""What a write-back target format is: the interface every format module implements.

A format is a singleton of a subclass of :class:`TargetFormat`, exported as ``FORMAT`` by its
own module in this package. It owns one way of naming a file in ``gitConfig.writeBackTarget``
(``write-back-target``) and everything that follows from it:

* **parse** — :meth:`TargetFormat.parse` reads ``<prefix>`` / ``<prefix>:<argument>``;
  :meth:`~TargetFormat.refuse_text`, :meth:`~TargetFormat.refuse_path` and
  :meth:`~TargetFormat.claims` take part in reading a bare path;
* **locate** — :meth:`~TargetFormat.file_path`: the file to read and write, from the listing
  of the target's directory when :attr:`~TargetFormat.lists_directory`;
* **read the current value** — :meth:`~TargetFormat.current_image` (local mode, where no Argo
  CD reports the live images, and rollback holds), :meth:`~TargetFormat.current_for` for one
  Application, :meth:`~TargetFormat.current_in` in a checked-out tree;
* **render** — :meth:`~TargetFormat.render`: the new text of the file for a plan, ``None`` when
  the file already holds it; :meth:`~TargetFormat.render_files` the new texts of every file
  the target changes (one file, or many for a format naming a directory of manifests).
"""

from __future__ import annotations

import posixpath
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.plan.model import AppPlan, EditKind
from argocd_image_updater.plan.params import ParamNames, image_in_source


class TargetError(ValueError):
    """The write-back target of an Application cannot be used; the message names the setting."""


class PathRules:
    """Reading the paths of one target text: errors name the Application, setting and text."""

    def __init__(self, who: str, setting: str, text: str) -> None:
        self.who = who
        self.setting = setting
        self.text = text

    def fail(self, problem: str) -> TargetError:
        return TargetError(f"{self.who}: {self.setting} '{self.text}': {problem}")

    def inside(self, path: str) -> str:
        """``path`` normalised; an error when it leaves the repository."""
        norm = posixpath.normpath(path) if path else "."
        if norm == ".." or norm.startswith("../"):
            raise self.fail(
                f"the path '{norm}' leaves the repository; paths are relative to the source "
                "path, or to the repository root when they start with '/'"
            )
        return norm

    def under(self, source_path: str, rel: str) -> tuple[str, str]:
        """The normalised path of ``rel`` and the original's (unnormalised) spelling of it."""
        if rel.startswith("/"):
            return self.inside(rel[1:]), rel[1:]
        joined = posixpath.join(source_path, rel) if rel else source_path
        return self.inside(joined), posixpath.normpath(joined) if joined else "."


@dataclass(frozen=True, slots=True)
class FileTarget:
    """A parsed target: its format's name, the path (normalised, relative to the repository
    root; a directory for formats that list it) and the original's spelling of the target used
    in the target key of pull-request branches."""

    kind: str
    file_path: str
    key_path: str


@dataclass(frozen=True, slots=True)
class ImageLookup:
    """Where one configured image is found in an Application source (see
    :func:`~argocd_image_updater.plan.jobs.edit_kind`)."""

    kind: EditKind
    names: ParamNames
    kustomize_name: str
    cfg: ImageRef

    def in_source(self, source: Mapping[str, Any]) -> str:
        """The parameter value or kustomize entry naming the image, ``""`` when none does."""
        return image_in_source(source, self.kind, self.names, self.kustomize_name, self.cfg)


class TreeFiles(Protocol):
    """The files of the checked-out repository, as a format reads them (paths relative to the
    repository root)."""

    def read(self, path: str) -> str | None:
        """The text of ``path``; ``None`` when missing."""
        ...

    def listdir(self, path: str) -> list[str] | None:
        """The names in the directory ``path``; ``None`` when it is not a directory."""
        ...

    def files(self, path: str, recurse: bool) -> list[str]:
        """The regular files below the directory ``path`` (its subdirectories too when
        ``recurse``), sorted; hidden names and symbolic links are left out."""
        ...


def load_yaml(text: str | None) -> Any:
    """The data of a target file; ``None`` when it is missing, blank or not YAML."""
    if not text or not text.strip():
        return None
    try:
        return YAML(typ="safe", pure=True).load(text)
    except YAMLError:
        return None


class TargetFormat(ABC):
    """One write-back target format."""

    name: ClassVar[str]
    """The format's name (:attr:`FileTarget.kind`)."""
    prefix: ClassVar[str | None] = None
    """``<prefix>`` or ``<prefix>:<argument>`` selects the format (``None``: bare paths only)."""
    position: ClassVar[int]
    """The order in which formats are asked about a bare path: lower first."""
    lists_directory: ClassVar[bool] = False
    """Whether the target names a directory whose listing says which file to use."""
    reads_tree: ClassVar[bool] = False
    """Whether the target names a directory whose files are all read (:meth:`current_in`
    and :meth:`render_files` over the tree, not one file)."""

    def parse(
        self, argument: str | None, source_path: str, default_file: str, rules: PathRules
    ) -> FileTarget:
        """The target ``<prefix>`` (``argument`` ``None``) or ``<prefix>:<argument>``."""
        raise rules.fail(f"'{self.prefix}' takes no argument")

    def refuse_text(self, text: str, rules: PathRules) -> None:
        """Raise :class:`TargetError` for a text this format forbids as a bare path."""
        return None

    def refuse_path(self, path: str, rules: PathRules) -> None:
        """Raise :class:`TargetError` for a bare path (normalised) this format forbids."""
        return None

    def claims(self, path: str) -> bool:
        """Whether a bare path (normalised, not a directory) is a file of this format."""
        return False

    def file_path(self, path: str, listing: Sequence[str] | None) -> str:
        """The file to read and write for a target whose :attr:`FileTarget.file_path` is
        ``path``; ``listing`` holds the names in ``path`` for formats that
        :attr:`list it <lists_directory>` (``None``: not a directory)."""
        return path

    @abstractmethod
    def current_image(self, text: str | None, source: Mapping[str, Any], image: ImageLookup) -> str:
        """The image (as the parameter or kustomize entry names it) that Argo CD would deploy
        with the target file holding ``text`` (``None``: missing) over the Application
        ``source``; ``""`` when unknown."""

    def current_for(self, text: str | None, config: AppUpdateConfig, image: ImageLookup) -> str:
        """:meth:`current_image` for the Application of ``config`` (formats whose file holds
        several Applications' values pick the Application's own)."""
        source = config.app.write_source(config.write_back.write_back_target).raw
        return self.current_image(text, source, image)

    def current_in(
        self, path: str, tree: TreeFiles, config: AppUpdateConfig, image: ImageLookup
    ) -> tuple[str, str]:
        """The image's current value in the target at ``path`` (:attr:`FileTarget.file_path`)
        of the checked-out ``tree``, and the file it was read from (``""`` when unknown)."""
        listing = tree.listdir(path) if self.lists_directory else None
        file = self.file_path(path, listing)
        return self.current_for(tree.read(file), config, image), file

    @abstractmethod
    def render(
        self, text: str | None, path: str, config: AppUpdateConfig, plan: AppPlan
    ) -> str | None:
        """The new text of the file at ``path`` (now ``text``, ``None`` when missing) for
        ``plan``; ``None`` when it already holds it. Errors name the file."""

    def render_files(
        self, path: str, tree: TreeFiles, config: AppUpdateConfig, plan: AppPlan
    ) -> list[tuple[str, str]]:
        """``(file, new text)`` of every file the target at ``path``
        (:attr:`FileTarget.file_path`) changes for ``plan``; empty when they already hold it.
        Errors name the file."""
        listing = tree.listdir(path) if self.lists_directory else None
        file = self.file_path(path, listing)
        new = self.render(tree.read(file), file, config, plan)
        return [] if new is None else [(file, new)]
