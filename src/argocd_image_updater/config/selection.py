"""Which Applications an ImageUpdater CR manages, and with which configuration.

:func:`select_applications` follows the original's rules for one CR and the Applications of its
namespace:

1. Every ``namePattern`` must be a valid glob, else the whole CR fails
   (``invalid application name pattern '<p>': …``) and no app is selected.
2. ``applicationRefs`` are tried from the most to the least specific (:func:`specificity`,
   stable for ties); the first ref whose pattern matches the app name and whose label selector
   matches its labels wins. An invalid selector matches nothing (with a warning).
3. With ``useAnnotations: true`` the images, settings and write-back configuration come from the
   app's legacy annotations; if they cannot be read, the next (less specific) ref is tried. The
   same holds when the write-back configuration is unusable.
4. The app must be of a supported source type (Helm, Kustomize, Plugin), else it is skipped.
5. Images and charts whose fields hold templates are expanded for the app
   (``config.image_templates``); one whose template reads a label or annotation the app lacks
   is left out of it, with its reason (``AppUpdateConfig.skipped_images``/``skipped_charts``).
6. Images whose manifest target is ambiguous are dropped; apps left without images (and without
   images left out by their templates) are skipped.

:func:`~argocd_image_updater.config.selection_v0.select_applications_v0` is the annotation-only
selection of the v0.x releases.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from argocd_image_updater.config import annotations as ann
from argocd_image_updater.config.app_index import AppIndex
from argocd_image_updater.config.chart_annotations import (
    has_chart_list,
    read_chart_list,
)
from argocd_image_updater.config.image_templates import RefCharts, RefImages
from argocd_image_updater.config.imageupdater import ApplicationRef, ImageUpdater
from argocd_image_updater.config.imageupdater_refs import (
    chart_specs,
    image_specs,
    ref_settings,
    ref_verification,
    ref_write_back,
)
from argocd_image_updater.config.labels import (
    PatternError,
    SelectorError,
    check_pattern,
    go_path_match,
    selector_matches,
)
from argocd_image_updater.model.application import (
    Application,
    ApplicationError,
    SourceType,
)
from argocd_image_updater.model.chart import ChartSpec
from argocd_image_updater.model.update_config import (
    AppUpdateConfig,
    ImageSpec,
    SkippedImage,
    UpdateSettings,
    Verification,
    WriteBack,
    WriteBackError,
    updatable,
)

_EXACT_BONUS: Final = 1_000_000
_SELECTOR_BONUS: Final = 10_000
_SELECTOR_ITEM: Final = 100

MSG_AMBIGUOUS_TARGET: Final = (
    "only one of the fields (Helm, Kustomize, Plugin) should be set, dictating the update method"
)


@dataclass(slots=True)
class SelectionResult:
    """What one selection pass produced.

    ``skipped`` holds ``(qualified app name, reason)`` for apps a ref matched but that cannot be
    managed; ``warnings`` are log-worthy problems; ``error`` is set when the whole CR failed.
    """

    configs: list[AppUpdateConfig] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None


def specificity(ref: ApplicationRef) -> int:
    """How specific a ref is; higher scores are tried first.

    +1,000,000 for a pattern without ``*?[]``; + the number of literal characters (classes,
    ``*`` and ``?`` removed); +10,000 for a label selector, +100 per label and per expression.
    """
    pattern = ref.name_pattern
    score = 0
    if not any(c in pattern for c in "*?[]"):
        score += _EXACT_BONUS
    literals = _without_classes(pattern).replace("*", "").replace("?", "")
    score += len(literals.encode())
    selector = ref.label_selectors
    if selector is not None:
        score += _SELECTOR_BONUS
        score += _SELECTOR_ITEM * len(selector.match_labels or {})
        score += _SELECTOR_ITEM * len(selector.match_expressions or ())
    return score


def _without_classes(pattern: str) -> str:
    """``pattern`` less each ``[`` … ``]`` span within one line (the original's ``\\[.*?\\]``).

    Written as one pass: a backtracking ``re`` would scan to the end of the pattern from every
    ``[`` that no ``]`` closes (``\\[`` written 20,000 times took seconds)."""
    kept: list[str] = []
    i = 0
    while (start := pattern.find("[", i)) != -1:
        end = pattern.find("]", start + 1)
        if end == -1:
            break  # no later `[` is closed either
        newline = pattern.find("\n", start + 1, end)
        if newline != -1:  # nor is any `[` before that newline
            kept.append(pattern[i : newline + 1])
            i = newline + 1
            continue
        kept.append(pattern[i:start])
        i = end + 1
    kept.append(pattern[i:])
    return "".join(kept)


def sort_refs(refs: Sequence[ApplicationRef] | None) -> list[ApplicationRef]:
    """Most specific first; ties keep their order."""
    return sorted(refs or (), key=specificity, reverse=True)


def _selector_matches(ref: ApplicationRef, app: Application, warnings: list[str]) -> bool:
    selector = ref.label_selectors
    if selector is None:
        return True
    try:
        return selector_matches(selector.match_labels, selector.requirements, app.labels)
    except SelectorError as exc:
        warnings.append(
            f"Invalid label selector provided in applicationRef '{ref.name_pattern}': {exc}"
        )
        return False


def _images(
    specs: Sequence[ImageSpec], app: Application, result: SelectionResult
) -> tuple[ImageSpec, ...]:
    usable: list[ImageSpec] = []
    for spec in specs:
        if spec.target is not None and len(spec.target.kinds) > 1:
            result.warnings.append(
                f"Could not set manifest target config for image {spec.image} of app "
                f"{app.qualified_name}, skipping: {MSG_AMBIGUOUS_TARGET}"
            )
            continue
        usable.append(spec)
    return tuple(usable)


def _annotation_images(
    app: Application,
    annotated: Sequence[ann.AnnotatedImage],
    settings: UpdateSettings,
    verification: Verification | None,
) -> list[ImageSpec]:
    origin = ann.annotation_field(app, ann.IMAGE_LIST_KEY)
    return [
        ImageSpec(
            alias=img.alias,
            image=img.image,
            settings=settings.merged(img.settings),
            target=img.target,
            verification=verification,
            origin=origin,
        )
        for img in annotated
    ]


@dataclass(slots=True)
class _RefConfigs:
    """What a ref configures the same way for every Application (write-back, images), built
    once per selection pass instead of once per Application."""

    write_backs: dict[int, WriteBack] = field(default_factory=dict)
    specs: dict[int, RefImages] = field(default_factory=dict)
    chart_specs: dict[int, RefCharts] = field(default_factory=dict)

    def write_back(self, cr: ImageUpdater, ref: ApplicationRef) -> WriteBack:
        found = self.write_backs.get(id(ref))
        if found is None:
            found = self.write_backs[id(ref)] = ref_write_back(cr, ref)
        return found

    def images(
        self, cr: ImageUpdater, ref: ApplicationRef, app: Application
    ) -> tuple[Sequence[ImageSpec], tuple[SkippedImage, ...]]:
        """The images of ``ref`` for ``app`` (templates expanded) and those left out."""
        found = self.specs.get(id(ref))
        if found is None:
            settings = ref_settings(cr, ref)
            verification = ref_verification(cr, ref)
            specs = image_specs(cr, ref, settings, verification)
            found = self.specs[id(ref)] = RefImages(specs)
        return found.for_app(app)

    def charts(
        self, cr: ImageUpdater, ref: ApplicationRef, app: Application, taken: Iterable[str]
    ) -> tuple[tuple[ChartSpec, ...], tuple[SkippedImage, ...]]:
        """The charts of ``ref`` for ``app`` (templates expanded) and those left out;
        ``taken``: the aliases of the app's images."""
        found = self.chart_specs.get(id(ref))
        if found is None:
            specs = chart_specs(cr, ref, ref_settings(cr, ref))
            found = self.chart_specs[id(ref)] = RefCharts(specs)
        return found.for_app(app, taken)


def _try_ref(
    cr: ImageUpdater,
    ref: ApplicationRef,
    app: Application,
    result: SelectionResult,
    shared: _RefConfigs,
) -> tuple[Sequence[ImageSpec], tuple[SkippedImage, ...], WriteBack] | None:
    """Build the images (and those left out) and write-back config of ``app`` under ``ref``;
    ``None`` to go on."""
    who = app.qualified_name
    annotated: list[ann.AnnotatedImage] = []
    if ref.use_annotations:
        try:
            if ann.is_annotated(app) or not has_chart_list(app):
                annotated = ann.read_image_list(app)
        except ann.AnnotationError as exc:
            result.warnings.append(f"Could not create image list for app {who}, skipping: {exc}")
            return None
        write_back = WriteBack.from_layers(ann.read_write_back(app))
    else:
        write_back = shared.write_back(cr, ref)
    try:
        write_back.check(app.namespace)
        app.write_source(write_back.write_back_target)
    except (WriteBackError, ApplicationError) as exc:
        where = _write_back_field(cr, ref, app)
        result.warnings.append(
            f"Could not create write-back config for app {who}, skipping: {where}: {exc}"
        )
        return None
    if ref.use_annotations:
        try:
            settings = ann.read_update_settings(app) or UpdateSettings()
        except ann.AnnotationError as exc:
            result.warnings.append(
                f"Could not create common update settings for app {who}, skipping: {exc}"
            )
            return None
        verification = ref_verification(cr, ref, include_spec=False)
        return _annotation_images(app, annotated, settings, verification), (), write_back
    specs, skipped = shared.images(cr, ref, app)
    return specs, skipped, write_back


def _write_back_field(cr: ImageUpdater, ref: ApplicationRef, app: Application) -> str:
    """Where the write-back configuration of ``app`` under ``ref`` is set."""
    if ref.use_annotations:
        return ann.annotation_field(app, ann.WRITE_BACK_METHOD_KEY) + " (and git-* annotations)"
    if ref.write_back_config is not None:
        return cr.field(f"{cr.ref_path(ref)}.writeBackConfig")
    return cr.field("spec.writeBackConfig")


def _check_patterns(cr: ImageUpdater) -> str | None:
    for i, ref in enumerate(cr.spec.application_refs):
        try:
            check_pattern(ref.name_pattern)
        except PatternError as exc:
            return (
                f"invalid application name pattern '{ref.name_pattern}': {exc} "
                f"({cr.field(f'spec.applicationRefs[{i}].namePattern')})"
            )
    return None


def unsupported_reason(app: Application, source_type: SourceType) -> str:
    return (
        f"skipping app '{app.qualified_name}' of type '{source_type}' because it's not of "
        "supported source type"
    )


class SelectionMemory:
    """What one ImageUpdater's selection made of each Application, kept from one cycle to the
    next by the caller, which keeps one memory per parsed ImageUpdater (a changed ImageUpdater
    gets a new one). What the selection makes of an Application depends on the ImageUpdater and
    the Application alone, so an Application whose view is the same object as last cycle (same
    resourceVersion: ``controller.views``) gets last cycle's configuration object again, and
    planning can recognise it by identity. Only the Applications of the last selection are kept.
    """

    __slots__ = ("_kept", "_last", "_positions", "_ref_configs", "_refs", "_seen")

    def __init__(self) -> None:
        # By name: an ImageUpdater selects the Applications of its own namespace (and a piece
        # is recalled only for the very view it was made of).
        self._kept: dict[str, _Piece] = {}
        self._seen: dict[str, _Piece] = {}
        self._refs: tuple[str | None, list[ApplicationRef]] | None = None
        """The ImageUpdater's pattern error, or its refs most specific first."""
        self._positions: tuple[object, list[int] | None] | None = None
        """The candidates' positions in an index (:attr:`AppIndex.positions_token`)."""
        self._last: tuple[tuple[Application, ...], SelectionResult] | None = None
        """The last selection's candidates and result: the result again while the very same
        views are the candidates (a steady fleet's ImageUpdater costs a comparison)."""
        self._ref_configs = _RefConfigs()
        """What each ref configures alike for every Application (of this very ImageUpdater):
        an Application that changed is selected again without building its ref's images."""

    def _checked(self, cr: ImageUpdater) -> tuple[str | None, list[ApplicationRef]]:
        """:func:`_check_patterns` and :func:`sort_refs` of ``cr`` (the same ImageUpdater
        every time), worked out once."""
        if self._refs is None:
            error = _check_patterns(cr)
            self._refs = (error, sort_refs(cr.spec.application_refs) if error is None else [])
        return self._refs

    def _candidates(self, index: AppIndex, refs: Sequence[ApplicationRef]) -> Sequence[Application]:
        """The candidates of ``refs`` in ``index``, at the positions found last time while the
        index holds the same names."""
        token = index.positions_token
        if self._positions is None or self._positions[0] is not token:
            self._positions = (token, index.positions(ref.name_pattern for ref in refs))
        return index.at(self._positions[1])

    def candidate_positions(self, index: AppIndex) -> list[int] | None:
        """The positions in ``index`` of the Applications this ImageUpdater's patterns may
        match, as its last selection found them; None: any of them (or not known)."""
        if self._positions is None or self._positions[0] is not index.positions_token:
            return None
        return self._positions[1]

    def _begin(self) -> None:
        self._seen = {}

    def _end(self) -> None:
        self._kept, self._seen = self._seen, {}

    def _recall(self, app: Application) -> _Piece | None:
        kept = self._kept.get(app.name)
        return kept if kept is not None and kept[0] is app else None

    def _keep(self, piece: _Piece) -> None:
        self._seen[piece[0].name] = piece


_Piece = tuple[
    Application, tuple[AppUpdateConfig, ...], tuple[tuple[str, str], ...], tuple[str, ...]
]
"""What the selection made of one Application: its configurations, skips and warnings."""


def select_applications(
    cr: ImageUpdater,
    apps: Sequence[Application] | AppIndex,
    memory: SelectionMemory | None = None,
) -> SelectionResult:
    """The apps ``cr`` manages among ``apps`` (the Applications of its namespace, or their
    :class:`AppIndex`, which spares matching the patterns against every Application).
    ``memory`` (kept by the caller for this very ``cr``) reuses what the last selection made of
    the Applications that did not change, and its whole result (shared: read it, never change
    it) when the candidates are the same views."""
    result = SelectionResult()
    if memory is not None:
        error, refs = memory._checked(cr)
    else:
        error = _check_patterns(cr)
        refs = sort_refs(cr.spec.application_refs) if error is None else []
    if error is not None:
        result.error = error
        return result
    if isinstance(apps, AppIndex):
        if memory is not None:
            apps = memory._candidates(apps, refs)
        else:
            apps = apps.candidates(ref.name_pattern for ref in refs)
    if memory is not None:
        candidates = tuple(apps)
        if memory._last is not None and memory._last[0] == candidates:
            return memory._last[1]
        memory._last = (candidates, result)
    shared = memory._ref_configs if memory is not None else _RefConfigs()
    if memory is not None:
        memory._begin()
    for app in apps:
        kept = memory._recall(app) if memory is not None else None
        if kept is None:
            one = SelectionResult() if memory is not None else result
            try:
                _select(cr, refs, app, one, shared)
            except Exception as exc:  # one application never stops the others
                reason = (
                    f"Could not read the configuration of app {app.qualified_name} from "
                    f"ImageUpdater {cr.namespace}/{cr.name}, skipping: "
                    f"{type(exc).__name__}: {exc}"
                )
                one.warnings.append(reason)
                one.skipped.append((app.qualified_name, reason))
            if memory is None:
                continue
            kept = (app, tuple(one.configs), tuple(one.skipped), tuple(one.warnings))
        assert memory is not None
        memory._keep(kept)
        result.configs.extend(kept[1])
        result.skipped.extend(kept[2])
        result.warnings.extend(kept[3])
    if memory is not None:
        memory._end()
    return result


def _select(
    cr: ImageUpdater,
    refs: Sequence[ApplicationRef],
    app: Application,
    result: SelectionResult,
    shared: _RefConfigs,
) -> None:
    """Add ``app``'s configuration under the first matching ref of ``cr``, if any."""
    for ref in refs:
        if not go_path_match(ref.name_pattern, app.name):
            continue
        if not _selector_matches(ref, app, result.warnings):
            continue
        built = _try_ref(cr, ref, app, result, shared)
        if built is None:
            continue
        specs, skipped, write_back = built
        charts: tuple[ChartSpec, ...] = ()
        skipped_charts: tuple[SkippedImage, ...] = ()
        if not ref.use_annotations and ref.charts:
            taken = [spec.alias for spec in specs]
            charts, skipped_charts = shared.charts(cr, ref, app, taken)
        elif ref.use_annotations and has_chart_list(app):
            try:
                charts = read_chart_list(app)
            except ann.AnnotationError as exc:
                result.warnings.append(
                    f"Could not create chart list for app {app.qualified_name}, skipping: {exc}"
                )
                continue
        source_type = app.source_type(write_back.write_back_target)
        supported = updatable(source_type, write_back.write_back_target)
        if not supported and not charts and not skipped_charts:
            reason = unsupported_reason(app, source_type)
            result.warnings.append(reason)
            result.skipped.append((app.qualified_name, reason))
            return
        images = _images(specs, app, result) if supported else ()
        if not images and not skipped and not charts and not skipped_charts:
            result.skipped.append((app.qualified_name, "no usable images configured"))
            return
        result.configs.append(
            AppUpdateConfig(
                app=app,
                images=images,
                write_back=write_back,
                origin=cr.origin,
                name_pattern=ref.name_pattern,
                skipped_images=skipped,
                charts=charts,
                skipped_charts=skipped_charts,
            )
        )
        return
