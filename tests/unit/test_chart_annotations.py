"""The ``chart-list`` annotation in both annotation readings (``useAnnotations`` and v0.x)."""

from __future__ import annotations

from typing import Any

from argocd_image_updater.config.chart_annotations import CHART_LIST_KEY
from argocd_image_updater.config.imageupdater import parse_image_updater
from argocd_image_updater.config.selection import select_applications
from argocd_image_updater.config.selection_v0 import select_applications_v0
from argocd_image_updater.model.application import Application

P = "argocd-image-updater.argoproj.io"
WEB = "oci://registry.example.com/org/charts/web"


def app(annotations: dict[str, str], source_type: str = "Helm", name: str = "web") -> Application:
    return Application.from_object(
        {
            "metadata": {"name": name, "namespace": "argocd", "annotations": annotations},
            "spec": {
                "source": {
                    "repoURL": "registry.example.com/org/charts",
                    "chart": "web",
                    "targetRevision": "1.0.0",
                }
            },
            "status": {"sourceType": source_type},
        }
    )


def cr() -> Any:
    return parse_image_updater(
        {
            "metadata": {"name": "iu", "namespace": "argocd"},
            "spec": {"applicationRefs": [{"namePattern": "*", "useAnnotations": True}]},
        }
    )


ANNOTATIONS = {
    CHART_LIST_KEY: f"web={WEB}:^1, db=https://charts.example.com/db",
    f"{P}/update-strategy": "newest-build",
    f"{P}/web.ignore-tags": "*-rc*",
    f"{P}/web.allow-downgrade": "true",
}


def test_use_annotations_reads_the_chart_list_with_per_alias_settings() -> None:
    result = select_applications(cr(), [app(ANNOTATIONS)])
    (config,) = result.configs
    assert config.images == ()
    web, db = config.charts
    assert (web.alias, web.chart, db.alias, db.chart) == (
        "web",
        f"{WEB}:^1",
        "db",
        "https://charts.example.com/db",
    )
    assert web.settings.strategy == "newest-build" and db.settings.strategy == "newest-build"
    assert web.settings.ignore_tags == ("*-rc*",) and web.settings.allow_downgrade is True
    assert db.settings.ignore_tags is None
    assert web.settings.where("ignore_tags") == (
        f"Application argocd/web annotation {P}/web.ignore-tags"
    )


def test_use_annotations_with_both_lists() -> None:
    annotations = {**ANNOTATIONS, f"{P}/image-list": "nginx=nginx:~1.25"}
    (config,) = select_applications(cr(), [app(annotations)]).configs
    assert [i.alias for i in config.images] == ["nginx"]
    assert [c.alias for c in config.charts] == ["web", "db"]


def test_an_empty_chart_entry_is_reported() -> None:
    result = select_applications(cr(), [app({CHART_LIST_KEY: "web="})])
    assert result.configs == []
    assert any("empty chart in" in w and CHART_LIST_KEY in w for w in result.warnings)


def test_v0_mode_reads_the_chart_list_even_for_a_directory_source() -> None:
    apps = [
        app(ANNOTATIONS, source_type="Directory"),
        app({f"{P}/image-list": "nginx"}, source_type="Directory", name="images-only"),
        app({}, name="nothing"),
    ]
    result = select_applications_v0(apps)
    (config,) = result.configs
    assert config.images == () and [c.alias for c in config.charts] == ["web", "db"]
    assert config.is_legacy
    assert config.charts[0].settings.ignore_tags == ("*-rc*",)
    assert [name for name, _ in result.skipped] == ["argocd/images-only"]
