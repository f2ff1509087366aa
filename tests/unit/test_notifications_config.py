"""The ``notifications`` section: validation with field paths (the ImageUpdater and the
ConfigMap default), the receiver types agreeing across the model, the registry, the CRD and the
docs, and what a cycle's outcomes become as events."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import pytest
from ruamel.yaml import YAML

from argocd_image_updater.config.imageupdater import ImageUpdaterError, parse_image_updater
from argocd_image_updater.config.notifications_file import (
    NotificationsFile,
    NotificationsFileError,
    load_notifications,
)
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.notifications import TARGET_TYPE_NAMES, EventKind
from argocd_image_updater.notify.events import cycle_events
from argocd_image_updater.notify.registry import target_types
from argocd_image_updater.notify.signing import signature_headers
from argocd_image_updater.pipeline.records import AppOutcome, Collected, CRState, CycleResult
from argocd_image_updater.plan.model import AppPlan, ImageChange, ImageResult, Outcome

ROOT: Final = Path(__file__).resolve().parents[2]
CRD: Final = (
    ROOT / "config" / "crd" / "bases" / "argocd-image-updater.argoproj.io_imageupdaters.yaml"
)
SLACK: Final = {"name": "chat", "type": "slack", "urlSecret": {"secretName": "s", "key": "k"}}


def cr(notifications: Any) -> dict[str, Any]:
    return {
        "apiVersion": "argocd-image-updater.argoproj.io/v1alpha1",
        "kind": "ImageUpdater",
        "metadata": {"name": "shop", "namespace": "shop"},
        "spec": {
            "applicationRefs": [{"namePattern": "*", "useAnnotations": True}],
            "notifications": notifications,
        },
    }


def errors_of(notifications: Any) -> tuple[str, ...]:
    with pytest.raises(ImageUpdaterError) as info:
        parse_image_updater(cr(notifications))
    return info.value.errors


def test_a_valid_section_is_read() -> None:
    signing = {"secretName": "s", "key": "sign"}
    parsed = parse_image_updater(
        cr(
            {
                "targets": [
                    {**SLACK, "on": ["updated", "held"]},
                    {
                        "name": "audit",
                        "type": "webhook",
                        "urlSecret": signing,
                        "signingSecret": signing,
                    },
                ]
            }
        )
    )
    notifications = parsed.spec.notifications
    assert notifications is not None
    chat, audit = notifications.targets
    assert chat.events == {EventKind.UPDATED, EventKind.HELD}
    assert audit.events == frozenset(EventKind)
    assert audit.signing_secret is not None and audit.signing_secret.key == "sign"


@pytest.mark.parametrize(
    ("notifications", "expected"),
    [
        (
            {"targets": [{**SLACK, "type": "email"}]},
            "spec.notifications.targets[0].type: unsupported value 'email': supported values: "
            "slack, teams, webhook, cloudevents",
        ),
        (
            {"targets": [{**SLACK, "type": "webhook"}]},
            "spec.notifications.targets[0].signingSecret: signingSecret is required for type "
            "webhook",
        ),
        (
            {"targets": [{**SLACK, "signingSecret": {"secretName": "s", "key": "x"}}]},
            "spec.notifications.targets[0].signingSecret: signingSecret applies to types "
            "webhook and cloudevents only",
        ),
        (
            {"targets": [{**SLACK, "on": ["updated", "deleted"]}]},
            "spec.notifications.targets[0].on[1]: unsupported value 'deleted': supported "
            "values: updated, failed, held, verification-failed, shipped",
        ),
        (
            {"targets": [SLACK, SLACK]},
            "spec.notifications.targets[1].name: duplicate name 'chat': each target needs its "
            "own name",
        ),
        (
            {"targets": [{"name": "chat", "type": "slack"}]},
            "spec.notifications.targets[0].urlSecret: required field is missing",
        ),
        (
            {"targets": [{**SLACK, "url": "https://hooks.slack.com/services/x"}]},
            "spec.notifications.targets[0].url: unknown field; remove it or check its spelling "
            "against the CRD",
        ),
        (
            {"targets": [{**SLACK, "name": "Team Chat"}]},
            "spec.notifications.targets[0].name: 'Team Chat' does not match "
            "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$: use lower-case letters, digits and '-' "
            "(at most 63 characters)",
        ),
        ({}, "spec.notifications.targets: required field is missing"),
    ],
)
def test_a_bad_section_names_the_exact_field(notifications: Any, expected: str) -> None:
    assert errors_of(notifications) == (expected,)


def test_the_configmap_default_has_the_same_shape(tmp_path: Path) -> None:
    path = tmp_path / "notifications.yaml"
    assert load_notifications(path) is None  # missing: no default targets
    path.write_text("")
    assert load_notifications(path) is None
    path.write_text(
        'targets:\n  - {name: chat, type: teams, urlSecret: {secretName: s, key: k}, "on": [failed]}\n'
    )
    loaded = load_notifications(path)
    assert loaded is not None and loaded.targets[0].events == {EventKind.FAILED}
    path.write_text(
        "targets:\n  - {name: chat, type: webhook, urlSecret: {secretName: s, key: k}}\n"
    )
    with pytest.raises(NotificationsFileError) as info:
        load_notifications(path)
    assert str(info.value) == (
        f"{path}: targets[0].signingSecret: signingSecret is required for type webhook"
    )


def test_an_edited_default_is_reloaded_and_a_bad_edit_keeps_the_last_good_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notifications.yaml"
    path.write_text("targets: []\n")
    watched = NotificationsFile(path)
    first = watched.current()
    assert first is not None and first.targets == []
    path.write_text("targets:\n  - {name: chat, type: slack, urlSecret: {secretName: s, key: k}}\n")
    second = watched.current()
    assert second is not None and [t.name for t in second.targets] == ["chat"]
    path.write_text("targets: {}\n")
    assert watched.current() is second


def _crd_target_schema() -> dict[str, Any]:
    crd = YAML(typ="safe").load(CRD.read_text(encoding="utf-8"))
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    items: dict[str, Any] = spec["properties"]["notifications"]["properties"]["targets"]["items"]
    return items


def test_receiver_types_agree_across_model_registry_crd_and_docs() -> None:
    assert tuple(sorted(target_types())) == tuple(sorted(TARGET_TYPE_NAMES))
    schema = _crd_target_schema()
    assert schema["properties"]["type"]["enum"] == list(TARGET_TYPE_NAMES)
    assert schema["properties"]["on"]["items"]["enum"] == [k.value for k in EventKind]
    docs = (ROOT / "docs" / "notifications.md").read_text(encoding="utf-8")
    section = docs.split("## Targets", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z]+)` \| ", section, re.M)
    assert [name for name in rows if name != "type"] == list(TARGET_TYPE_NAMES)


def test_signature_is_hmac_sha256_over_timestamp_dot_body() -> None:
    headers = signature_headers(b"key", b'{"a":1}', 1700000000)
    assert headers == {
        "X-Timestamp": "1700000000",
        # printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac key
        "X-Signature-256": "sha256=a438e398bfafc57e4396bb7fc2304422f0f768e965d073ca313cb52e22e6ad03",
    }


def test_events_of_a_cycle() -> None:
    state = CRState("shop", "shop", 1, "1")
    broken = CRState("shop", "broken", 1, "1", error="invalid ImageUpdater 'shop/broken': …")
    change = ImageChange("web", ImageRef.parse("ghcr.io/shop/web"), "1.0", "1.1", "")
    failure = ImageResult("db", "pg", "pg:15", None, Outcome.ERROR, "registry-error", "503")
    app_plan = AppPlan.build(
        app_name="web",
        app_namespace="shop",
        source_path=("spec", "source"),
        source_type="Helm",
        results=[failure],
        changes=[change],
    )
    written = AppOutcome("shop/web", app_plan, written=True, cr=state)
    write_failed = AppOutcome("shop/api", None, error="git push rejected", cr=state)
    collected = Collected(crs=[state, broken])
    result = CycleResult(apps=[written, write_failed])
    events = [
        (c.name if c else None, e.kind.value, e.application, e.alias, e.reason)
        for c, e in cycle_events(collected, result, dry_run=False)
    ]
    assert events == [
        ("broken", "failed", "", "", "invalid-config"),
        ("shop", "updated", "shop/web", "web", "updated"),
        ("shop", "failed", "shop/web", "db", "registry-error"),
        ("shop", "failed", "shop/api", "", "write-back-failed"),
    ]
    dry = [e.kind.value for _, e in cycle_events(collected, result, dry_run=True)]
    assert "updated" not in dry


def test_an_update_links_its_pull_request_or_its_commit() -> None:
    change = ImageChange("web", ImageRef.parse("ghcr.io/shop/web"), "1.0", "1.1", "")
    app_plan = AppPlan.build(
        app_name="web",
        app_namespace="shop",
        source_path=("spec", "source"),
        source_type="Helm",
        results=[],
        changes=[change],
    )
    pushed = AppOutcome("shop/web", app_plan, written=True)
    pushed.pushed = ("git@github.com:shop/deploy.git", "0123abc")
    via_pr = AppOutcome("shop/web", app_plan, written=True)
    via_pr.pushed, via_pr.link = None, "https://github.com/shop/deploy/pull/7"
    links = [
        e.link
        for _, e in cycle_events(Collected(), CycleResult(apps=[pushed, via_pr]), dry_run=False)
    ]
    assert links == [
        "https://github.com/shop/deploy/commit/0123abc",
        "https://github.com/shop/deploy/pull/7",
    ]
