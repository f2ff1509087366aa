"""The chart rendered and linted by Helm itself (``helm-python-sdk``: Helm's Go library, no helm
binary), for the chart tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm

from argocd_image_updater_testing.manifest_checks import objects_of

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "argocd-image-updater"
VALUES_DIR = Path(__file__).resolve().parent / "chart_values"
RELEASE = "argocd-image-updater"
NAMESPACE = "argocd"
HelmError = helm.HelmError


def load_values(path: Path) -> dict[str, Any]:
    """A values file as Helm reads it (YAML 1.1: ``ping: yes`` is true)."""
    return helm.values_from_yaml(path.read_text())


def render_texts(values: dict[str, Any] | None = None) -> dict[str, str]:
    """``helm template``: rendered text by template path; raises :data:`HelmError`."""
    with helm.Chart.load(CHART) as chart:
        return chart.render(values, name=RELEASE, namespace=NAMESPACE)


def render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return objects_of(render_texts(values).values())


def lint_problems(values: dict[str, Any] | None = None) -> list[str]:
    """``helm lint --strict`` findings that are warnings or errors."""
    report = helm.lint(CHART, values, strict=True, namespace=NAMESPACE)
    found = [f"{m['path']}: {m['error']}" for m in report["messages"] if m["severity"] >= 2]
    return found + list(report["errors"])


def schema() -> dict[str, Any]:
    with helm.Chart.load(CHART) as chart:
        result = chart.schema
    assert result is not None
    return result
