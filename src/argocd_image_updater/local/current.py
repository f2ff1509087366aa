"""What Argo CD would report, computed from files (pure): source types and current images.

In a cluster, Argo CD tells the updater an Application's source type (``status.sourceType``) and
the images running (``status.summary.images``). In local mode there is no Argo CD, so:

* the **source type** is detected the way Argo CD's repo server does it: an explicit
  ``helm``/``kustomize``/``plugin``/``directory`` block, a ``chart`` (Helm repository), else the
  files in the source's path (``kustomization.yaml``/``.yml``/``Kustomization`` → Kustomize,
  ``Chart.yaml`` → Helm, anything else → Directory);
* the **current image** of each configured image is read from where the write-back writes it,
  by the target's format (:mod:`~argocd_image_updater.writeback.formats`): the
  ``.argocd-source-<app>.yaml`` file merged over the Application's own parameters, the
  kustomization's ``images``, the Helm values keys, the first container naming the image in
  the plain manifests of a ``directory`` target (read as a :class:`FileSnapshot`), or the
  Application's own document in its manifest in Git (``application``); for the ``argocd``
  method, the Application's own parameters. An image found nowhere is treated like
  ``forceUpdate``: it is planned as if it had no tag, so the first run writes it and later runs
  see it.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from argocd_image_updater.model.application import Application, SourceType
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.model.update_config import AppUpdateConfig, ImageSpec
from argocd_image_updater.plan.jobs import edit_kind
from argocd_image_updater.plan.params import thaw
from argocd_image_updater.writeback.formats import named as target_format
from argocd_image_updater.writeback.formats.base import ImageLookup
from argocd_image_updater.writeback.kustomization import KUSTOMIZATION_FILE_NAMES

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


class FileSnapshot:
    """Files of a repository read at one commit (path relative to the repository root →
    text), as the target formats read a tree (:class:`~argocd_image_updater.writeback.formats.
    base.TreeFiles`)."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self._texts = dict(texts)

    def read(self, path: str) -> str | None:
        return self._texts.get(path)

    def _below(self, path: str) -> list[tuple[str, str]]:
        """``(file, its path below path)`` of every file below the directory ``path``."""
        if path in ("", "."):
            return [(file, file) for file in self._texts]
        prefix = path.rstrip("/") + "/"
        return [(f, f[len(prefix) :]) for f in self._texts if f.startswith(prefix)]

    def listdir(self, path: str) -> list[str] | None:
        names = {rel.partition("/")[0] for _, rel in self._below(path)}
        return sorted(names) if names else None

    def files(self, path: str, recurse: bool) -> list[str]:
        return sorted(f for f, rel in self._below(path) if recurse or "/" not in rel)


@dataclass(frozen=True, slots=True)
class TargetText:
    """The git write-back target of an Application as found in the repository: its format's
    name (see :mod:`~argocd_image_updater.writeback.formats`) and text (``None``: missing);
    for a format that reads a tree (``directory``), the files read and the target's path."""

    kind: str
    text: str | None
    tree: FileSnapshot | None = None
    path: str = ""


def _image_text(value: str) -> str:
    """The image of a parameter value or kustomize entry (``name=image`` → ``image``)."""
    return value.split("=", 1)[1] if "=" in value.split(":", 1)[0] else value


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
    lookup = ImageLookup(kind, names, kustomize_name, cfg)
    if target is None:
        found = lookup.in_source(source)
    elif target.tree is not None:
        found, _ = target_format(target.kind).current_in(target.path, target.tree, config, lookup)
    else:
        found = target_format(target.kind).current_for(target.text, config, lookup)
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
    return dataclasses.replace(config, app=fresh, images=tuple(specs), live_is_target=True)
