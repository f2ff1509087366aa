"""``kustomization[:<directory>]``: the ``images:`` of a kustomization file.

``kustomization`` names the source path, ``kustomization:/dir`` a directory from the
repository root, ``kustomization:dir`` one below the source path; the file is the first of
``kustomization.yaml``, ``kustomization.yml``, ``Kustomization`` found there. Any other text
starting with ``kustomization``, and a bare path naming a kustomization file, is refused (the
original read ``kustomizationX`` as ``kustomization:`` without its first character). The file is
written by :mod:`~argocd_image_updater.writeback.kustomization`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import Any, Final

from argocd_image_updater.model.application import KUSTOMIZATION_PREFIX
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.plan.model import AppPlan
from argocd_image_updater.writeback.formats.base import (
    FileTarget,
    ImageLookup,
    PathRules,
    TargetFormat,
    load_yaml,
)
from argocd_image_updater.writeback.kustomization import (
    KUSTOMIZATION_FILE_NAMES,
    find_kustomization,
    images_for_plan,
    kustomization_path,
    update_kustomization,
)


def kustomization_entries(data: Any) -> list[str]:
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


class Kustomization(TargetFormat):
    name = "kustomization"
    prefix = KUSTOMIZATION_PREFIX
    position = 10
    lists_directory = True

    def parse(
        self, argument: str | None, source_path: str, default_file: str, rules: PathRules
    ) -> FileTarget:
        return FileTarget(self.name, rules.under(source_path, argument or "")[0], default_file)

    def refuse_text(self, text: str, rules: PathRules) -> None:
        if text.startswith(KUSTOMIZATION_PREFIX):
            raise rules.fail(
                "use 'kustomization' for the source path or 'kustomization:<directory>' to "
                "name the directory holding the kustomization file"
            )

    def refuse_path(self, path: str, rules: PathRules) -> None:
        base = posixpath.basename(path)
        if base in KUSTOMIZATION_FILE_NAMES:
            raise rules.fail(
                f"'{base}' is a kustomization file: use "
                f"'kustomization:{posixpath.dirname(path)}' to update the images of a "
                "kustomization"
            )

    def file_path(self, path: str, listing: Sequence[str] | None) -> str:
        return kustomization_path(path, find_kustomization(listing or (), path))

    def current_image(self, text: str | None, source: Mapping[str, Any], image: ImageLookup) -> str:
        entries = kustomization_entries(load_yaml(text))
        return image.in_source({"kustomize": {"images": entries}})

    def render(
        self, text: str | None, path: str, config: AppUpdateConfig, plan: AppPlan
    ) -> str | None:
        source = config.app.write_source(config.write_back.write_back_target)
        return update_kustomization(text or "", images_for_plan(source, plan.managed), path=path)


FORMAT: Final = Kustomization()
