"""The parameter override file ``.argocd-source-<app>.yaml`` (the default target).

Used when ``writeBackTarget`` is unset (``<path>/.argocd-source-<app>.yaml``, or
``.argocd-source-<namespace>_<app>.yaml`` for apps outside the controller's namespace), for a
bare path whose file is named ``.argocd-source-*``, and for any bare path no other format
claims. Argo CD merges the file into the source: its ``helm.parameters`` and ``plugin.env``
entries by name, its ``kustomize.images`` by image. The file is written by
:mod:`~argocd_image_updater.writeback.override_file`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any, Final

from argocd_image_updater.model.application import DEFAULT_TARGET_FILE_PREFIX
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.plan.model import AppPlan
from argocd_image_updater.plan.params import set_kustomize_image
from argocd_image_updater.writeback.formats.base import ImageLookup, TargetFormat, load_yaml
from argocd_image_updater.writeback.override_file import render_override


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


def overlay_override(source: Mapping[str, Any], data: Any) -> dict[str, Any]:
    """Argo CD's merge of ``.argocd-source-<app>.yaml`` (its ``data``) into the source."""
    out = dict(source)
    if not isinstance(data, Mapping):
        return out
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


class OverrideFile(TargetFormat):
    name = "override"
    position = 20

    def claims(self, path: str) -> bool:
        return posixpath.basename(path).startswith(DEFAULT_TARGET_FILE_PREFIX)

    def current_image(self, text: str | None, source: Mapping[str, Any], image: ImageLookup) -> str:
        return image.in_source(overlay_override(source, load_yaml(text)))

    def render(
        self, text: str | None, path: str, config: AppUpdateConfig, plan: AppPlan
    ) -> str | None:
        source = config.app.write_source(config.write_back.write_back_target)
        return render_override(text, source, plan.source_type, plan.managed, path=path)


FORMAT: Final = OverrideFile()
