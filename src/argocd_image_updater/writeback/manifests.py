"""Writing image references into plain Kubernetes manifests (``writeBackTarget: directory``).

Every YAML document of a file is read (with the safe loader, only to find where the images
are); each ``image`` that names the image to update is then replaced in the text itself with
:func:`~argocd_image_updater.kits.yamltext.set_value`, so every other byte (comments, anchors,
quoting, document markers) is kept.

Where images are found, per ``kind``: the pod spec of a ``Pod`` (``spec``), of a
``Deployment``, ``StatefulSet``, ``DaemonSet``, ``ReplicaSet`` and ``Job``
(``spec.template.spec``) and of a ``CronJob`` (``spec.jobTemplate.spec.template.spec``), plus
the pod specs that ``manifestTargets.yaml`` names for other kinds (an Argo Rollout, a Knative
Service). In a pod spec, the ``image`` of every element of ``containers``, ``initContainers``
and ``ephemeralContainers``.

An image is matched like kustomize's ``images:`` do: by its name without tag and digest, equal
to the entry's ``name`` (or the same registry and repository as
:class:`~argocd_image_updater.model.image.ImageRef` reads them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from argocd_image_updater.kits.yamltext import PathElem, YamlEditError, parse_dot_path, set_value
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.writeback.kustomize_images import KustomizeImage

_TEMPLATE: Final = ("spec", "template", "spec")
_APPS: Final = frozenset({"apps", "extensions"})
POD_SPECS: Final[Mapping[str, tuple[frozenset[str], tuple[str, ...]]]] = {
    "Pod": (frozenset({""}), ("spec",)),
    "Deployment": (_APPS, _TEMPLATE),
    "StatefulSet": (_APPS, _TEMPLATE),
    "DaemonSet": (_APPS, _TEMPLATE),
    "ReplicaSet": (_APPS, _TEMPLATE),
    "Job": (frozenset({"batch"}), _TEMPLATE),
    "CronJob": (frozenset({"batch"}), ("spec", "jobTemplate", *_TEMPLATE)),
}
"""The API groups and pod spec of each workload kind Kubernetes defines (a custom resource of
the same kind in another group is not one of them)."""

CONTAINER_LISTS: Final = ("containers", "initContainers", "ephemeralContainers")
MANIFEST_SUFFIXES: Final = (".yaml", ".yml")


class ManifestError(ValueError):
    """A manifest file cannot be read or edited; the message names the file."""


@dataclass(frozen=True, slots=True)
class PodSpecAt:
    """``manifestTargets.yaml``: objects of ``kind`` (``Kind`` or ``group/Kind``) hold a pod
    spec at the dotted ``path`` (e.g. ``spec.template.spec``)."""

    kind: str
    path: str

    def matches(self, doc: Mapping[str, Any]) -> bool:
        kind = doc.get("kind")
        if "/" not in self.kind:
            return kind == self.kind
        group, _, name = self.kind.rpartition("/")
        api = doc.get("apiVersion")
        return kind == name and isinstance(api, str) and api.rpartition("/")[0] == group


def _strip(image: str) -> str:
    """``image`` without its ``@digest`` and ``:tag`` (a registry port is kept)."""
    name = image.partition("@")[0]
    colon, slash = name.rfind(":"), name.rfind("/")
    return name[:colon] if colon > slash else name


def _same_repository(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return ImageRef.parse(a).matches(ImageRef.parse(b))
    except ImageRefError:
        return False


def new_reference(entry: KustomizeImage, current: str) -> str | None:
    """What ``current`` becomes under the ``images:`` element ``entry``; ``None`` when
    ``current`` is another image."""
    if not _same_repository(_strip(current), entry.name):
        return None
    name = entry.new_name or _strip(current)
    if entry.new_tag:
        name += f":{entry.new_tag}"
    if entry.digest:
        name += f"@{entry.digest}"
    return name


def _pod_specs(
    doc: Mapping[str, Any], extra: Sequence[PodSpecAt]
) -> Iterator[tuple[list[PathElem], Mapping[str, Any]]]:
    paths: list[Sequence[PathElem]] = []
    kind, api = doc.get("kind"), doc.get("apiVersion")
    builtin = POD_SPECS.get(kind) if isinstance(kind, str) else None
    if builtin is not None and isinstance(api, str) and api.rpartition("/")[0] in builtin[0]:
        paths.append(builtin[1])
    paths.extend(parse_dot_path(t.path) for t in extra if t.matches(doc))
    for path in dict.fromkeys(tuple(p) for p in paths):
        node: Any = doc
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        if isinstance(node, Mapping):
            yield list(path), node


def image_fields(
    doc: Mapping[str, Any], extra: Sequence[PodSpecAt]
) -> Iterator[tuple[list[PathElem], str]]:
    """The path and value of every container ``image`` of one manifest."""
    for path, spec in _pod_specs(doc, extra):
        for key in CONTAINER_LISTS:
            items = spec.get(key)
            if not isinstance(items, list):
                continue
            for index, item in enumerate(items):
                if isinstance(item, Mapping) and isinstance(item.get("image"), str):
                    yield [*path, key, index, "image"], item["image"]


def _documents(text: str, path: str) -> list[Any]:
    try:
        return list(YAML(typ="safe", pure=True).load_all(text))
    except YAMLError as err:
        raise ManifestError(f"{path}: not a YAML file: {err}") from None


def first_image(
    text: str, path: str, entry: KustomizeImage, extra: Sequence[PodSpecAt]
) -> str | None:
    """The first container ``image`` of the file at ``path`` that ``entry`` would set
    (``None`` when none is)."""
    for doc in _documents(text, path):
        if not isinstance(doc, Mapping):
            continue
        for _, current in image_fields(doc, extra):
            if new_reference(entry, current) is not None:
                return current
    return None


def update_manifests(
    text: str, path: str, entries: Sequence[KustomizeImage], extra: Sequence[PodSpecAt]
) -> tuple[str, set[str]]:
    """``text`` (the file at ``path``) with the images of ``entries`` set, and the names of the
    entries it uses (whether or not their value changed)."""
    used: set[str] = set()
    new = text
    for index, doc in enumerate(_documents(text, path)):
        if not isinstance(doc, Mapping):
            continue
        for field_path, current in image_fields(doc, extra):
            for entry in entries:
                wanted = new_reference(entry, current)
                if wanted is None:
                    continue
                used.add(entry.name)
                if wanted != current:
                    try:
                        new = set_value(new, field_path, wanted, create=False, document=index)
                    except YamlEditError as err:
                        raise ManifestError(f"{path}: {err}") from None
                break
    return new, used
