"""The exact parameter edits on an Application source, as pure functions over its mapping.

A *source* is one ``ApplicationSource`` object as JSON (``spec.source`` or ``spec.sources[i]``).
Three kinds of parameters are managed, like the original:

* **Helm** — ``helm.parameters``: ``{name: <name param>, value: <registry/repo>}`` and
  ``{name: <tag param>, value: <tag[@digest]>}`` (defaults ``image.name``/``image.tag``), or one
  ``{name: <spec param>, value: <registry/repo:tag[@digest]>}``; always ``forceString: true``. A
  parameter with the same name is replaced in place, a new one appended. An empty tag is never
  written, so a tagless image keeps the tag parameter it has.
* **Kustomize** — ``kustomize.images`` entries ``[<name>=]<registry/repo:tag[@digest]>``. Entries
  of the same repository (and the same override name, when both have one) are rewritten; then
  the entry is merged like Argo CD's ``MergeImage``: the first entry with the same key (the text
  before the entry's first ``=``, ``:`` or ``@``) is replaced, or the entry is appended.
* **Plugin** — ``plugin.env`` entries ``{name, value}``, replaced by name or appended: the spec
  variable gets ``registry/repo:tag[@digest]``, otherwise the name variable gets the repository
  and the tag variable the ``tag[@digest]`` (defaults ``IMAGE_NAME``/``IMAGE_TAG``).

Each function returns :class:`ParamEdit` values with ``changed`` telling whether the source
already holds the value; :func:`apply_edits` produces the edited source.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.plan.model import EditKind, ParamEdit

DEFAULT_HELM_NAME: Final = "image.name"
DEFAULT_HELM_TAG: Final = "image.tag"
DEFAULT_PLUGIN_NAME: Final = "IMAGE_NAME"
DEFAULT_PLUGIN_TAG: Final = "IMAGE_TAG"
_KUSTOMIZE_DELIMITERS: Final = ("=", ":", "@")


@dataclass(frozen=True, slots=True)
class ParamNames:
    """Where an image goes: a spec parameter, or a name and a tag parameter.

    When ``spec`` is set, ``name`` and ``tag`` are ignored.
    """

    spec: str = ""
    name: str = ""
    tag: str = ""

    @classmethod
    def helm(
        cls, spec: str | None = None, name: str | None = None, tag: str | None = None
    ) -> ParamNames:
        """Helm parameter names with the original's defaults (``image.name``/``image.tag``)."""
        if spec and spec.strip():
            return cls(spec=spec.strip())
        return cls(name=name or DEFAULT_HELM_NAME, tag=tag or DEFAULT_HELM_TAG)

    @classmethod
    def plugin(
        cls, spec: str | None = None, name: str | None = None, tag: str | None = None
    ) -> ParamNames:
        """Plugin environment variable names (defaults ``IMAGE_NAME``/``IMAGE_TAG``)."""
        if spec and spec.strip():
            return cls(spec=spec.strip())
        return cls(name=name or DEFAULT_PLUGIN_NAME, tag=tag or DEFAULT_PLUGIN_TAG)


def _values(names: ParamNames, image: ImageRef) -> list[tuple[str, str]]:
    if names.spec:
        return [(names.spec, image.full_name_with_tag)]
    values = [(names.name, image.full_name)]
    tag = image.tag_with_digest
    if tag:
        values.append((names.tag, tag))
    return values


def _block(source: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = source.get(key)
    return value if isinstance(value, Mapping) else {}


def _items(block: Mapping[str, Any], key: str) -> list[Any]:
    value = block.get(key)
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return list(value)
    return []


def _named_value(items: Iterable[Any], name: str) -> str | None:
    for item in items:
        if isinstance(item, Mapping) and item.get("name") == name:
            value = item.get("value")
            return value if isinstance(value, str) else ""
    return None


# --- Helm -------------------------------------------------------------------------------------


def helm_parameters(source: Mapping[str, Any]) -> list[Any]:
    return _items(_block(source, "helm"), "parameters")


def helm_edits(
    source: Mapping[str, Any], names: ParamNames, image: ImageRef
) -> tuple[ParamEdit, ...]:
    """The Helm parameters that put ``image`` into ``source``."""
    params = helm_parameters(source)
    return tuple(
        ParamEdit("helm", name, value, changed=_named_value(params, name) != value)
        for name, value in _values(names, image)
    )


def helm_image(source: Mapping[str, Any], names: ParamNames) -> str:
    """The image the Helm parameters currently name (``""`` when they do not name one)."""
    params = helm_parameters(source)
    if names.spec:
        return _named_value(params, names.spec) or ""
    name, tag = _named_value(params, names.name), _named_value(params, names.tag)
    if name is None or tag is None:
        return ""
    return f"{name}:{tag}"


def _merge_named(items: list[Any], name: str, entry: dict[str, Any]) -> list[Any]:
    out = list(items)
    for i, item in enumerate(out):
        if isinstance(item, Mapping) and item.get("name") == name:
            out[i] = entry
            return out
    out.append(entry)
    return out


# --- Kustomize --------------------------------------------------------------------------------


def kustomize_images(source: Mapping[str, Any]) -> list[str]:
    return [i for i in _items(_block(source, "kustomize"), "images") if isinstance(i, str)]


def _delimiter(entry: str) -> str:
    for delim in _KUSTOMIZE_DELIMITERS:
        if delim in entry:
            return delim
    return ":"


def kustomize_match(entry: str, other: str) -> bool:
    """Argo CD's ``KustomizeImage.Match``: same text before ``other``'s first delimiter."""
    delim = _delimiter(other)
    return entry.split(delim, 1)[0] == other.split(delim, 1)[0]


def kustomize_find(images: Sequence[str], entry: str) -> int:
    """Index of the first image matching ``entry``, or -1."""
    for i, image in enumerate(images):
        if kustomize_match(image, entry):
            return i
    return -1


def _parse(text: str) -> ImageRef | None:
    try:
        return ImageRef.parse(text)
    except ImageRefError:
        return None


def set_kustomize_image(images: Sequence[str], entry: str) -> list[str]:
    """``images`` with ``entry`` set (see the module docs for the rules)."""
    out = list(images)
    override = _parse(entry)
    if override is not None:
        for i, text in enumerate(out):
            current = _parse(text)
            if current is None or current.name != override.name:
                continue
            if current.alias and override.alias and current.alias != override.alias:
                continue
            out[i] = str(override)
    index = kustomize_find(out, entry)
    if index >= 0:
        out[index] = entry
    else:
        out.append(entry)
    return out


def kustomize_entry(kustomize_name: str, image: ImageRef) -> str:
    """``<name>=<registry/repo:tag[@digest]>``, or without ``<name>=`` when there is no name."""
    full = image.full_name_with_tag
    # Interned: kept plans hold it, and the Applications of one image repeat it.
    return sys.intern(f"{kustomize_name}={full}" if kustomize_name else full)


def kustomize_edits(
    source: Mapping[str, Any], kustomize_name: str, image: ImageRef
) -> tuple[ParamEdit, ...]:
    """The ``kustomize.images`` entry that puts ``image`` into ``source``."""
    entry = kustomize_entry(kustomize_name, image)
    images = kustomize_images(source)
    changed = set_kustomize_image(images, entry) != images
    name = kustomize_name or sys.intern(image.full_name)  # kept plans hold it: see above
    return (ParamEdit("kustomize", name, entry, changed=changed),)


def kustomize_image(source: Mapping[str, Any], kustomize_name: str, image: ImageRef) -> str:
    """The entry currently standing for the image (``""`` when there is none)."""
    entry = kustomize_entry(kustomize_name, image)
    images = kustomize_images(source)
    index = kustomize_find(images, entry)
    return images[index] if index >= 0 else ""


# --- Plugin -----------------------------------------------------------------------------------


def plugin_env(source: Mapping[str, Any]) -> list[Any]:
    return _items(_block(source, "plugin"), "env")


def plugin_edits(
    source: Mapping[str, Any], names: ParamNames, image: ImageRef
) -> tuple[ParamEdit, ...]:
    """The ``plugin.env`` variables that put ``image`` into ``source``."""
    env = plugin_env(source)
    return tuple(
        ParamEdit(
            "plugin", name, value, changed=_named_value(env, name) != value, force_string=False
        )
        for name, value in _values(names, image)
    )


def plugin_image(source: Mapping[str, Any], names: ParamNames) -> str:
    """The image the plugin variables currently name (``""`` when they do not name one)."""
    env = plugin_env(source)
    if names.spec:
        return _named_value(env, names.spec) or ""
    name, tag = _named_value(env, names.name), _named_value(env, names.tag)
    if not name or not tag:
        return ""
    return f"{name}:{tag}"


def image_in_source(
    source: Mapping[str, Any], kind: EditKind, names: ParamNames, kustomize_name: str, cfg: ImageRef
) -> str:
    """The parameter value or kustomize entry naming the image (``""`` when none does)."""
    if kind == "kustomize":
        return kustomize_image(source, kustomize_name, cfg)
    if kind == "plugin":
        return plugin_image(source, names)
    return helm_image(source, names)


def tag_in_source(
    source: Mapping[str, Any], kind: EditKind, names: ParamNames, kustomize_name: str, cfg: ImageRef
) -> str:
    """The tag :func:`image_in_source` names (``""`` when none, or no tag name)."""
    return image_tag(image_in_source(source, kind, names, kustomize_name, cfg))


def image_tag(found: str) -> str:
    """The tag of a parameter value or kustomize entry (``[name=]image:tag``; ``""``: none)."""
    if "=" in found.split(":", 1)[0]:
        found = found.split("=", 1)[1]
    try:
        return (ImageRef.parse(found).tag or "") if found else ""
    except ImageRefError:
        return ""


# --- Applying ---------------------------------------------------------------------------------


def thaw(value: Any) -> Any:
    """A mutable deep copy of JSON-like data (mappings → dicts, sequences → lists)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [thaw(v) for v in value]
    return value


def _ensure_block(source: dict[str, Any], key: str) -> dict[str, Any]:
    block = source.get(key)
    if not isinstance(block, dict):
        block = {}
        source[key] = block
    return block


def apply_edit(source: dict[str, Any], edit: ParamEdit) -> None:
    """Apply one edit to a mutable source in place."""
    if edit.kind == "helm":
        helm = _ensure_block(source, "helm")
        entry: dict[str, Any] = {"name": edit.name, "value": edit.value}
        if edit.force_string:
            entry["forceString"] = True
        helm["parameters"] = _merge_named(_items(helm, "parameters"), edit.name, entry)
    elif edit.kind == "kustomize":
        kustomize = _ensure_block(source, "kustomize")
        images = [i for i in _items(kustomize, "images") if isinstance(i, str)]
        kustomize["images"] = set_kustomize_image(images, edit.value)
    else:
        plugin = _ensure_block(source, "plugin")
        env_entry = {"name": edit.name, "value": edit.value}
        plugin["env"] = _merge_named(_items(plugin, "env"), edit.name, env_entry)


def apply_edits(source: Mapping[str, Any], edits: Iterable[ParamEdit]) -> dict[str, Any]:
    """A copy of ``source`` with ``edits`` applied in order; ``source`` is not modified."""
    out: dict[str, Any] = thaw(source)
    for edit in edits:
        apply_edit(out, edit)
    return out
