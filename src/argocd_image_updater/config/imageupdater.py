"""The ``ImageUpdater`` custom resource (``argocd-image-updater.argoproj.io/v1alpha1``).

Field names are those of the CRD (camelCase). The models validate what the CRD validates
(types, patterns, lengths, list-map keys and its CEL rules, with the CRD's messages) so that a CR
read from a file fails the same way the API server would reject it. Settings fields have no
defaults: ``None`` means "inherit from the enclosing scope".

:func:`parse_image_updater` turns a mapping into an :class:`ImageUpdater` or raises
:class:`ImageUpdaterError` listing every problem with its field path, e.g.
``spec.applicationRefs[0].images[1].alias: 'org/app' does not match ^[a-zA-Z0-9][a-zA-Z0-9-._]*$``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails, PydanticCustomError

from argocd_image_updater.config.durations import DurationError, parse_go_duration
from argocd_image_updater.config.labels import Requirement
from argocd_image_updater.config.notifications import Notifications
from argocd_image_updater.model import update_config as uc
from argocd_image_updater.model.pr_hosts import ONE_HOST_MESSAGE, PR_HOST_KEYS, normalize_labels

GROUP: Final = "argocd-image-updater.argoproj.io"
API_VERSION: Final = f"{GROUP}/v1alpha1"
KIND: Final = "ImageUpdater"

ALIAS_PATTERN: Final = r"^[a-zA-Z0-9][a-zA-Z0-9-._]*$"
METHOD_PATTERN: Final = r"^(argocd|git|git:[a-zA-Z0-9][a-zA-Z0-9-._/:]*)$"
_ALIAS_RE: Final = re.compile(ALIAS_PATTERN)
_METHOD_RE: Final = re.compile(METHOD_PATTERN)

MSG_IMAGES_REQUIRED: Final = (
    "Either useAnnotations must be true, or images must be provided with at least one item"
)
MSG_ONE_TARGET: Final = (
    "Exactly one of helm, kustomize, or plugin must be specified within manifestTargets "
    "if the block is present."
)
MSG_PLUGIN_NAME: Final = "At least one of spec or name must be specified in plugin target."
MSG_ONE_PROVIDER: Final = ONE_HOST_MESSAGE
MSG_VERIFICATION: Final = (
    "at least one verification method (cosignKey or keyless) is required when verification is "
    "enabled"
)


class ImageUpdaterError(ValueError):
    """An invalid ImageUpdater resource; ``errors`` lists ``<field path>: <problem>`` lines."""

    def __init__(self, message: str, errors: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.errors: tuple[str, ...] = tuple(errors)


def _invalid(detail: str, subpath: str = "") -> PydanticCustomError:
    """A validation error; ``subpath`` extends the field path of the failing model."""
    if subpath:
        return PydanticCustomError(
            "invalid_at", "{subpath}: {detail}", {"subpath": subpath, "detail": detail}
        )
    return PydanticCustomError("invalid", "{detail}", {"detail": detail})


class _Model(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        strict=True,
    )


# --- settings ----------------------------------------------------------------------------------


class CommonUpdateSettings(_Model):
    update_strategy: str | None = None
    force_update: bool | None = None
    allow_tags: str | None = None
    ignore_tags: list[str] | None = None
    pull_secret: str | None = None
    platforms: list[str] | None = None
    allow_downgrade: bool | None = None

    def to_settings(self, where: str = "") -> uc.UpdateSettings:
        """The settings; ``where`` (e.g. ``ImageUpdater ns/name field spec.commonUpdateSettings``)
        locates this block, so that each value can be traced back to its field."""
        settings = uc.UpdateSettings(
            strategy=self.update_strategy,
            force_update=self.force_update,
            allow_tags=self.allow_tags,
            ignore_tags=tuple(self.ignore_tags) if self.ignore_tags is not None else None,
            pull_secret=self.pull_secret,
            platforms=tuple(self.platforms) if self.platforms is not None else None,
            allow_downgrade=self.allow_downgrade,
        )
        return settings.with_origins(where) if where else settings


def _settings(cs: CommonUpdateSettings | None, where: str = "") -> uc.UpdateSettings | None:
    return cs.to_settings(where) if cs is not None else None


# --- manifest targets --------------------------------------------------------------------------


class HelmTarget(_Model):
    name: str | None = None
    tag: str | None = None
    spec: str | None = None


class KustomizeTarget(_Model):
    name: str


class PluginTarget(_Model):
    name: str | None = Field(default=None, min_length=1, max_length=253)
    tag: str | None = Field(default=None, min_length=1, max_length=253)
    spec: str | None = Field(default=None, min_length=1, max_length=253)

    @model_validator(mode="after")
    def _name_or_spec(self) -> PluginTarget:
        if self.spec is None and self.name is None:
            raise _invalid(MSG_PLUGIN_NAME)
        return self


class ManifestTarget(_Model):
    helm: HelmTarget | None = None
    kustomize: KustomizeTarget | None = None
    plugin: PluginTarget | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ManifestTarget:
        if sum(t is not None for t in (self.helm, self.kustomize, self.plugin)) != 1:
            raise _invalid(MSG_ONE_TARGET)
        return self

    def to_target(self) -> uc.ManifestTarget:
        return uc.ManifestTarget(
            helm=(
                uc.HelmTarget(self.helm.name, self.helm.tag, self.helm.spec)
                if self.helm is not None
                else None
            ),
            kustomize=(
                uc.KustomizeTarget(self.kustomize.name) if self.kustomize is not None else None
            ),
            plugin=(
                uc.PluginTarget(self.plugin.name, self.plugin.tag, self.plugin.spec)
                if self.plugin is not None
                else None
            ),
        )


# --- write-back --------------------------------------------------------------------------------


API_URL_PATTERN: Final = r"^https?://[^\s/?#@]+(/[^\s?#]*)?$"


class ProviderConfig(_Model):
    """``github: {}``, ``gitea: {apiURL: https://git.example.com/api/v1}``, …: the host's API
    base, when it is not the one derived from the repository URL (``model.pr_hosts``)."""

    api_url: str | None = Field(
        default=None, alias="apiURL", max_length=2048, pattern=API_URL_PATTERN
    )


def normalize_pr_labels(labels: Sequence[str] | None) -> tuple[str, ...] | None:
    """Trim labels, drop blanks and duplicates (order kept); ``None`` when none remain."""
    return normalize_labels(labels) or None


PullRequestHosts = create_model(
    "PullRequestHosts",
    __base__=_Model,
    **{key: (ProviderConfig | None, None) for key in PR_HOST_KEYS},  # type: ignore[call-overload]
)
"""One optional object per pull request host of ``model.pr_hosts`` (``github: {}``, …)."""


class PullRequest(PullRequestHosts):
    labels: list[str] | None = Field(default=None, max_length=100)

    @field_validator("labels")
    @classmethod
    def _label_lengths(cls, labels: list[str] | None) -> list[str] | None:
        for i, label in enumerate(labels or ()):
            if not 1 <= len(label) <= 255:
                raise _invalid(f"label {label!r} must be 1-255 characters long", f"[{i}]")
        return labels

    @property
    def providers(self) -> tuple[str, ...]:
        """The keys of the hosts that are set."""
        return tuple(key for key in PR_HOST_KEYS if getattr(self, key) is not None)

    @model_validator(mode="after")
    def _one_provider(self) -> PullRequest:
        if len(self.providers) != 1:
            raise _invalid(MSG_ONE_PROVIDER)
        return self

    @property
    def normalized_labels(self) -> tuple[str, ...] | None:
        return normalize_pr_labels(self.labels)

    def to_settings(self) -> uc.PullRequestSettings:
        provider = self.providers[0]
        host: ProviderConfig = getattr(self, provider)
        return uc.PullRequestSettings(
            provider=provider, labels=self.normalized_labels or (), api_url=host.api_url
        )


class GitConfig(_Model):
    repository: str | None = None
    branch: str | None = None
    write_back_target: str | None = None
    pull_request: PullRequest | None = None

    @model_validator(mode="after")
    def _branch_format(self) -> GitConfig:
        if self.branch is None:
            return self
        if self.branch.strip().count(":") > 1:
            raise _invalid(
                f"invalid format for git-branch: '{self.branch}' has more than one ':'; use "
                "<branch>, <base>:<write-branch-template> or :<write-branch-template>",
                "branch",
            )
        if self.pull_request is not None and ":" in self.branch:
            raise _invalid(
                f"pullRequest mode does not support colon branch format '{self.branch}': set "
                "the branch to the base branch only, the pull request branch is generated",
                "branch",
            )
        return self

    def to_settings(self) -> uc.GitSettings:
        return uc.GitSettings(
            repository=self.repository,
            branch=self.branch,
            write_back_target=self.write_back_target,
            pull_request=self.pull_request.to_settings() if self.pull_request else None,
        )


class WriteBackConfig(_Model):
    method: str | None = None
    git_config: GitConfig | None = None

    @field_validator("method")
    @classmethod
    def _method_pattern(cls, method: str | None) -> str | None:
        if method is not None and not _METHOD_RE.match(method):
            raise _invalid(
                f"{method!r} does not match {METHOD_PATTERN}: use argocd, git, git:repocreds, "
                "git:secret:<name> or git:secret:<namespace>/<name>"
            )
        return method

    def to_layer(self) -> uc.WriteBackLayer:
        return uc.WriteBackLayer(
            method=self.method,
            git=self.git_config.to_settings() if self.git_config is not None else None,
        )


def _layer(wbc: WriteBackConfig | None) -> uc.WriteBackLayer | None:
    return wbc.to_layer() if wbc is not None else None


# --- verification ------------------------------------------------------------------------------


class SecretRef(_Model):
    secret_name: str
    key: str


class Keyless(_Model):
    """Keyless (Fulcio certificate) signatures: who must have signed, as cosign's
    ``--certificate-identity(-regexp)`` and ``--certificate-oidc-issuer(-regexp)``."""

    issuer: str = Field(min_length=1)
    identity: str = Field(min_length=1)


class ConfigMapRef(_Model):
    config_map_name: str = Field(min_length=1)
    key: str = Field(min_length=1)


class ImagesVerification(_Model):
    enabled: bool = True
    cosign_key: SecretRef | None = None
    cosign_repository: str | None = Field(default=None, min_length=1)
    keyless: Keyless | None = None
    trusted_root: ConfigMapRef | None = None

    @model_validator(mode="after")
    def _needs_method(self) -> ImagesVerification:
        if self.enabled and self.cosign_key is None and self.keyless is None:
            raise _invalid(MSG_VERIFICATION)
        return self

    def to_verification(self) -> uc.Verification:
        key, keyless, root = self.cosign_key, self.keyless, self.trusted_root
        return uc.Verification(
            enabled=self.enabled,
            cosign_secret_name=key.secret_name if key is not None else None,
            cosign_key=key.key if key is not None else None,
            cosign_repository=self.cosign_repository,
            keyless_issuer=keyless.issuer if keyless is not None else None,
            keyless_identity=keyless.identity if keyless is not None else None,
            trusted_root_config_map=root.config_map_name if root is not None else None,
            trusted_root_key=root.key if root is not None else None,
        )


def _verification(v: ImagesVerification | None) -> uc.Verification | None:
    return v.to_verification() if v is not None else None


# --- selection ---------------------------------------------------------------------------------


class LabelSelectorRequirement(_Model):
    key: str
    operator: str
    values: list[str] | None = None

    def to_requirement(self) -> Requirement:
        return Requirement(self.key, self.operator, tuple(self.values or ()))


class LabelSelector(_Model):
    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        return tuple(e.to_requirement() for e in self.match_expressions or ())


class ImageConfig(_Model):
    alias: str
    image_name: str
    common_update_settings: CommonUpdateSettings | None = None
    manifest_targets: ManifestTarget | None = None
    images_verification: ImagesVerification | None = None

    @field_validator("alias")
    @classmethod
    def _alias_pattern(cls, alias: str) -> str:
        if not _ALIAS_RE.match(alias):
            raise _invalid(
                f"{alias!r} does not match {ALIAS_PATTERN}: use letters, digits, '-', '.' "
                "and '_' (no '/')"
            )
        return alias

    def to_spec(
        self,
        ref_settings: uc.UpdateSettings,
        ref_verification: uc.Verification | None,
        where: str = "",
    ) -> uc.ImageSpec:
        """The image with its settings merged over the ref-level ones; ``where`` locates the
        image entry (``ImageUpdater ns/name field spec.applicationRefs[0].images[1]``)."""
        block = f"{where}.commonUpdateSettings" if where else ""
        return uc.ImageSpec(
            alias=self.alias,
            image=self.image_name,
            settings=ref_settings.merged(_settings(self.common_update_settings, block)),
            target=self.manifest_targets.to_target() if self.manifest_targets else None,
            verification=uc.Verification.merge(
                ref_verification, _verification(self.images_verification)
            ),
            origin=where,
        )


class ApplicationRef(_Model):
    name_pattern: str
    label_selectors: LabelSelector | None = None
    use_annotations: bool = False
    common_update_settings: CommonUpdateSettings | None = None
    write_back_config: WriteBackConfig | None = None
    images: list[ImageConfig] | None = None
    images_verification: ImagesVerification | None = None

    @model_validator(mode="after")
    def _images_or_annotations(self) -> ApplicationRef:
        if not self.use_annotations and not self.images:
            raise _invalid(MSG_IMAGES_REQUIRED)
        seen: set[str] = set()
        for i, image in enumerate(self.images or ()):
            if image.alias in seen:
                raise _invalid(
                    f"duplicate alias '{image.alias}': every image of an applicationRef needs "
                    "its own alias",
                    f"images[{i}].alias",
                )
            seen.add(image.alias)
        return self


class ObjectMeta(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="ignore", alias_generator=to_camel, populate_by_name=True, strict=True
    )

    name: str = Field(min_length=1)
    namespace: str = ""
    generation: int | None = None
    resource_version: str | None = None
    uid: str | None = None


class ImageUpdaterSpec(_Model):
    application_refs: list[ApplicationRef] = Field(min_length=1)
    common_update_settings: CommonUpdateSettings | None = None
    write_back_config: WriteBackConfig | None = None
    images_verification: ImagesVerification | None = None
    notifications: Notifications | None = None
    ship_timeout: str | None = None
    """How long a written change may take to be live before ``ImageNotShipped`` (Go duration)."""

    @field_validator("ship_timeout")
    @classmethod
    def _ship_timeout(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            parsed = parse_go_duration(value)
        except DurationError as err:
            raise _invalid(str(err)) from None
        if parsed.total_seconds() <= 0:
            raise _invalid(f"'{value}' is not a positive duration; use e.g. 30m or 2h")
        return value

    @model_validator(mode="after")
    def _unique_patterns(self) -> ImageUpdaterSpec:
        seen: set[str] = set()
        for i, ref in enumerate(self.application_refs):
            if ref.name_pattern in seen:
                raise _invalid(
                    f"duplicate value '{ref.name_pattern}': each namePattern may appear only "
                    "once in an ImageUpdater; merge the two applicationRefs",
                    f"applicationRefs[{i}].namePattern",
                )
            seen.add(ref.name_pattern)
        return self

    @property
    def settings(self) -> uc.UpdateSettings | None:
        return _settings(self.common_update_settings)


class ImageUpdater(_Model):
    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta
    spec: ImageUpdaterSpec
    status: dict[str, Any] | None = None

    @field_validator("api_version")
    @classmethod
    def _api_version(cls, value: str | None) -> str | None:
        if value is not None and value != API_VERSION:
            raise _invalid(f"'{value}' is not supported; use {API_VERSION}")
        return value

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str | None) -> str | None:
        if value is not None and value != KIND:
            raise _invalid(f"'{value}' is not an {KIND}; use kind: {KIND}")
        return value

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    @property
    def origin(self) -> str:
        """``imageupdater <namespace>/<name>``: where the configuration came from."""
        return f"imageupdater {self.namespace}/{self.name}"

    def field(self, path: str) -> str:
        """``ImageUpdater <namespace>/<name> field <path>``: names a field of this resource."""
        return f"ImageUpdater {self.namespace}/{self.name} field {path}"

    def ref_path(self, ref: ApplicationRef) -> str:
        """``spec.applicationRefs[<i>]`` of ``ref`` (namePatterns are unique)."""
        for i, candidate in enumerate(self.spec.application_refs):
            if candidate is ref or candidate.name_pattern == ref.name_pattern:
                return f"spec.applicationRefs[{i}]"
        return "spec.applicationRefs[?]"


# --- conversions used by selection -------------------------------------------------------------


def ref_settings(cr: ImageUpdater, ref: ApplicationRef) -> uc.UpdateSettings:
    """The spec-level settings merged with the ref's, each value knowing its field."""
    return uc.UpdateSettings.merge(
        _settings(cr.spec.common_update_settings, cr.field("spec.commonUpdateSettings")),
        _settings(ref.common_update_settings, cr.field(f"{cr.ref_path(ref)}.commonUpdateSettings")),
    )


def image_specs(
    cr: ImageUpdater,
    ref: ApplicationRef,
    settings: uc.UpdateSettings,
    verification: uc.Verification | None,
) -> list[uc.ImageSpec]:
    """The images of ``ref`` with their settings merged over ``settings``."""
    base = cr.ref_path(ref)
    return [
        image.to_spec(settings, verification, cr.field(f"{base}.images[{i}]"))
        for i, image in enumerate(ref.images or ())
    ]


def ref_write_back(cr: ImageUpdater, ref: ApplicationRef) -> uc.WriteBack:
    """The spec-level write-back configuration merged with the ref's."""
    return uc.WriteBack.from_layers(
        _layer(cr.spec.write_back_config), _layer(ref.write_back_config)
    )


def ref_verification(
    cr: ImageUpdater, ref: ApplicationRef, *, include_spec: bool = True
) -> uc.Verification | None:
    """The ref-level verification policy (merged over the spec's unless ``include_spec=False``)."""
    spec_level = _verification(cr.spec.images_verification) if include_spec else None
    return uc.Verification.merge(spec_level, _verification(ref.images_verification))


# --- parsing -----------------------------------------------------------------------------------

_TYPE_MESSAGES: Final[Mapping[str, str]] = {
    "string_type": "expected a string",
    "bool_type": "expected true or false",
    "int_type": "expected an integer",
    "list_type": "expected a list",
    "dict_type": "expected an object",
    "model_type": "expected an object",
    "model_attributes_type": "expected an object",
}


def _path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _describe(error: ErrorDetails) -> str:
    loc: list[int | str] = list(error["loc"])
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "invalid_at":
        sub = str(ctx["subpath"])
        base = _path(loc)
        joined = f"{base}{sub}" if sub.startswith("[") else f"{base}.{sub}" if base else sub
        return f"{joined}: {ctx['detail']}"
    where = _path(loc) or "<root>"
    if kind == "invalid":
        return f"{where}: {ctx['detail']}"
    if kind == "missing":
        return f"{where}: required field is missing"
    if kind == "extra_forbidden" and loc == ["spec", "namespace"]:
        return (
            f"{where}: field was removed: Applications are looked up in the ImageUpdater's own "
            "metadata.namespace; delete spec.namespace and create the resource there"
        )
    if kind == "extra_forbidden":
        return f"{where}: unknown field; remove it or check its spelling against the CRD"
    if kind in _TYPE_MESSAGES:
        value = error.get("input")
        return f"{where}: {_TYPE_MESSAGES[kind]}, got {type(value).__name__} {value!r}"
    return f"{where}: {error['msg']}"


def describe_errors(exc: ValidationError) -> list[str]:
    """``<field path>: <problem>`` for every error of a validation."""
    return [_describe(e) for e in exc.errors(include_url=False)]


def parse_image_updater(obj: Mapping[str, Any]) -> ImageUpdater:
    """Validate an ImageUpdater object (as read from the API or a YAML file)."""
    if not isinstance(obj, Mapping):
        raise ImageUpdaterError(
            f"ImageUpdater: expected an object, got {type(obj).__name__}; pass the resource "
            f"with apiVersion {API_VERSION}, kind {KIND}, metadata and spec"
        )
    meta = obj.get("metadata")
    who = "ImageUpdater"
    if isinstance(meta, Mapping) and isinstance(meta.get("name"), str):
        ns = meta.get("namespace")
        who = f"ImageUpdater '{ns}/{meta['name']}'" if isinstance(ns, str) and ns else who
        if who == "ImageUpdater":
            who = f"ImageUpdater '{meta['name']}'"
    try:
        return ImageUpdater.model_validate(dict(obj))
    except ValidationError as exc:
        errors = describe_errors(exc)
        raise ImageUpdaterError(
            f"invalid {who}: " + "; ".join(errors) + " (fix the resource and apply it again)",
            errors,
        ) from None
