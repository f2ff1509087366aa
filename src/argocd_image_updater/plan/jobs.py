"""Phase 1 of planning, before any registry request: which images of an app to scan, and how.

For each configured image, in order, :func:`plan_scans` yields either an :class:`ImageJob` (the
image is live, its configuration is usable, it names a registry scan) or an immediate
:class:`~argocd_image_updater.plan.model.ImageResult` (not live, or unusable configuration).
The images the selection left out of the app (``AppUpdateConfig.skipped_images``: their templates
read a label or annotation the app lacks) follow, each as a ``template-missing-key`` result.

Live images come from ``status.summary.images`` and are matched on registry and repository,
ignoring the tag: first the kustomize target name, when there is one (so registries can be
swapped), then the configured image. With ``forceUpdate`` an image that is not live is planned
as if it ran without a tag, which always leads to an update. Every live image of the
repository is kept on the job so that the ``digest`` strategy can pick the right container once
the registry's digest is known.

Equal :class:`ScanKey` values, across all applications of a cycle, mean one registry scan.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from argocd_image_updater.model.application import AppSource, SourceType
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.model.platform import PlatformFilter, runtime_platform
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.update_config import (
    AppUpdateConfig,
    ImageSpec,
    ManifestTarget,
    Verification,
    WriteBack,
    updatable,
)
from argocd_image_updater.plan.charts import ChartJob, plan_chart_scans
from argocd_image_updater.plan.model import EditKind, ImageReason, ImageResult, Outcome, SourcePath
from argocd_image_updater.plan.params import ParamNames
from argocd_image_updater.plan.scans import EndpointFor as EndpointFor
from argocd_image_updater.plan.scans import (
    Refusal,
    parse_min_age,
    registry_access,
    scan_key_for,
    skipped_result,
)
from argocd_image_updater.plan.scans import ScanKey as ScanKey
from argocd_image_updater.policy.filters import parse_allow_tags
from argocd_image_updater.policy.select import Policy, PolicyError
from argocd_image_updater.policy.strategies import parse_strategy


@dataclass(frozen=True, slots=True)
class ImageJob:
    """A live image with a usable configuration, waiting for its registry scan.

    ``cfg`` is the configured reference (its tag is the version constraint). ``live`` is the
    matched live image, ``None`` when the image is forced (not live; treated as tagless).
    ``live_candidates`` holds every live image of the app (the ``digest`` strategy chooses among
    them). ``kind`` and ``names`` say which parameters receive the image; ``kustomize_name`` is
    the kustomize target name (``""`` when none).
    """

    alias: str
    image: str
    cfg: ImageRef
    live: ImageRef | None
    live_candidates: tuple[ImageRef, ...]
    policy: Policy
    endpoint: RegistryEndpoint
    repository: str
    scan_key: ScanKey
    pull_secret: str | None
    target: ManifestTarget | None
    kind: EditKind
    names: ParamNames
    kustomize_name: str = ""
    verification: Verification | None = None
    warnings: tuple[str, ...] = ()
    """Problems with the image's settings that did not stop it, each naming its field."""
    allow_downgrade: bool = False
    pin_digest: bool = False
    """``pinDigest``: the chosen tag is written with its digest, which the cycle asks the
    registry for once it is chosen (the ``digest`` strategy pins by itself)."""
    expected_digest: str = ""
    """The digest the pinned tag must have (:attr:`ImageSpec.expected_digest`; ``""``: any)."""

    @property
    def pins(self) -> bool:
        """Whether the image is written ``tag@digest`` (its strategy pins, or ``pinDigest``)."""
        return self.pin_digest or self.policy.strategy.pins_digest

    @property
    def forced(self) -> bool:
        return self.live is None

    @property
    def key(self) -> str:
        """The alias, or the configured image when there is no alias."""
        return self.alias or self.image


@dataclass(frozen=True, slots=True)
class AppJobs:
    """Phase 1 of one application: jobs and immediate results, in configuration order.

    ``note`` is set (and ``items`` empty) when the application cannot be updated at all, e.g.
    for an unsupported source type.
    """

    config: AppUpdateConfig
    source: AppSource | None
    source_path: SourcePath
    source_type: SourceType
    items: tuple[ImageJob | ImageResult, ...]
    note: str = ""
    charts: tuple[ChartJob | ImageResult, ...] = ()
    """The charts' jobs and immediate results (``plan.charts``), in configuration order."""

    _jobs: tuple[ImageJob, ...] = field(default=(), init=False, repr=False, compare=False)
    _chart_jobs: tuple[ChartJob, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Read many times per cycle (scans, pins, moved tags, planning): sorted out once.
        jobs = tuple(i for i in self.items if isinstance(i, ImageJob))
        charts = tuple(i for i in self.charts if not isinstance(i, ImageResult))
        object.__setattr__(self, "_jobs", jobs)
        object.__setattr__(self, "_chart_jobs", charts)

    @property
    def jobs(self) -> tuple[ImageJob, ...]:
        return self._jobs

    @property
    def chart_jobs(self) -> tuple[ChartJob, ...]:
        return self._chart_jobs

    @property
    def scan_keys(self) -> tuple[ScanKey, ...]:
        """The distinct scans this application needs, in first-use order."""
        keys = [job.scan_key for job in self.jobs] + [job.scan_key for job in self.chart_jobs]
        return tuple(dict.fromkeys(keys))


def _error(spec: ImageSpec, reason: ImageReason, message: str, current: str | None) -> ImageResult:
    return ImageResult(spec.alias, spec.image, current, None, Outcome.ERROR, reason, message)


def _parse_cfg(spec: ImageSpec) -> ImageRef:
    text = f"{spec.alias}={spec.image}" if spec.alias else spec.image
    return ImageRef.parse(text)


def _parse_live(texts: tuple[str, ...]) -> tuple[ImageRef, ...]:
    out: list[ImageRef] = []
    for text in texts:
        try:
            out.append(ImageRef.parse(text))
        except ImageRefError:
            continue
    return tuple(out)


def _find(live: tuple[ImageRef, ...], ref: ImageRef) -> ImageRef | None:
    return next((image for image in live if ref.matches(image)), None)


def find_live(
    live: tuple[ImageRef, ...], cfg: ImageRef, kustomize_ref: ImageRef | None
) -> ImageRef | None:
    """The live image standing for ``cfg``: the kustomize target name is tried first."""
    if kustomize_ref is not None:
        found = _find(live, kustomize_ref)
        if found is not None:
            return found
    return _find(live, cfg)


@functools.lru_cache(maxsize=256)
def platform_filter(platforms: tuple[str, ...]) -> PlatformFilter:
    """The filter of a ``platforms`` setting (``()``: the runtime platform); one per setting,
    shared by every image of every cycle that uses it."""
    return PlatformFilter(platforms or [runtime_platform()])


def build_policy(spec: ImageSpec, cfg: ImageRef) -> tuple[Policy, tuple[str, ...]]:
    """The tag policy of one image and the warnings met reading it (each naming the field and
    the bad value); raise PolicyError naming the field."""
    settings = spec.settings
    strategy, warning = parse_strategy(settings.strategy)
    warnings = [f"{settings.where('strategy')}: {warning}"] if warning else []
    allow = parse_allow_tags(settings.effective_allow_tags)
    if allow.error:
        warnings.append(f"{settings.where('allow_tags')}: {allow.error}")
    platforms = platform_filter(settings.effective_platforms)
    if platforms.invalid:
        raise PolicyError(
            f"{settings.where('platforms')}: image '{spec.image}': invalid platforms "
            f"{', '.join(platforms.invalid)}: write each as os/arch[/variant], e.g. linux/amd64"
        )
    min_age, from_created = parse_min_age(settings)
    policy = Policy(
        strategy=strategy,
        constraint=cfg.tag or "",
        allow=allow,
        ignore=settings.effective_ignore_tags,
        platforms=platforms,
        min_age=min_age,
        min_age_from_created=from_created,
    )
    try:
        policy.validate(spec.image)
    except PolicyError as err:
        raise PolicyError(f"{spec.where('imageName')}: {err}") from None
    return policy, tuple(warnings)


_POLICIES_KEPT: Final = 4096
_policies: dict[int, tuple[ImageSpec, tuple[Policy, tuple[str, ...]] | str]] = {}
""":func:`build_policy`'s result (or error message) per ImageSpec object, the object kept with
it so that its id is not reused meanwhile."""


def policy_of(spec: ImageSpec, cfg: ImageRef) -> tuple[Policy, tuple[str, ...]]:
    """:func:`build_policy`, once per ImageSpec object: the Applications an applicationRef
    selects share its specs (a spec and ``cfg``, parsed from it alone, are immutable), so the
    five Applications of a component have one policy."""
    kept = _policies.get(id(spec))
    if kept is None or kept[0] is not spec:
        try:
            result: tuple[Policy, tuple[str, ...]] | str = build_policy(spec, cfg)
        except PolicyError as err:
            result = str(err)
        if len(_policies) >= _POLICIES_KEPT:
            _policies.clear()
        kept = _policies[id(spec)] = (spec, result)
    if isinstance(kept[1], str):
        raise PolicyError(kept[1])
    return kept[1]


def edit_kind(
    source_type: SourceType, target: ManifestTarget | None, write_back: WriteBack
) -> tuple[EditKind, ParamNames, str]:
    """Which parameters receive an image: kind, Helm/plugin names, kustomize name.

    A plugin app written with the git method is written as Helm unless the image has a plugin
    target (the original's compatibility rule for helmfile-style plugins).
    """
    helm = target.helm if target else None
    kustomize = target.kustomize if target else None
    plugin = target.plugin if target else None
    if source_type in (SourceType.KUSTOMIZE, SourceType.DIRECTORY):
        # Plain manifests (``directory``) are written like a kustomization's ``images:``.
        return "kustomize", ParamNames(), kustomize.name if kustomize else ""
    if source_type is SourceType.PLUGIN and (plugin is not None or not write_back.is_git):
        names = ParamNames.plugin(plugin.spec, plugin.name, plugin.tag) if plugin else None
        return "plugin", names or ParamNames.plugin(), ""
    names = ParamNames.helm(helm.spec, helm.name, helm.tag) if helm else ParamNames.helm()
    return "helm", names, ""


def _plan_image(
    config: AppUpdateConfig,
    spec: ImageSpec,
    live: tuple[ImageRef, ...],
    source_type: SourceType,
    endpoint_for: EndpointFor,
) -> ImageJob | ImageResult:
    try:
        cfg = _parse_cfg(spec)
    except ImageRefError as err:
        return _error(spec, ImageReason.INVALID_CONFIG, f"{spec.where('imageName')}: {err}", None)

    target = spec.target
    if target is not None and len(target.kinds) > 1:
        return _error(
            spec,
            ImageReason.INVALID_CONFIG,
            f"{spec.where('manifestTargets', 'helm.* / kustomize.image-name')}: only one of the "
            f"fields (Helm, Kustomize, Plugin) should be set in manifestTargets of image "
            f"'{spec.key}', found {', '.join(target.kinds)}",
            None,
        )
    kustomize_ref: ImageRef | None = None
    if target is not None and target.kustomize is not None and target.kustomize.name:
        try:
            kustomize_ref = ImageRef.parse(target.kustomize.name)
        except ImageRefError as err:
            where = spec.where("manifestTargets.kustomize.name", "kustomize.image-name")
            return _error(
                spec, ImageReason.INVALID_CONFIG, f"{where}: kustomize target name: {err}", None
            )

    matched = find_live(live, cfg, kustomize_ref)
    if matched is None and not spec.settings.effective_force_update:
        return ImageResult(
            spec.alias,
            spec.image,
            None,
            None,
            Outcome.SKIPPED,
            ImageReason.NOT_LIVE,
            f"Image '{cfg.name}' seems not to be live in this application, skipping",
        )
    current = matched.full_name_with_tag if matched is not None else None

    try:
        policy, warnings = policy_of(spec, cfg)
    except PolicyError as err:
        return _error(spec, ImageReason.INVALID_CONFIG, str(err), current)

    access = registry_access(config, spec.settings, endpoint_for, cfg.registry, cfg.name)
    if isinstance(access, Refusal):
        return _error(spec, access.reason, access.message, current)
    endpoint, repository, pull_secret = access
    kind, names, kustomize_name = edit_kind(source_type, target, config.write_back)
    return ImageJob(
        alias=spec.alias,
        image=spec.image,
        cfg=cfg,
        live=matched,
        live_candidates=live,
        policy=policy,
        endpoint=endpoint,
        repository=repository,
        scan_key=scan_key_for(policy, endpoint, repository, pull_secret),
        pull_secret=pull_secret or None,
        target=target,
        kind=kind,
        names=names,
        kustomize_name=kustomize_name,
        verification=spec.verification,
        warnings=warnings,
        allow_downgrade=spec.settings.effective_allow_downgrade,
        pin_digest=spec.settings.effective_pin_digest,
        expected_digest=spec.expected_digest,
    )


def _plan_image_contained(
    config: AppUpdateConfig,
    spec: ImageSpec,
    live: tuple[ImageRef, ...],
    source_type: SourceType,
    endpoint_for: EndpointFor,
) -> ImageJob | ImageResult:
    """:func:`_plan_image`, with any unexpected failure turned into this image's error."""
    try:
        return _plan_image(config, spec, live, source_type, endpoint_for)
    except Exception as err:  # one image's configuration never stops the others
        where = spec.origin or f"image '{spec.key}'"
        return _error(
            spec,
            ImageReason.INTERNAL_ERROR,
            f"{where}: could not plan the image: {type(err).__name__}: {err}",
            None,
        )


@functools.lru_cache(maxsize=64)
def _in_spec(spec_path: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """``("spec", *spec_path)``, one tuple per path (every kept plan holds one)."""
    return ("spec", *spec_path)


def plan_scans(config: AppUpdateConfig, endpoint_for: EndpointFor) -> AppJobs:
    """Phase 1 for one application (pure): what to scan for each configured image.

    ``endpoint_for(registry, image_name)`` gives the registry endpoint serving an image; an
    exception it raises becomes that image's error.
    """
    app = config.app
    target = config.write_back.write_back_target
    source_type = app.source_type(target)
    has_charts = config.charts or config.skipped_charts
    charts = plan_chart_scans(config, endpoint_for) if has_charts else ()
    if not updatable(source_type, target):
        note = (
            f"skipping app '{app.qualified_name}' of type '{source_type.value or 'unknown'}' "
            "because it's not of supported source type"
        )
        return AppJobs(
            config=config,
            source=None,
            source_path=(),
            source_type=source_type,
            items=(),
            note=note if config.images or not charts else "",
            charts=charts,
        )
    try:
        source = app.write_source(target)
    except ValueError as err:
        note = str(err) if config.images or not charts else ""
        return AppJobs(config, None, (), source_type, (), note=note, charts=charts)
    live = _parse_live(app.live_images)
    items = tuple(
        _plan_image_contained(config, spec, live, source_type, endpoint_for)
        for spec in config.images
    ) + tuple(skipped_result(skipped) for skipped in config.skipped_images)
    return AppJobs(
        config=config,
        source=source,
        source_path=_in_spec(source.spec_path),
        source_type=source_type,
        items=items,
        charts=charts,
    )


def cycle_scan_keys(apps: Iterable[AppJobs]) -> tuple[ScanKey, ...]:
    """The distinct scans of a whole cycle, in first-use order."""
    return tuple(dict.fromkeys(key for jobs in apps for key in jobs.scan_keys))
