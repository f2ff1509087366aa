"""The fields the controller knows, what an installed CRD keeps of them, and what is said about a
CRD that lacks some (the original project's)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from argocd_image_updater.config.imageupdater import LAST_APPLIED, compact_image_updater
from argocd_image_updater.controller.crd_check import served_schema
from argocd_image_updater.report.crd_schema import (
    INSTALL_COMMAND,
    dropped_by_server,
    generic,
    known_fields,
    missing_fields,
    prune,
    schema_fields,
)
from argocd_image_updater.report.installed_crd import InstalledCrd
from argocd_image_updater_testing.kube_schema import IMAGEUPDATER_CRD, ORIGINAL_IMAGEUPDATER_CRD

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def schema_of(path: Path) -> dict[str, Any]:
    crd = YAML(typ="safe").load(path.read_text())
    schema = served_schema(crd)
    assert schema is not None
    return dict(schema)


OURS = schema_of(IMAGEUPDATER_CRD)
ORIGINAL = schema_of(ORIGINAL_IMAGEUPDATER_CRD)


def test_the_known_fields_are_those_of_our_crd() -> None:
    declared, _ = schema_fields(OURS)
    ours = {p for p in declared if p.startswith(("spec", "status"))}
    assert known_fields() == ours
    assert missing_fields(OURS) == []


def test_the_charts_crd_is_the_same_one() -> None:
    chart = ROOT / "charts" / "argocd-image-updater" / "files" / "imageupdater-crd.yaml"
    assert schema_of(chart) == OURS
    assert INSTALL_COMMAND.endswith(IMAGEUPDATER_CRD.relative_to(ROOT).as_posix())


def test_the_original_crd_lacks_shipments_and_the_newer_spec_fields() -> None:
    missing = missing_fields(ORIGINAL)
    for field in (
        "status.shipments",
        "spec.holds",
        "spec.notifications",
        "spec.shipTimeout",
        "spec.applicationRefs[].charts",
        "spec.commonUpdateSettings.minAge",
        "spec.commonUpdateSettings.pinDigest",
    ):
        assert field in missing, field
    assert "spec.holds[].alias" not in missing  # the outermost only
    assert not [p for p in missing if p.startswith("status.") and p != "status.shipments"]


def test_pruning_keeps_what_the_schema_declares() -> None:
    status = {
        "lastCheckedAt": "2026-06-01T12:00:00Z",
        "conditions": [{"type": "Ready", "status": "True", "extra": 1}],
        "shipments": [{"alias": "web"}],
    }
    kept = prune(status, ORIGINAL["properties"]["status"], set(), "status")
    assert kept == {
        "lastCheckedAt": "2026-06-01T12:00:00Z",
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    assert prune(status, OURS["properties"]["status"], set(), "status")["shipments"] == [
        {"alias": "web"}
    ]
    assert prune(status, None, {"status.shipments"}, "status") == {
        k: v for k, v in status.items() if k != "shipments"
    }
    labels = {"matchLabels": {"team": "a"}}
    selector = OURS["properties"]["spec"]["properties"]["applicationRefs"]["items"]["properties"]
    assert prune(labels, selector["labelSelectors"], set(), "x") == labels


def test_what_the_server_dropped_is_found_in_its_answer() -> None:
    sent = {"a": 1, "b": None, "list": [{"x": 1, "y": 2}], "gone": {"z": 1}}
    answered = {"a": 1, "list": [{"x": 1}]}
    assert dropped_by_server(sent, answered, "status") == {"status.list[].y", "status.gone"}
    assert generic("spec.applicationRefs[0].images[12].alias") == (
        "spec.applicationRefs[].images[].alias"
    )


def test_status_writes_teach_what_is_pruned_and_forget_it_when_kept_again() -> None:
    crd = InstalledCrd()
    status = {"lastCheckedAt": "t", "shipments": [{"alias": "web"}]}
    assert crd.keep_status(status) == status
    crd.learn(status, {"lastCheckedAt": "t"})
    assert crd.missing == ("status.shipments",)
    assert crd.keep_status(status) == {"lastCheckedAt": "t"}
    crd.learn(status, status)  # a newer CRD keeps it
    assert crd.missing == ()
    assert crd.keep_status(status) == status


def ready_status(state: str = "True", reason: str = "ReconcileSucceeded") -> dict[str, Any]:
    condition = {
        "type": "Ready",
        "status": state,
        "reason": reason,
        "message": "Reconciled 1 applications, 0 images updated.",
        "observedGeneration": 1,
        "lastTransitionTime": "2026-06-01T11:00:00Z",
    }
    return {"lastCheckedAt": "2026-06-01T12:00:00Z", "conditions": [condition]}


def applied_with(spec: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps({"spec": spec})
    annotations = {"kubectl.kubernetes.io/last-applied-configuration": text}
    return {"metadata": {"name": "u", "annotations": annotations}, "spec": {}}


def test_ready_says_the_crd_is_outdated() -> None:
    crd = InstalledCrd()
    status = ready_status()
    assert crd.mark(status, {}, None, NOW) is status  # nothing known to be missing
    crd.use_schema(ORIGINAL)
    marked = crd.mark(status, {}, status, NOW)
    [ready] = marked["conditions"]
    assert ready["status"] == "True" and ready["reason"] == "CRDOutdated"
    assert ready["message"].startswith("Reconciled 1 applications")
    assert "status.shipments" in ready["message"] and INSTALL_COMMAND in ready["message"]
    assert ready["lastTransitionTime"] == "2026-06-01T11:00:00Z"
    assert status["conditions"][0]["reason"] == "ReconcileSucceeded"  # not changed in place


def test_a_dropped_spec_field_in_use_is_named_and_makes_it_not_ready() -> None:
    crd = InstalledCrd()
    crd.use_schema(ORIGINAL)
    assert crd.keeps_applied('{"spec":{"holds":[{"alias":"web"}]}}') is True
    obj = applied_with({"holds": [{"alias": "web"}]})
    assert crd.pruned_in_use(obj) == ["holds"]
    obj = applied_with(
        {"applicationRefs": [{"namePattern": "x", "commonUpdateSettings": {"minAge": "1h"}}]}
    )
    assert crd.pruned_in_use(obj) == ["applicationRefs[0].commonUpdateSettings.minAge"]
    assert crd.keeps_applied('{"spec":{"applicationRefs":[]}}') is False

    marked = crd.mark(ready_status(), applied_with({"holds": [{"alias": "*"}]}), None, NOW)
    [ready] = marked["conditions"]
    assert ready["status"] == "False" and ready["reason"] == "CRDOutdated"
    assert ready["message"].startswith("field holds is not in the installed CRD")
    assert ready["lastTransitionTime"] == "2026-06-01T12:00:00Z"
    again = crd.mark(ready_status(), applied_with({"holds": [{"alias": "*"}]}), marked, NOW)
    assert again["conditions"][0]["lastTransitionTime"] == "2026-06-01T12:00:00Z"


def test_a_failed_reconcile_keeps_its_reason() -> None:
    crd = InstalledCrd()
    crd.use_schema(ORIGINAL)
    status = ready_status("False", "ReconcileFailed")
    [ready] = crd.mark(status, {}, status, NOW)["conditions"]
    assert ready["reason"] == "ReconcileFailed" and "CRD is outdated" in ready["message"]


def test_the_listing_keeps_the_last_applied_copy_only_when_it_may_hold_a_dropped_field() -> None:
    crd = InstalledCrd()
    obj = applied_with({"holds": [{"alias": "web"}]})
    assert LAST_APPLIED not in compact_image_updater(obj)["metadata"]["annotations"]
    assert LAST_APPLIED not in compact_image_updater(obj, crd.keeps_applied)["metadata"].get(
        "annotations", {}
    )
    crd.use_schema(ORIGINAL)
    assert LAST_APPLIED in compact_image_updater(obj, crd.keeps_applied)["metadata"]["annotations"]
    plain = applied_with({"applicationRefs": [{"namePattern": "*"}]})
    assert LAST_APPLIED not in compact_image_updater(plain, crd.keeps_applied)["metadata"].get(
        "annotations", {}
    )
