"""``writeBackTarget: application`` (no file): the child's manifest found through its parent.

An app of apps: a parent Application syncs its children's manifests from Git. Argo CD marks
what it syncs with the tracking annotation ``argocd.argoproj.io/tracking-id``
(``<parent>:<group>/<kind>:<namespace>/<name>``) or the label ``app.kubernetes.io/instance``
(``<parent>``); ``<parent>`` is the parent's name, or ``<namespace>_<name>`` for an
Application outside the controller's namespace. :func:`find_parent` reads the parent from the
cluster; its source (repository, revision, path and ``directory`` settings) says where the
child's manifest is: :func:`locate_manifest` scans the YAML files below that path in the clone
of the parent's repository for the one document that is the child's manifest.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from argocd_image_updater.model.application import (
    APPLICATION_PREFIX,
    Application,
    ApplicationError,
    AppSource,
)
from argocd_image_updater.writeback.formats.application import is_manifest_of
from argocd_image_updater.writeback.formats.base import TargetError, TreeFiles
from argocd_image_updater.writeback.formats.directory import manifest_files

TRACKING_ID: Final = "argocd.argoproj.io/tracking-id"
INSTANCE_LABEL: Final = "app.kubernetes.io/instance"
IMPLICIT: Final = APPLICATION_PREFIX
"""The target text naming the Application's manifest found through its parent."""

ParentLookup = Callable[[str, str], Awaitable[Mapping[str, Any] | None]]
"""Reads an Application ``(namespace, name)`` from the cluster; ``None`` when there is none."""


def is_implicit(targets: Sequence[str | None]) -> bool:
    """Whether ``writeBackTarget`` names the manifest found through the parent."""
    return IMPLICIT in targets


def parent_ref(app: Application, controller_namespace: str) -> tuple[str, str] | None:
    """``(namespace, name)`` of the parent that tracks ``app``; ``None`` when nothing says."""
    tracking = app.annotations.get(TRACKING_ID, "").strip()
    instance = tracking.partition(":")[0] if tracking else app.labels.get(INSTANCE_LABEL, "")
    instance = instance.strip()
    if not instance:
        return None
    namespace, sep, name = instance.partition("_")
    if not sep:
        return controller_namespace or app.namespace, instance
    return namespace, name


def _who(app: Application) -> str:
    return f"Application '{app.qualified_name}'"


async def find_parent(
    app: Application, controller_namespace: str, lookup: ParentLookup | None
) -> tuple[Application, AppSource]:
    """The parent of ``app`` and the parent's source that holds the child's manifest.
    :class:`TargetError` names what is missing."""
    setting = f"gitConfig.writeBackTarget '{IMPLICIT}'"
    ref = parent_ref(app, controller_namespace)
    if ref is None:
        raise TargetError(
            f"{_who(app)}: {setting}: no parent Application tracks it (neither the annotation "
            f"{TRACKING_ID} nor the label {INSTANCE_LABEL} is set); name the file with "
            "application:<file>"
        )
    namespace, name = ref
    if lookup is None:
        raise TargetError(f"{_who(app)}: {setting}: the parent Application cannot be read here")
    try:
        obj = await lookup(namespace, name)
    except Exception as err:  # the cluster's error, for this Application only
        raise TargetError(
            f"{_who(app)}: {setting}: cannot read the parent Application '{namespace}/{name}': "
            f"{err}"
        ) from None
    if obj is None:
        raise TargetError(
            f"{_who(app)}: {setting}: the parent Application '{namespace}/{name}' is not found"
        )
    try:
        parent = Application.from_object(obj)
        source = parent.write_source()
    except (ApplicationError, ValueError) as err:
        raise TargetError(
            f"{_who(app)}: {setting}: parent Application '{namespace}/{name}': {err}"
        ) from None
    if not source.repo_url.strip():
        raise TargetError(
            f"{_who(app)}: {setting}: the parent Application '{namespace}/{name}' has no "
            "source repoURL"
        )
    return parent, source


def _holds(text: str, app: Application) -> bool:
    try:
        return any(is_manifest_of(doc, app) for doc in YAML(typ="safe", pure=True).load_all(text))
    except YAMLError:
        return False


def locate_manifest(
    tree: TreeFiles, directory: str, scan: Mapping[str, Any], app: Application, repo: str
) -> str:
    """The one YAML file below ``directory`` (read as the parent's ``directory`` settings
    ``scan`` say) holding the manifest of ``app``; :class:`TargetError` when none or several
    do."""
    files = manifest_files(tree, directory, scan)
    found = [f for f in files if (text := tree.read(f)) is not None and _holds(text, app)]
    where = f"the {len(files)} YAML file(s) below '{directory}' of {repo} (the parent's source)"
    if not found:
        raise TargetError(
            f"no Application named '{app.name}' (namespace '{app.namespace}' or none) in {where}"
        )
    if len(found) > 1:
        raise TargetError(
            f"the Application '{app.name}' is in several of {where}: {', '.join(found)}; "
            "name the file with application:<file>"
        )
    return found[0]
