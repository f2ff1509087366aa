"""``set --image``: what it accepts and how it names what it refuses; the order in which
``ALIAS=DIGEST`` asks for the tags' digests; the selection of ``TAG@DIGEST`` (pinned, the digest
expected) and the planner's refusal of a tag that points elsewhere."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

import pytest
from test_plan_pins import NEW, OLD, REPO, app, pin_all, scans

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.controller.set_version import (
    Assignment,
    SetError,
    parse_assignment,
    search_order,
    set_selection,
)
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.platform import Platform
from argocd_image_updater.model.tags import PlatformImage, TagInfo
from argocd_image_updater.model.update_config import AppUpdateConfig, ImageSpec, UpdateSettings
from argocd_image_updater.pipeline.records import Collected
from argocd_image_updater.plan.decide import plan_app
from argocd_image_updater.plan.jobs import build_policy, plan_scans
from argocd_image_updater.plan.model import ImageReason, Outcome

DIGEST = "sha256:" + "0123456789abcdef" * 4


def test_an_alias_and_a_tag_are_read() -> None:
    assert parse_assignment(" web = 1.4.2 ") == Assignment("web", "1.4.2")


def test_a_tag_with_its_digest_and_a_digest_alone_are_read() -> None:
    assert parse_assignment(f"web=1.4.2@{DIGEST}") == Assignment("web", "1.4.2", DIGEST)
    assert parse_assignment(f"web={DIGEST}") == Assignment("web", "", DIGEST)
    assert Assignment("web", "1.4.2", DIGEST).version == f"1.4.2@{DIGEST}"
    assert Assignment("web", "", DIGEST).version == DIGEST


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("web", "expected ALIAS=TAG, ALIAS=TAG@DIGEST or ALIAS=DIGEST"),
        ("=1.0", "expected ALIAS=TAG"),
        ("web=", "expected ALIAS=TAG"),
        ("web=sha256:abc", "'sha256:abc' is not a digest"),
        ("web=1.0@sha256:" + "A" * 64, "is not a digest: expected sha256: and 64 lowercase"),
        ("web=1.0@latest", "'latest' is not a digest"),
        ("web=@" + DIGEST, "give TAG@DIGEST, or the digest alone"),
        ("web=sha512:" + "a" * 128, "is not a valid tag"),
        ("web=not a tag", "'not a tag' is not a valid tag"),
        (f"web=bad tag@{DIGEST}", "'bad tag' is not a valid tag"),
    ],
)
def test_bad_assignments_name_the_flag(text: str, problem: str) -> None:
    with pytest.raises(SetError, match="--image") as err:
        parse_assignment(text)
    assert problem in str(err.value)


def order(
    settings: UpdateSettings,
    tags: list[TagInfo],
    constraint: str = "",
    hint: Mapping[str, int] | None = None,
) -> list[str]:
    spec = ImageSpec("web", f"{REPO}:{constraint}" if constraint else REPO, settings)
    policy, _ = build_policy(spec, ImageRef.parse(spec.image))
    return search_order(policy, tuple(tags), hint)


NAMES = ["latest", "1.2.0", "1.10.0", "2.0.0-rc.1", "2.0.0", "sha-abc", "1.9.0"]


def tags(*names: str) -> list[TagInfo]:
    return [TagInfo(name) for name in names]


def test_semver_asks_the_accepted_versions_highest_first_then_the_rest() -> None:
    assert order(UpdateSettings(strategy="semver"), tags(*NAMES)) == [
        "2.0.0",
        "1.10.0",
        "1.9.0",
        "1.2.0",
        "2.0.0-rc.1",  # a prerelease: not accepted by the constraint, still a version
        "sha-abc",
        "latest",
    ]
    # a constraint and the filters move what they reject behind what they accept
    settings = UpdateSettings(strategy="semver", ignore_tags=("1.10.*",))
    assert order(settings, tags(*NAMES), constraint="1.x") == [
        "1.9.0",
        "1.2.0",
        "2.0.0",
        "2.0.0-rc.1",
        "1.10.0",
        "sha-abc",
        "latest",
    ]


def test_alphabetical_asks_the_allowed_tags_last_name_first() -> None:
    settings = UpdateSettings(strategy="alphabetical", allow_tags="regexp:^[0-9]")
    assert order(settings, tags(*NAMES)) == [
        "2.0.0-rc.1",
        "2.0.0",
        "1.9.0",
        "1.2.0",
        "1.10.0",
        "sha-abc",
        "latest",
    ]


def test_newest_build_asks_the_newest_first() -> None:
    def built(name: str, day: int) -> TagInfo:
        when = datetime(2026, 1, day, tzinfo=UTC)
        return TagInfo(name, "", (PlatformImage(Platform("linux", "amd64"), "", when),))

    found = [built("b", 1), built("a", 3), built("c", 2)]
    assert order(UpdateSettings(strategy="newest-build"), found) == ["a", "c", "b"]
    hint = {"b": 3, "a": 1, "c": 2}  # a registry listing its tags by age
    assert order(UpdateSettings(strategy="newest-build"), tags("a", "b", "c"), hint=hint) == [
        "b",
        "c",
        "a",
    ]


def test_the_digest_strategy_asks_its_followed_tag_first() -> None:
    found = order(UpdateSettings(strategy="digest"), tags("v1", "latest", "v2"), "latest")
    assert found == ["latest", "v2", "v1"]


def selection(settings: UpdateSettings, tag: str, digest: str) -> AppUpdateConfig:
    spec = ImageSpec("web", f"{REPO}:1.x", settings)
    collected = Collected(configs=[(AppUpdateConfig(app("shop", f"{REPO}:1.0.0"), (spec,)), None)])
    [(config, _)] = set_selection(collected, "argocd", "shop", "web", tag, digest).configs
    return config


def test_a_tag_with_a_digest_is_pinned_and_expects_it() -> None:
    [spec] = selection(UpdateSettings(strategy="semver"), "1.1.0", NEW).images
    assert spec.settings.pin_digest is True and spec.expected_digest == NEW
    [plain] = selection(UpdateSettings(strategy="semver"), "1.1.0", "").images
    assert not plain.settings.pin_digest and plain.expected_digest == ""
    [follows] = selection(UpdateSettings(strategy="Digest"), "1.1.0", "").images
    assert follows.settings.pin_digest is True


@pytest.mark.parametrize(("pinned", "written"), [(NEW, True), (OLD, False)])
def test_the_plan_writes_the_tag_only_at_the_expected_digest(pinned: str, written: bool) -> None:
    config = selection(UpdateSettings(strategy="semver"), "1.1.0", NEW)
    jobs = plan_scans(config, RegistryConfig().endpoint_for)
    results = scans([jobs], ["1.0.0", "1.1.0", "2.0.0"])
    assert pin_all([jobs], results, pinned) == 1
    plan = plan_app(jobs, results)
    [result] = plan.results
    if written:
        assert result.outcome is Outcome.UPDATED
        assert [c.new_tag for c in plan.changes] == [f"1.1.0@{NEW}"]
        return
    assert (result.outcome, result.reason) == (Outcome.ERROR, ImageReason.REGISTRY_ERROR)
    assert result.message == (f"tag '1.1.0' of {REPO} now points at {OLD}, not {NEW}")
    assert plan.changes == () and plan.managed == ()
