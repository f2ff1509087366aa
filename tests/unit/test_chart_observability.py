"""The chart's Grafana dashboard and Prometheus alerts: rendered by Helm when their values are
on, every dashboard query (and every PromQL example of docs/operations.md) parsed by
Prometheus's own parser (``promtool``) and naming only metrics the controller exports, every
alert checked and tested by ``promtool test rules``."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from chart_helm import render
from ruamel.yaml import YAML

# Importing these modules registers their metrics.
import argocd_image_updater.notify.metrics
import argocd_image_updater.report.cycle_metrics
import argocd_image_updater.webhook.dispatch
import argocd_image_updater.writeback.git.process  # noqa: F401
from argocd_image_updater.observe.metrics import REGISTRY

pytestmark = pytest.mark.system  # Helm rendering and promtool

HERE = Path(__file__).resolve().parent
ALERT_TESTS = HERE / "chart_alerts" / "alerts_test.yaml"
ON = {"metrics": {"dashboard": {"enabled": True}, "rules": {"enabled": True}}}
ALERTS = {
    "ArgoCDImageUpdaterCycleStalled",
    "ArgoCDImageUpdaterImageErrors",
    "ArgoCDImageUpdaterRegistryFailing",
    "ArgoCDImageUpdaterImageNotShipped",
    "ArgoCDImageUpdaterNotificationsFailing",
}
# Grafana's variables, replaced by what Grafana sends to Prometheus before parsing.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "6h"}
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def promtool(*args: str, cwd: Path | None = None) -> str:
    binary = shutil.which("promtool") or "/usr/bin/promtool"
    if not Path(binary).exists():
        pytest.fail("promtool not found: install it with scripts/setup (Debian's prometheus)")
    done = subprocess.run(
        [binary, *args], capture_output=True, text=True, cwd=cwd, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def dashboard(values: dict[str, Any] = ON) -> dict[str, Any]:
    objs = render(values)
    [config] = [
        o for o in objs if o["kind"] == "ConfigMap" and "dashboard" in o["metadata"]["name"]
    ]
    model: dict[str, Any] = json.loads(config["data"]["argocd-image-updater.json"])
    return model


def panels(model: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for panel in model["panels"]:
        found.append(panel)
        found.extend(panel.get("panels", []))
    return found


def expressions(model: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, PromQL) of every panel query and query variable."""
    found = [
        (panel["title"], target["expr"])
        for panel in panels(model)
        for target in panel.get("targets", [])
    ]
    for variable in model["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]["query"]
            inner = re.fullmatch(r"label_values\((.+),\s*\w+\)", query)
            assert inner is not None, query
            found.append((f"variable {variable['name']}", inner.group(1)))
    return found


def exported_series() -> set[str]:
    names = set()
    for family in REGISTRY.collect():
        for suffix in _SUFFIXES.get(family.type, ("",)):
            names.add(family.name + suffix)
    return names


def test_both_objects_render_only_when_asked() -> None:
    kinds = [o["kind"] for o in render(None)]
    assert "PrometheusRule" not in kinds
    assert not [o for o in render(None) if "dashboard" in o["metadata"]["name"]]
    objs = render(ON)
    [rule] = [o for o in objs if o["kind"] == "PrometheusRule"]
    assert {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]} == ALERTS
    [config] = [
        o for o in objs if o["kind"] == "ConfigMap" and "dashboard" in o["metadata"]["name"]
    ]
    assert config["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config["metadata"]["namespace"] == "argocd"


def test_values_place_label_and_trim_the_objects() -> None:
    values = {
        "metrics": {
            "dashboard": {
                "enabled": True,
                "namespace": "monitoring",
                "label": "dashboards",
                "labelValue": "argo",
                "annotations": {"grafana_folder": "Argo CD"},
            },
            "rules": {
                "enabled": True,
                "namespace": "monitoring",
                "additionalLabels": {"release": "prometheus"},
                "ruleLabels": {"severity": "page", "team": "platform"},
                "disabled": ["ArgoCDImageUpdaterImageNotShipped"],
                "runbookUrl": "https://docs.example.com/ops",
            },
        }
    }
    objs = render(values)
    [config] = [
        o for o in objs if o["kind"] == "ConfigMap" and "dashboard" in o["metadata"]["name"]
    ]
    assert config["metadata"]["namespace"] == "monitoring"
    assert config["metadata"]["labels"]["dashboards"] == "argo"
    assert config["metadata"]["annotations"] == {"grafana_folder": "Argo CD"}
    [rule] = [o for o in objs if o["kind"] == "PrometheusRule"]
    assert rule["metadata"]["namespace"] == "monitoring"
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    rules = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    assert {r["alert"] for r in rules} == ALERTS - {"ArgoCDImageUpdaterImageNotShipped"}
    for r in rules:
        assert r["labels"] == {"severity": "page", "team": "platform"}
        anchor = r["annotations"]["runbook"].split("#")[1]
        assert r["annotations"]["runbook_url"] == f"https://docs.example.com/ops#{anchor}"


def test_rendered_alerts_pass_promtool_check_and_their_unit_tests(tmp_path: Path) -> None:
    [rule] = [o for o in render(ON) if o["kind"] == "PrometheusRule"]
    yaml = YAML(typ="safe")
    with (tmp_path / "rules.yaml").open("w") as out:
        yaml.dump({"groups": rule["spec"]["groups"]}, out)
    assert "SUCCESS: 5 rules found" in promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    tests = yaml.load(ALERT_TESTS.read_text())
    tests["rule_files"] = ["rules.yaml"]
    tested = {t["alertname"] for case in tests["tests"] for t in case["alert_rule_test"]}
    assert tested == ALERTS, "every alert has a unit test"
    with (tmp_path / "alerts_test.yaml").open("w") as out:
        yaml.dump(tests, out)
    assert "SUCCESS" in promtool("test", "rules", "alerts_test.yaml", cwd=tmp_path)


def test_every_alert_has_a_runbook_in_operations_md() -> None:
    text = (HERE.parents[1] / "docs" / "operations.md").read_text()
    headings = {
        re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in text.splitlines()
        if line.startswith("#")
    }
    [rule] = [o for o in render(ON) if o["kind"] == "PrometheusRule"]
    for r in (r for g in rule["spec"]["groups"] for r in g["rules"]):
        anchor = r["annotations"]["runbook"].removeprefix("docs/operations.md#")
        assert anchor in headings, r["alert"]


def test_every_dashboard_query_parses_and_names_an_exported_metric(tmp_path: Path) -> None:
    model = dashboard()
    found = expressions(model)
    assert len(found) > 20
    exported = exported_series()
    rules = []
    for index, (title, expr) in enumerate(found):
        names = set(re.findall(r"\bargocd_image_updater_\w+", expr))
        assert names, f"{title}: names no metric of the product"
        assert names <= exported, f"{title}: not exported: {sorted(names - exported)}"
        for variable, value in GRAFANA_VARIABLES.items():
            expr = expr.replace(variable, value)
        rules.append({"record": f"dashboard:panel_{index}", "expr": expr})
    # promtool parses each expression with Prometheus's PromQL parser (as recording rules).
    with (tmp_path / "panels.yaml").open("w") as out:
        YAML(typ="safe").dump({"groups": [{"name": "dashboard", "rules": rules}]}, out)
    assert f"SUCCESS: {len(rules)} rules found" in promtool(
        "check", "rules", "--lint=none", "panels.yaml", cwd=tmp_path
    )


def test_every_promql_example_of_operations_md_parses_and_names_exported_metrics(
    tmp_path: Path,
) -> None:
    text = (HERE.parents[1] / "docs" / "operations.md").read_text()
    found = re.findall(r"```promql\n(.+?)\n```", text, flags=re.S)
    assert len(found) >= 4
    exported = exported_series()
    rules = []
    for index, expr in enumerate(found):
        names = set(re.findall(r"\bargocd_image_updater_\w+", expr))
        assert names and names <= exported, expr
        rules.append({"record": f"docs:example_{index}", "expr": expr})
    with (tmp_path / "examples.yaml").open("w") as out:
        YAML(typ="safe").dump({"groups": [{"name": "docs", "rules": rules}]}, out)
    assert f"SUCCESS: {len(rules)} rules found" in promtool(
        "check", "rules", "--lint=none", "examples.yaml", cwd=tmp_path
    )


def test_dashboard_model_is_well_formed() -> None:
    """Grafana publishes no JSON schema of the dashboard model: the parts Grafana needs to
    load it are checked here (ids, grid, data source variable, query ids, panel types)."""
    model = dashboard()
    assert model["uid"] and model["title"] and model["schemaVersion"] >= 36
    assert model["id"] is None  # provisioned dashboards get their id from Grafana
    variables = {v["name"]: v for v in model["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    every = panels(model)
    ids = [p["id"] for p in every]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    occupied: set[tuple[int, int]] = set()
    for panel in every:
        assert panel["type"] in {"row", "timeseries", "stat", "heatmap"}, panel["title"]
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        cells = {
            (grid["x"] + dx, grid["y"] + dy) for dx in range(grid["w"]) for dy in range(grid["h"])
        }
        assert not cells & occupied, f"{panel['title']} overlaps another panel"
        occupied |= cells
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
        assert panel.get("description"), panel["title"]
    titles = " ".join(p["title"] for p in every).lower()
    for topic in (
        "cycle duration",
        "registry errors",
        "rate-limit",
        "git pushes",
        "webhook",
        "notifications",
        "time to live",
        "shard keys",
        "by replica",
    ):
        assert topic in titles, topic
    heatmaps = [p for p in every if p["type"] == "heatmap"]
    assert [t["format"] for p in heatmaps for t in p["targets"]] == ["heatmap"]
