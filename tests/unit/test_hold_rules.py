"""Manual holds (reading the annotation and spec.holds, editing the annotation) and the hold
decision of planning: rollbacks by the image's own ordering, expiry, unreadable holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from argocd_image_updater.config.holds import (
    annotation_holds,
    held_annotations,
    released_annotations,
    spec_holds,
)
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.controller_state import WriteRecord
from argocd_image_updater.model.holds import HOLD_ANNOTATION, HOLD_REASON_ANNOTATION, ManualHold
from argocd_image_updater.model.platform import PlatformFilter
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.plan.holds import (
    HOLD_ANNOUNCE,
    HOLD_ROLLBACK,
    HoldContext,
    announced,
    overwriter,
)
from argocd_image_updater.plan.params import ParamNames
from argocd_image_updater.policy.strategies import named

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WHERE = f"Application argocd/shop annotation {HOLD_ANNOTATION}"


def app(annotations: dict[str, str]) -> Application:
    return Application.from_object(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {"name": "shop", "namespace": "argocd", "annotations": annotations},
            "spec": {"source": {"repoURL": "https://example.com/r", "path": "p"}},
        }
    )


def test_the_annotation_lists_aliases_with_or_without_an_end_and_star() -> None:
    holds = annotation_holds(
        app(
            {
                HOLD_ANNOTATION: " web , api=2026-03-02T00:00:00+02:00,*=2026-04-01T00:00:00Z",
                HOLD_REASON_ANNOTATION: "freeze",
            }
        )
    )
    assert holds == (
        ManualHold("web", None, "freeze", WHERE),
        ManualHold("api", datetime(2026, 3, 1, 22, 0, tzinfo=UTC), "freeze", WHERE),
        ManualHold("*", datetime(2026, 4, 1, tzinfo=UTC), "freeze", WHERE),
    )
    assert annotation_holds(app({})) == ()


@pytest.mark.parametrize(
    ("value", "alias", "message"),
    [
        ("web=tomorrow", "web", "entry 'web=tomorrow': 'tomorrow' is not an RFC 3339 time"),
        ("web=2026-03-01T12:00:00", "web", "has no time zone"),
        ("a b", "*", "entry 'a b': 'a b' is not an image alias"),
    ],
)
def test_an_entry_that_cannot_be_read_is_an_error_naming_the_annotation(
    value: str, alias: str, message: str
) -> None:
    [hold] = annotation_holds(app({HOLD_ANNOTATION: value}))
    assert hold.alias == alias and hold.error.startswith(WHERE)
    assert message in hold.error
    assert hold.active(NOW + timedelta(days=3650))  # fail closed: never expires


def test_spec_holds_name_their_field() -> None:
    cr = {
        "metadata": {"namespace": "argocd", "name": "shop"},
        "spec": {
            "holds": [
                {"alias": "web", "until": "2026-03-02T00:00:00Z", "reason": "freeze"},
                {"alias": "api", "until": datetime(2026, 3, 3, tzinfo=UTC)},
                {"alias": "worker", "until": "soon"},
                {"until": "2026-03-02T00:00:00Z"},
            ]
        },
    }
    web, api, worker, nameless = spec_holds(cr)
    where = "ImageUpdater argocd/shop field spec.holds"
    assert web == ManualHold("web", datetime(2026, 3, 2, tzinfo=UTC), "freeze", f"{where}[0]")
    assert api.until == datetime(2026, 3, 3, tzinfo=UTC) and not api.error
    assert worker.error.startswith(f"{where}[2].until: 'soon' is not an RFC 3339 time")
    assert nameless.alias == "*" and nameless.error == f"{where}[3].alias: a string is required"
    assert spec_holds({"spec": {}}) == () and spec_holds(None) == ()


def test_hold_and_release_edit_the_annotation_value() -> None:
    until = datetime(2026, 3, 2, tzinfo=UTC)
    assert held_annotations({}, ["web"], None, "") == {HOLD_ANNOTATION: "web"}
    assert held_annotations(
        {HOLD_ANNOTATION: "web,api=2026-01-01T00:00:00Z"}, ["api"], until, "x"
    ) == {
        HOLD_ANNOTATION: "web,api=2026-03-02T00:00:00Z",
        HOLD_REASON_ANNOTATION: "x",
    }
    assert held_annotations({}, [], None, "") == {HOLD_ANNOTATION: "*"}
    current = {HOLD_ANNOTATION: "web,api", HOLD_REASON_ANNOTATION: "x"}
    assert released_annotations(current, ["web"]) == {HOLD_ANNOTATION: "api"}
    assert released_annotations(current, []) == {
        HOLD_ANNOTATION: None,
        HOLD_REASON_ANNOTATION: None,
    }
    assert released_annotations({}, ["web"]) == {}


SEMVER = named("semver")
TAGS = tuple(TagInfo(t) for t in ("1.0.0", "1.1.0", "1.2.0", "2.0.0"))


def check(context: HoldContext, running: str, chosen: str, target: str | None = None) -> str | None:
    verdict = context.check(
        "web", running, TagInfo(chosen), SEMVER, TAGS, None, PlatformFilter(), target
    )
    return None if verdict is None else f"{verdict.detail}: {verdict.message}"


@pytest.mark.parametrize("via", ["argocd", "git"])
def test_a_target_set_back_is_held_whether_or_not_the_written_tag_ran(via: str) -> None:
    never_ran = HoldContext(NOW, {"web": WriteRecord("1.1.0", NOW, via=via)}, via=via)
    # cluster mode, argocd method: the Application's parameters are the target
    assert check(never_ran, "1.0.0", "1.1.0", target="1.0.0") == (
        f"{HOLD_ANNOUNCE} 1.0.0: held: rolled back from 1.1.0 to 1.0.0"
    )
    assert check(never_ran, "1.0.0", "1.1.0", target="1.1.0") is None  # waiting for a sync
    assert check(never_ran, "1.0.0", "1.1.0", target="") is None  # not in the target
    assert check(never_ran, "1.0.0", "1.2.0", target="1.0.0") is None  # a newer tag: update
    assert check(never_ran, "1.0.0", "1.1.0", target="1.2.0") is None  # set forward: no hold
    # local mode: what runs was read from the target
    local = HoldContext(NOW, never_ran.writes, via=via, live_is_target=True)
    assert check(local, "1.0.0", "1.1.0") == (
        f"{HOLD_ANNOUNCE} 1.0.0: held: rolled back from 1.1.0 to 1.0.0"
    )
    announced = HoldContext(
        NOW, {"web": WriteRecord("1.1.0", NOW, held="1.0.0", via=via, held_by="kubectl")}, via=via
    )
    assert check(announced, "1.0.0", "1.1.0", target="1.0.0") == (
        f"{HOLD_ROLLBACK}: held: rolled back from 1.1.0 to 1.0.0 by kubectl"
    )


def test_a_write_elsewhere_or_of_an_earlier_version_does_not_hold_by_the_target() -> None:
    record = WriteRecord("1.1.0", NOW, via="git", commit="abc")
    switched = HoldContext(NOW, {"web": record}, via="argocd")  # the method changed since
    assert check(switched, "1.0.0", "1.1.0", target="1.0.0") is None
    old = HoldContext(NOW, {"web": WriteRecord("1.1.0", NOW)}, via="argocd")
    assert check(old, "1.0.0", "1.1.0", target="1.0.0") is None


def test_the_git_guard_holds_a_file_set_back_after_a_push() -> None:
    where = ("kustomize", ParamNames(), "")
    record = WriteRecord("1.1.0", NOW, via="git", commit="abc")
    context = HoldContext(NOW, {"web": record}, via="git")
    guard = context.guard("web", TagInfo("1.1.0"), SEMVER, TAGS, None, PlatformFilter(), where)
    assert guard is not None
    assert guard.check("1.1.0") is None and guard.check("1.2.0") is None
    assert guard.check("") is None
    verdict = guard.check("1.0.0", "Jane <jane@example.com>")
    assert verdict is not None
    assert verdict.message == "held: rolled back from 1.1.0 to 1.0.0 by Jane <jane@example.com>"
    assert announced(verdict.detail) == "1.0.0"
    assert overwriter(verdict.message, "1.0.0") == "Jane <jane@example.com>"
    newer = context.guard("web", TagInfo("1.2.0"), SEMVER, TAGS, None, PlatformFilter(), where)
    assert newer is None
    by_request = HoldContext(NOW, {"web": WriteRecord("1.1.0", NOW, via="git")}, via="git")
    chosen = TagInfo("1.1.0")
    assert by_request.guard("web", chosen, SEMVER, TAGS, None, PlatformFilter(), where) is None


def test_a_running_tag_older_than_the_written_one_is_a_rollback_once_it_ran() -> None:
    written = WriteRecord("1.1.0", NOW)
    not_yet = HoldContext(NOW, {"web": written})
    assert check(not_yet, "1.0.0", "1.1.0") is None  # never seen running: not a rollback
    ran = HoldContext(NOW, {"web": WriteRecord("1.1.0", NOW, live=True)})
    assert check(ran, "1.0.0", "1.1.0") == (
        f"{HOLD_ANNOUNCE} 1.0.0: held: rolled back from 1.1.0 to 1.0.0"
    )
    assert check(ran, "1.0.0", "1.2.0") is None  # newer than the tag rolled back from
    assert check(ran, "1.2.0", "2.0.0") is None  # newer than written: not a rollback
    announced = HoldContext(NOW, {"web": WriteRecord("1.1.0", NOW, live=True, held="1.0.0")})
    assert check(announced, "1.0.0", "1.1.0") == (
        f"{HOLD_ROLLBACK}: held: rolled back from 1.1.0 to 1.0.0"
    )


def test_the_written_tag_is_noted_as_running_when_it_or_a_newer_one_runs() -> None:
    context = HoldContext(NOW, {"web": WriteRecord("1.1.0", NOW)})
    for running, seen in (("1.0.0", False), ("1.1.0", True), ("1.2.0", True)):
        context.live.clear()
        context.observe("web", running, SEMVER, TAGS, None, PlatformFilter())
        assert ("web" in context.live) is seen, running


def test_manual_holds_expire_and_unreadable_ones_are_errors() -> None:
    later = NOW + timedelta(hours=1)
    context = HoldContext(NOW, manual=(ManualHold("web", later, "", WHERE),))
    assert check(context, "1.0.0", "1.1.0") == (
        f"hold-manual: held: manual hold until 2026-03-01T13:00:00Z ({WHERE})"
    )
    expired = HoldContext(later + timedelta(seconds=1), manual=context.manual)
    assert check(expired, "1.0.0", "1.1.0") is None
    broken = HoldContext(NOW, manual=(ManualHold("*", where=WHERE, error=f"{WHERE}: bad"),))
    verdict = broken.check("web", "1.0.0", TagInfo("1.1.0"), SEMVER, TAGS, None, PlatformFilter())
    assert verdict is not None and verdict.error
    assert verdict.message == f"held: the hold cannot be read: {WHERE}: bad"
