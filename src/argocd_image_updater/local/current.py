"""What Argo CD would report, computed from files (pure): source types and current images.

In a cluster, Argo CD tells the updater an Application's source type (``status.sourceType``) and
the images running (``status.summary.images``). In local mode there is no Argo CD, so:

* the **source type** is detected the way Argo CD's repo server does it: an explicit
  ``helm``/``kustomize``/``plugin``/``directory`` block, a ``chart`` (Helm repository), else the
  files in the source's path (``kustomization.yaml``/``.yml``/``Kustomization`` → Kustomize,
  ``Chart.yaml`` → Helm, anything else → Directory);
* the **current image** of each configured image is read from where the write-back writes it:
  the ``.argocd-source-<app>.yaml`` file merged over the Application's own parameters, the
  kustomization's ``images``, or the Helm values keys; for the ``argocd`` method, the
  Application's own parameters. An image found nowhere is treated like ``forceUpdate``: it is
  planned as if it had no tag, so the first run writes it and later runs see it.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from argocd_image_updater.config.update_config import AppUpdateConfig, ImageSpec
from argocd_image_updater.kits.yamltext import YamlEditError, get_dotted_value
from argocd_image_updater.model.application import Application, SourceType
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.plan.jobs import edit_kind
from argocd_image_updater.plan.params import (
    ParamNames,
    helm_image,
    kustomize_image,
    plugin_image,
    set_kustomize_image,
    thaw,
)
from argocd_image_updater.writeback.targets import KUSTOMIZATION_FILE_NAMES, TargetKind

_BLOCKS = (
    ("helm", SourceType.HELM),
    ("kustomize", SourceType.KUSTOMIZE),
    ("plugin", SourceType.PLUGIN),
    ("directory", SourceType.DIRECTORY),
)


def declared_source_type(source: Mapping[str, Any]) -> SourceType:
    """The type an ApplicationSource declares itself (``UNKNOWN`` when only files can tell)."""
    for key, source_type in _BLOCKS:
        if isinstance(source.get(key), Mapping):
            return source_type
    if source.get("chart"):
        return SourceType.HELM
    return SourceType.UNKNOWN


def detect_source_type(source: Mapping[str, Any], files: Collection[str] | None) -> SourceType:
    """Argo CD's detection; ``files`` are the base names in the source's path (None: unknown)."""
    declared = declared_source_type(source)
    if declared is not SourceType.UNKNOWN or files is None:
        return declared
    if any(name in files for name in KUSTOMIZATION_FILE_NAMES):
        return SourceType.KUSTOMIZE
    if "Chart.yaml" in files:
        return SourceType.HELM
    return SourceType.DIRECTORY


def sources_of(raw: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """``spec.sources`` of a multi-source app, else ``[spec.source]`` (or ``[]``)."""
    spec = raw.get("spec")
    if not isinstance(spec, Mapping):
        return []
    many = spec.get("sources")
    if isinstance(many, Sequence) and not isinstance(many, str) and many:
        return [s if isinstance(s, Mapping) else {} for s in many]
    one = spec.get("source")
    return [one] if isinstance(one, Mapping) else []


def with_status(
    raw: Mapping[str, Any],
    source_types: Sequence[SourceType],
    images: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A copy of ``raw`` with the status Argo CD would report (source types, live images)."""
    out = copy.deepcopy(dict(raw))
    status = dict(out.get("status") or {})
    spec = out.get("spec") or {}
    if isinstance(spec, Mapping) and spec.get("sources"):
        status["sourceTypes"] = [t.value for t in source_types]
    elif source_types:
        status["sourceType"] = source_types[0].value
    if images is not None:
        summary = dict(status.get("summary") or {})
        summary["images"] = list(images)
        status["summary"] = summary
    out["status"] = status
    return out


@dataclass(frozen=True, slots=True)
class TargetText:
    """The git write-back target of an Application as found in the repository."""

    kind: TargetKind
    text: str | None


def _load(text: str | None) -> Any:
    if not text or not text.strip():
        return None
    try:
        return YAML(typ="safe", pure=True).load(text)
    except YAMLError:
        return None


def _merge_named(base: list[Any], over: Any) -> list[Any]:
    out = list(base)
    if not isinstance(over, list):
        return out
    for item in over:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            continue
        for i, existing in enumerate(out):
            if isinstance(existing, Mapping) and existing.get("name") == item["name"]:
                out[i] = dict(item)
                break
        else:
            out.append(dict(item))
    return out


def _overlay_override(source: dict[str, Any], data: Any) -> dict[str, Any]:
    """Argo CD's merge of ``.argocd-source-<app>.yaml`` into the source."""
    if not isinstance(data, Mapping):
        return source
    out = dict(source)
    for block, key in (("helm", "parameters"), ("plugin", "env")):
        over = data.get(block)
        if isinstance(over, Mapping) and key in over:
            section = dict(out.get(block) or {})
            section[key] = _merge_named(list(section.get(key) or []), over[key])
            out[block] = section
    over = data.get("kustomize")
    if isinstance(over, Mapping) and isinstance(over.get("images"), list):
        section = dict(out.get("kustomize") or {})
        images = [i for i in section.get("images") or [] if isinstance(i, str)]
        for entry in over["images"]:
            if isinstance(entry, str):
                images = set_kustomize_image(images, entry)
        section["images"] = images
        out["kustomize"] = section
    return out


def _kustomization_entries(data: Any) -> list[str]:
    """A kustomization's ``images:`` as Argo CD override strings (``name=newName:tag@digest``)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("images"), list):
        return []
    out = []
    for item in data["images"]:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            continue
        name = item["name"]
        new_name = item.get("newName")
        image = f"{name}={new_name}" if new_name and new_name != name else name
        if item.get("newTag") is not None:
            image += f":{item['newTag']}"
        if item.get("digest"):
            image += f"@{item['digest']}"
        out.append(image)
    return out


def _image_text(value: str) -> str:
    """The image of a parameter value or kustomize entry (``name=image`` → ``image``)."""
    return value.split("=", 1)[1] if "=" in value.split(":", 1)[0] else value


def _from_values(text: str | None, names: ParamNames) -> str:
    if text is None:
        return ""
    try:
        if names.spec:
            return get_dotted_value(text, names.spec) or ""
        name = get_dotted_value(text, names.name)
        tag = get_dotted_value(text, names.tag)
    except YamlEditError:
        return ""
    return f"{name}:{tag}" if name and tag else ""


def current_image(
    app: Application, spec: ImageSpec, config: AppUpdateConfig, target: TargetText | None
) -> str:
    """The image ``spec`` is set to now, as Argo CD would deploy it; ``""`` when unknown."""
    try:
        cfg = ImageRef.parse(spec.image)
    except ImageRefError:
        return ""
    forced_target = config.write_back.write_back_target
    try:
        written = app.write_source(forced_target)
    except ValueError:
        return ""
    source: dict[str, Any] = thaw(written.raw)
    kind, names, kustomize_name = edit_kind(
        app.source_type(forced_target), spec.target, config.write_back
    )
    if target is not None and target.kind == "helmvalues":
        return _from_values(target.text, names if kind == "helm" else ParamNames.helm())
    if target is not None and target.kind == "override":
        source = _overlay_override(source, _load(target.text))
    if target is not None and target.kind == "kustomization":
        entries = _kustomization_entries(_load(target.text))
        source = {"kustomize": {"images": entries}}
    if kind == "kustomize":
        found = kustomize_image(source, kustomize_name, cfg)
    elif kind == "plugin":
        found = plugin_image(source, names)
    else:
        found = helm_image(source, names)
    return _image_text(found) if found else ""


def fill_current(config: AppUpdateConfig, target: TargetText | None) -> AppUpdateConfig:
    """``config`` with the Application's live images set from the files; images found nowhere
    are forced (see the module docs)."""
    app = config.app
    images: list[str] = []
    specs: list[ImageSpec] = []
    for spec in config.images:
        found = current_image(app, spec, config, target)
        if found:
            images.append(found)
            specs.append(spec)
        else:
            settings = dataclasses.replace(spec.settings, force_update=True)
            specs.append(dataclasses.replace(spec, settings=settings))
    types = [SourceType.parse(t) for t in app.status_source_types] or [
        SourceType.parse(app.status_source_type)
    ]
    fresh = Application.from_object(with_status(app.raw, types, images))
    return dataclasses.replace(config, app=fresh, images=tuple(specs))
