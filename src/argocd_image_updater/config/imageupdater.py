"""The ``ImageUpdater`` custom resource (``argocd-image-updater.argoproj.io/v1alpha1``).

Field names are those of the CRD (camelCase). The models validate what the CRD validates
(types, patterns, lengths, list-map keys and its CEL rules, with the CRD's messages) so that a CR
read from a file fails the same way the API server would reject it. Settings fields have no
defaults: ``None`` means "inherit from the enclosing scope".

:func:`parse_image_updater` turns a mapping into an :class:`ImageUpdater` or raises
:class:`ImageUpdaterError` listing every problem with its field path, e.g.
``spec.applicationRefs[0].images[1].alias: 'org/app' does not match ^[a-zA-Z0-9][a-zA-Z0-9-._]*$``.
The write-back blocks are in ``config.imageupdater_writeback``; the models' base and the error
descriptions in ``config.cr_validation``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from argocd_image_updater.config.cr_validation import (
    CRModel,
    describe_errors,
    invalid,
)
from argocd_image_updater.config.durations import DurationError, parse_go_duration
from argocd_image_updater.config.image_templates import (
    ALIAS_PATTERN,
    check_template,
    is_template,
)
from argocd_image_updater.config.imageupdater_writeback import (
    ManifestTarget,
    WriteBackConfig,
)
from argocd_image_updater.config.labels import Requirement
from argocd_image_updater.config.notifications import Notifications
from argocd_image_updater.kits.gotemplate import TemplateError
from argocd_image_updater.model import update_config as uc
from argocd_image_updater.model.chart import ChartSpec
from argocd_image_updater.model.resources import METADATA_READ

GROUP: Final = "argocd-image-updater.argoproj.io"
API_VERSION: Final = f"{GROUP}/v1alpha1"
KIND: Final = "ImageUpdater"

_ALIAS_RE: Final = re.compile(ALIAS_PATTERN)

MSG_IMAGES_REQUIRED: Final = (
    "Either useAnnotations must be true, or images or charts must be provided with at least "
    "one item"
)
MSG_VERIFICATION: Final = (
    "at least one verification method (cosignKey or keyless) is required when verification is "
    "enabled"
)


class ImageUpdaterError(ValueError):
    """An invalid ImageUpdater resource; ``errors`` lists ``<field path>: <problem>`` lines."""

    def __init__(self, message: str, errors: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.errors: tuple[str, ...] = tuple(errors)


# --- settings ----------------------------------------------------------------------------------


class CommonUpdateSettings(CRModel):
    update_strategy: str | None = None
    force_update: bool | None = None
    allow_tags: str | None = None
    ignore_tags: list[str] | None = None
    pull_secret: str | None = None
    platforms: list[str] | None = None
    allow_downgrade: bool | None = None
    pin_digest: bool | None = None
    min_age: str | None = None
    min_age_from: str | None = None

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
            pin_digest=self.pin_digest,
            min_age=self.min_age,
            min_age_from=self.min_age_from,
        )
        return settings.with_origins(where) if where else settings


def settings_of(cs: CommonUpdateSettings | None, where: str = "") -> uc.UpdateSettings | None:
    return cs.to_settings(where) if cs is not None else None


# --- verification ------------------------------------------------------------------------------


class SecretRef(CRModel):
    secret_name: str
    key: str


class Keyless(CRModel):
    """Keyless (Fulcio certificate) signatures: who must have signed, as cosign's
    ``--certificate-identity(-regexp)`` and ``--certificate-oidc-issuer(-regexp)``."""

    issuer: str = Field(min_length=1)
    identity: str = Field(min_length=1)


class ConfigMapRef(CRModel):
    config_map_name: str = Field(min_length=1)
    key: str = Field(min_length=1)


class ImagesVerification(CRModel):
    enabled: bool = True
    cosign_key: SecretRef | None = None
    cosign_repository: str | None = Field(default=None, min_length=1)
    keyless: Keyless | None = None
    trusted_root: ConfigMapRef | None = None

    @model_validator(mode="after")
    def _needs_method(self) -> ImagesVerification:
        if self.enabled and self.cosign_key is None and self.keyless is None:
            raise invalid(MSG_VERIFICATION)
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


def verification_of(v: ImagesVerification | None) -> uc.Verification | None:
    return v.to_verification() if v is not None else None


# --- selection ---------------------------------------------------------------------------------


def _template(text: str, name: str) -> str:
    """``text`` when its template (if any) parses; the parse error as this field's error."""
    try:
        return check_template(text, name)
    except TemplateError as err:
        raise invalid(str(err)) from None


class LabelSelectorRequirement(CRModel):
    key: str
    operator: str
    values: list[str] | None = None

    def to_requirement(self) -> Requirement:
        return Requirement(self.key, self.operator, tuple(self.values or ()))


class LabelSelector(CRModel):
    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        return tuple(e.to_requirement() for e in self.match_expressions or ())


class ImageConfig(CRModel):
    alias: str
    image_name: str
    common_update_settings: CommonUpdateSettings | None = None
    manifest_targets: ManifestTarget | None = None
    images_verification: ImagesVerification | None = None

    @field_validator("alias")
    @classmethod
    def _alias_pattern(cls, alias: str) -> str:
        if is_template(alias):  # checked once expanded, per Application
            return _template(alias, "alias")
        if not _ALIAS_RE.match(alias):
            raise invalid(
                f"{alias!r} does not match {ALIAS_PATTERN}: use letters, digits, '-', '.' "
                "and '_' (no '/')"
            )
        return alias

    @field_validator("image_name")
    @classmethod
    def _image_template(cls, image_name: str) -> str:
        return _template(image_name, "imageName")

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
            settings=ref_settings.merged(settings_of(self.common_update_settings, block)),
            target=self.manifest_targets.to_target() if self.manifest_targets else None,
            verification=uc.Verification.merge(
                ref_verification, verification_of(self.images_verification)
            ),
            origin=where,
        )


class ChartConfig(CRModel):
    """A Helm chart or OCI artifact whose version (a source's ``targetRevision``) is managed."""

    alias: str
    chart: str = Field(min_length=1)
    common_update_settings: CommonUpdateSettings | None = None

    @field_validator("alias")
    @classmethod
    def _alias_pattern(cls, alias: str) -> str:
        return ImageConfig._alias_pattern(alias)

    @field_validator("chart")
    @classmethod
    def _chart_template(cls, chart: str) -> str:
        return _template(chart, "chart")

    def to_spec(self, ref_settings: uc.UpdateSettings, where: str = "") -> ChartSpec:
        block = f"{where}.commonUpdateSettings" if where else ""
        return ChartSpec(
            alias=self.alias,
            chart=self.chart,
            settings=ref_settings.merged(settings_of(self.common_update_settings, block)),
            origin=where,
        )


class ApplicationRef(CRModel):
    name_pattern: str
    label_selectors: LabelSelector | None = None
    use_annotations: bool = False
    common_update_settings: CommonUpdateSettings | None = None
    write_back_config: WriteBackConfig | None = None
    images: list[ImageConfig] | None = None
    charts: list[ChartConfig] | None = None
    images_verification: ImagesVerification | None = None

    @model_validator(mode="after")
    def _images_or_annotations(self) -> ApplicationRef:
        if not self.use_annotations and not self.images and not self.charts:
            raise invalid(MSG_IMAGES_REQUIRED)
        seen: set[str] = set()
        entries = [("images", image.alias) for image in self.images or ()]
        entries += [("charts", chart.alias) for chart in self.charts or ()]
        counts = {"images": 0, "charts": 0}
        for kind, alias in entries:
            i = counts[kind]
            counts[kind] += 1
            if alias in seen:
                raise invalid(
                    f"duplicate alias '{alias}': every image and chart of an applicationRef "
                    "needs its own alias",
                    f"{kind}[{i}].alias",
                )
            seen.add(alias)
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


class Hold(CRModel):
    """One entry of ``spec.holds``: keep ``alias`` (``*``: every image) where it is, until
    ``until`` (RFC 3339) when set. Read for each cycle by :func:`config.holds.spec_holds`, which
    turns a time it cannot read into an error of that alias only."""

    alias: str
    until: Any = None
    reason: str | None = None


class ImageUpdaterSpec(CRModel):
    application_refs: list[ApplicationRef] = Field(min_length=1)
    holds: list[Hold] | None = None
    """Manual holds of the images of every selected Application (``config.holds``)."""
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
            raise invalid(str(err)) from None
        if parsed.total_seconds() <= 0:
            raise invalid(f"'{value}' is not a positive duration; use e.g. 30m or 2h")
        return value

    @model_validator(mode="after")
    def _unique_patterns(self) -> ImageUpdaterSpec:
        seen: set[str] = set()
        for i, ref in enumerate(self.application_refs):
            if ref.name_pattern in seen:
                raise invalid(
                    f"duplicate value '{ref.name_pattern}': each namePattern may appear only "
                    "once in an ImageUpdater; merge the two applicationRefs",
                    f"applicationRefs[{i}].namePattern",
                )
            seen.add(ref.name_pattern)
        return self

    @property
    def settings(self) -> uc.UpdateSettings | None:
        return settings_of(self.common_update_settings)


class ImageUpdater(CRModel):
    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta
    spec: ImageUpdaterSpec
    status: dict[str, Any] | None = None

    @field_validator("api_version")
    @classmethod
    def _api_version(cls, value: str | None) -> str | None:
        if value is not None and value != API_VERSION:
            raise invalid(f"'{value}' is not supported; use {API_VERSION}")
        return value

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str | None) -> str | None:
        if value is not None and value != KIND:
            raise invalid(f"'{value}' is not an {KIND}; use kind: {KIND}")
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


# --- parsing -----------------------------------------------------------------------------------


LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"


def compact_image_updater(obj: Any, keep_applied: Callable[[str], bool] | None = None) -> Any:
    """``obj`` (an ImageUpdater as listed) without what nothing reads: ``managedFields`` (a
    tree per field manager, the status writes' included), kubectl's copy of the last applied
    object and the rest of ``metadata`` but what identifies it and its labels and annotations.
    A cycle keeps the listed ImageUpdaters until the next listing. The values kept are the
    same objects; anything malformed is kept as it is for parsing to report. ``keep_applied``:
    keep kubectl's copy when it says so of the copy's text (it may hold fields an outdated CRD
    made the API server drop)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        return obj
    meta = obj["metadata"]
    kept = {key: meta[key] for key in METADATA_READ if key in meta}
    annotations = kept.get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        text = annotations[LAST_APPLIED]
        if keep_applied is None or not isinstance(text, str) or not keep_applied(text):
            kept["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return {**obj, "metadata": kept}


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
    data = dict(obj)
    if isinstance(data.get("status"), dict):
        # The status is read from the listed object, never from the model: the model is kept
        # from one cycle to the next, so it holds no copy of a status that has moved on.
        data["status"] = {}
    try:
        return ImageUpdater.model_validate(data)
    except ValidationError as exc:
        errors = describe_errors(exc)
        raise ImageUpdaterError(
            f"invalid {who}: " + "; ".join(errors) + " (fix the resource and apply it again)",
            errors,
        ) from None
