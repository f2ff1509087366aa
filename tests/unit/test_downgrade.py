"""Never downgrade, and settings problems that name their field: from an ImageUpdater (or the
annotations of an Application) through selection and planning, with the tags a scan returned."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from argocd_image_updater.config.imageupdater import parse_image_updater
from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.config.selection import select_applications
from argocd_image_updater.config.selection_v0 import select_applications_v0
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.platform import Platform, PlatformFilter
from argocd_image_updater.model.tags import PlatformImage, TagInfo
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.plan.decide import plan_app
from argocd_image_updater.plan.jobs import plan_scans
from argocd_image_updater.plan.model import AppPlan, ImageReason, ImageResult, Outcome
from argocd_image_updater.policy.downgrade import downgrade
from argocd_image_updater.policy.strategies import UpdateStrategy, named

P = "argocd-image-updater.argoproj.io"
IMAGE = "example.io/team/web"
LINUX = Platform("linux", "amd64")


@dataclass(frozen=True)
class Scan:
    tags: tuple[TagInfo, ...]
    order_hint: Mapping[str, int] | None = None


def built(name: str, day: int) -> TagInfo:
    created = datetime(2026, 1, day, tzinfo=UTC)
    return TagInfo(name, images=(PlatformImage(LINUX, created=created),))


# --- the ordering ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "running", "chosen", "lower"),
    [
        (named("semver"), "1.5.0", "1.3.0", True),
        (named("semver"), "1.3.0", "1.5.0", False),
        (named("semver"), "v1.5", "1.5.0", False),  # equal precedence is not lower
        (named("semver"), "latest", "1.3.0", False),  # the running tag has no order
        (named("semver"), "1.5.0", "1.5.0-rc.1", True),
        (named("alphabetical"), "b", "a", True),
        (named("alphabetical"), "a", "b", False),
        (named("digest"), "1.5.0", "1.3.0", False),  # not applicable
    ],
)
def test_each_strategy_orders_by_its_own_rule(
    strategy: UpdateStrategy, running: str, chosen: str, lower: bool
) -> None:
    why = downgrade(strategy, running, TagInfo(chosen))
    assert (why is not None) is lower
    if why is not None:
        assert f"'{chosen}'" in why and f"'{running}'" in why


def test_newest_build_compares_build_dates_when_both_are_known() -> None:
    old, new = built("b", 1), built("a", 2)
    wanted = PlatformFilter([LINUX])
    why = downgrade(named("newest-build"), "a", old, tags=[old, new], platforms=wanted)
    assert why is not None and "2026-01-01" in why and "2026-01-02" in why
    assert downgrade(named("newest-build"), "b", new, tags=[old, new], platforms=wanted) is None
    # the running tag is not in the list: its date is unknown, nothing is said
    assert downgrade(named("newest-build"), "gone", old, tags=[old], platforms=wanted) is None
    # registries listing tags by age: the list position stands for the date
    hint = {"a": 2, "b": 1}
    assert downgrade(named("newest-build"), "a", TagInfo("b"), order_hint=hint) is not None


# --- planning from an ImageUpdater ---------------------------------------------------------------


def app_object(name: str, live: str, annotations: Mapping[str, str] | None = None) -> Any:
    return {
        "metadata": {"name": name, "namespace": "argocd", "annotations": dict(annotations or {})},
        "spec": {
            "source": {"repoURL": "https://example.com/r", "path": "p", "kustomize": {}},
        },
        "status": {"sourceType": "Kustomize", "summary": {"images": [f"{IMAGE}:{live}"]}},
    }


def cr(settings: Mapping[str, Any] | None = None, **image: Any) -> Any:
    entry: dict[str, Any] = {"alias": "web", "imageName": IMAGE, **image}
    ref: dict[str, Any] = {"namePattern": "*", "images": [entry]}
    if settings is not None:
        ref["commonUpdateSettings"] = dict(settings)
    return parse_image_updater(
        {"metadata": {"name": "team", "namespace": "argocd"}, "spec": {"applicationRefs": [ref]}}
    )


def plan(config: AppUpdateConfig, tags: Sequence[TagInfo]) -> AppPlan:
    jobs = plan_scans(config, RegistryConfig().endpoint_for)
    return plan_app(jobs, {key: Scan(tuple(tags)) for key in jobs.scan_keys})


def only_result(config: AppUpdateConfig, tags: Sequence[TagInfo]) -> tuple[AppPlan, ImageResult]:
    result = plan(config, tags)
    assert len(result.results) == 1
    return result, result.results[0]


def configs_of(iu: Any, *apps: Any) -> list[AppUpdateConfig]:
    selection = select_applications(iu, [Application.from_object(a) for a in apps])
    assert selection.error is None, selection.error
    return selection.configs


TRUNCATED = [TagInfo("1.0.0"), TagInfo("1.3.0")]


def test_a_lower_version_is_not_written_and_names_both_tags() -> None:
    (config,) = configs_of(cr(), app_object("web", "1.5.0"))
    result, image = only_result(config, TRUNCATED)
    assert not result.changes
    assert (image.outcome, image.reason) == (Outcome.SKIPPED, ImageReason.WOULD_DOWNGRADE)
    assert "'1.3.0' is a lower version than the running '1.5.0'" in image.message
    assert image.chosen == f"{IMAGE}:1.3.0" and image.current == f"{IMAGE}:1.5.0"
    assert (result.skipped, result.errors, result.updated) == (1, 0, 0)


def test_a_higher_version_is_still_written() -> None:
    (config,) = configs_of(cr(), app_object("web", "1.0.0"))
    result, image = only_result(config, TRUNCATED)
    assert image.reason == ImageReason.UPDATED and [c.new_tag for c in result.changes] == ["1.3.0"]


@pytest.mark.parametrize(
    "iu",
    [
        cr({"allowDowngrade": True}),
        cr(commonUpdateSettings={"allowDowngrade": True}),
    ],
    ids=["applicationRef", "image"],
)
def test_allow_downgrade_in_the_imageupdater(iu: Any) -> None:
    (config,) = configs_of(iu, app_object("web", "1.5.0"))
    result, image = only_result(config, TRUNCATED)
    assert image.reason == ImageReason.UPDATED and [c.new_tag for c in result.changes] == ["1.3.0"]


def test_allow_downgrade_false_at_the_image_wins_over_the_ref() -> None:
    iu = cr({"allowDowngrade": True}, commonUpdateSettings={"allowDowngrade": False})
    (config,) = configs_of(iu, app_object("web", "1.5.0"))
    assert only_result(config, TRUNCATED)[1].reason == ImageReason.WOULD_DOWNGRADE


def test_allow_downgrade_annotation_with_use_annotations() -> None:
    iu = parse_image_updater(
        {
            "metadata": {"name": "team", "namespace": "argocd"},
            "spec": {"applicationRefs": [{"namePattern": "*", "useAnnotations": True}]},
        }
    )
    annotations = {f"{P}/image-list": f"web={IMAGE}", f"{P}/web.allow-downgrade": "true"}
    (config,) = configs_of(iu, app_object("web", "1.5.0", annotations))
    assert only_result(config, TRUNCATED)[1].reason == ImageReason.UPDATED
    annotations[f"{P}/web.allow-downgrade"] = "yes please"
    selection = select_applications(
        iu, [Application.from_object(app_object("web", "1.5.0", annotations))]
    )
    assert not selection.configs
    assert any(f"{P}/web.allow-downgrade" in w and "yes please" in w for w in selection.warnings)


@pytest.mark.parametrize(("value", "allowed"), [("true", True), ("false", False), ("1", False)])
def test_allow_downgrade_annotation_v0(value: str, allowed: bool) -> None:
    annotations = {f"{P}/image-list": f"web={IMAGE}", f"{P}/web.allow-downgrade": value}
    app = Application.from_object(app_object("web", "1.5.0", annotations))
    (config,) = select_applications_v0([app]).configs
    reason = only_result(config, TRUNCATED)[1].reason
    assert reason == (ImageReason.UPDATED if allowed else ImageReason.WOULD_DOWNGRADE)


# --- problems name the object and the field ------------------------------------------------------


def test_unknown_strategy_warns_with_the_field_and_the_value() -> None:
    (config,) = configs_of(cr({"updateStrategy": "newest-buildz"}), app_object("web", "1.0.0"))
    _, image = only_result(config, TRUNCATED)
    assert image.reason == ImageReason.UPDATED  # semver, as in the original
    assert image.warnings == (
        "ImageUpdater argocd/team field spec.applicationRefs[0].commonUpdateSettings."
        "updateStrategy: Unknown sort option newest-buildz -- using semver",
    )


def test_invalid_allow_tags_warns_with_the_expression() -> None:
    iu = cr(commonUpdateSettings={"allowTags": "regexp:^1.("})
    (config,) = configs_of(iu, app_object("web", "1.0.0"))
    _, image = only_result(config, TRUNCATED)
    assert image.reason == ImageReason.NO_CANDIDATE
    (warning,) = image.warnings
    assert warning.startswith(
        "ImageUpdater argocd/team field spec.applicationRefs[0].images[0].commonUpdateSettings."
        "allowTags: could not compile regexp '^1.('"
    )


def test_annotation_warning_names_the_application_and_the_annotation() -> None:
    annotations = {f"{P}/image-list": f"web={IMAGE}", f"{P}/web.update-strategy": "biggest"}
    app = Application.from_object(app_object("web", "1.0.0", annotations))
    (config,) = select_applications_v0([app]).configs
    (warning,) = only_result(config, TRUNCATED)[1].warnings
    assert warning == (
        f"Application argocd/web annotation {P}/web.update-strategy: "
        "Unknown sort option biggest -- using semver"
    )


def test_bad_pull_secret_is_the_image_error_naming_the_field() -> None:
    iu = cr({"pullSecret": "nonsense:whatever"})
    (config,) = configs_of(iu, app_object("web", "1.0.0"))
    result, image = only_result(config, TRUNCATED)
    assert (image.outcome, image.reason) == (Outcome.ERROR, ImageReason.INVALID_CONFIG)
    assert image.message.startswith(
        "ImageUpdater argocd/team field spec.applicationRefs[0].commonUpdateSettings.pullSecret: "
        "invalid credential reference"
    )
    assert "whatever" not in image.message  # a mistyped secret is not repeated
    assert not result.changes
