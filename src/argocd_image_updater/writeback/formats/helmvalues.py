"""``helmvalues[:<file>]``: image keys in a Helm values file.

``helmvalues`` names ``<path>/values.yaml``, ``helmvalues:/file`` a file from the repository
root, ``helmvalues:file`` one below the source path; a bare path to a ``.yaml``/``.yml`` file
(not named ``.argocd-source-*``) is a values file too. The keys are those of the image's Helm
target (``helm.image-name``/``image-tag``/``image-spec``), the defaults for Kustomize and plugin
apps. The file is written by :mod:`~argocd_image_updater.writeback.helmvalues`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from argocd_image_updater.kits.yamltext import YamlEditError, get_dotted_value
from argocd_image_updater.model.application import DEFAULT_HELM_VALUES_FILE, HELMVALUES_PREFIX
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.plan.model import AppPlan
from argocd_image_updater.plan.params import ParamNames
from argocd_image_updater.writeback.formats.base import (
    FileTarget,
    ImageLookup,
    PathRules,
    TargetFormat,
)
from argocd_image_updater.writeback.helmvalues import update_values, values_for_plan


def values_image(text: str | None, names: ParamNames) -> str:
    """``name:tag`` (or the spec value) the values file sets for ``names``, ``""`` if none."""
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


class HelmValues(TargetFormat):
    name = "helmvalues"
    prefix = HELMVALUES_PREFIX
    position = 30

    def parse(
        self, argument: str | None, source_path: str, default_file: str, rules: PathRules
    ) -> FileTarget:
        rel = argument or "./" + DEFAULT_HELM_VALUES_FILE
        if rel.endswith("/") or rel in ("/", "."):
            raise rules.fail("the target names a directory; name a values file, e.g. helmvalues")
        path, key_path = rules.under(source_path, rel)
        if path == ".":
            raise rules.fail("the target names no values file")
        return FileTarget(self.name, path, key_path)

    def claims(self, path: str) -> bool:
        return path.endswith((".yaml", ".yml"))

    def current_image(self, text: str | None, source: Mapping[str, Any], image: ImageLookup) -> str:
        return values_image(text, image.names if image.kind == "helm" else ParamNames.helm())

    def render(
        self, text: str | None, path: str, config: AppUpdateConfig, plan: AppPlan
    ) -> str | None:
        return update_values(text, values_for_plan(config, plan), path=path)


FORMAT: Final = HelmValues()
