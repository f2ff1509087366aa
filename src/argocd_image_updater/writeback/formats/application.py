"""``application:<file>``: the Application's own manifest in Git (an app of apps).

When a parent Application syncs its children from Git, a patch of a child's live object is
undone by the parent's self-heal. This target writes the child's parameters where the parent
reads them: ``<file>`` (relative to the repository root, with or without a leading ``/``) holds
the child's manifest. In every document of the file of kind ``Application`` (API group
``argoproj.io``) whose ``metadata.name`` is the Application's name (and whose
``metadata.namespace``, when set, is its namespace), the written source gets what the
``argocd`` method would patch into the live object: its ``helm.parameters`` (by name, added
when missing), ``kustomize.images`` (matched by image name as Argo CD does) and ``plugin.env``
entries, and for chart versions the ``targetRevision`` of the sources holding the chart.

The written source is found at the same place as in the live object (``spec.source``, or
``spec.sources[i]`` of a multi-source Application: the first source of the Application's
source type, as for every target). The edit is the same JSON patch the Kubernetes API would
receive, applied surgically by :mod:`~argocd_image_updater.kits.yamltext.patch`: only the
changed values' bytes change, comments and layout stay. The live object is not patched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from argocd_image_updater.kits.yamltext import YamlPatchError, apply_patch
from argocd_image_updater.model.application import APPLICATION_PREFIX, Application
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.plan.model import AppPlan
from argocd_image_updater.plan.patch import PatchError, json_patch_ops
from argocd_image_updater.writeback.formats.base import (
    FileTarget,
    ImageLookup,
    PathRules,
    TargetError,
    TargetFormat,
)

_GROUP: Final = "argoproj.io/"


def is_manifest_of(doc: Any, app: Application) -> bool:
    """Whether the YAML document ``doc`` is the manifest of ``app``."""
    if not isinstance(doc, Mapping) or doc.get("kind") != "Application":
        return False
    api = doc.get("apiVersion")
    meta = doc.get("metadata")
    if not isinstance(api, str) or not api.startswith(_GROUP) or not isinstance(meta, Mapping):
        return False
    namespace = meta.get("namespace")
    return meta.get("name") == app.name and namespace in (None, "", app.namespace)


def file_plan(plan: AppPlan) -> AppPlan:
    """``plan`` with only the chart versions of its changes (a plan reduced to some of its
    changes keeps every version)."""
    aliases = {change.alias for change in plan.changes}
    return dataclasses.replace(
        plan, revisions=tuple(r for r in plan.revisions if r.alias in aliases)
    )


class ApplicationManifest(TargetFormat):
    name = "application"
    prefix = APPLICATION_PREFIX
    position = 3

    def parse(
        self, argument: str | None, source_path: str, default_file: str, rules: PathRules
    ) -> FileTarget:
        rel = (argument or "").lstrip("/")
        if not rel or argument is None or argument.endswith("/"):
            raise rules.fail(
                "name the file holding the Application's manifest, from the repository root, "
                "e.g. application:apps/my-app.yaml"
            )
        path = rules.inside(rel)
        if path == ".":
            raise rules.fail("the target names no file")
        return FileTarget(self.name, path, path)

    def current_image(self, text: str | None, source: Mapping[str, Any], image: ImageLookup) -> str:
        return ""  # the file holds several Applications: current_for picks the Application's

    def current_for(self, text: str | None, config: AppUpdateConfig, image: ImageLookup) -> str:
        """The value in the written source of the first document that is the Application's
        manifest (``""``: no such document, or the image is not set there)."""
        if not text:
            return ""
        try:
            docs = YAML(typ="safe", pure=True).load_all(text)
            doc = next((d for d in docs if is_manifest_of(d, config.app)), None)
        except YAMLError:
            return ""
        written = config.app.write_source(config.write_back.write_back_target)
        node: Any = doc.get("spec") if doc is not None else None
        for step in written.spec_path:
            if isinstance(step, int):
                node = node[step] if isinstance(node, list) and step < len(node) else None
            else:
                node = node.get(step) if isinstance(node, Mapping) else None
        return image.in_source(node) if isinstance(node, Mapping) else ""

    def render(
        self, text: str | None, path: str, config: AppUpdateConfig, plan: AppPlan
    ) -> str | None:
        app = config.app
        if text is None:
            raise TargetError(f"{path}: no such file in the repository")
        try:
            docs = list(YAML(typ="safe", pure=True).load_all(text))
        except YAMLError as err:
            raise TargetError(f"{path}: not valid YAML: {err}") from None
        found = [i for i, doc in enumerate(docs) if is_manifest_of(doc, app)]
        if not found:
            raise TargetError(
                f"{path}: no Application named '{app.name}' (namespace '{app.namespace}' or "
                "none) in the file"
            )
        whole = file_plan(plan)
        new = text
        for index in found:
            try:
                new = apply_patch(new, json_patch_ops(docs[index], whole), document=index)
            except (PatchError, YamlPatchError) as err:
                raise TargetError(f"{path}: Application '{app.name}': {err}") from None
        return None if new == text else new


FORMAT: Final = ApplicationManifest()
