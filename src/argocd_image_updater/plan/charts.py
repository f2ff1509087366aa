"""Planning the versions of Helm charts and OCI artifacts (pure), in the images' two phases.

**Phase 1** (:func:`plan_chart_scans`, before any registry request): for each configured chart
(:class:`~argocd_image_updater.model.update_config.AppUpdateConfig.charts`), in order, either a
:class:`ChartJob` or an immediate :class:`~argocd_image_updater.plan.model.ImageResult`:

* where the version lives: with the ``argocd`` method, the ``targetRevision`` of every source
  that holds the chart (:meth:`~argocd_image_updater.model.chart.ChartRef.matches`; none →
  ``not-live``); with the ``git`` method and ``writeBackTarget: chartfile:<path>``, the
  ``dependencies[name=<chart>].version`` of that Chart.yaml, read before planning into
  ``AppUpdateConfig.chart_versions``; with ``writeBackTarget: application:<file>`` the sources'
  ``targetRevision`` as with the ``argocd`` method (written in the Application's manifest in
  Git); any other git target cannot hold a chart version (``invalid-config``);
* the tag policy: ``updateStrategy``, ``allowTags``, ``ignoreTags`` and the constraint, as for
  images (platforms do not apply; ``digest`` is refused: a version is written, never a digest);
* the scan: an OCI chart is scanned by the registry scanner under the same
  :class:`~argocd_image_updater.plan.jobs.ScanKey` an image of that repository would have (one
  scan per repository, shared with images); a Helm repository chart by its ``index.yaml``
  (``ScanKey.kind`` :data:`HELM_INDEX`).

**Phase 2** (:func:`decide_charts`, given the scans): the same reasons as images —
``registry-error``, ``policy-error``, ``no-candidate``, ``up-to-date``, ``would-downgrade``
(never-downgrade applies unless ``allowDowngrade``), ``already-set`` — and for an update an
:class:`~argocd_image_updater.plan.model.ImageChange` (the chart rendered as an image reference
for messages) plus one :class:`~argocd_image_updater.plan.model.RevisionEdit` per source whose
``targetRevision`` changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final, Protocol, cast

from argocd_image_updater.model.application import APPLICATION_PREFIX
from argocd_image_updater.model.chart import ChartRef, ChartRefError, ChartSpec
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.plan.holds import HoldContext
from argocd_image_updater.plan.model import (
    ImageChange,
    ImageReason,
    ImageResult,
    Outcome,
    RevisionEdit,
    SourcePath,
)
from argocd_image_updater.plan.scans import (
    EndpointFor,
    Refusal,
    ScanKey,
    parse_min_age,
    registry_access,
    scan_key_for,
    skipped_result,
)
from argocd_image_updater.policy.downgrade import downgrade
from argocd_image_updater.policy.filters import parse_allow_tags
from argocd_image_updater.policy.min_age import waiting_message
from argocd_image_updater.policy.select import Policy, PolicyError, Selection
from argocd_image_updater.policy.select import choose as select_choice
from argocd_image_updater.policy.strategies import parse_strategy

CHARTFILE_PREFIX: Final = "chartfile"
HELM_INDEX: Final = "helm-index"
"""``ScanKey.kind`` of a chart listed by a Helm repository's ``index.yaml``."""


def is_chartfile_target(target: str | None) -> bool:
    """Whether a git write-back target is ``chartfile:<path>``."""
    return bool(target) and (target or "").startswith(CHARTFILE_PREFIX + ":")


def is_application_target(target: str | None) -> bool:
    """Whether a git write-back target is ``application:<file>``: the Application's manifest
    in Git, whose sources' ``targetRevision`` holds the versions as with the argocd method."""
    return (target or "").partition(":")[0] == APPLICATION_PREFIX


@dataclass(frozen=True, slots=True)
class ChartJob:
    """A chart with a usable configuration, waiting for its scan.

    ``current`` is the version now set (``""``: unknown, e.g. forced); ``source_paths`` the
    sources (from the object's root) whose ``targetRevision`` receives the version, ``()`` for a
    ``chartfile:`` target. ``endpoint`` is ``None`` for Helm repositories.
    """

    alias: str
    chart: str
    ref: ChartRef
    current: str
    source_paths: tuple[SourcePath, ...]
    source_versions: tuple[str, ...]
    policy: Policy
    scan_key: ScanKey
    endpoint: RegistryEndpoint | None
    repository: str
    pull_secret: str | None
    warnings: tuple[str, ...] = ()
    allow_downgrade: bool = False
    helm_versions: bool = False
    """The version is read by Helm (a classic Helm OCI source, a Chart.yaml dependency): Helm
    stores a version's ``+`` as ``_`` in OCI tags, so tags are read back with ``+``."""

    @property
    def key(self) -> str:
        return self.alias or self.chart

    @property
    def is_helm_index(self) -> bool:
        return self.endpoint is None


def _result(
    spec: ChartSpec,
    outcome: Outcome,
    reason: ImageReason,
    message: str,
    current: str | None = None,
) -> ImageResult:
    return ImageResult(
        spec.alias or spec.chart, spec.chart, current, None, outcome, reason, message
    )


def chart_policy(spec: ChartSpec, ref: ChartRef) -> tuple[Policy, tuple[str, ...]]:
    """The version policy of one chart and the warnings met reading it; raise PolicyError
    naming the field."""
    settings = spec.settings
    strategy, warning = parse_strategy(settings.strategy)
    warnings = [f"{settings.where('strategy')}: {warning}"] if warning else []
    if strategy.pins_digest:
        raise PolicyError(
            f"{settings.where('strategy')}: chart '{spec.chart}': the {strategy} strategy pins "
            "digests, but a chart's version is written: use semver, newest-build or alphabetical"
        )
    allow = parse_allow_tags(settings.effective_allow_tags)
    if allow.error:
        warnings.append(f"{settings.where('allow_tags')}: {allow.error}")
    min_age, from_created = parse_min_age(settings)
    policy = Policy(
        strategy=strategy,
        constraint=ref.constraint,
        allow=allow,
        ignore=settings.effective_ignore_tags,
        min_age=min_age,
        min_age_from_created=from_created,
    )
    try:
        policy.validate(spec.chart)
    except PolicyError as err:
        raise PolicyError(f"{spec.where('chart')}: {err}") from None
    return policy, tuple(warnings)


def _plan_chart(
    config: AppUpdateConfig, spec: ChartSpec, endpoint_for: EndpointFor
) -> ChartJob | ImageResult:
    app = config.app
    try:
        ref = ChartRef.parse(spec.chart)
    except ChartRefError as err:
        return _result(
            spec, Outcome.ERROR, ImageReason.INVALID_CONFIG, f"{spec.where('chart')}: {err}"
        )
    write_back = config.write_back
    target = write_back.write_back_target
    paths: tuple[SourcePath, ...] = ()
    versions: tuple[str, ...] = ()
    if write_back.is_git and not is_application_target(target):
        if not is_chartfile_target(target):
            return _result(
                spec,
                Outcome.ERROR,
                ImageReason.INVALID_CONFIG,
                f"{spec.where('chart')}: the git write-back target '{target or '(default)'}' "
                "cannot hold a chart version: use writeBackTarget chartfile:<path to Chart.yaml> "
                "(a dependency of an umbrella chart), or the argocd method (the source's "
                "targetRevision)",
            )
        current = config.chart_versions.get(spec.key, "")
        found = spec.key in config.chart_versions
        helm_versions = True
        absent = f"Chart '{ref.name}' is not a dependency in {target}, skipping"
    else:
        matched = [s for s in app.sources if ref.matches(s.repo_url, s.chart)]
        sources = [(("spec", *s.spec_path), s.target_revision.strip()) for s in matched]
        helm_versions = any(s.chart.strip() for s in matched)
        paths = tuple(p for p, _ in sources)
        versions = tuple(v for _, v in sources)
        current = versions[0] if versions else ""
        found = bool(sources)
        absent = f"Chart '{ref.location}' is not a source of this application, skipping"
    if not found and not spec.settings.effective_force_update:
        return _result(spec, Outcome.SKIPPED, ImageReason.NOT_LIVE, absent)
    shown = ref.with_version(current) if current else None
    try:
        policy, warnings = chart_policy(spec, ref)
    except PolicyError as err:
        return _result(spec, Outcome.ERROR, ImageReason.INVALID_CONFIG, str(err), shown)

    endpoint: RegistryEndpoint | None = None
    repository, pull_secret = ref.name, ""
    if ref.is_oci:
        access = registry_access(config, spec.settings, endpoint_for, ref.registry, ref.repository)
        if isinstance(access, Refusal):
            return _result(spec, Outcome.ERROR, access.reason, access.message, shown)
        endpoint, repository, pull_secret = access
        key = scan_key_for(policy, endpoint, repository, pull_secret)
    else:
        key = ScanKey(
            api_url=ref.repository_url,
            repository=ref.name,
            credentials="",
            metadata=False,
            platforms=(),
            only_tags=(),
            kind=HELM_INDEX,
        )
    return ChartJob(
        spec.alias,
        spec.chart,
        ref,
        current,
        paths,
        versions,
        policy,
        key,
        endpoint,
        repository,
        pull_secret or None,
        warnings,
        spec.settings.effective_allow_downgrade,
        helm_versions,
    )


def plan_chart_scans(
    config: AppUpdateConfig, endpoint_for: EndpointFor
) -> tuple[ChartJob | ImageResult, ...]:
    """Phase 1 for the charts of one application (pure); one chart's failure is its own."""
    items: list[ChartJob | ImageResult] = []
    for spec in config.charts:
        try:
            items.append(_plan_chart(config, spec, endpoint_for))
        except Exception as err:  # one chart's configuration never stops the others
            where = spec.origin or f"chart '{spec.key}'"
            items.append(
                _result(
                    spec,
                    Outcome.ERROR,
                    ImageReason.INTERNAL_ERROR,
                    f"{where}: could not plan the chart: {type(err).__name__}: {err}",
                )
            )
    items.extend(skipped_result(skipped) for skipped in config.skipped_charts)
    return tuple(items)


# --- phase 2 -----------------------------------------------------------------------------------


class VersionList(Protocol):
    """What phase 2 reads from a scan (as ``plan.decide.ScanResultLike``)."""

    @property
    def tags(self) -> Sequence[TagInfo]: ...

    @property
    def order_hint(self) -> Mapping[str, int] | None: ...


Chooser = Callable[[ChartJob, VersionList], Selection]


@dataclass(frozen=True, slots=True)
class _HelmVersions:
    """A chart's OCI tags read back as Helm versions (``1.2.3_build`` → ``1.2.3+build``)."""

    tags: tuple[TagInfo, ...]
    order_hint: Mapping[str, int] | None

    @classmethod
    def of(cls, listing: VersionList) -> _HelmVersions:
        hint = listing.order_hint
        return cls(
            tuple(replace(t, name=t.name.replace("_", "+")) for t in listing.tags),
            {k.replace("_", "+"): v for k, v in hint.items()} if hint is not None else None,
        )


"""``(job, scan) → selection``: the cycle's shared choice (``plan.choices.ScanResults``)."""


def chart_image(ref: ChartRef, alias: str) -> ImageRef:
    """The chart as an image reference (registry = host, name = path): commit messages, logs
    and notifications render it like an image."""
    rest = ref.location.partition("://")[2]
    host, _, name = rest.partition("/")
    return ImageRef(registry=host, name=name, tag=ref.constraint or None, alias=alias)


@dataclass(slots=True)
class ChartDecisions:
    results: list[ImageResult]
    changes: list[ImageChange]
    revisions: list[RevisionEdit]


def _decide(
    job: ChartJob,
    scan: object,
    choose: Chooser,
    out: ChartDecisions,
    holds: HoldContext | None = None,
) -> None:
    ref = job.ref
    current = ref.with_version(job.current) if job.current else None

    def result(
        outcome: Outcome,
        reason: ImageReason,
        message: str,
        chosen: str | None = None,
        detail: str = "",
    ) -> None:
        out.results.append(
            ImageResult(
                job.key, job.chart, current, chosen, outcome, reason, message, detail, job.warnings
            )
        )

    if scan is None or isinstance(scan, Exception):
        problem = scan if scan is not None else f"no scan result for {ref.location}"
        where = "Helm repository" if job.is_helm_index else "registry"
        result(
            Outcome.ERROR,
            ImageReason.REGISTRY_ERROR,
            f"Could not get chart versions from {where}: {problem}",
        )
        return
    listing = cast(VersionList, scan)
    helm_tags = job.helm_versions and not job.is_helm_index
    if helm_tags and any("_" in tag.name for tag in listing.tags):
        listing = _HelmVersions.of(listing)
    try:
        selection = (
            select_choice(job.policy, listing.tags, listing.order_hint)
            if isinstance(listing, _HelmVersions)
            else choose(job, listing)
        )
    except PolicyError as err:
        result(
            Outcome.ERROR,
            ImageReason.POLICY_ERROR,
            f"Unable to find newest version from available versions: {err}",
        )
        return
    chosen = selection.chosen
    young = waiting_message(selection.eligible)
    if chosen is None and young:
        result(Outcome.SKIPPED, ImageReason.TOO_YOUNG, young, detail=selection.summary)
        return
    if chosen is None:
        result(
            Outcome.SKIPPED,
            ImageReason.NO_CANDIDATE,
            "No suitable chart version for upgrade found in list of available versions: "
            + selection.summary,
            detail=selection.summary,
        )
        return
    new = chosen.name
    new_text = ref.with_version(new)
    order = (listing.tags, listing.order_hint, job.policy.platforms)
    strategy = job.policy.strategy
    if holds is not None and job.current:
        holds.observe(job.key, job.current, strategy, *order)
    if job.current == new and all(v == new for v in job.source_versions):
        if young:  # a newer version waits for minAge
            result(Outcome.SKIPPED, ImageReason.TOO_YOUNG, young, new_text)
            return
        result(
            Outcome.UP_TO_DATE,
            ImageReason.UP_TO_DATE,
            f"Chart '{new_text}' already on latest allowed version",
            new_text,
        )
        return
    held = (
        # A chart's current version is read from its write-back target itself.
        holds.check(job.key, job.current or None, chosen, strategy, *order, job.current or None)
        if holds is not None
        else None
    )
    if held is not None:
        result(
            Outcome.ERROR if held.error else Outcome.SKIPPED,
            ImageReason.INVALID_CONFIG if held.error else ImageReason.HELD,
            held.message,
            new_text,
            held.detail,
        )
        return
    if job.current and job.current != new and not job.allow_downgrade:
        lower = downgrade(
            strategy, job.current, chosen, tags=listing.tags, order_hint=listing.order_hint
        )
        if lower is not None:
            result(
                Outcome.SKIPPED,
                ImageReason.WOULD_DOWNGRADE,
                f"Not updating chart '{current}' to '{new_text}': {lower} (update strategy "
                f"{strategy}); nothing written. allowDowngrade: true (annotation "
                "<alias>.allow-downgrade) permits it",
                new_text,
            )
            return
    edits = [
        RevisionEdit(job.key, path, old, new)
        for path, old in zip(job.source_paths, job.source_versions, strict=True)
        if old != new
    ]
    if job.source_paths and not edits:
        result(
            Outcome.UP_TO_DATE,
            ImageReason.ALREADY_SET,
            f"New chart version {new_text} already set in spec",
            new_text,
        )
        return
    out.revisions.extend(edits)
    out.changes.append(
        ImageChange(
            alias=job.key,
            image=chart_image(ref, job.alias),
            old_tag=job.current,
            new_tag=new,
            new_digest="",
        )
    )
    old = current if current is not None else ref.location
    result(
        Outcome.UPDATED,
        ImageReason.UPDATED,
        f"Successfully updated chart '{old}' to '{new_text}'",
        new_text,
    )


def decide_charts(
    items: Sequence[ChartJob | ImageResult],
    scans: Callable[[ChartJob], object],
    choose: Chooser,
    holds: HoldContext | None = None,
) -> ChartDecisions:
    """Phase 2 for the charts of one application (pure). ``scans(job)`` is the job's scan
    outcome (a scan result, the exception it raised, or ``None``); ``choose`` makes the tag
    choice. An unexpected failure becomes that chart's ``internal-error``."""
    out = ChartDecisions([], [], [])
    for item in items:
        if isinstance(item, ImageResult):
            out.results.append(item)
            continue
        try:
            _decide(item, scans(item), choose, out, holds)
        except Exception as err:  # one chart never stops the others
            out.results.append(
                ImageResult(
                    item.key,
                    item.chart,
                    None,
                    None,
                    Outcome.ERROR,
                    ImageReason.INTERNAL_ERROR,
                    f"could not decide the update of chart '{item.key}': "
                    f"{type(err).__name__}: {err}",
                )
            )
    return out
