"""Find and parse the Application and ImageUpdater manifests under a directory.

Every ``*.yaml``, ``*.yml`` and ``*.json`` file below the root is read (hidden directories such
as ``.git`` and the ``templates/`` directory of a Helm chart are skipped: they hold no plain
manifests). A file that does not parse, or an object of the right kind that is malformed, is
reported with its path and position and skipped; every other file is still used. Objects of
other kinds (ConfigMaps, AppProjects, …) are ignored.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, Node, SequenceNode

from argocd_image_updater.config.yaml_errors import yaml_error_position

APPLICATION_GROUP: Final = "argoproj.io/"
IMAGE_UPDATER_GROUP: Final = "argocd-image-updater.argoproj.io/"
SUFFIXES: Final = (".yaml", ".yml", ".json")
MAX_FILE_BYTES: Final = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Manifest:
    """One object: the file it is in (relative, ``/``-separated), its document index, the
    object (``metadata.namespace`` filled in) and the digest of the file as read."""

    path: str
    document: int
    obj: dict[str, Any]
    digest: str

    @property
    def key(self) -> tuple[str, str]:
        meta = self.obj["metadata"]
        return str(meta["namespace"]), str(meta["name"])


@dataclass(slots=True)
class ManifestSet:
    applications: list[Manifest] = field(default_factory=list)
    image_updaters: list[Manifest] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    """The text of each file holding a manifest, to locate a field when it is reported."""


def file_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _is_chart_templates(directory: Path) -> bool:
    return directory.name == "templates" and (directory.parent / "Chart.yaml").is_file()


def manifest_files(root: Path) -> list[Path]:
    """The candidate files below ``root``, in a stable order."""
    found: list[Path] = []
    for current, dirs, files in os.walk(root):
        here = Path(current)
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and not _is_chart_templates(here / d)
        )
        found.extend(here / f for f in sorted(files) if f.endswith(SUFFIXES))
    return found


def _field_parts(path: str) -> list[str | int]:
    """``spec.refs[0].images[1].name`` → ``["spec", "refs", 0, "images", 1, "name"]``."""
    parts: list[str | int] = []
    for word in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        parts.append(int(word[1:-1]) if word.startswith("[") else word)
    return parts


def field_line(text: str, document: int, path: str) -> int:
    """The line (1-based) of ``path`` in document ``document`` of ``text``; the deepest part of
    the path that exists when the rest is missing; 0 when the text cannot be read."""
    try:
        nodes = list(YAML(typ="safe", pure=True).compose_all(text))
    except YAMLError:
        return 0
    if document >= len(nodes) or nodes[document] is None:
        return 0
    node: Node = nodes[document]
    line = int(node.start_mark.line) + 1
    for part in _field_parts(path):
        if isinstance(node, MappingNode) and isinstance(part, str):
            found = next((kv for kv in node.value if kv[0].value == part), None)
            if found is None:
                break
            line, node = int(found[0].start_mark.line) + 1, found[1]
        elif isinstance(node, SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = int(node.start_mark.line) + 1
        else:
            break
    return line


def _kind_of(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    kind, version = obj.get("kind"), obj.get("apiVersion")
    if not isinstance(version, str):
        return None
    if kind == "Application" and version.startswith(APPLICATION_GROUP):
        return "Application"
    if kind == "ImageUpdater" and version.startswith(IMAGE_UPDATER_GROUP):
        return "ImageUpdater"
    return None


def _check_metadata(obj: dict[str, Any], default_namespace: str) -> str | None:
    """Fill in ``metadata.namespace``; a problem text when the metadata is unusable."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return "metadata: required field is missing or not a mapping"
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return "metadata.name: required field is missing"
    namespace = meta.get("namespace")
    if namespace is None or namespace == "":
        meta["namespace"] = default_namespace
    elif not isinstance(namespace, str):
        return "metadata.namespace: expected a string"
    return None


def load_manifests(
    root: Path, default_namespace: str, cache: dict[str, list[Any]] | None = None
) -> ManifestSet:
    """Every Application and ImageUpdater under ``root``; problems are collected, not raised.

    ``cache`` (digest of a file's text → its documents) is reused across calls so that a file
    that did not change is not parsed again; entries of files no longer present are dropped.
    """
    out = ManifestSet()
    seen: dict[tuple[str, str, str], str] = {}
    used: set[str] = set()
    # The pure-Python parser on purpose: libyaml rejects valid YAML that Kubernetes accepts
    # (e.g. a URL as a plain scalar in a flow mapping).
    loader = YAML(typ="safe", pure=True)
    for file in manifest_files(root):
        rel = file.relative_to(root).as_posix()
        try:
            if file.stat().st_size > MAX_FILE_BYTES:
                out.problems.append(f"{rel}: larger than {MAX_FILE_BYTES} bytes, skipped")
                continue
            text = file.read_bytes().decode("utf-8")  # CRLF kept: the writer compares
        except (OSError, UnicodeDecodeError) as err:
            out.problems.append(f"{rel}: cannot read the file: {err}")
            continue
        digest = file_digest(text)
        cached = cache.get(digest) if cache is not None else None
        if cached is None:
            try:
                cached = list(loader.load_all(text))
            except YAMLError as err:
                out.problems.append(f"{rel}: not valid YAML, skipped: {yaml_error_position(err)}")
                continue
            if cache is not None:
                cache[digest] = cached
        used.add(digest)
        documents = copy.deepcopy(cached)  # the caller may change the objects
        for index, obj in enumerate(documents):
            kind = _kind_of(obj)
            if kind is None:
                continue
            problem = _check_metadata(obj, default_namespace)
            if problem is not None:
                out.problems.append(f"{rel}: document {index + 1}: {kind}: {problem}, skipped")
                continue
            manifest = Manifest(rel, index, obj, digest)
            key = (kind, *manifest.key)
            if key in seen:
                out.problems.append(
                    f"{rel}: document {index + 1}: {kind} {key[1]}/{key[2]} is also defined in "
                    f"{seen[key]}; the first definition is used"
                )
                continue
            seen[key] = rel
            out.texts[rel] = text
            if kind == "Application":
                out.applications.append(manifest)
            else:
                out.image_updaters.append(manifest)
    if cache is not None:
        for digest in set(cache) - used:
            del cache[digest]
    return out
