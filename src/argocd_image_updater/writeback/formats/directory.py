"""``directory[:<directory>]``: the container images of the plain manifests in a directory.

``directory`` names the source path, ``directory:/dir`` a directory from the repository root,
``directory:dir`` one below the source path. Like Argo CD reads a ``Directory`` source, the
``.yaml``/``.yml`` files of that directory are read, those of its subdirectories too with
``spec.source.directory.recurse``, and ``directory.include`` / ``directory.exclude`` (globs on
the path below the directory, ``{a,b}`` alternatives) pick among them. The images are written
by :mod:`~argocd_image_updater.writeback.manifests`; every image to update must be found in at
least one of the files.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Mapping
from typing import Any, Final

from argocd_image_updater.model.application import DIRECTORY_PREFIX
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.plan.model import AppPlan
from argocd_image_updater.plan.params import kustomize_entry
from argocd_image_updater.writeback.formats.base import (
    FileTarget,
    ImageLookup,
    PathRules,
    TargetFormat,
    TreeFiles,
)
from argocd_image_updater.writeback.kustomize_images import parse_image_override
from argocd_image_updater.writeback.manifests import (
    MANIFEST_SUFFIXES,
    ManifestError,
    PodSpecAt,
    first_image,
    update_manifests,
)

_BRACES: Final = re.compile(r"\{([^{}]*)\}")


def expand_braces(pattern: str) -> list[str]:
    """``{a,b}`` alternatives of an Argo CD glob, expanded (``a{b,c}`` → ``ab``, ``ac``)."""
    match = _BRACES.search(pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    return [out for alt in match.group(1).split(",") for out in expand_braces(head + alt + tail)]


def glob_matches(pattern: str, rel: str) -> bool:
    """Whether ``rel`` (a path below the directory) matches the Argo CD glob ``pattern``."""
    return any(fnmatch.fnmatchcase(rel, p) for p in expand_braces(pattern) if p)


def directory_settings(source: Mapping[str, Any]) -> tuple[bool, str, str]:
    """``directory.recurse``, ``include`` and ``exclude`` of an Application source."""
    block = source.get("directory")
    if not isinstance(block, Mapping):
        return False, "", ""
    include, exclude = block.get("include"), block.get("exclude")
    return (
        block.get("recurse") is True,
        include if isinstance(include, str) else "",
        exclude if isinstance(exclude, str) else "",
    )


def manifest_files(tree: TreeFiles, directory: str, source: Mapping[str, Any]) -> list[str]:
    """The manifest files of ``directory`` (repository root relative) Argo CD would read."""
    recurse, include, exclude = directory_settings(source)
    out = []
    for path in tree.files(directory, recurse):
        if not path.endswith(MANIFEST_SUFFIXES):
            continue
        rel = posixpath.relpath(path, directory) if directory != "." else path
        if include and not glob_matches(include, rel):
            continue
        if exclude and glob_matches(exclude, rel):
            continue
        out.append(path)
    return out


def pod_specs_of(config: AppUpdateConfig) -> tuple[PodSpecAt, ...]:
    """The ``manifestTargets.yaml`` kinds of every image of the Application."""
    found = (spec.target.yaml for spec in config.images if spec.target is not None)
    return tuple(dict.fromkeys(PodSpecAt(t.kind, t.path) for t in found if t is not None))


class Directory(TargetFormat):
    name = "directory"
    prefix = DIRECTORY_PREFIX
    position = 40
    reads_tree = True

    def parse(
        self, argument: str | None, source_path: str, default_file: str, rules: PathRules
    ) -> FileTarget:
        path, key = rules.under(source_path, argument or "")
        return FileTarget(self.name, path, key)

    def current_image(self, text: str | None, source: Mapping[str, Any], image: ImageLookup) -> str:
        return ""  # a directory is read file by file: current_in

    def current_in(
        self, path: str, tree: TreeFiles, config: AppUpdateConfig, image: ImageLookup
    ) -> tuple[str, str]:
        """The first container ``image`` naming the image (the kustomize target name when
        set) in the directory's manifest files, in the order Argo CD reads them."""
        source = config.app.write_source(config.write_back.write_back_target).raw
        entry = parse_image_override(kustomize_entry(image.kustomize_name, image.cfg))
        extra = pod_specs_of(config)
        for file in manifest_files(tree, path, source):
            text = tree.read(file)
            if text is None:
                continue
            try:
                found = first_image(text, file, entry, extra)
            except ManifestError:
                continue
            if found:
                return found, file
        return "", path

    def render(
        self, text: str | None, path: str, config: AppUpdateConfig, plan: AppPlan
    ) -> str | None:
        raise ManifestError(f"{path}: a directory target is written file by file")

    def render_files(
        self, path: str, tree: TreeFiles, config: AppUpdateConfig, plan: AppPlan
    ) -> list[tuple[str, str]]:
        entries = [
            parse_image_override(edit.value)
            for change in plan.changes
            for edit in change.edits
            if edit.kind == "kustomize"
        ]
        if not entries:
            return []
        source = config.app.write_source(config.write_back.write_back_target).raw
        extra = pod_specs_of(config)
        files = manifest_files(tree, path, source)
        out: list[tuple[str, str]] = []
        used: set[str] = set()
        for file in files:
            text = tree.read(file)
            if text is None:
                continue
            new, names = update_manifests(text, file, entries, extra)
            used |= names
            if new != text:
                out.append((file, new))
        missing = [e.name for e in entries if e.name not in used]
        if missing:
            raise ManifestError(
                f"{path}: no container of the {len(files)} manifest file(s) uses the image "
                f"{', '.join(repr(m) for m in missing)}: check the image name, or name the "
                "kind holding it in manifestTargets.yaml"
            )
        return out


FORMAT: Final = Directory()
