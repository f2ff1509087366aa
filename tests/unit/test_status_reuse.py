"""An ImageUpdater's status is computed again only when something it is made of changed."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from typing import Any

from test_status import T0, cr, outcome, up_to_date

from argocd_image_updater.pipeline.records import AppOutcome, CRState
from argocd_image_updater.report.status import compute_status
from argocd_image_updater.report.status_reuse import StatusReuse

T1 = T0 + timedelta(minutes=2)
T2 = T0 + timedelta(minutes=4)


class Reporter:
    """What the reporter does each cycle, counting the computations."""

    def __init__(self) -> None:
        self.reuse = StatusReuse()
        self.computed = 0

    def status(
        self, state: CRState, mine: list[AppOutcome], when: Any, *, others: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        def compute() -> dict[str, Any]:
            self.computed += 1
            return compute_status(
                state, mine, now=when, dry_run=False, previous=state.raw.get("status")
            )

        self.reuse.retain([(state.namespace, state.name), *(("argocd", o) for o in others)])
        return self.reuse.status(
            state, mine, state.raw.get("status"), now=when, dry_run=False, compute=compute
        )


def stored(state: CRState, status: dict[str, Any], version: str) -> CRState:
    """``state`` as listed in the next cycle, with ``status`` stored."""
    return dataclasses.replace(state, resource_version=version, raw={"status": status}, apps=[])


def test_the_same_outcomes_over_the_same_stored_status_reuse_it_with_the_new_time() -> None:
    reporter = Reporter()
    first = cr()
    mine = [outcome(first, "a", [up_to_date("web", "nginx", "1.2")])]
    written = reporter.status(first, mine, T0)
    state = stored(first, written, "11")
    again = reporter.status(state, mine, T1)  # computed: the stored status is new
    assert again == written | {"lastCheckedAt": "2026-03-01T12:02:00Z"}
    assert reporter.computed == 2
    state = stored(state, written, "11")  # not written (unchanged), listed again
    third = reporter.status(state, mine, T2)
    assert reporter.computed == 2 and reporter.reuse.reused == 1
    assert third == compute_status(state, mine, now=T2, dry_run=False, previous=written)


def test_a_changed_plan_error_generation_or_stored_status_is_computed_again() -> None:
    reporter = Reporter()
    first = cr()
    mine = [outcome(first, "a", [up_to_date("web", "nginx", "1.2")])]
    written = reporter.status(first, mine, T0)
    state = stored(first, written, "11")
    reporter.status(state, mine, T1)
    computed = reporter.computed
    other = [outcome(first, "a", [up_to_date("web", "nginx", "1.3")])]  # another plan
    assert "1.3" in str(reporter.status(state, other, T2)["conditions"])
    failed = dataclasses.replace(state, error="bad spec")
    assert "bad spec" in str(reporter.status(failed, other, T2)["conditions"])
    newer = dataclasses.replace(state, generation=4)
    assert reporter.status(newer, other, T2)["observedGeneration"] == 4
    moved = stored(state, {**written, "lastUpdatedAt": "2026-01-01T00:00:00Z"}, "12")
    assert reporter.status(moved, other, T2)["lastUpdatedAt"] == "2026-01-01T00:00:00Z"
    assert reporter.computed == computed + 4 and reporter.reuse.reused == 0


def test_only_the_image_updaters_of_the_last_report_are_kept() -> None:
    reporter = Reporter()
    for name in ("a", "b"):
        state = cr(name=name)
        mine = [outcome(state, "x", [up_to_date("web", "nginx", "1.2")])]
        written = reporter.status(state, mine, T0, others=("a", "b"))
        reporter.status(stored(state, written, "11"), mine, T1, others=("a", "b"))
    assert len(reporter.reuse) == 2
    reporter.reuse.retain([("argocd", "b")])
    assert len(reporter.reuse) == 1


def test_a_reused_status_is_made_of_the_stored_one_and_none_is_kept() -> None:
    reporter = Reporter()
    first = cr()
    mine = [outcome(first, "a", [up_to_date("web", "nginx", "1.2")])]
    written = reporter.status(first, mine, T0)
    state = stored(first, json.loads(json.dumps(written)), "11")
    reporter.status(state, mine, T1)  # computed over the listed status, then kept
    kept = reporter.reuse._kept[(state.namespace, state.name)]
    assert kept.fields == tuple(written)  # names only: no value of any status
    relisted = json.loads(json.dumps(written))  # listed again, unchanged
    reused = reporter.status(stored(state, relisted, "11"), mine, T2)
    assert reporter.reuse.reused == 1
    assert reused["conditions"] is relisted["conditions"]
    assert list(reused) == list(written)
    assert reused == written | {"lastCheckedAt": "2026-03-01T12:04:00Z"}
