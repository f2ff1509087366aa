"""Legacy ``argocd-image-updater.argoproj.io/*`` annotations on Applications.

Two readings exist, because the original changed them:

* :func:`read_image_list`, :func:`read_update_settings`, :func:`read_manifest_target` and
  :func:`read_write_back` read the annotations the way an ImageUpdater ``applicationRef`` with
  ``useAnnotations: true`` does: aliases are used verbatim in keys, ``force-update`` must be a Go
  boolean (an unparsable value is an error), ``ignore-tags`` keeps empty entries, ``tag-match``
  is not read, and ``<alias>.helm.*`` together with ``<alias>.kustomize.image-name`` is an error.
* :func:`config_from_annotations_v0` reads them like the annotation-only releases (v0.x): ``/``
  in aliases becomes ``_`` in keys, per-image keys fall back to application-wide ones, only the
  exact string ``true`` enables force-update, ``tag-match`` is read (deprecated) when
  ``allow-tags`` is absent, empty ``ignore-tags`` entries are dropped, and pull secrets may live
  in any namespace.

Nothing here logs; warnings are returned to the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Final

from argocd_image_updater.model.application import Application
from argocd_image_updater.model.imagelist import (
    IMAGE_LIST_ANNOTATION,
    ImageListError,
    annotation_alias_key,
    parse_image_list,
)
from argocd_image_updater.model.update_config import (
    LEGACY_ORIGIN,
    AppUpdateConfig,
    GitSettings,
    HelmTarget,
    ImageSpec,
    KustomizeTarget,
    ManifestTarget,
    UpdateSettings,
    WriteBack,
    WriteBackError,
    WriteBackLayer,
    YamlTarget,
)

PREFIX: Final = "argocd-image-updater.argoproj.io"
IMAGE_LIST_KEY: Final = IMAGE_LIST_ANNOTATION
WRITE_BACK_METHOD_KEY: Final = f"{PREFIX}/write-back-method"
WRITE_BACK_TARGET_KEY: Final = f"{PREFIX}/write-back-target"
GIT_BRANCH_KEY: Final = f"{PREFIX}/git-branch"
GIT_REPOSITORY_KEY: Final = f"{PREFIX}/git-repository"

TAG_MATCH_DEPRECATED: Final = (
    "The 'tag-match' annotation is deprecated and subject to removal. "
    "Please use 'allow-tags' annotation instead."
)

_GO_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class AnnotationError(ValueError):
    """An annotation that cannot be used; the message names the key and the value."""


def is_annotated(app: Application) -> bool:
    """Whether the app carries the ``image-list`` annotation (any value)."""
    return IMAGE_LIST_KEY in app.annotations


def image_key(alias: str, setting: str) -> str:
    """``argocd-image-updater.argoproj.io/<alias>.<setting>``."""
    return f"{PREFIX}/{alias}.{setting}"


def app_key(setting: str) -> str:
    """``argocd-image-updater.argoproj.io/<setting>`` (application-wide)."""
    return f"{PREFIX}/{setting}"


@dataclass(frozen=True, slots=True)
class SettingKeys:
    """The annotation keys holding the update settings of one scope."""

    allow_tags: str
    ignore_tags: str
    force_update: str
    update_strategy: str
    pull_secret: str
    platforms: str | None
    """Only images have a platforms key; application-wide there is none."""
    allow_downgrade: str
    pin_digest: str
    min_age: str
    min_age_from: str


def setting_keys(alias: str = "") -> SettingKeys:
    """Application-wide keys for ``alias == ""``, per-image keys otherwise (alias verbatim)."""
    if not alias:
        return SettingKeys(
            allow_tags=app_key("allow-tags"),
            ignore_tags=app_key("ignore-tags"),
            force_update=app_key("force-update"),
            update_strategy=app_key("update-strategy"),
            pull_secret=app_key("pull-secret"),
            platforms=None,
            allow_downgrade=app_key("allow-downgrade"),
            pin_digest=app_key("pin-digest"),
            min_age=app_key("min-age"),
            min_age_from=app_key("min-age-from"),
        )
    return SettingKeys(
        allow_tags=image_key(alias, "allow-tags"),
        ignore_tags=image_key(alias, "ignore-tags"),
        force_update=image_key(alias, "force-update"),
        update_strategy=image_key(alias, "update-strategy"),
        pull_secret=image_key(alias, "pull-secret"),
        platforms=image_key(alias, "platforms"),
        allow_downgrade=image_key(alias, "allow-downgrade"),
        pin_digest=image_key(alias, "pin-digest"),
        min_age=image_key(alias, "min-age"),
        min_age_from=image_key(alias, "min-age-from"),
    )


def _go_bool(key: str, value: str, what: str = "force update") -> bool:
    text = value.strip()
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    raise AnnotationError(
        f"error parsing {what} settings: annotation {key}: {value!r} is not a boolean; "
        "use true or false"
    )


def annotation_field(app: Application, key: str) -> str:
    """``Application <namespace>/<name> annotation <key>``: names where a setting is set."""
    return f"Application {app.namespace}/{app.name} annotation {key}"


def _located(app: Application, settings: UpdateSettings, keys: dict[str, str]) -> UpdateSettings:
    """``settings`` with each set field located at the annotation it was read from."""
    origins = {
        name: annotation_field(app, key)
        for name, key in keys.items()
        if getattr(settings, name) is not None
    }
    return replace(settings, origins=MappingProxyType(origins))


def _trimmed(annotations: Mapping[str, str], key: str) -> str | None:
    """The trimmed value, ``None`` when absent or blank."""
    value = annotations.get(key)
    if value is None:
        return None
    value = value.strip()
    return value or None


# --- useAnnotations reading -------------------------------------------------------------------


def read_update_settings(app: Application, alias: str = "") -> UpdateSettings | None:
    """The settings of one scope (application-wide for ``alias == ""``); ``None`` if none set."""
    keys = setting_keys(alias)
    ann = app.annotations
    force: bool | None = None
    if keys.force_update in ann:
        force = _go_bool(keys.force_update, ann[keys.force_update])
    ignore: tuple[str, ...] | None = None
    if keys.ignore_tags in ann:
        ignore = tuple(t.strip() for t in ann[keys.ignore_tags].split(","))
    platforms: tuple[str, ...] | None = None
    if keys.platforms is not None and keys.platforms in ann:
        items = tuple(p.strip() for p in ann[keys.platforms].split(",") if p.strip())
        platforms = items or None
    allow_downgrade: bool | None = None
    if keys.allow_downgrade in ann:
        allow_downgrade = _go_bool(keys.allow_downgrade, ann[keys.allow_downgrade], "downgrade")
    pin_digest: bool | None = None
    if keys.pin_digest in ann:
        pin_digest = _go_bool(keys.pin_digest, ann[keys.pin_digest], "digest pinning")
    settings = UpdateSettings(
        strategy=_trimmed(ann, keys.update_strategy),
        force_update=force,
        allow_tags=_trimmed(ann, keys.allow_tags),
        ignore_tags=ignore,
        pull_secret=_trimmed(ann, keys.pull_secret),
        platforms=platforms,
        allow_downgrade=allow_downgrade,
        pin_digest=pin_digest,
        min_age=_trimmed(ann, keys.min_age),
        min_age_from=_trimmed(ann, keys.min_age_from),
    )
    if settings.is_empty:
        return None
    located = {
        "strategy": keys.update_strategy,
        "force_update": keys.force_update,
        "allow_tags": keys.allow_tags,
        "ignore_tags": keys.ignore_tags,
        "pull_secret": keys.pull_secret,
        "allow_downgrade": keys.allow_downgrade,
        "pin_digest": keys.pin_digest,
        "min_age": keys.min_age,
        "min_age_from": keys.min_age_from,
    }
    if keys.platforms is not None:
        located["platforms"] = keys.platforms
    return _located(app, settings, located)


def read_manifest_target(app: Application, alias: str) -> ManifestTarget | None:
    """Helm / Kustomize targets of one alias; ``None`` when no (non-blank) key is set."""
    ann = app.annotations
    kustomize = _trimmed(ann, image_key(alias, "kustomize.image-name"))
    name = _trimmed(ann, image_key(alias, "helm.image-name"))
    tag = _trimmed(ann, image_key(alias, "helm.image-tag"))
    spec = _trimmed(ann, image_key(alias, "helm.image-spec"))
    helm = HelmTarget(name, tag, spec) if (name or tag or spec) else None
    yaml = yaml_target(ann, alias)
    if helm is None and kustomize is None and yaml is None:
        return None
    if helm is not None and kustomize is not None:
        raise AnnotationError(
            f"both helm and kustomize manifest targets configured for alias {alias!r}: "
            f"annotation {image_key(alias, 'kustomize.image-name')}={kustomize!r} and "
            f"{image_key(alias, 'helm.*')} annotations; keep only the one matching the "
            "application's source type"
        )
    return ManifestTarget(
        helm=helm,
        kustomize=KustomizeTarget(kustomize) if kustomize is not None else None,
        yaml=yaml,
    )


def yaml_target(ann: Mapping[str, str], alias: str) -> YamlTarget | None:
    """``<alias>.yaml.kind`` and ``<alias>.yaml.path``: a kind holding a pod spec, for the
    ``directory`` write-back target; ``None`` when neither is set."""
    kind = _trimmed(ann, image_key(alias, "yaml.kind"))
    path = _trimmed(ann, image_key(alias, "yaml.path"))
    if kind is None and path is None:
        return None
    if kind is None or path is None:
        raise AnnotationError(
            f"annotations {image_key(alias, 'yaml.kind')} and {image_key(alias, 'yaml.path')} "
            "are set together: the kind of the objects and the dotted path of their pod spec"
        )
    return YamlTarget(kind, path)


def split_targets(value: str | None) -> tuple[str | None, tuple[str, ...]]:
    """``write-back-target``: one target, or several separated by ``,``; the first and the
    others (blanks dropped)."""
    if value is None:
        return None, ()
    parts = [p.strip() for p in value.split(",") if p.strip()]
    return (parts[0], tuple(parts[1:])) if parts else (None, ())


@dataclass(frozen=True, slots=True)
class AnnotatedImage:
    """One ``image-list`` entry with its per-alias settings and targets (``None`` if unset)."""

    alias: str
    image: str
    settings: UpdateSettings | None = None
    target: ManifestTarget | None = None


def _who(app: Application) -> str:
    return f"app {app.namespace}/{app.name}"


def read_image_list(app: Application) -> list[AnnotatedImage]:
    """The images of the ``image-list`` annotation with their per-alias annotations."""
    try:
        entries = parse_image_list(app.annotations.get(IMAGE_LIST_KEY))
    except ImageListError as exc:
        raise AnnotationError(f"{exc} (on {_who(app)})") from None
    images: list[AnnotatedImage] = []
    for entry in entries:
        settings: UpdateSettings | None = None
        target: ManifestTarget | None = None
        if entry.alias:
            try:
                settings = read_update_settings(app, entry.alias)
            except AnnotationError as exc:
                raise AnnotationError(
                    f"parse common update settings for alias {entry.alias!r}: {exc}"
                ) from None
            try:
                target = read_manifest_target(app, entry.alias)
            except AnnotationError as exc:
                raise AnnotationError(
                    f"parse manifest targets for alias {entry.alias!r}: {exc}"
                ) from None
        images.append(AnnotatedImage(entry.alias, entry.image, settings, target))
    return images


def read_write_back(app: Application) -> WriteBackLayer | None:
    """The write-back annotations; ``None`` when none is set (blank values count as unset)."""
    ann = app.annotations
    method = _trimmed(ann, WRITE_BACK_METHOD_KEY)
    target, more = split_targets(_trimmed(ann, WRITE_BACK_TARGET_KEY))
    branch = _trimmed(ann, GIT_BRANCH_KEY)
    repository = _trimmed(ann, GIT_REPOSITORY_KEY)
    git: GitSettings | None = None
    if target is not None or branch is not None or repository is not None:
        git = GitSettings(
            repository=repository, branch=branch, write_back_target=target, more_targets=more
        )
    if method is None and git is None:
        return None
    return WriteBackLayer(method=method, git=git)


# --- v0.x reading -----------------------------------------------------------------------------


def _split_image_list_v0(value: str) -> list[tuple[str, str]]:
    """Items trimmed, empties dropped; alias and image around the first ``=`` kept verbatim."""
    out: list[tuple[str, str]] = []
    for raw in value.split(","):
        item = raw.strip()
        if not item:
            continue
        alias, sep, image = item.partition("=")
        out.append((alias, image) if sep else ("", item))
    return out


def _key_v0(ann: Mapping[str, str], alias_key: str, setting: str) -> str:
    """The per-image key if it exists (even blank), else the application-wide one."""
    key = image_key(alias_key, setting)
    return key if key in ann else app_key(setting)


def _settings_v0(app: Application, alias: str, warnings: list[str]) -> UpdateSettings:
    ann = app.annotations
    key = annotation_alias_key(alias)
    keys = {
        name: _key_v0(ann, key, setting)
        for name, setting in (
            ("strategy", "update-strategy"),
            ("force_update", "force-update"),
            ("allow_tags", "allow-tags"),
            ("ignore_tags", "ignore-tags"),
            ("pull_secret", "pull-secret"),
            ("allow_downgrade", "allow-downgrade"),
            ("pin_digest", "pin-digest"),
            ("min_age", "min-age"),
            ("min_age_from", "min-age-from"),
        )
    }
    keys["platforms"] = image_key(key, "platforms")
    strategy = ann.get(keys["strategy"])
    force = ann.get(keys["force_update"])
    allow = ann.get(keys["allow_tags"])
    if not allow:
        tag_match = ann.get(image_key(key, "tag-match"))
        if tag_match is not None:
            warnings.append(TAG_MATCH_DEPRECATED)
            allow = tag_match
            keys["allow_tags"] = image_key(key, "tag-match")
    ignore = ann.get(keys["ignore_tags"])
    pull_secret = ann.get(keys["pull_secret"])
    platforms = ann.get(keys["platforms"])
    downgrade = ann.get(keys["allow_downgrade"])
    pin = ann.get(keys["pin_digest"])
    settings = UpdateSettings(
        strategy=strategy or None,
        force_update=(force == "true") if force is not None else None,
        allow_tags=allow or None,
        ignore_tags=(
            tuple(t.strip() for t in ignore.strip().split(",") if t.strip()) if ignore else None
        ),
        pull_secret=pull_secret or None,
        platforms=(
            tuple(p.strip() for p in platforms.split(",") if p.strip()) or None
            if platforms
            else None
        ),
        allow_downgrade=(downgrade == "true") if downgrade is not None else None,
        pin_digest=(pin.strip() == "true") if pin is not None else None,
        min_age=_trimmed(ann, keys["min_age"]),
        min_age_from=_trimmed(ann, keys["min_age_from"]),
    )
    return _located(app, settings, keys)


settings_v0 = _settings_v0
"""The v0.x reading of one alias's settings (also used for ``chart-list`` entries)."""


def _target_v0(ann: Mapping[str, str], alias: str) -> ManifestTarget | None:
    if not alias:
        return None
    key = annotation_alias_key(alias)
    spec = _trimmed(ann, image_key(key, "helm.image-spec"))
    name = _trimmed(ann, image_key(key, "helm.image-name"))
    tag = _trimmed(ann, image_key(key, "helm.image-tag"))
    kustomize = _trimmed(ann, image_key(key, "kustomize.image-name"))
    helm: HelmTarget | None = None
    if spec is not None:
        helm = HelmTarget(spec=spec)
    elif name is not None or tag is not None:
        helm = HelmTarget(name=name, tag=tag)
    yaml = yaml_target(ann, key)
    if helm is None and kustomize is None and yaml is None:
        return None
    return ManifestTarget(
        helm=helm,
        kustomize=KustomizeTarget(kustomize) if kustomize is not None else None,
        yaml=yaml,
    )


def config_from_annotations_v0(app: Application) -> tuple[AppUpdateConfig, list[str]]:
    """The whole update configuration of an annotated app, read like the v0.x releases.

    Raises :class:`AnnotationError` when the app has no ``image-list`` annotation or its
    write-back annotations are unusable. An empty image list gives no images and a warning.
    """
    ann = app.annotations
    value = ann.get(IMAGE_LIST_KEY)
    if value is None:
        raise AnnotationError(
            f"{IMAGE_LIST_KEY} annotation not found on {_who(app)}: add it with a "
            "comma-separated list of [<alias>=]<image>[:<constraint>]"
        )
    warnings: list[str] = []
    images = tuple(
        ImageSpec(
            alias=alias,
            image=image,
            settings=_settings_v0(app, alias, warnings),
            target=_target_v0(ann, alias),
            origin=annotation_field(app, IMAGE_LIST_KEY),
        )
        for alias, image in _split_image_list_v0(value)
    )
    if not images:
        warnings.append(f"{IMAGE_LIST_KEY} annotation is empty on {_who(app)}: {value!r}")
    layer = read_write_back(app)
    write_back = WriteBack.from_layers(layer)
    try:
        write_back.check(qualified_secret=True)
    except WriteBackError as exc:
        raise AnnotationError(
            f"invalid write-back annotations on {_who(app)}: {exc} "
            f"({WRITE_BACK_METHOD_KEY}={ann.get(WRITE_BACK_METHOD_KEY)!r}, "
            f"{GIT_BRANCH_KEY}={ann.get(GIT_BRANCH_KEY)!r})"
        ) from None
    return AppUpdateConfig(app=app, images=images, write_back=write_back, origin=LEGACY_ORIGIN), (
        warnings
    )
