"""Digest pinning (``pinDigest``) in the pure planner: which chosen tags need a digest, what is
written with it, a moved tag, and the settings that turn it on (CR field, both annotation
modes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from argocd_image_updater.config.annotations import (
    config_from_annotations_v0,
    read_update_settings,
)
from argocd_image_updater.config.imageupdater import parse_image_updater
from argocd_image_updater.config.imageupdater_refs import image_specs, ref_settings
from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.model.update_config import AppUpdateConfig, ImageSpec, UpdateSettings
from argocd_image_updater.plan.choices import ScanResults
from argocd_image_updater.plan.decide import plan_app
from argocd_image_updater.plan.jobs import AppJobs, plan_scans
from argocd_image_updater.plan.model import AppPlan, ImageChange, ImageReason, Outcome
from argocd_image_updater.plan.moved import TagMove, moves_of, observed_digests, tag_moves
from argocd_image_updater.plan.pins import wanted_pins
from argocd_image_updater.writeback.messages import commit_message

P = "argocd-image-updater.argoproj.io"
REPO = "ghcr.io/example/web"
OLD = "sha256:" + "a" * 64
NEW = "sha256:" + "b" * 64


@dataclass(frozen=True)
class Scan:
    tags: tuple[TagInfo, ...]
    order_hint: Mapping[str, int] | None = None


def app(name: str, live: str, annotations: Mapping[str, str] | None = None) -> Application:
    return Application.from_object(
        {
            "metadata": {
                "name": name,
                "namespace": "argocd",
                "annotations": dict(annotations or {}),
            },
            "spec": {
                "source": {"repoURL": "https://x", "path": "p", "kustomize": {"images": [live]}}
            },
            "status": {"sourceType": "Kustomize", "summary": {"images": [live]}},
        }
    )


def jobs_of(
    name: str, live: str, *, pin: bool = True, strategy: str | None = None, constraint: str = "1.x"
) -> AppJobs:
    spec = ImageSpec(
        "web",
        f"{REPO}:{constraint}" if constraint else REPO,
        UpdateSettings(strategy=strategy, pin_digest=pin),
    )
    config = AppUpdateConfig(app(name, live), (spec,))
    return plan_scans(config, RegistryConfig().endpoint_for)


def scans(apps: Sequence[AppJobs], names: Sequence[str], digest: str = "") -> ScanResults:
    results = ScanResults()
    for jobs in apps:
        for key in jobs.scan_keys:
            results[key] = Scan(tuple(TagInfo(n, digest=digest) for n in names))
    return results


def pin_all(apps: Sequence[AppJobs], results: ScanResults, digest: str | Exception) -> int:
    wanted = wanted_pins([(jobs, "argocd") for jobs in apps], results)
    for request in wanted:
        results.pin(results.pin_key(request.job.scan_key, request.tag), digest)
    return len(wanted)


def entry(plan: AppPlan) -> Any:
    (result,) = plan.results
    return result


def test_one_digest_request_per_chosen_tag_whatever_the_number_of_apps() -> None:
    apps = [jobs_of(f"app{i}", f"{REPO}:1.0.0") for i in range(3)]
    results = scans(apps, ["1.0.0", "1.1.0", "2.0.0"])
    wanted = wanted_pins([(jobs, "argocd") for jobs in apps], results)
    assert [w.tag for w in wanted] == ["1.1.0"]
    assert pin_all(apps, results, NEW) == 1
    # Asked once: a second pass wants nothing more.
    assert wanted_pins([(jobs, "argocd") for jobs in apps], results) == []
    for jobs in apps:
        plan = plan_app(jobs, results)
        assert entry(plan).outcome is Outcome.UPDATED
        (change,) = plan.changes
        assert change.new_tag == f"1.1.0@{NEW}" and change.new_digest == NEW
        (edit,) = change.edits
        assert edit.value == f"{REPO}:1.1.0@{NEW}"
        assert change.moved_tag == ""


def test_without_pin_or_with_the_digest_strategy_nothing_is_asked_for() -> None:
    plain = jobs_of("plain", f"{REPO}:1.0.0", pin=False)
    follows = jobs_of("follows", f"{REPO}:latest", strategy="digest", constraint="latest")
    results = scans([plain], ["1.0.0", "1.1.0"])
    results.update(scans([follows], ["latest"], digest=NEW))
    assert wanted_pins([(plain, "argocd"), (follows, "argocd")], results) == []
    plan = plan_app(plain, results)
    assert plan.changes[0].new_tag == "1.1.0"
    assert plan_app(follows, results).changes[0].new_tag == f"latest@{NEW}"


@pytest.mark.parametrize(
    ("pinned", "detail"),
    [(None, "the registry was not asked"), (OSError("connection refused"), "connection refused")],
)
def test_no_digest_is_a_registry_error_and_nothing_is_written(
    pinned: Exception | None, detail: str
) -> None:
    jobs = jobs_of("web", f"{REPO}:1.0.0")
    results = scans([jobs], ["1.0.0", "1.1.0"])
    if pinned is not None:
        pin_all([jobs], results, pinned)
    plan = plan_app(jobs, results)
    result = entry(plan)
    assert (result.outcome, result.reason) == (Outcome.ERROR, ImageReason.REGISTRY_ERROR)
    assert result.message == (
        f"Could not get the digest of tag '1.1.0' to pin it (pinDigest): {detail}"
    )
    assert plan.changes == () and plan.managed == ()


def test_running_the_pinned_digest_is_up_to_date() -> None:
    jobs = jobs_of("web", f"{REPO}:1.1.0@{NEW}")
    results = scans([jobs], ["1.0.0", "1.1.0"])
    pin_all([jobs], results, NEW)
    plan = plan_app(jobs, results)
    assert entry(plan).outcome is Outcome.UP_TO_DATE and plan.changes == ()


def test_a_tag_pushed_again_is_an_update_with_its_reason() -> None:
    jobs = jobs_of("web", f"{REPO}:1.1.0@{OLD}")
    results = scans([jobs], ["1.0.0", "1.1.0"])
    pin_all([jobs], results, NEW)
    plan = plan_app(jobs, results)
    result = entry(plan)
    assert result.outcome is Outcome.UPDATED
    assert result.message == (
        f"Successfully updated image '{REPO}:1.1.0@{OLD}' to '{REPO}:1.1.0@{NEW}': "
        "tag '1.1.0' moved to another digest"
    )
    (change,) = plan.changes
    assert change.moved_tag == "1.1.0"
    assert commit_message(None, "web", plan.changes) == (
        "build: automatic update of web\n\n"
        f"updates image example/web tag '{OLD}' to '{NEW}'\n\n"
        "tag '1.1.0' of example/web moved to another digest\n"
    )


def test_a_running_tag_without_digest_is_pinned() -> None:
    jobs = jobs_of("web", f"{REPO}:1.1.0")
    results = scans([jobs], ["1.1.0"])
    pin_all([jobs], results, NEW)
    (change,) = plan_app(jobs, results).changes
    assert change.new_tag == f"1.1.0@{NEW}" and change.moved_tag == ""


def test_moved_tag_needs_the_same_name_and_two_known_digests() -> None:
    image = ImageRef.parse(f"{REPO}:1.x")
    moved = ImageChange("web", image, f"1.1.0@{OLD}", f"1.1.0@{NEW}", NEW, old_digest=OLD)
    renamed = ImageChange("web", image, f"1.0.0@{OLD}", f"1.1.0@{NEW}", NEW, old_digest=OLD)
    first = ImageChange("web", image, "1.1.0", f"1.1.0@{NEW}", NEW)
    assert (moved.moved_tag, renamed.moved_tag, first.moved_tag) == ("1.1.0", "", "")
    assert commit_message(None, "web", [renamed]).count("moved") == 0


def test_pin_digest_in_the_imageupdater() -> None:
    cr = parse_image_updater(
        {
            "apiVersion": f"{P}/v1alpha1",
            "kind": "ImageUpdater",
            "metadata": {"name": "iu", "namespace": "argocd"},
            "spec": {
                "commonUpdateSettings": {"pinDigest": True},
                "applicationRefs": [
                    {
                        "namePattern": "*",
                        "images": [
                            {"alias": "a", "imageName": f"{REPO}:1.x"},
                            {
                                "alias": "b",
                                "imageName": f"{REPO}:2.x",
                                "commonUpdateSettings": {"pinDigest": False},
                            },
                        ],
                    }
                ],
            },
        }
    )
    ref = cr.spec.application_refs[0]
    a, b = image_specs(cr, ref, ref_settings(cr, ref), None)
    assert a.settings.effective_pin_digest and not b.settings.effective_pin_digest
    assert b.settings.where("pin_digest").endswith(
        "spec.applicationRefs[0].images[1].commonUpdateSettings.pinDigest"
    )


def test_pin_digest_annotations_in_both_modes() -> None:
    annotations = {f"{P}/image-list": f"web={REPO}:1.x", f"{P}/web.pin-digest": "true"}
    settings = read_update_settings(app("a", f"{REPO}:1.0.0", annotations), "web")
    assert settings is not None and settings.effective_pin_digest
    config, _ = config_from_annotations_v0(app("a", f"{REPO}:1.0.0", annotations))
    assert config.images[0].settings.effective_pin_digest
    wide = {f"{P}/image-list": f"web={REPO}:1.x", f"{P}/pin-digest": "true"}
    config, _ = config_from_annotations_v0(app("a", f"{REPO}:1.0.0", wide))
    assert config.images[0].settings.effective_pin_digest
    bad = {**annotations, f"{P}/web.pin-digest": "sure"}
    with pytest.raises(ValueError, match=r"web\.pin-digest: 'sure' is not a boolean"):
        read_update_settings(app("a", f"{REPO}:1.0.0", bad), "web")


# --- tags that moved -----------------------------------------------------------------------------


def test_moves_compare_the_digests_seen_now_with_those_seen_before() -> None:
    pinned = jobs_of("pinned", f"{REPO}:1.1.0@{OLD}")
    plain = jobs_of("plain", f"{REPO}:1.0.0", pin=False)
    results = scans([pinned, plain], ["1.0.0", "1.1.0"])
    pin_all([pinned], results, NEW)
    repo = "ghcr.io/example/web"
    observed = observed_digests([pinned, plain], results)
    assert observed == {(repo, "1.1.0"): NEW}  # semver without pinning reads no digest
    before = {(repo, "1.1.0"): OLD}
    moves = tag_moves(observed, lambda r, t: before.get((r, t)))
    assert list(moves.values()) == [TagMove(repo, "1.1.0", OLD, NEW)]
    # Both Applications chose 1.1.0: both hear of it; the message names both digests.
    (move,) = moves_of(pinned, results, moves)
    assert moves_of(plain, results, moves) == (move,)
    assert move.message == (
        f"tag '1.1.0' of {repo} moved to another digest: it was {OLD} when last seen, "
        f"it is {NEW} now"
    )
    # Never seen, or seen with the same digest: no move.
    assert tag_moves(observed, lambda r, t: None) == {}
    assert tag_moves(observed, lambda r, t: NEW) == {}


def test_an_application_hears_of_the_tag_it_runs_even_without_a_choice() -> None:
    # newest-build without build dates chooses nothing; the running tag still counts.
    jobs = jobs_of("web", f"{REPO}:1.0.0", strategy="newest-build", constraint="")
    results = scans([jobs], ["1.0.0", "1.1.0"], digest=NEW)
    repo = "ghcr.io/example/web"
    moves = tag_moves(observed_digests([jobs], results), lambda r, t: OLD)
    assert set(moves) == {(repo, "1.0.0"), (repo, "1.1.0")}
    assert [m.tag for m in moves_of(jobs, results, moves)] == ["1.0.0"]
    other = {(repo, "0.9.0"): TagMove(repo, "0.9.0", OLD, NEW)}
    assert moves_of(jobs, results, other) == ()
