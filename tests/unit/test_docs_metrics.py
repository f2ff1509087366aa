"""Every exported metric is documented (docs stay in step with the code)."""

from pathlib import Path

# Importing these modules registers their metrics.
import argocd_image_updater.notify.metrics
import argocd_image_updater.report.cycle_metrics
import argocd_image_updater.report.installed_crd
import argocd_image_updater.webhook.dispatch
import argocd_image_updater.writeback.git.process  # noqa: F401
from argocd_image_updater.observe.metrics import REGISTRY

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_metric_is_documented() -> None:
    text = (DOCS / "operations.md").read_text() + (DOCS / "webhooks.md").read_text()
    names = {
        metric.name
        for metric in REGISTRY.collect()
        if metric.name.startswith("argocd_image_updater_")
    }
    assert names, "no metrics registered"
    missing = sorted(name for name in names if name not in text)
    assert missing == [], f"undocumented metrics: {missing}"
