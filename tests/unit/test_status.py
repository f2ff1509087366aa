"""ImageUpdater status computation: the original's conditions (upstream cases SC-1..SC-5) and
our differences (dry-run is never reported as done, recentUpdates keep their time, per-image
explanations)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.pipeline.records import AppOutcome, CRState
from argocd_image_updater.plan.model import AppPlan, ImageChange, ImageReason, ImageResult, Outcome
from argocd_image_updater.report.status import (
    IMAGES,
    compute_status,
    recent_updates,
    reconciling_status,
)

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=2)


def cr(generation: int = 3, error: str | None = None, name: str = "updater") -> CRState:
    return CRState("argocd", name, generation, "10", error=error)


def change(image: str, alias: str, old: str, new: str) -> ImageChange:
    return ImageChange(
        alias=alias, image=ImageRef.parse(image), old_tag=old, new_tag=new, new_digest=""
    )


def updated(alias: str, image: str, old: str, new: str) -> tuple[ImageResult, ImageChange]:
    result = ImageResult(
        alias,
        image,
        f"{image}:{old}",
        f"{image}:{new}",
        Outcome.UPDATED,
        ImageReason.UPDATED,
        "update",
    )
    return result, change(image, alias, old, new)


def up_to_date(alias: str, image: str, tag: str) -> ImageResult:
    ref = f"{image}:{tag}"
    return ImageResult(alias, image, ref, ref, Outcome.UP_TO_DATE, ImageReason.UP_TO_DATE, "latest")


def failed(
    alias: str, image: str, message: str = "Could not get tags from registry: boom"
) -> ImageResult:
    return ImageResult(
        alias, image, f"{image}:1.0", None, Outcome.ERROR, ImageReason.REGISTRY_ERROR, message
    )


def outcome(
    state: CRState | None,
    app: str,
    results: list[ImageResult],
    changes: list[ImageChange] | None = None,
    *,
    written: bool = False,
    error: str | None = None,
) -> AppOutcome:
    plan = AppPlan.build(
        app_name=app,
        app_namespace="argocd",
        source_path=("spec", "source"),
        source_type="Kustomize",
        results=results,
        changes=changes or [],
    )
    return AppOutcome(f"argocd/{app}", plan, written=written, error=error, cr=state)


def conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status["conditions"]}


def five_apps(
    state: CRState, *, updates: int, errors: int, written: bool = True
) -> list[AppOutcome]:
    outcomes = []
    for i in range(5):
        results: list[ImageResult] = []
        changes: list[ImageChange] = []
        if i < updates:
            result, ch = updated("web", "nginx", "1.20", "1.21")
            results.append(result)
            changes.append(ch)
        elif i < updates + errors:
            results.append(failed("web", "nginx"))
        else:
            results.append(up_to_date("web", "nginx", "1.21"))
        outcomes.append(
            outcome(state, f"app{i}", results, changes, written=written and bool(changes))
        )
    return outcomes


def test_success_sets_the_three_conditions_of_the_original() -> None:  # SC-1
    state = cr(generation=3)
    status = compute_status(
        state, five_apps(state, updates=2, errors=0), now=T0, dry_run=False, previous=None
    )
    got = conditions(status)
    assert got["Ready"] == {
        "type": "Ready",
        "status": "True",
        "reason": "ReconcileSucceeded",
        "message": "Reconciled 5 applications, 2 images updated.",
        "observedGeneration": 3,
        "lastTransitionTime": "2026-03-01T12:00:00Z",
    }
    assert (got["Reconciling"]["status"], got["Reconciling"]["reason"]) == ("False", "Idle")
    assert got["Reconciling"]["message"] == "Last check completed. Awaiting next cycle."
    assert (got["Error"]["status"], got["Error"]["reason"]) == ("False", "NoErrors")
    assert got["Error"]["message"] == "No errors during last reconciliation."
    assert all(c["observedGeneration"] == 3 for c in status["conditions"])
    assert status["observedGeneration"] == 3
    assert status["applicationsMatched"] == 5
    assert status["imagesManaged"] == 5
    assert status["lastCheckedAt"] == "2026-03-01T12:00:00Z"
    assert status["lastUpdatedAt"] == "2026-03-01T12:00:00Z"


def test_partial_errors() -> None:  # SC-2
    state = cr()
    status = compute_status(
        state, five_apps(state, updates=1, errors=2), now=T0, dry_run=False, previous=None
    )
    got = conditions(status)
    assert (got["Ready"]["status"], got["Ready"]["reason"]) == (
        "True",
        "ReconcileCompletedWithErrors",
    )
    assert got["Ready"]["message"] == "Reconciled 5 applications with 2 errors, 1 images updated."
    assert (got["Error"]["status"], got["Error"]["reason"]) == ("True", "PartialErrors")
    assert got["Error"]["message"] == "2 error(s) occurred during image update checks."


def test_a_failed_write_counts_as_an_error_and_not_as_an_update() -> None:
    state = cr()
    result, ch = updated("web", "nginx", "1.20", "1.21")
    failed_write = outcome(
        state, "shop", [result], [ch], error="could not update application argocd/shop: denied"
    )
    status = compute_status(state, [failed_write], now=T0, dry_run=False, previous=None)
    got = conditions(status)
    assert got["Ready"]["message"] == "Reconciled 1 applications with 1 errors, 0 images updated."
    assert "lastUpdatedAt" not in status and "recentUpdates" not in status
    assert got[IMAGES]["reason"] == "ImageErrors"
    assert (
        "argocd/shop web: write-failed nginx:1.20 -> nginx:1.21: could not update"
        in got[IMAGES]["message"]
    )


def test_cycle_failure() -> None:  # SC-3
    state = cr(error="connection refused")
    status = compute_status(state, [], now=T0, dry_run=False, previous=None)
    got = conditions(status)
    assert (got["Ready"]["status"], got["Ready"]["reason"]) == ("False", "ReconcileFailed")
    assert got["Ready"]["message"] == "Reconciliation failed: connection refused"
    assert got["Error"] == {
        "type": "Error",
        "status": "True",
        "reason": "ReconcileError",
        "message": "connection refused",
        "observedGeneration": 3,
        "lastTransitionTime": "2026-03-01T12:00:00Z",
    }
    assert got["Reconciling"]["reason"] == "Idle"
    assert got[IMAGES]["status"] == "Unknown"


def test_reconciling_at_the_start_of_a_cycle_keeps_everything_else() -> None:  # SC-4
    state = cr()
    done = compute_status(
        state, five_apps(state, updates=0, errors=0), now=T0, dry_run=False, previous=None
    )
    started = reconciling_status(state, now=T1, previous=done)
    got = conditions(started)
    assert got["Reconciling"] == {
        "type": "Reconciling",
        "status": "True",
        "reason": "Reconciling",
        "message": "Image update check in progress.",
        "observedGeneration": 3,
        "lastTransitionTime": "2026-03-01T12:02:00Z",
    }
    assert got["Ready"] == conditions(done)["Ready"]
    assert started["lastCheckedAt"] == done["lastCheckedAt"]


def test_outcomes_of_other_crs_and_legacy_apps_do_not_count() -> None:
    mine, other = cr(name="mine"), cr(name="other")
    outcomes = [
        *five_apps(mine, updates=1, errors=0),
        *five_apps(other, updates=3, errors=1),
        outcome(None, "legacy", [failed("x", "busybox")]),
    ]
    status = compute_status(mine, outcomes, now=T0, dry_run=False, previous=None)
    assert conditions(status)["Ready"]["message"] == "Reconciled 5 applications, 1 images updated."


def test_last_transition_time_moves_only_when_the_status_changes() -> None:
    state = cr()
    first = compute_status(
        state, five_apps(state, updates=0, errors=0), now=T0, dry_run=False, previous=None
    )
    second = compute_status(
        state, five_apps(state, updates=0, errors=1), now=T1, dry_run=False, previous=first
    )
    before, after = conditions(first), conditions(second)
    # Ready stays True (reason and message change): the transition time stays
    assert after["Ready"]["reason"] == "ReconcileCompletedWithErrors"
    assert after["Ready"]["lastTransitionTime"] == before["Ready"]["lastTransitionTime"]
    # Error goes False → True: it moves
    assert after["Error"]["lastTransitionTime"] == "2026-03-01T12:02:00Z"
    assert after["Reconciling"]["lastTransitionTime"] == "2026-03-01T12:00:00Z"


def test_unknown_condition_types_and_their_order_are_kept() -> None:
    state = cr()
    foreign = {
        "type": "Synced",
        "status": "True",
        "reason": "X",
        "message": "",
        "lastTransitionTime": "2020-01-01T00:00:00Z",
    }
    status = compute_status(state, [], now=T0, dry_run=False, previous={"conditions": [foreign]})
    assert status["conditions"][0] == foreign
    assert [c["type"] for c in status["conditions"]] == [
        "Synced",
        "Reconciling",
        "Ready",
        "Error",
        IMAGES,
    ]


def test_dry_run_reports_nothing_as_done() -> None:
    state = cr()
    status = compute_status(
        state,
        five_apps(state, updates=2, errors=0, written=False),
        now=T0,
        dry_run=True,
        previous=None,
    )
    got = conditions(status)
    assert got["Ready"]["message"] == "Reconciled 5 applications, 0 images updated."
    assert "lastUpdatedAt" not in status and "recentUpdates" not in status
    assert (got[IMAGES]["status"], got[IMAGES]["reason"]) == ("False", "DryRun")
    message = got[IMAGES]["message"]
    assert message.startswith(
        "5 images: 0 updated, 2 not written (dry run), 0 skipped, 0 with errors."
    )
    assert "argocd/app0 web: dry-run nginx:1.20 -> nginx:1.21: dry run, not written" in message


def test_recent_updates_are_kept_with_their_time_when_nothing_was_written() -> None:
    state = cr()
    first = compute_status(
        state, five_apps(state, updates=2, errors=0), now=T0, dry_run=False, previous=None
    )
    assert first["recentUpdates"] == [
        {
            "alias": "web",
            "image": "nginx",
            "newVersion": "1.21",
            "applicationsUpdated": 2,
            "updatedAt": "2026-03-01T12:00:00Z",
            "message": "Updated from 1.20 to 1.21.",
        }
    ]
    quiet = compute_status(
        state, five_apps(state, updates=0, errors=0), now=T1, dry_run=False, previous=first
    )
    assert quiet["recentUpdates"] == first["recentUpdates"]
    assert quiet["lastUpdatedAt"] == "2026-03-01T12:00:00Z"
    assert quiet["lastCheckedAt"] == "2026-03-01T12:02:00Z"
    dry = compute_status(
        state,
        five_apps(state, updates=1, errors=0, written=False),
        now=T1,
        dry_run=True,
        previous=first,
    )
    assert dry["recentUpdates"] == first["recentUpdates"]
    result, ch = updated("db", "redis", "7.0", "7.2")
    newer = [outcome(state, "a", [result], [ch], written=True)]
    replaced = compute_status(state, newer, now=T1, dry_run=False, previous=first)
    assert [(u["alias"], u["updatedAt"]) for u in replaced["recentUpdates"]] == [
        ("db", "2026-03-01T12:02:00Z")
    ]
    assert replaced["lastUpdatedAt"] == "2026-03-01T12:02:00Z"


def test_build_recent_updates() -> None:  # SC-5
    assert recent_updates([], T0) is None
    one = recent_updates([change("nginx", "web", "1.20", "1.21")], T0)
    assert one is not None and len(one) == 1
    assert one[0]["alias"] == "web" and one[0]["newVersion"] == "1.21"
    assert one[0]["applicationsUpdated"] == 1 and one[0]["updatedAt"] == "2026-03-01T12:00:00Z"
    assert "1.20" in one[0]["message"] and "1.21" in one[0]["message"]
    same = recent_updates(
        [change("nginx", "web", "1.20", "1.21"), change("nginx", "web", "1.19", "1.21")], T0
    )
    assert same is not None and [u["applicationsUpdated"] for u in same] == [2]
    two = recent_updates([change("nginx", "web", "1", "2"), change("redis", "cache", "6", "7")], T0)
    assert two is not None and [u["alias"] for u in two] == ["web", "cache"]
    unnamed = recent_updates([change("nginx", "", "1.20", "1.21")], T0)
    assert unnamed is not None and unnamed[0]["alias"] == "nginx"
    registry = recent_updates([change("ghcr.io/org/app", "app", "1", "2")], T0)
    assert registry is not None and registry[0]["image"] == "ghcr.io/org/app"


def test_digest_updates_report_the_digest_as_new_version() -> None:
    digest = "sha256:" + "a" * 64
    ch = ImageChange(
        alias="web",
        image=ImageRef.parse("nginx"),
        old_tag="latest",
        new_tag=f"latest@{digest}",
        new_digest=digest,
    )
    updates = recent_updates([ch], T0)
    assert updates is not None and updates[0]["newVersion"] == digest


def test_per_image_lines_explain_why_an_image_was_not_updated() -> None:
    state = cr()
    skipped = ImageResult(
        "api",
        "ghcr.io/org/api",
        "ghcr.io/org/api:1.0",
        None,
        Outcome.SKIPPED,
        ImageReason.NO_CANDIDATE,
        "No suitable image tag for upgrade found in list of available tags: 12 tags, 12 excluded by the constraint",
    )
    result, ch = updated("web", "nginx", "1.20", "1.21")
    outcomes = [
        outcome(
            state, "shop", [result, skipped, up_to_date("db", "redis", "7.2")], [ch], written=True
        ),
        outcome(state, "blog", [failed("web", "nginx")]),
    ]
    status = compute_status(state, outcomes, now=T0, dry_run=False, previous=None)
    images = conditions(status)[IMAGES]
    assert (images["status"], images["reason"]) == ("False", "ImageErrors")
    lines = images["message"].split("\n")
    assert lines == [
        "4 images: 1 updated, 0 not written, 1 skipped, 1 with errors.",
        "argocd/blog web: registry-error nginx:1.0: Could not get tags from registry: boom",
        "argocd/shop api: no-candidate ghcr.io/org/api:1.0: No suitable image tag for upgrade found "
        "in list of available tags: 12 tags, 12 excluded by the constraint",
        "argocd/shop web: updated nginx:1.20 -> nginx:1.21",
        "argocd/shop db: up-to-date redis:7.2",
    ]


def test_images_condition_reasons() -> None:
    state = cr()
    assert (
        conditions(compute_status(state, [], now=T0, dry_run=False, previous=None))[IMAGES][
            "reason"
        ]
        == "NoImages"
    )
    quiet = five_apps(state, updates=0, errors=0)
    got = conditions(compute_status(state, quiet, now=T0, dry_run=False, previous=None))[IMAGES]
    assert (got["status"], got["reason"]) == ("True", "UpToDate")
    applied = five_apps(state, updates=1, errors=0)
    got = conditions(compute_status(state, applied, now=T0, dry_run=False, previous=None))[IMAGES]
    assert (got["status"], got["reason"]) == ("True", "UpdatesApplied")


def test_the_per_image_list_is_bounded() -> None:
    state = cr()
    many = [outcome(state, f"app{i:03}", [up_to_date("web", "nginx", "1.21")]) for i in range(250)]
    status = compute_status(state, many, now=T0, dry_run=False, previous=None, max_images=100)
    lines = conditions(status)[IMAGES]["message"].split("\n")
    assert len(lines) == 102
    assert lines[-1] == "... and 150 more images (see the controller log)."
    huge = "x" * 5000
    noisy = [outcome(state, f"app{i:03}", [failed("web", "nginx", huge)]) for i in range(200)]
    message = conditions(compute_status(state, noisy, now=T0, dry_run=False, previous=None))[
        IMAGES
    ]["message"]
    assert len(message) <= 32768
    assert message.endswith("more images (see the controller log).")
