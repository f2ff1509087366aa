"""Chart references, matching Application sources, and planning chart versions (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.chart import ChartRef, ChartRefError, ChartSpec
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.model.update_config import (
    AppUpdateConfig,
    GitSettings,
    UpdateSettings,
    WriteBack,
)
from argocd_image_updater.plan.charts import HELM_INDEX
from argocd_image_updater.plan.choices import ScanResults
from argocd_image_updater.plan.decide import plan_app
from argocd_image_updater.plan.jobs import ScanKey, plan_scans
from argocd_image_updater.plan.model import AppPlan, ImageReason, Outcome
from argocd_image_updater.plan.patch import json_patch_ops
from argocd_image_updater.writeback.formats import named

REG = "registry.example.com"
HELM = "https://charts.example.com/stable"


@dataclass(frozen=True)
class FakeScan:
    tags: tuple[TagInfo, ...]
    order_hint: Mapping[str, int] | None = None


# --- references --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "repo_url", "name", "constraint"),
    [
        (f"oci://{REG}/org/charts/web", "oci", f"oci://{REG}/org/charts", "web", ""),
        (f"oci://{REG}/org/charts/web:^1.2", "oci", f"oci://{REG}/org/charts", "web", "^1.2"),
        ("oci://LOCALHOST:5000/web:~1", "oci", "oci://localhost:5000", "web", "~1"),
        (f"{HELM}/nginx:>=1.0 <2", "helm", HELM, "nginx", ">=1.0 <2"),
        ("http://127.0.0.1:8080/api", "helm", "http://127.0.0.1:8080", "api", ""),
        (
            "HTTPS://Charts.Example.com/a/b/c:1.x",
            "helm",
            "https://charts.example.com/a/b",
            "c",
            "1.x",
        ),
    ],
)
def test_chart_references_parse(
    text: str, kind: str, repo_url: str, name: str, constraint: str
) -> None:
    ref = ChartRef.parse(text)
    assert (ref.kind, ref.repository_url, ref.name, ref.constraint) == (
        kind,
        repo_url,
        name,
        constraint,
    )


def test_oci_registry_and_repository() -> None:
    ref = ChartRef.parse(f"oci://{REG}/org/charts/web:^1")
    assert (ref.registry, ref.repository) == (REG, "org/charts/web")
    assert ref.with_version("1.2.3") == f"oci://{REG}/org/charts/web:1.2.3"


@pytest.mark.parametrize(
    "text",
    [
        "registry.example.com/org/web",  # no scheme: an image, not a chart
        "oci://registry.example.com",  # no chart name
        "https://charts.example.com/",  # no chart name
        "oci://registry.example.com/web:",  # empty constraint
        "https://user:secret@charts.example.com/web",  # credentials in the reference
        "git://example.com/web",
    ],
)
def test_bad_chart_references_are_refused_naming_the_text(text: str) -> None:
    with pytest.raises(ChartRefError, match="invalid chart reference"):
        ChartRef.parse(text)


def test_credentials_in_a_reference_are_not_repeated() -> None:
    with pytest.raises(ChartRefError) as err:
        ChartRef.parse("https://user:s3cr3t@charts.example.com/web")
    assert "credentials do not belong" in str(err.value)


@pytest.mark.parametrize(
    ("chart", "repo_url", "source_chart", "matches"),
    [
        # classic Helm OCI: repoURL without scheme + chart
        (f"oci://{REG}/org/charts/web", f"{REG}/org/charts", "web", True),
        (f"oci://{REG}/org/charts/web", f"{REG}/org/charts/", "web", True),
        (f"oci://{REG}/org/charts/web", f"{REG.upper()}/org/charts", "web", True),
        (f"oci://{REG}/org/charts/web", f"oci://{REG}/org/charts", "web", True),
        (f"oci://{REG}/org/charts/web", f"{REG}/org/charts", "api", False),
        (f"oci://{REG}/org/charts/web", f"{REG}/org/Charts", "web", False),
        # Argo CD native OCI source
        (f"oci://{REG}/org/charts/web", f"oci://{REG}/org/charts/web", "", True),
        (f"oci://{REG}/org/charts/web", f"{REG}/org/charts/web", "", False),
        (f"oci://{REG}/org/charts/web", f"https://{REG}/org/charts", "web", False),
        # Helm repositories
        (f"{HELM}/nginx", HELM, "nginx", True),
        (f"{HELM}/nginx", HELM + "/", "nginx", True),
        (f"{HELM}/nginx", HELM, "", False),
        (f"{HELM}/nginx", "http://charts.example.com/stable", "nginx", False),
        (f"{HELM}/nginx", "charts.example.com/stable", "nginx", False),
    ],
)
def test_source_matching(chart: str, repo_url: str, source_chart: str, matches: bool) -> None:
    assert ChartRef.parse(chart).matches(repo_url, source_chart) is matches


# --- planning ----------------------------------------------------------------------------------


def application(sources: list[dict[str, Any]], *, source_type: str = "Helm") -> Application:
    spec: dict[str, Any] = {"project": "default"}
    status: dict[str, Any] = {}
    if len(sources) == 1:
        spec["source"] = sources[0]
        status["sourceType"] = source_type
    else:
        spec["sources"] = sources
        status["sourceTypes"] = [source_type] * len(sources)
    return Application.from_object(
        {
            "metadata": {"name": "app", "namespace": "argocd", "resourceVersion": "7"},
            "spec": spec,
            "status": status,
        }
    )


def config(
    app: Application,
    *charts: tuple[str, str],
    write_back: WriteBack | None = None,
    settings: UpdateSettings | None = None,
    versions: Mapping[str, str] | None = None,
) -> AppUpdateConfig:
    return AppUpdateConfig(
        app=app,
        images=(),
        write_back=write_back or WriteBack(),
        origin="imageupdater argocd/iu",
        charts=tuple(ChartSpec(a, c, settings or UpdateSettings()) for a, c in charts),
        chart_versions=versions or {},
    )


def plan(cfg: AppUpdateConfig, registry: Mapping[str, list[str] | Exception]) -> AppPlan:
    endpoints = RegistryConfig()
    jobs = plan_scans(cfg, endpoints.endpoint_for)
    results = ScanResults()
    for job in jobs.chart_jobs:
        found = registry[job.repository]
        results[job.scan_key] = (
            found if isinstance(found, Exception) else FakeScan(tuple(TagInfo(t) for t in found))
        )
    return plan_app(jobs, results)


OCI_WEB = f"oci://{REG}/org/charts/web"
OCI_BUNDLE = f"oci://{REG}/org/bundle"


def test_multi_source_app_gets_one_patch_of_both_target_revisions() -> None:
    app = application(
        [
            {"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": "1.0.0"},
            {
                "repoURL": "https://git.example.com/values",
                "ref": "values",
                "targetRevision": "main",
            },
            {"repoURL": OCI_BUNDLE, "path": ".", "targetRevision": "0.1.0"},
        ]
    )
    cfg = config(app, ("web", OCI_WEB + ":^1"), ("bundle", OCI_BUNDLE))
    result = plan(cfg, {"org/charts/web": ["1.0.0", "1.4.0", "2.0.0"], "org/bundle": ["0.2.0"]})
    assert [r.reason for r in result.results] == [ImageReason.UPDATED, ImageReason.UPDATED]
    assert result.results[0].message == (
        f"Successfully updated chart '{OCI_WEB}:1.0.0' to '{OCI_WEB}:1.4.0'"
    )
    assert json_patch_ops(app.raw, result) == [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "replace", "path": "/spec/sources/0/targetRevision", "value": "1.4.0"},
        {"op": "replace", "path": "/spec/sources/2/targetRevision", "value": "0.2.0"},
    ]
    assert [(c.alias, c.old_tag, c.new_tag) for c in result.changes] == [
        ("web", "1.0.0", "1.4.0"),
        ("bundle", "0.1.0", "0.2.0"),
    ]


def test_one_chart_scan_key_is_the_images_one() -> None:
    app = application([{"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": "1"}])
    jobs = plan_scans(config(app, ("web", OCI_WEB)), RegistryConfig().endpoint_for)
    (job,) = jobs.chart_jobs
    assert job.scan_key == ScanKey(f"https://{REG}", "org/charts/web", "", False, (), ())


def test_helm_repository_chart_scans_its_index() -> None:
    app = application([{"repoURL": HELM, "chart": "nginx", "targetRevision": "1.0.0"}])
    cfg = config(app, ("nginx", f"{HELM}/nginx:~1.0"))
    jobs = plan_scans(cfg, RegistryConfig().endpoint_for)
    (job,) = jobs.chart_jobs
    assert job.scan_key.kind == HELM_INDEX
    assert (job.scan_key.api_url, job.scan_key.repository) == (HELM, "nginx")
    result = plan(cfg, {"nginx": ["1.0.0", "1.0.3", "1.1.0"]})
    assert json_patch_ops(app.raw, result)[1:] == [
        {"op": "replace", "path": "/spec/source/targetRevision", "value": "1.0.3"}
    ]


@pytest.mark.parametrize(
    ("current", "versions", "reason", "outcome"),
    [
        ("1.4.0", ["1.0.0", "1.4.0"], ImageReason.UP_TO_DATE, Outcome.UP_TO_DATE),
        ("3.0.0", ["1.0.0", "1.4.0"], ImageReason.WOULD_DOWNGRADE, Outcome.SKIPPED),
        ("1.0.0", ["0.1.0"], ImageReason.NO_CANDIDATE, Outcome.SKIPPED),
    ],
)
def test_chart_reasons_are_the_images_ones(
    current: str, versions: list[str], reason: ImageReason, outcome: Outcome
) -> None:
    app = application([{"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": current}])
    result = plan(config(app, ("web", OCI_WEB + ":>=1.0")), {"org/charts/web": versions})
    (only,) = result.results
    assert (only.reason, only.outcome) == (reason, outcome)
    assert json_patch_ops(app.raw, result) == []


def test_allow_downgrade_writes_a_lower_version() -> None:
    app = application([{"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": "3.0.0"}])
    settings = UpdateSettings(allow_downgrade=True)
    result = plan(config(app, ("web", OCI_WEB), settings=settings), {"org/charts/web": ["1.4.0"]})
    assert result.results[0].reason == ImageReason.UPDATED


def test_registry_error_is_that_charts_error() -> None:
    app = application([{"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": "1"}])
    result = plan(config(app, ("web", OCI_WEB)), {"org/charts/web": RuntimeError("boom")})
    (only,) = result.results
    assert only.reason == ImageReason.REGISTRY_ERROR and "boom" in only.message


def test_chart_not_in_the_application_is_not_live() -> None:
    app = application([{"repoURL": f"{REG}/org/charts", "chart": "api", "targetRevision": "1"}])
    result = plan(config(app, ("web", OCI_WEB)), {})
    (only,) = result.results
    assert only.reason == ImageReason.NOT_LIVE
    assert "is not a source of this application" in only.message


def test_digest_strategy_is_refused_for_charts() -> None:
    app = application([{"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": "1"}])
    settings = UpdateSettings(strategy="digest")
    result = plan(config(app, ("web", OCI_WEB + ":1"), settings=settings), {})
    (only,) = result.results
    assert only.reason == ImageReason.INVALID_CONFIG and "pins digests" in only.message


def test_git_targets_other_than_chartfile_cannot_hold_a_chart_version() -> None:
    app = application([{"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": "1"}])
    write_back = WriteBack(method="git", git=GitSettings(write_back_target="helmvalues"))
    result = plan(config(app, ("web", OCI_WEB), write_back=write_back), {})
    (only,) = result.results
    assert only.reason == ImageReason.INVALID_CONFIG
    assert "use writeBackTarget chartfile:<path to Chart.yaml>" in only.message


def test_with_an_application_target_the_manifest_in_git_gets_the_target_revision() -> None:
    source = {"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": "1.0.0"}
    app = application([source])
    target = "application:apps/app.yaml"
    write_back = WriteBack(method="git", git=GitSettings(write_back_target=target))
    cfg = config(app, ("web", OCI_WEB), write_back=write_back)
    result = plan(cfg, {"org/charts/web": ["1.0.0", "1.4.0"]})
    assert [r.reason for r in result.results] == [ImageReason.UPDATED]
    text = (
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: app\nspec:\n"
        f"  source:\n    repoURL: {REG}/org/charts\n    chart: web\n"
        "    targetRevision: 1.0.0   # the chart's version\n"
    )
    new = named("application").render(text, "apps/app.yaml", cfg, result)
    assert new == text.replace("1.0.0", "1.4.0")


def test_bad_chart_reference_is_that_charts_error() -> None:
    app = application([{"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": "1"}])
    result = plan(config(app, ("web", f"{REG}/org/charts/web")), {})
    (only,) = result.results
    assert only.reason == ImageReason.INVALID_CONFIG and "invalid chart reference" in only.message


def test_a_directory_app_with_only_charts_is_planned() -> None:
    app = application(
        [{"repoURL": OCI_BUNDLE, "path": ".", "targetRevision": "0.1.0"}], source_type="Directory"
    )
    result = plan(config(app, ("bundle", OCI_BUNDLE)), {"org/bundle": ["0.1.0", "0.2.0"]})
    assert result.note == ""
    assert result.results[0].reason == ImageReason.UPDATED


# --- the shared settings: minAge and holds -------------------------------------------------


def test_min_age_from_created_applies_to_charts() -> None:
    from datetime import UTC, datetime, timedelta

    from argocd_image_updater.model.platform import Platform
    from argocd_image_updater.model.tags import PlatformImage
    from argocd_image_updater.policy.min_age import TagAges

    now = datetime(2026, 6, 1, tzinfo=UTC)
    app = application([{"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": "1.0.0"}])
    settings = UpdateSettings(min_age="72h", min_age_from="created")
    cfg = config(app, ("web", OCI_WEB), settings=settings)
    jobs = plan_scans(cfg, RegistryConfig().endpoint_for)
    (job,) = jobs.chart_jobs

    def built(name: str, days: int) -> TagInfo:
        return TagInfo(name, "", (PlatformImage(Platform("", ""), "", now - timedelta(days)),))

    results = ScanResults()
    results[job.scan_key] = FakeScan((built("1.0.0", 30), built("1.1.0", 10), built("1.2.0", 1)))
    results.ages[job.scan_key] = TagAges(now)
    result = plan_app(jobs, results)
    assert result.results[0].chosen == f"{OCI_WEB}:1.1.0"


def test_a_chart_whose_newer_versions_are_too_young_says_when_one_is_eligible() -> None:
    from datetime import UTC, datetime, timedelta

    from argocd_image_updater.model.platform import Platform
    from argocd_image_updater.model.tags import PlatformImage
    from argocd_image_updater.policy.min_age import TagAges

    now = datetime(2026, 6, 1, tzinfo=UTC)
    app = application([{"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": "1.1.0"}])
    settings = UpdateSettings(min_age="72h", min_age_from="created")
    jobs = plan_scans(
        config(app, ("web", OCI_WEB), settings=settings), RegistryConfig().endpoint_for
    )
    (job,) = jobs.chart_jobs

    def built(name: str, hours: int) -> TagInfo:
        created = now - timedelta(hours=hours)
        return TagInfo(name, "", (PlatformImage(Platform("", ""), "", created),))

    results = ScanResults()
    results[job.scan_key] = FakeScan((built("1.1.0", 240), built("1.2.0", 24), built("1.3.0", 2)))
    results.ages[job.scan_key] = TagAges(now)
    (only,) = plan_app(jobs, results).results
    assert only.reason == ImageReason.TOO_YOUNG
    assert only.message == "too-young: 1.2.0 eligible at 2026-06-03T00:00:00Z"


def test_a_manual_hold_keeps_a_chart_from_being_written() -> None:
    from datetime import UTC, datetime

    from argocd_image_updater.model.holds import ManualHold
    from argocd_image_updater.plan.holds import HoldContext

    app = application([{"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": "1.0.0"}])
    jobs = plan_scans(config(app, ("web", OCI_WEB)), RegistryConfig().endpoint_for)
    (job,) = jobs.chart_jobs
    results = ScanResults()
    results[job.scan_key] = FakeScan((TagInfo("1.0.0"), TagInfo("1.1.0")))
    holds = HoldContext(
        datetime(2026, 6, 1, tzinfo=UTC), manual=(ManualHold("web", reason="freeze"),)
    )
    result = plan_app(jobs, results, holds=holds)
    (only,) = result.results
    assert only.reason == ImageReason.HELD and "freeze" in only.message
    assert json_patch_ops(app.raw, result) == []


@pytest.mark.parametrize("via", ["argocd", "git"])
def test_a_chart_version_set_back_from_the_one_written_is_held(via: str) -> None:
    from datetime import UTC, datetime

    from argocd_image_updater.model.controller_state import WriteRecord
    from argocd_image_updater.plan.holds import HoldContext

    now = datetime(2026, 6, 1, tzinfo=UTC)
    app = application([{"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": "1.0.0"}])
    jobs = plan_scans(config(app, ("web", OCI_WEB)), RegistryConfig().endpoint_for)
    (job,) = jobs.chart_jobs
    results = ScanResults()
    results[job.scan_key] = FakeScan((TagInfo("1.0.0"), TagInfo("1.1.0")))
    written = WriteRecord("1.1.0", now, via=via, commit="abc" if via == "git" else "")
    holds = HoldContext(now, {"web": written}, via=via)  # 1.1.0 never ran
    (only,) = plan_app(jobs, results, holds=holds).results
    assert (only.reason, only.message) == (
        ImageReason.HELD,
        "held: rolled back from 1.1.0 to 1.0.0",
    )


def test_a_registry_event_selects_the_oci_charts_of_its_repository() -> None:
    from argocd_image_updater.controller.events import images_for_repository
    from argocd_image_updater.model.registry_event import RegistryEvent

    app = application([{"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": "1"}])
    cfg = config(app, ("web", OCI_WEB), ("bundle", OCI_BUNDLE), ("nginx", f"{HELM}/nginx"))
    endpoints = RegistryConfig().endpoint_for
    narrowed = images_for_repository(cfg, RegistryEvent(REG, "org/charts/web", "1.2.0"), endpoints)
    assert narrowed is not None and [c.alias for c in narrowed.charts] == ["web"]
    assert images_for_repository(cfg, RegistryEvent(REG, "org/other", "1"), endpoints) is None


def test_helm_oci_tags_are_read_back_as_versions_with_build_metadata() -> None:
    # helm push stores 1.2.0+build.7 as the tag 1.2.0_build.7; Helm sources name the version.
    app = application(
        [
            {"repoURL": f"{REG}/org/charts", "chart": "web", "targetRevision": "1.0.0+build.1"},
            {"repoURL": OCI_BUNDLE, "path": ".", "targetRevision": "0.1.0_x"},
        ]
    )
    cfg = config(app, ("web", OCI_WEB + ":^1"), ("bundle", OCI_BUNDLE + ":*"))
    result = plan(
        cfg,
        {
            "org/charts/web": ["1.0.0_build.1", "1.2.0_build.7", "2.0.0"],
            "org/bundle": ["0.1.0_x", "0.2.0_y"],
        },
    )
    web, bundle = result.results
    assert web.chosen == f"{OCI_WEB}:1.2.0+build.7"
    assert json_patch_ops(app.raw, result)[1:] == [
        {"op": "replace", "path": "/spec/sources/0/targetRevision", "value": "1.2.0+build.7"}
    ]
    # A native OCI source uses the tag as it is (here: not semver, so never chosen).
    assert bundle.reason == ImageReason.NO_CANDIDATE
