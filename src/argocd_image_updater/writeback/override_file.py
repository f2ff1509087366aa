"""The parameter override file ``.argocd-source-<app>.yaml`` that Argo CD merges into a source.

:func:`render_override` produces the file the original writes, merged with the file already in
the repository:

* **Kustomize** apps: ``kustomize.images`` = the existing entries, each replaced by the
  Application's entry for the same image (same override name, registry and repository; an
  explicit ``docker.io`` equals Docker Hub), then the Application's other entries appended. An
  existing entry is kept when the new one has no tag and no digest, or names the same digest.
* **Helm** apps: ``helm.parameters`` = the parameters this updater manages (every name in the
  plan's edits, up-to-date images included) with their new values, merged by name with the
  existing entries and sorted by name. Parameters the updater does not manage are not copied
  from the Application.
* **Plugin** apps: ``plugin.env`` = the existing variables, each managed one replaced by name,
  new ones appended. A plugin app whose images have no plugin target is written as Helm.

Format: like the original's YAML encoder (2-space indent, sequences not indented under their
key, ``forcestring``). When the existing file parses, only values change and no entry moves,
the values are edited in place through :mod:`~argocd_image_updater.kits.yamltext.edit`, so the
diff is one line per value. Otherwise the file is rendered again: other keys of the file are
kept (their scalars verbatim; comments inside the document are lost), a leading block of
comments, ``%`` directives and a ``---`` marker is kept byte for byte. A file that does not
parse as YAML, or whose section has the wrong shape, is replaced, as by the original. A file
with several YAML documents is an error.

Unlike the original, which writes an empty file when the Application has no block of its type,
``None`` (nothing to write) is returned then; ``None`` is also returned when the file already
has the content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from argocd_image_updater.kits.yamltext import YamlEditError, is_safe_plain, set_value
from argocd_image_updater.model.application import AppSource, SourceType
from argocd_image_updater.model.image import ImageRef, ImageRefError, tags_equal
from argocd_image_updater.plan.model import ParamEdit
from argocd_image_updater.plan.params import (
    apply_edits,
    helm_parameters,
    kustomize_images,
    kustomize_match,
    plugin_env,
)

__all__ = [
    "OverrideFileError",
    "OverrideFormat",
    "document_prefix",
    "merge_kustomize_images",
    "override_format",
    "render_override",
]

OverrideFormat = Literal["helm", "kustomize", "plugin"]

_SECTIONS: Final[Mapping[OverrideFormat, str]] = {
    "helm": "parameters",
    "kustomize": "images",
    "plugin": "env",
}
_ENTRY_KEYS: Final = frozenset({"name", "value", "forcestring", "forceString"})
_MARKER = re.compile(r"---(?:[ \t]+(?:#.*)?)?\r?\n?")


class OverrideFileError(ValueError):
    """The override file cannot be produced; the message names the file."""


class _Raw(str):
    """A non-string scalar (number, bool, null, timestamp) of an existing file, kept verbatim."""

    __slots__ = ()


# ------------------------------------------------------------------------------ formats


def override_format(source_type: SourceType | str, managed: Sequence[ParamEdit]) -> OverrideFormat:
    """The section the file holds for an app of ``source_type`` with ``managed`` edits."""
    st = source_type if isinstance(source_type, SourceType) else SourceType.parse(source_type)
    if st is SourceType.KUSTOMIZE:
        return "kustomize"
    if st is SourceType.HELM:
        return "helm"
    if st is SourceType.PLUGIN:
        return "plugin" if any(e.kind == "plugin" for e in managed) else "helm"
    raise OverrideFileError(
        f"unsupported application type '{st.value or 'unknown'}': parameter override files are "
        "written for Helm, Kustomize and Plugin sources"
    )


def _has_block(source: AppSource, fmt: OverrideFormat, edits: Sequence[ParamEdit]) -> bool:
    present = {"helm": source.has_helm, "kustomize": source.has_kustomize}
    return present.get(fmt, source.has_plugin) or bool(edits)


def _named(items: Sequence[Any], names: Sequence[str]) -> list[Any]:
    by_name = {i.get("name"): i for i in items if isinstance(i, Mapping)}
    return [by_name[n] for n in names if n in by_name]


def _new_entries(
    source: AppSource, fmt: OverrideFormat, managed: Sequence[ParamEdit]
) -> list[Any] | None:
    """Our entries for the section, ``None`` when the source has no block of the format."""
    edits = [e for e in managed if e.kind == fmt]
    if not _has_block(source, fmt, edits):
        return None
    updated = apply_edits(source.raw, edits)
    if fmt == "kustomize":
        return list(kustomize_images(updated))
    names = list(dict.fromkeys(e.name for e in edits))
    if fmt == "helm":
        return [
            {
                "name": p.get("name"),
                "value": str(p.get("value", "")),
                "forcestring": bool(p.get("forceString", False)),
            }
            for p in _named(helm_parameters(updated), names)
        ]
    return [
        {"name": e.get("name"), "value": str(e.get("value", ""))}
        for e in _named(plugin_env(updated), names)
    ]


# ------------------------------------------------------------------------------- merging


def _image_key(text: str) -> tuple[str, ...]:
    try:
        ref = ImageRef.parse(text)
    except ImageRefError:
        return ("", text)
    return (ref.alias, "" if ref.is_docker_hub else ref.registry, ref.name)


def _keeps(existing: str, new: str) -> bool:
    try:
        old_ref, new_ref = ImageRef.parse(existing), ImageRef.parse(new)
    except ImageRefError:
        return existing == new
    if not new_ref.tag and not new_ref.digest:
        return True
    return tags_equal(old_ref.tag, old_ref.digest, new_ref.tag, new_ref.digest)


def _same_image(existing: str, new: str) -> bool:
    key = _image_key(new)
    if key[0] == "" and len(key) == 2:
        return kustomize_match(existing, new)
    return _image_key(existing) == key


def merge_kustomize_images(
    existing: Sequence[str] | None, new: Sequence[str] | None
) -> list[str] | None:
    """Merge the Application's kustomize images into those of an existing override file."""
    if existing is None and new is None:
        return None
    out = list(existing or ())
    for image in new or ():
        index = next((i for i, e in enumerate(out) if _same_image(e, image)), -1)
        if index < 0:
            out.append(image)
        elif not _keeps(out[index], image):
            out[index] = image
    return out


def _merge_named(existing: Sequence[Any], new: Sequence[Any]) -> list[Any]:
    out = list(existing)
    for entry in new:
        index = next((i for i, e in enumerate(out) if e.get("name") == entry["name"]), -1)
        if index < 0:
            out.append(entry)
        else:
            out[index] = entry
    return out


def _merge(fmt: OverrideFormat, existing: Sequence[Any] | None, new: Sequence[Any]) -> list[Any]:
    if fmt == "kustomize":
        return merge_kustomize_images(existing, new) or []
    merged = _merge_named(existing or (), new)
    if fmt == "helm":
        merged.sort(key=lambda p: str(p.get("name")))
    return merged


# ------------------------------------------------------------------------- existing file


def document_prefix(text: str) -> str:
    """The leading comments, blank lines, ``%`` directives and ``---`` marker of ``text``.

    Ends after the first ``---`` line at column 0 (optionally followed by a comment). Without
    such a marker: the leading comment and blank lines (nothing when there is a directive).
    """
    pos = kept = 0
    directive = False
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end + 1
        line = text[pos:end]
        if _MARKER.fullmatch(line):
            return text[:end]
        if line.startswith("%"):
            directive = True
        elif line.strip() and not line.lstrip().startswith("#"):
            break
        else:
            kept = end
        pos = end
    return "" if directive else text[:kept]


def _node_data(node: Node) -> Any:
    if isinstance(node, MappingNode):
        return {str(k.value): _node_data(v) for k, v in node.value if isinstance(k, ScalarNode)}
    if isinstance(node, SequenceNode):
        return [_node_data(v) for v in node.value]
    if (node.tag or "").endswith(":str"):
        return str(node.value)
    return _Raw(node.value or "null")


def _parse_existing(text: str, path: str) -> dict[str, Any] | None:
    """The existing file as data; ``None`` when it must be replaced (not YAML, not a mapping)."""
    try:
        docs = [d for d in YAML(typ="rt", pure=True).compose_all(text) if d is not None]
    except YAMLError:
        return None
    docs = [d for d in docs if not (isinstance(d, ScalarNode) and (d.tag or "").endswith(":null"))]
    if len(docs) > 1:
        raise OverrideFileError(
            f"{path}: the parameter override file holds {len(docs)} YAML documents; it must "
            "hold one"
        )
    if not docs:
        return {}
    data = _node_data(docs[0])
    return data if isinstance(data, dict) else None


def _section(data: Mapping[str, Any], fmt: OverrideFormat) -> tuple[bool, list[Any] | None]:
    """``(well formed, existing entries)`` of the format's section in ``data``."""
    block = data.get(fmt)
    if block is None:
        return True, None
    if not isinstance(block, dict):
        return False, None
    items = block.get(_SECTIONS[fmt])
    if items is None or items == "null":
        return True, None
    if not isinstance(items, list):
        return False, None
    for item in items:
        if fmt == "kustomize":
            if not isinstance(item, str):
                return False, None
        elif not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return False, None
    return True, items


# ------------------------------------------------------------------------------- output


def _scalar(value: Any) -> str:
    if isinstance(value, _Raw):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    text = str(value)
    return text if is_safe_plain(text) else json.dumps(text, ensure_ascii=False)


def _emit(value: Any, indent: int, lines: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            head = f"{pad}{_scalar(key)}:"
            if isinstance(item, dict) and item:
                lines.append(head)
                _emit(item, indent + 2, lines)
            elif isinstance(item, list) and item:
                lines.append(head)
                _emit(item, indent, lines)
            else:
                lines.append(f"{head} {_inline(item)}")
        return
    for item in value:
        if isinstance(item, dict | list) and item:
            sub: list[str] = []
            _emit(item, indent + 2, sub)
            lines.append(f"{pad}- {sub[0][indent + 2 :]}")
            lines.extend(sub[1:])
        else:
            lines.append(f"{pad}- {_inline(item)}")


def _inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def _render(data: Mapping[str, Any]) -> str:
    lines: list[str] = []
    _emit(dict(data), 0, lines)
    return "\n".join(lines) + "\n" if lines else ""


def _entry_path(fmt: OverrideFormat, index: int) -> list[str | int]:
    if fmt == "kustomize":
        return ["kustomize", "images", index]
    return [fmt, _SECTIONS[fmt], index, "value"]


def _value_edits(
    fmt: OverrideFormat, existing: Sequence[Any], merged: Sequence[Any]
) -> list[tuple[list[str | int], str]] | None:
    """The in-place edits turning ``existing`` into ``merged``; ``None`` when entries move.

    A value that is not a YAML string in the file (``value: 1.0``) is written again, quoted.
    """
    if len(existing) != len(merged):
        return None
    edits: list[tuple[list[str | int], str]] = []
    for i, (old, new) in enumerate(zip(existing, merged, strict=True)):
        if fmt == "kustomize":
            if old != new or isinstance(old, _Raw):
                edits.append((_entry_path(fmt, i), new))
            continue
        if old is new:
            continue
        if old.get("name") != new["name"] or set(old) - _ENTRY_KEYS or "value" not in old:
            return None
        if fmt == "helm":
            old_force = old.get("forcestring", old.get("forceString"))
            if _bool(old_force) != new["forcestring"]:
                return None
        value = old["value"]
        if isinstance(value, _Raw) or value != new["value"]:
            edits.append((_entry_path(fmt, i), new["value"]))
    return edits


def _bool(value: Any) -> bool:
    return isinstance(value, str) and value.lower() == "true"


def render_override(
    existing: str | None,
    source: AppSource,
    source_type: SourceType | str,
    managed: Sequence[ParamEdit],
    *,
    path: str = ".argocd-source.yaml",
) -> str | None:
    """The new content of the override file, or ``None`` when nothing is to be written.

    ``existing`` is the file's current content (``None`` when it does not exist), ``source`` the
    written Application source as read, ``managed`` every parameter edit of the plan (up-to-date
    images included). ``path`` names the file in errors.
    """
    fmt = override_format(source_type, managed)
    new = _new_entries(source, fmt, managed)
    if new is None:
        return None
    text = existing or ""
    prefix = document_prefix(text)
    # The leading block is not data; parsing without it also accepts "---<tab># comment".
    body = text[len(prefix) :]
    data = _parse_existing(body, path) if body.strip() else {}
    well_formed, current = _section(data, fmt) if data is not None else (False, None)
    if data is None or not well_formed:
        data, current = {}, None
    merged = _merge(fmt, current, new)
    edits = _value_edits(fmt, current, merged) if current is not None else None
    if edits is not None:
        if not edits:
            return None
        try:
            result = body
            for edit_path, value in edits:
                result = set_value(result, edit_path, value, create=False)
            return prefix + result
        except YamlEditError:
            pass  # e.g. a value behind an alias shared with other keys: render the file again
    block = data.get(fmt)
    section = dict(block) if isinstance(block, dict) else {}
    section[_SECTIONS[fmt]] = merged
    out = dict(data)
    out[fmt] = section
    if prefix and not prefix.endswith("\n"):
        prefix += "\n"
    result = prefix + _render(out)
    return None if result == text else result
