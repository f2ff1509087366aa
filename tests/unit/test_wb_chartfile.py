"""``chartfile:<path>``: parsing the target, reading and writing dependency versions (pure)."""

from __future__ import annotations

import pytest

from argocd_image_updater.model.application import Application
from argocd_image_updater.model.chart import ChartSpec
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.update_config import AppUpdateConfig, GitSettings, WriteBack
from argocd_image_updater.plan.model import AppPlan, ImageChange, ParamEdit
from argocd_image_updater.writeback.formats import TargetError, parse_target
from argocd_image_updater.writeback.formats.chartfile import FORMAT, chart_versions

CHART = """\
apiVersion: v2
name: platform
dependencies:
- name: web
  version: '1.0.0'   # bumped
  repository: oci://ghcr.io/example/charts/
- name: web
  version: 9.9.9
  repository: https://other.example.com
- name: db
  version: 2.0.0
"""
WEB = ChartSpec("web", "oci://ghcr.io/example/charts/web:^1")
DB = ChartSpec("database", "https://charts.example.com/db")


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("chartfile:Chart.yaml", "apps/platform/Chart.yaml"),
        ("chartfile:../umbrella/Chart.yaml", "apps/umbrella/Chart.yaml"),
        ("chartfile:/charts/Chart.yaml", "charts/Chart.yaml"),
        ("chartfile", "apps/platform/Chart.yaml"),
    ],
)
def test_targets(text: str, path: str) -> None:
    target = parse_target(text, "apps/platform", "x", "Application 'a/b'")
    assert (target.kind, target.file_path) == ("chartfile", path)


@pytest.mark.parametrize("text", ["chartfile:/", "chartfile:dir/", "chartfile:../../../x.yaml"])
def test_bad_targets_name_the_setting(text: str) -> None:
    with pytest.raises(TargetError, match=r"gitConfig\.writeBackTarget"):
        parse_target(text, "apps/platform", "x", "Application 'a/b'")


def test_versions_are_read_from_the_matching_dependency() -> None:
    assert chart_versions(CHART, [WEB, DB]) == {"web": "1.0.0", "database": "2.0.0"}
    assert chart_versions(None, [WEB]) == {}
    assert chart_versions("name: x\n", [WEB]) == {}


def config() -> AppUpdateConfig:
    app = Application.from_object(
        {"metadata": {"name": "platform", "namespace": "argocd"}, "spec": {"source": {}}}
    )
    write_back = WriteBack("git", GitSettings(write_back_target="chartfile:Chart.yaml"))
    return AppUpdateConfig(app, (), write_back, charts=(WEB, DB))


def plan(*changes: tuple[str, str], managed: tuple[ParamEdit, ...] = ()) -> AppPlan:
    return AppPlan.build(
        app_name="platform",
        app_namespace="argocd",
        source_path=("spec", "source"),
        source_type="Helm",
        results=(),
        changes=[
            ImageChange(alias, ImageRef.parse("ghcr.io/example/charts/web"), "", new, "")
            for alias, new in changes
        ],
        managed=managed,
    )


def test_render_changes_only_the_version_bytes() -> None:
    new = FORMAT.render(
        CHART, "Chart.yaml", config(), plan(("web", "1.4.0"), ("database", "2.1.0"))
    )
    assert new == CHART.replace("'1.0.0'", "'1.4.0'").replace("2.0.0", "2.1.0")
    assert FORMAT.render(CHART, "Chart.yaml", config(), plan(("web", "1.0.0"))) is None


def test_render_refuses_images_and_missing_dependencies() -> None:
    edit = ParamEdit("helm", "image.tag", "1.1", changed=True)
    with pytest.raises(TargetError, match="chart versions only"):
        FORMAT.render(CHART, "Chart.yaml", config(), plan(("web", "1.4.0"), managed=(edit,)))
    with pytest.raises(TargetError, match="no dependency named 'web'"):
        FORMAT.render("dependencies: []\n", "Chart.yaml", config(), plan(("web", "1.4.0")))
    with pytest.raises(TargetError, match="no such file"):
        FORMAT.render(None, "Chart.yaml", config(), plan(("web", "1.4.0")))
