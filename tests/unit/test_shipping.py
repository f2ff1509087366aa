"""The pure core of ship tracking: a written change moves written → synced → shipped (or not
shipped after its timeout), given what Argo CD reports and the time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from argocd_image_updater.report.shipping import (
    AppView,
    Shipment,
    Stage,
    advance,
    holds_image,
    merge_entries,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
IMAGE = "registry.example.com/shop/web"


def shipment(**changes: Any) -> Shipment:
    fields: dict[str, Any] = {
        "app": "argocd/shop",
        "alias": "web",
        "image": IMAGE,
        "new_tag": "1.1.0",
        "method": "argocd",
        "written_at": T0,
        "timeout": timedelta(minutes=30),
        "scope": "argocd/shop-updater",
    }
    return Shipment(**(fields | changes))


def view(sync: str = "Synced", health: str = "Healthy", images: tuple[str, ...] = ()) -> AppView:
    return AppView(sync=sync, revision="abc", health=health, images=images, message="m")


def test_written_synced_then_healthy_records_each_time() -> None:
    s = shipment()
    s = advance(s, view("OutOfSync", "Healthy", (f"{IMAGE}:1.0.0",)), contains=None, now=T0)
    assert s.stage is Stage.WRITTEN and s.synced_at is None
    t1 = T0 + timedelta(minutes=1)
    s = advance(s, view("Synced", "Progressing", (f"{IMAGE}:1.0.0",)), contains=True, now=t1)
    assert s.stage is Stage.SYNCED and s.synced_at == t1 and s.healthy_at is None
    t2 = T0 + timedelta(minutes=3)
    s = advance(s, view("Synced", "Healthy", (f"{IMAGE}:1.1.0", "nginx:1")), contains=True, now=t2)
    assert s.stage is Stage.SHIPPED
    assert (s.synced_at, s.healthy_at, s.time_to_live) == (t1, t2, 180.0)
    assert s.status_entry() == {
        "application": "argocd/shop",
        "alias": "web",
        "image": IMAGE,
        "newVersion": "1.1.0",
        "state": "Shipped",
        "writtenAt": "2026-03-01T12:00:00Z",
        "syncedAt": "2026-03-01T12:01:00Z",
        "healthyAt": "2026-03-01T12:03:00Z",
    }
    # final: another look changes nothing
    assert advance(s, None, contains=None, now=t2 + timedelta(hours=2)) is s


def test_synced_at_a_revision_without_the_change_is_not_synced() -> None:
    s = advance(shipment(), view(images=(f"{IMAGE}:1.1.0",)), contains=False, now=T0)
    assert s.stage is Stage.WRITTEN and s.synced_at is None


def test_healthy_but_old_image_live_is_not_shipped() -> None:
    s = advance(shipment(), view(images=(f"{IMAGE}:1.0.0",)), contains=True, now=T0)
    assert s.stage is Stage.SYNCED


def test_timeout_reports_the_applications_own_message() -> None:
    app = {
        "status": {
            "sync": {"status": "OutOfSync", "revision": "0123456789abcdef0123"},
            "health": {"status": "Degraded", "message": "Back-off pulling image"},
            "operationState": {"phase": "Failed", "message": "one or more objects failed"},
            "summary": {"images": [f"{IMAGE}:1.0.0"]},
        }
    }
    v = AppView.from_object(app)
    before = advance(shipment(), v, contains=None, now=T0 + timedelta(minutes=29))
    assert before.stage is Stage.WRITTEN
    after = advance(before, v, contains=None, now=T0 + timedelta(minutes=30))
    assert after.stage is Stage.NOT_SHIPPED
    assert after.message == (
        "sync status OutOfSync at revision 0123456789ab; health Degraded; "
        "last sync Failed: one or more objects failed; health message: Back-off pulling image; "
        f"{IMAGE}:1.1.0 is not among its live images"
    )


def test_an_application_no_longer_listed_times_out() -> None:
    s = advance(shipment(), None, contains=None, now=T0 + timedelta(hours=1))
    assert s.stage is Stage.NOT_SHIPPED
    assert s.message == "the Application is no longer listed"


def test_holds_image_compares_digests_when_both_have_one_else_tags() -> None:
    digest = "sha256:" + "a" * 64
    other = "sha256:" + "b" * 64
    assert holds_image([f"{IMAGE}:1.1.0"], IMAGE, "1.1.0")
    assert not holds_image([f"{IMAGE}:1.1.0"], IMAGE, "1.1.1")
    assert not holds_image(["other.example.com/shop/web:1.1.0"], IMAGE, "1.1.0")
    assert holds_image([f"{IMAGE}@{digest}"], IMAGE, f"latest@{digest}")
    assert not holds_image([f"{IMAGE}:latest@{other}"], IMAGE, f"latest@{digest}")
    assert holds_image(["nginx:1.25"], "nginx", "1.25")
    assert not holds_image(["::bad"], IMAGE, "1.1.0")


def test_status_entries_keep_other_changes_and_mark_forgotten_ones_unknown() -> None:
    stored = [
        {
            "application": "argocd/old",
            "alias": "web",
            "image": IMAGE,
            "newVersion": "0.9",
            "state": "Written",
            "writtenAt": "2026-02-01T00:00:00Z",
        },
        {
            "application": "argocd/done",
            "alias": "web",
            "image": IMAGE,
            "newVersion": "0.8",
            "state": "Shipped",
            "writtenAt": "2026-01-01T00:00:00Z",
        },
        {"application": "argocd/shop", "alias": "web", "state": "Written", "writtenAt": "x"},
        "not an entry",
    ]
    entries = merge_entries(stored, [shipment()], set(), limit=10)
    assert [(e["application"], e["state"]) for e in entries] == [
        ("argocd/shop", "Written"),
        ("argocd/old", "Unknown"),
        ("argocd/done", "Shipped"),
    ]
    assert "restarted" in entries[1]["message"]
    assert len(merge_entries(stored, [shipment()], set(), limit=2)) == 2
