"""The ``status`` command's view: the lines of the ``ImagesUpToDate`` condition read back as the
controller rendered them, the controller's record joined in, a table that fits its width."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from argocd_image_updater.cli.status_view import (
    as_json,
    parse_image_lines,
    select,
    split_reference,
    table,
    updater_view,
    verdict_text,
)
from argocd_image_updater.model.controller_state import ControllerState
from argocd_image_updater.report.status import ImageLine

MESSAGE = "\n".join(
    [
        "5 images: 0 updated, 0 not written, 1 skipped, 1 with errors.",
        "argocd/pay api: registry-error ghcr.io/acme/pay:1.4.2: GET https://ghcr.io/v2/: 401 x",
        "argocd/shop web: held ghcr.io/acme/web:1.0.0 -> ghcr.io/acme/web:1.1.0: held: rolled "
        "back from 1.1.0 to 1.0.0",
        "argocd/shop worker: too-young ghcr.io/acme/worker:2.0.0 -> ghcr.io/acme/worker:2.1.0: "
        "too-young: 2.1.0 eligible at 2026-12-04T12:00:00Z; warning: spec.images[1].x: unused",
        "argocd/shop cache: up-to-date redis:7.2.4",
        "argocd/new *: skipped: no image configured",
        "... and 7 more images (see the controller log).",
    ]
)


def image_updater(message: str = MESSAGE, **status: Any) -> dict[str, Any]:
    conditions = [
        {"type": "Ready", "status": "True", "reason": "ReconcileSucceeded", "message": "ok"},
        {"type": "ImagesUpToDate", "status": "False", "reason": "ImageErrors", "message": message},
    ]
    return {
        "metadata": {"namespace": "argocd", "name": "shop"},
        "status": {"lastCheckedAt": "2026-12-04T10:00:00Z", "conditions": conditions, **status},
    }


def test_lines_rendered_by_the_status_are_read_back() -> None:
    rendered = ImageLine(
        "argocd/a",
        "web",
        "held",
        "r.io/x:1.0.0",
        "r.io/x:1.1.0",
        "held: why: because",
        2,
        ("spec.images[0]: odd",),
    ).render()
    [line], hidden = parse_image_lines("header\n" + rendered)
    assert hidden == 0
    assert line == {
        "app": "argocd/a",
        "alias": "web",
        "verdict": "held",
        "current": "r.io/x:1.0.0",
        "candidate": "r.io/x:1.1.0",
        "reason": "held: why: because",
        "warnings": "; warning: spec.images[0]: odd",
    }
    lines, hidden = parse_image_lines(MESSAGE)
    assert hidden == 7 and [line["alias"] for line in lines] == [
        "api",
        "web",
        "worker",
        "cache",
        "*",
    ]
    assert lines[4]["current"] == "" and lines[4]["reason"] == "no image configured"


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("ghcr.io/acme/web:1.0.0", ("ghcr.io/acme/web", "1.0.0")),
        ("127.0.0.1:5000/web:1.0", ("127.0.0.1:5000/web", "1.0")),
        ("nginx@sha256:ab", ("nginx", "sha256:ab")),
        ("r.io/web:1.0@sha256:ab", ("r.io/web", "1.0@sha256:ab")),
        ("1.2.3", ("", "1.2.3")),
        ("r.io/web", ("r.io/web", "")),
    ],
)
def test_references_split_into_image_and_tag(reference: str, expected: tuple[str, str]) -> None:
    assert split_reference(reference) == expected


def test_rows_join_the_record_and_the_shipments() -> None:
    state = ControllerState()
    state.record_write("argocd/shop", "web", "1.1.0", datetime(2026, 12, 1, 9, 30, tzinfo=UTC))
    state.record_write("argocd/shop", "worker", "2.0.0", datetime(2026, 11, 1, tzinfo=UTC))
    state.mark_live("argocd/shop", "worker")
    shipments = [{"application": "argocd/shop", "alias": "web", "state": "Shipped"}]
    view = updater_view(image_updater(shipments=shipments), state)
    assert view.ready == "True ReconcileSucceeded: ok" and view.hidden == 7
    rows = {row.alias: row for row in view.images}
    web = rows["web"]
    assert (web.image, web.current, web.candidate) == ("ghcr.io/acme/web", "1.0.0", "1.1.0")
    assert (web.last_write, web.written_at, web.ship) == (
        "1.1.0",
        "2026-12-01T09:30:00Z",
        "Shipped",
    )
    assert rows["worker"].ship == "live" and rows["worker"].warnings == (
        "spec.images[1].x: unused",
    )
    assert rows["cache"].candidate == "7.2.4" and rows["cache"].ship == ""
    assert verdict_text(web) == "held: rolled back from 1.1.0 to 1.0.0"
    assert verdict_text(rows["api"]).startswith("registry-error: GET https://ghcr.io/v2/: 401")
    assert verdict_text(rows["cache"]) == "up-to-date"
    data = json.loads(as_json([view]))["imageUpdaters"][0]
    assert data["images"][1]["reason"] == "held: rolled back from 1.1.0 to 1.0.0"


def test_an_image_updater_without_status_says_so() -> None:
    view = updater_view({"metadata": {"namespace": "argocd", "name": "new"}})
    assert view.images == () and view.notes == ("no status yet",)
    assert table([view]) == ["ImageUpdater argocd/new", "  no status yet"]


def test_selection_by_application_and_image_updater() -> None:
    view = updater_view(image_updater())
    assert [r.alias for v in select([view], app="shop") for r in v.images] == [
        "web",
        "worker",
        "cache",
    ]
    assert [r.alias for v in select([view], app="argocd/pay") for r in v.images] == ["api"]
    assert select([view], app="other") == []
    assert select([view], image_updater="argocd/shop") == [view]
    assert select([view], image_updater="other") == []


@pytest.mark.parametrize("width", [100, 80, 60])
def test_the_table_fits_its_width_and_colours_only_the_verdict(width: int) -> None:
    long_app = "argocd/" + "a-very-long-application-name" * 3
    message = MESSAGE + f"\n{long_app} web: up-to-date r.io/" + "x" * 80 + ":1.0.0"
    lines = table([updater_view(image_updater(message))], width=width)
    assert all(len(line) <= width for line in lines), lines
    assert any("…" in line for line in lines)  # cut, not wrapped, in the columns
    assert "    too-young: 2.1.0 eligible at 2026-12-04T12:00:00Z" in lines
    coloured = table(
        [updater_view(image_updater())], style=lambda text, colour: f"<{colour}>{text}</>"
    )
    held = next(line for line in coloured if line.startswith("argocd/shop") and "held" in line)
    assert "<yellow>held" in held and held.count("<") == 2
    assert any("<red>registry-error" in line for line in coloured)
    assert any("<green>up-to-date" in line for line in coloured)
