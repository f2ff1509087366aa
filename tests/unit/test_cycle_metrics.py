"""Per-cycle metrics, read back from the Prometheus exposition of our registry, and the fit with
the original's Grafana dashboard."""

from __future__ import annotations

import re
import uuid

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater.pipeline.records import AppOutcome, CRState, CycleResult
from argocd_image_updater.plan.model import AppPlan, ImageChange, ImageReason, ImageResult, Outcome
from argocd_image_updater.report.cycle_metrics import forget_cr, record_cycle

P = "argocd_image_updater_"
# Every query of the original's Grafana dashboard (its panels' "expr" fields).
DASHBOARD_EXPRS = (
    "sum(argocd_image_updater_applications_watched_total)",
    "sum(argocd_image_updater_images_watched_total)",
    "sum(increase(argocd_image_updater_images_updated_total[1m]))",
    "sum(increase(argocd_image_updater_images_updated_error_total[1m]))",
    "sum by (application) (increase(argocd_image_updater_images_updated_total[5m]))",
    "sum by (registry) (increase(argocd_image_updater_registry_requests_total[1m]))",
    "sum by (registry) (increase(argocd_image_updater_registry_requests_failed_total[1m]))",
    "sum(increase(argocd_image_updater_argocd_api_requests_total[1m]))",
    "sum(increase(argocd_image_updater_argocd_api_errors_total[1m]))",
)

Labels = dict[str, str]


def samples() -> dict[str, list[tuple[Labels, float]]]:
    out: dict[str, list[tuple[Labels, float]]] = {}
    for family in text_string_to_metric_families(generate_latest(REGISTRY).decode()):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def value(name: str, **labels: str) -> float | None:
    for got, number in samples().get(name, []):
        if got == labels:
            return number
    return None


def cr(name: str, error: str | None = None) -> CRState:
    return CRState("team-a", name, 1, "1", error=error)


def app(
    state: CRState | None,
    name: str,
    *,
    updates: int = 0,
    errors: int = 0,
    current: int = 0,
    written: bool = True,
    write_error: str | None = None,
) -> AppOutcome:
    results: list[ImageResult] = []
    changes: list[ImageChange] = []
    for i in range(updates):
        image = f"img{i}"
        results.append(
            ImageResult(
                image, image, f"{image}:1", f"{image}:2", Outcome.UPDATED, ImageReason.UPDATED, ""
            )
        )
        changes.append(ImageChange(image, ImageRef.parse(image), "1", "2", ""))
    for i in range(errors):
        results.append(
            ImageResult(
                f"e{i}", "x", "x:1", None, Outcome.ERROR, ImageReason.REGISTRY_ERROR, "boom"
            )
        )
    for i in range(current):
        results.append(
            ImageResult(f"c{i}", "y", "y:1", "y:1", Outcome.UP_TO_DATE, ImageReason.UP_TO_DATE, "")
        )
    plan = AppPlan.build(
        app_name=name,
        app_namespace="team-a",
        source_path=("spec", "source"),
        source_type="Helm",
        results=results,
        changes=changes,
    )
    return AppOutcome(
        f"team-a/{name}",
        plan,
        written=written and bool(changes) and write_error is None,
        error=write_error,
        cr=state,
    )


@pytest.fixture
def name() -> str:
    return f"cr-{uuid.uuid4().hex[:8]}"


def test_gauges_per_cr_and_counters_per_application(name: str) -> None:
    state = cr(name)
    result = CycleResult(
        apps=[
            app(state, "shop", updates=2, current=1),
            app(state, "blog", errors=1, current=2),
            app(state, "wiki", updates=1, write_error="could not update application: denied"),
        ]
    )
    record_cycle(result, dry_run=False)
    crl = {"image_updater_cr_name": name, "image_updater_cr_namespace": "team-a"}
    assert value(P + "applications_watched_total", **crl) == 3
    assert value(P + "images_watched_total", **crl) == 7
    assert value(P + "images_updated_total", application="team-a/shop", **crl) == 2
    assert value(P + "images_updated_total", application="team-a/blog", **crl) == 0
    assert value(P + "images_updated_total", application="team-a/wiki", **crl) == 0
    assert value(P + "images_errors_total", application="team-a/blog", **crl) == 1
    assert value(P + "images_errors_total", application="team-a/wiki", **crl) == 1
    assert value(P + "images_errors_total", application="team-a/shop", **crl) == 0
    assert value(P + "images_updated_error_total", application="team-a/blog", **crl) == 1

    record_cycle(CycleResult(apps=[app(state, "shop", updates=1)]), dry_run=False)
    assert value(P + "images_updated_total", application="team-a/shop", **crl) == 3
    assert value(P + "applications_watched_total", **crl) == 1
    assert value(P + "images_watched_total", **crl) == 1


def test_dry_run_counts_no_update(name: str) -> None:
    state = cr(name)
    record_cycle(CycleResult(apps=[app(state, "shop", updates=2, written=False)]), dry_run=True)
    crl = {"image_updater_cr_name": name, "image_updater_cr_namespace": "team-a"}
    assert value(P + "images_updated_total", application="team-a/shop", **crl) == 0
    assert value(P + "images_watched_total", **crl) == 2


def test_legacy_applications_get_empty_cr_labels() -> None:
    appname = f"legacy-{uuid.uuid4().hex[:8]}"
    record_cycle(CycleResult(apps=[app(None, appname, updates=1)]), dry_run=False)
    empty = {"image_updater_cr_name": "", "image_updater_cr_namespace": ""}
    assert value(P + "images_updated_total", application=f"team-a/{appname}", **empty) == 1
    assert value(P + "applications_watched_total", **empty) == 1


def test_crs_without_applications_and_failed_crs(name: str) -> None:
    empty, broken = cr(name), cr(name + "-broken", error="invalid spec")
    record_cycle(CycleResult(apps=[]), dry_run=False, crs=[empty, broken])
    assert (
        value(
            P + "applications_watched_total",
            image_updater_cr_name=name,
            image_updater_cr_namespace="team-a",
        )
        == 0
    )
    labels = {"image_updater_cr_name": name + "-broken", "image_updater_cr_namespace": "team-a"}
    assert value(P + "images_errors_total", application="", **labels) == 1


def test_forget_cr_removes_its_series_only(name: str) -> None:
    first, second = cr(name + "-1"), cr(name + "-2")
    record_cycle(
        CycleResult(apps=[app(first, "a", updates=1, errors=1), app(second, "b", updates=3)]),
        dry_run=False,
    )
    forget_cr("team-a", name + "-1")
    for series in samples().values():
        assert not any(labels.get("image_updater_cr_name") == name + "-1" for labels, _ in series)
    labels = {"image_updater_cr_name": name + "-2", "image_updater_cr_namespace": "team-a"}
    assert value(P + "images_updated_total", application="team-a/b", **labels) == 3
    assert value(P + "applications_watched_total", **labels) == 1


def test_gauges_of_crs_gone_from_the_cycle_are_removed(name: str) -> None:
    state = cr(name)
    record_cycle(CycleResult(apps=[app(state, "a", current=1)]), dry_run=False)
    record_cycle(CycleResult(apps=[]), dry_run=False)
    labels = {"image_updater_cr_name": name, "image_updater_cr_namespace": "team-a"}
    assert value(P + "applications_watched_total", **labels) is None
    assert value(P + "images_updated_total", application="team-a/a", **labels) == 0


def test_every_metric_of_the_original_dashboard_is_exported(name: str) -> None:
    state = cr(name)
    record_cycle(CycleResult(apps=[app(state, "shop", updates=1, errors=1)]), dry_run=False)
    text = generate_latest(REGISTRY).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    exported = set(samples())
    for family in families.values():
        if family.type == "counter":  # a labelled counter without series still has its name
            exported.add(family.name + "_total")
    for expr in DASHBOARD_EXPRS:
        used = re.findall(r"\b(argocd_image_updater_[a-z_]+)", expr)
        assert used
        for metric in used:
            assert metric in exported, f"{metric} (used by {expr!r}) is not exported"
        grouping = re.search(r"by \(([a-z_, ]+)\)", expr)
        family = families.get(used[0]) or families[used[0].removesuffix("_total")]
        if grouping is not None and family.samples:
            wanted = {label.strip() for label in grouping.group(1).split(",")}
            for sample in family.samples:
                assert wanted <= set(sample.labels), (expr, sample)
    by_app = samples()[P + "images_updated_total"]
    assert (
        {
            "application": "team-a/shop",
            "image_updater_cr_name": name,
            "image_updater_cr_namespace": "team-a",
        },
        1.0,
    ) in by_app


def test_a_partial_cycle_moves_counters_only(name: str) -> None:
    state = cr(name)
    record_cycle(CycleResult(apps=[app(state, "a", current=2), app(state, "b")]), dry_run=False)
    record_cycle(CycleResult(apps=[app(state, "a", updates=1)]), dry_run=False, gauges=False)
    labels = {"image_updater_cr_name": name, "image_updater_cr_namespace": "team-a"}
    assert value(P + "applications_watched_total", **labels) == 2
    assert value(P + "images_watched_total", **labels) == 2
    assert value(P + "images_updated_total", application="team-a/a", **labels) == 1
