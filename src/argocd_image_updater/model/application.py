"""A typed, read-only view over an Argo CD ``Application`` object.

The object is the mapping returned by the Kubernetes API (or the Argo CD API, which has the same
JSON shape). Only the fields the updater reads are exposed; :attr:`Application.raw` gives the
whole mapping back for writers that patch it (kept serialized, a fraction of the objects: a
controller keeps the views of thousands of Applications from one cycle to the next).

Source-type detection and the choice of the source to write to follow the original:

* :meth:`Application.source_type` — (1) a write-back target forces the type (``kustomization…``
  → Kustomize; a ``.yaml``/``.yml`` file whose base name does not start with ``.argocd-source-``
  → Helm); (2) multi-source apps: the first Helm/Kustomize/Plugin entry of
  ``status.sourceTypes``, else Directory; (3) source hydrator: the dry source's
  ``helm``/``kustomize``/``plugin`` block; (4) ``status.sourceType``.
* :meth:`Application.write_source` — single source → ``spec.source``; multi-source → the first
  source with an explicit block of the detected type, else the source whose index in
  ``status.sourceTypes`` has that type, else the first source with any helm/kustomize/plugin
  block, else ``spec.sources[0]``; source hydrator → ``spec.sourceHydrator.drySource``.
"""

from __future__ import annotations

import enum
import posixpath
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from argocd_image_updater.model.app_object import keep_object, kept_object

DEFAULT_TARGET_FILE_PREFIX: Final = ".argocd-source-"
KUSTOMIZATION_PREFIX: Final = "kustomization"
HELMVALUES_PREFIX: Final = "helmvalues"
DIRECTORY_PREFIX: Final = "directory"
APPLICATION_PREFIX: Final = "application"
DEFAULT_HELM_VALUES_FILE: Final = "values.yaml"

_EMPTY: Mapping[str, str] = MappingProxyType({})


class ApplicationError(ValueError):
    """A malformed Application object, or one without a source to write to."""


class SourceType(enum.StrEnum):
    """Argo CD's ``ApplicationSourceType`` (``UNKNOWN`` is the empty, unset value)."""

    HELM = "Helm"
    KUSTOMIZE = "Kustomize"
    PLUGIN = "Plugin"
    DIRECTORY = "Directory"
    UNKNOWN = ""

    @classmethod
    def parse(cls, text: str) -> SourceType:
        for member in cls:
            if member.value == text:
                return member
        return cls.UNKNOWN

    @property
    def is_supported(self) -> bool:
        """Helm, Kustomize and Plugin sources can be updated."""
        return self in (SourceType.HELM, SourceType.KUSTOMIZE, SourceType.PLUGIN)


_BLOCK_KEYS: Final[Mapping[SourceType, str]] = MappingProxyType(
    {SourceType.HELM: "helm", SourceType.KUSTOMIZE: "kustomize", SourceType.PLUGIN: "plugin"}
)


@dataclass(frozen=True, slots=True)
class HelmParameter:
    name: str
    value: str = ""
    force_string: bool = False


@dataclass(frozen=True, slots=True)
class EnvEntry:
    """One ``plugin.env`` entry."""

    name: str
    value: str = ""


SpecPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class AppSource:
    """One ``ApplicationSource`` (``spec.source``, ``spec.sources[i]`` or the dry source).

    ``spec_path`` locates it inside ``spec``: ``("source",)``, ``("sources", i)`` or
    ``("sourceHydrator", "drySource")``. ``index`` is ``i`` for multi-source apps.
    ``kind`` names the configuration block present (Helm, Kustomize, Plugin, Directory) or
    ``UNKNOWN`` when there is none. ``kept`` holds :attr:`raw`: the source's mapping itself, or
    the whole Application it belongs to, serialized (see :func:`~argocd_image_updater.model.app_object.keep_object`), read at
    ``spec_path``.
    """

    spec_path: SpecPath
    repo_url: str = ""
    path: str = ""
    target_revision: str = ""
    chart: str = ""
    ref: str = ""
    name: str = ""
    has_helm: bool = False
    has_kustomize: bool = False
    has_plugin: bool = False
    has_directory: bool = False
    helm_parameters: tuple[HelmParameter, ...] = ()
    kustomize_images: tuple[str, ...] = ()
    plugin_name: str = ""
    plugin_env: tuple[EnvEntry, ...] = ()
    kept: bytes | Mapping[str, Any] = field(
        default_factory=lambda: _EMPTY, compare=False, repr=False
    )

    @property
    def raw(self) -> Mapping[str, Any]:
        """The source's object (read anew from what is kept: the caller may change it)."""
        if not isinstance(self.kept, bytes):
            return self.kept
        value: Any = kept_object(self.kept)["spec"]
        for step in self.spec_path:
            value = value[step]
        return value  # type: ignore[no-any-return]

    @property
    def index(self) -> int | None:
        if len(self.spec_path) == 2 and isinstance(self.spec_path[1], int):
            return self.spec_path[1]
        return None

    @property
    def kind(self) -> SourceType:
        if self.has_helm:
            return SourceType.HELM
        if self.has_kustomize:
            return SourceType.KUSTOMIZE
        if self.has_plugin:
            return SourceType.PLUGIN
        if self.has_directory:
            return SourceType.DIRECTORY
        return SourceType.UNKNOWN

    def has_block(self, source_type: SourceType) -> bool:
        if source_type is SourceType.HELM:
            return self.has_helm
        if source_type is SourceType.KUSTOMIZE:
            return self.has_kustomize
        if source_type is SourceType.PLUGIN:
            return self.has_plugin
        return False

    @property
    def has_any_block(self) -> bool:
        return self.has_helm or self.has_kustomize or self.has_plugin

    def helm_parameter(self, name: str) -> HelmParameter | None:
        for param in self.helm_parameters:
            if param.name == name:
                return param
        return None

    def plugin_env_value(self, name: str) -> str | None:
        for entry in self.plugin_env:
            if entry.name == name:
                return entry.value
        return None


def forced_source_type(target: str | None) -> SourceType | None:
    """The source type a write-back target string forces, if any.

    ``directory[:dir]`` → Directory (plain manifests); ``kustomization[:dir]`` → Kustomize; ``helmvalues`` (→ ``values.yaml``), ``helmvalues:<file>``
    or a bare path whose file ends in ``.yaml``/``.yml`` and whose base name does not start with
    ``.argocd-source-`` → Helm. ``application:<file>`` forces none.
    """
    if not target or target.partition(":")[0] == APPLICATION_PREFIX:
        return None
    if target == DIRECTORY_PREFIX or target.startswith(DIRECTORY_PREFIX + ":"):
        return SourceType.DIRECTORY
    if target.startswith(KUSTOMIZATION_PREFIX):
        return SourceType.KUSTOMIZE
    if target == HELMVALUES_PREFIX:
        file = DEFAULT_HELM_VALUES_FILE
    elif target.startswith(HELMVALUES_PREFIX + ":"):
        file = target[len(HELMVALUES_PREFIX) + 1 :]
    else:
        file = target
    if file.endswith((".yaml", ".yml")) and not posixpath.basename(file).startswith(
        DEFAULT_TARGET_FILE_PREFIX
    ):
        return SourceType.HELM
    return None


class _Reader:
    """Type-checked access to a JSON-like mapping, naming the field path on errors."""

    __slots__ = ("_who",)

    def __init__(self, who: str) -> None:
        self._who = who

    def fail(self, path: str, expected: str, value: Any) -> ApplicationError:
        return ApplicationError(
            f"{self._who}: {path}: expected {expected}, got {type(value).__name__} {value!r}; "
            "pass the object as returned by the Kubernetes or Argo CD API"
        )

    def mapping(self, obj: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any] | None:
        value = obj.get(key)
        if value is None or type(value) is dict:  # decoded JSON: no ABC check
            return value
        if not isinstance(value, Mapping):
            raise self.fail(path, "an object", value)
        return value

    def string(self, obj: Mapping[str, Any], key: str, path: str) -> str:
        value = self.unique_string(obj, key, path)
        return sys.intern(value) if type(value) is str else value  # Applications repeat it

    def unique_string(self, obj: Mapping[str, Any], key: str, path: str) -> str:
        """A string no other Application holds (its name, uid, resourceVersion): not interned,
        which would only grow the table of interned strings."""
        value = obj.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.fail(path, "a string", value)
        return value

    def boolean(self, obj: Mapping[str, Any], key: str, path: str) -> bool:
        value = obj.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.fail(path, "true or false", value)
        return value

    def seq(self, obj: Mapping[str, Any], key: str, path: str) -> Sequence[Any]:
        value = obj.get(key)
        if value is None:
            return ()
        if type(value) is list:  # decoded JSON: no ABC check
            return value
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise self.fail(path, "a list", value)
        return value

    def strings(self, obj: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
        items = self.seq(obj, key, path)
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise self.fail(f"{path}[{i}]", "a string", item)
        return tuple(sys.intern(item) if type(item) is str else item for item in items)

    def string_map(self, obj: Mapping[str, Any], key: str, path: str) -> Mapping[str, str]:
        value = self.mapping(obj, key, path)
        if value is None:
            return _EMPTY
        for k, v in value.items():
            if not isinstance(v, str):
                raise self.fail(f"{path}.{k}", "a string", v)
        return MappingProxyType(
            {sys.intern(k): sys.intern(v) if type(v) is str else v for k, v in value.items()}
        )

    def objects(
        self, obj: Mapping[str, Any], key: str, path: str
    ) -> list[tuple[str, Mapping[str, Any]]]:
        out: list[tuple[str, Mapping[str, Any]]] = []
        for i, item in enumerate(self.seq(obj, key, path)):
            if not isinstance(item, Mapping):
                raise self.fail(f"{path}[{i}]", "an object", item)
            out.append((f"{path}[{i}]", item))
        return out


def _read_source(
    r: _Reader,
    obj: Mapping[str, Any],
    path: str,
    spec_path: SpecPath,
    kept: bytes | Mapping[str, Any],
) -> AppSource:
    helm = r.mapping(obj, "helm", f"{path}.helm")
    kustomize = r.mapping(obj, "kustomize", f"{path}.kustomize")
    plugin = r.mapping(obj, "plugin", f"{path}.plugin")
    directory = r.mapping(obj, "directory", f"{path}.directory")
    params: list[HelmParameter] = []
    if helm is not None:
        for ppath, p in r.objects(helm, "parameters", f"{path}.helm.parameters"):
            params.append(
                HelmParameter(
                    name=r.string(p, "name", f"{ppath}.name"),
                    value=r.string(p, "value", f"{ppath}.value"),
                    force_string=r.boolean(p, "forceString", f"{ppath}.forceString"),
                )
            )
    images: tuple[str, ...] = ()
    if kustomize is not None:
        images = r.strings(kustomize, "images", f"{path}.kustomize.images")
    env: list[EnvEntry] = []
    plugin_name = ""
    if plugin is not None:
        plugin_name = r.string(plugin, "name", f"{path}.plugin.name")
        for epath, e in r.objects(plugin, "env", f"{path}.plugin.env"):
            env.append(
                EnvEntry(
                    name=r.string(e, "name", f"{epath}.name"),
                    value=r.string(e, "value", f"{epath}.value"),
                )
            )
    return AppSource(
        spec_path=spec_path,
        repo_url=r.string(obj, "repoURL", f"{path}.repoURL"),
        path=r.string(obj, "path", f"{path}.path"),
        target_revision=r.string(obj, "targetRevision", f"{path}.targetRevision"),
        chart=r.string(obj, "chart", f"{path}.chart"),
        ref=r.string(obj, "ref", f"{path}.ref"),
        name=r.string(obj, "name", f"{path}.name"),
        has_helm=helm is not None,
        has_kustomize=kustomize is not None,
        has_plugin=plugin is not None,
        has_directory=directory is not None,
        helm_parameters=tuple(params),
        kustomize_images=images,
        plugin_name=plugin_name,
        plugin_env=tuple(env),
        kept=kept if isinstance(kept, bytes) else obj,
    )


@dataclass(frozen=True, slots=True, eq=False)
class Application:
    """Read-only view of one Application; build it with :meth:`from_object`.

    Compared and hashed by identity: two views of the same object are different snapshots.
    """

    name: str
    namespace: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    resource_version: str
    uid: str
    kept: bytes | Mapping[str, Any] = field(repr=False)
    """What :attr:`raw` gives back (see :func:`~argocd_image_updater.model.app_object.keep_object`)."""
    single_source: AppSource | None
    multi_sources: tuple[AppSource, ...]
    source_hydrator: AppSource | None
    """The dry source of ``spec.sourceHydrator`` (``None`` when the app has no hydrator)."""
    status_source_type: str
    status_source_types: tuple[str, ...]
    live_images: tuple[str, ...]
    """``status.summary.images``: the images Argo CD found in the live resources."""

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> Application:
        """Build the view; raise :class:`ApplicationError` naming the malformed field."""
        if not isinstance(obj, Mapping):
            raise ApplicationError(
                f"Application: expected an object, got {type(obj).__name__}; "
                "pass the object as returned by the Kubernetes or Argo CD API"
            )
        r = _Reader("Application")
        meta = r.mapping(obj, "metadata", "metadata")
        if meta is None:
            raise ApplicationError("Application: metadata: required field is missing")
        name = r.unique_string(meta, "name", "metadata.name")
        if not name:
            raise ApplicationError("Application: metadata.name: required field is missing")
        namespace = r.string(meta, "namespace", "metadata.namespace")
        r = _Reader(f"Application '{namespace}/{name}'" if namespace else f"Application '{name}'")
        spec = r.mapping(obj, "spec", "spec") or _EMPTY
        status = r.mapping(obj, "status", "status") or _EMPTY

        kept = keep_object(obj)
        single = r.mapping(spec, "source", "spec.source")
        multi = tuple(
            _read_source(r, s, p, ("sources", i), kept)
            for i, (p, s) in enumerate(r.objects(spec, "sources", "spec.sources"))
        )
        hydrator = r.mapping(spec, "sourceHydrator", "spec.sourceHydrator")
        dry: AppSource | None = None
        if hydrator is not None:
            dry_obj = r.mapping(hydrator, "drySource", "spec.sourceHydrator.drySource")
            if dry_obj is not None:
                dry = _read_source(
                    r,
                    dry_obj,
                    "spec.sourceHydrator.drySource",
                    ("sourceHydrator", "drySource"),
                    kept,
                )
        summary = r.mapping(status, "summary", "status.summary") or _EMPTY
        return cls(
            name=name,
            namespace=namespace,
            labels=r.string_map(meta, "labels", "metadata.labels"),
            annotations=r.string_map(meta, "annotations", "metadata.annotations"),
            resource_version=r.unique_string(meta, "resourceVersion", "metadata.resourceVersion"),
            uid=r.unique_string(meta, "uid", "metadata.uid"),
            kept=kept,
            single_source=(
                _read_source(r, single, "spec.source", ("source",), kept)
                if single is not None
                else None
            ),
            multi_sources=multi,
            source_hydrator=dry,
            status_source_type=r.string(status, "sourceType", "status.sourceType"),
            status_source_types=r.strings(status, "sourceTypes", "status.sourceTypes"),
            live_images=r.strings(summary, "images", "status.summary.images"),
        )

    @property
    def raw(self) -> Mapping[str, Any]:
        """The object the view was built from (read anew from what is kept: the caller may change
        it)."""
        if isinstance(self.kept, bytes):
            return kept_object(self.kept)  # type: ignore[no-any-return]
        return self.kept

    @property
    def qualified_name(self) -> str:
        """``<namespace>/<name>`` as used in log lines and keys."""
        return f"{self.namespace}/{self.name}"

    @property
    def is_multi_source(self) -> bool:
        return bool(self.multi_sources)

    @property
    def sources(self) -> tuple[AppSource, ...]:
        """``spec.sources`` for multi-source apps, else ``(spec.source,)`` (or ``()``)."""
        if self.multi_sources:
            return self.multi_sources
        return (self.single_source,) if self.single_source is not None else ()

    def source_type(self, forced_target: str | None = None) -> SourceType:
        """The app's source type; ``forced_target`` is the git write-back target, if any."""
        forced = forced_source_type(forced_target)
        if forced is not None:
            return forced
        if self.multi_sources:
            for text in self.status_source_types:
                st = SourceType.parse(text)
                if st.is_supported:
                    return st
            return SourceType.DIRECTORY
        if self.source_hydrator is not None:
            for st in _BLOCK_KEYS:
                if self.source_hydrator.has_block(st):
                    return st
        return SourceType.parse(self.status_source_type)

    def write_source(self, forced_target: str | None = None) -> AppSource:
        """The source that receives the updates (see the module docs for the rules)."""
        if self.multi_sources:
            st = self.source_type(forced_target)
            for src in self.multi_sources:
                if src.has_block(st):
                    return src
            if st.is_supported:
                for i, text in enumerate(self.status_source_types[: len(self.multi_sources)]):
                    if SourceType.parse(text) is st:
                        return self.multi_sources[i]
            for src in self.multi_sources:
                if src.has_any_block:
                    return src
            return self.multi_sources[0]
        if self.source_hydrator is not None:
            return self.source_hydrator
        if self.single_source is not None:
            return self.single_source
        raise ApplicationError(
            f"application source is not defined for {self.qualified_name}: "
            "set spec.source, spec.sources or spec.sourceHydrator.drySource"
        )

    def source_for_repo(self, repo_url: str) -> AppSource | None:
        """The first source whose ``repoURL`` equals ``repo_url`` (multi-source git branch)."""
        candidates = list(self.sources)
        if self.source_hydrator is not None:
            candidates.append(self.source_hydrator)
        for src in candidates:
            if src.repo_url == repo_url:
                return src
        return None
