"""Phase 1 of planning: live images, forced images, configuration errors and scan keys."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.model.application import Application, SourceType
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.platform import runtime_platform
from argocd_image_updater.model.registry import RegistryEndpoint, TagSortMode
from argocd_image_updater.model.update_config import (
    AppUpdateConfig,
    GitSettings,
    HelmTarget,
    ImageSpec,
    KustomizeTarget,
    ManifestTarget,
    PluginTarget,
    UpdateSettings,
    WriteBack,
)
from argocd_image_updater.plan.jobs import (
    AppJobs,
    ImageJob,
    build_policy,
    cycle_scan_keys,
    edit_kind,
    find_live,
    plan_scans,
)
from argocd_image_updater.plan.model import ImageReason, ImageResult, Outcome
from argocd_image_updater.plan.params import ParamNames
from argocd_image_updater.plan.scans import pull_secret_namespace
from argocd_image_updater.policy.strategies import named

CR = "imageupdater ns/iu"


def app(live: Sequence[str], *, source_type: str = "Kustomize", name: str = "app") -> Application:
    obj: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"source": {"repoURL": "https://git", "path": "p", "kustomize": {}}},
        "status": {"sourceType": source_type, "summary": {"images": list(live)}},
    }
    return Application.from_object(obj)


def spec(
    alias: str, image: str, target: ManifestTarget | None = None, **settings: Any
) -> ImageSpec:
    return ImageSpec(alias, image, UpdateSettings(**settings), target)


def endpoint_for(registry: str, name: str) -> RegistryEndpoint:
    return RegistryConfig().endpoint_for(registry, name)


def plan(application: Application, *images: ImageSpec, origin: str = CR) -> AppJobs:
    return plan_scans(AppUpdateConfig(application, images, WriteBack(), origin), endpoint_for)


def only(jobs: AppJobs) -> ImageJob | ImageResult:
    (item,) = jobs.items
    return item


def only_job(jobs: AppJobs) -> ImageJob:
    item = only(jobs)
    assert isinstance(item, ImageJob), item
    return item


def only_result(jobs: AppJobs) -> ImageResult:
    item = only(jobs)
    assert isinstance(item, ImageResult), item
    return item


# --- live images (UA-37..44) ------------------------------------------------------------------------


def test_ua37_live_images_matched_by_registry_and_name() -> None:
    a = app(["nginx:1.12.2", "that/image", "quay.io/dexidp/dex:v1.23.0"])
    jobs = plan(
        a,
        spec("n", "nginx:1.x"),
        spec("t", "that/image:1.x"),
        spec("d", "quay.io/dexidp/dex:v1.x"),
        spec("other", "docker.io/dexidp/dex:v1.x"),
    )
    lives = [
        i.live.full_name_with_tag if isinstance(i, ImageJob) and i.live else None
        for i in jobs.items
    ]
    assert lives == ["nginx:1.12.2", "that/image", "quay.io/dexidp/dex:v1.23.0", None]
    last = jobs.items[3]
    assert isinstance(last, ImageResult)
    assert last.reason == ImageReason.NOT_LIVE


def test_ua38_no_live_images_means_nothing_is_live() -> None:
    result = only_result(plan(app([]), spec("n", "nginx:1.x")))
    assert (result.outcome, result.reason) == (Outcome.SKIPPED, ImageReason.NOT_LIVE)
    assert result.message == "Image 'nginx' seems not to be live in this application, skipping"
    assert not result.considered


def test_ua39_forced_image_with_nothing_live_is_tagless() -> None:
    job = only_job(plan(app([]), spec("n", "nginx", force_update=True)))
    assert job.forced
    assert job.live is None


def test_ua40_forced_digest_keeps_constraint_on_configured_image() -> None:
    job = only_job(plan(app([]), spec("n", "nginx:1.14", force_update=True, strategy="digest")))
    assert job.forced
    assert job.cfg.tag == "1.14"
    assert job.policy.strategy is named("digest")
    assert job.policy.constraint == "1.14"


def test_ua41_forced_image_that_is_live_uses_the_live_entry() -> None:
    job = only_job(plan(app(["nginx:1.14"]), spec("n", "nginx:1.14", force_update=True)))
    assert job.live == ImageRef.parse("nginx:1.14")
    assert not job.forced


def test_ua44_only_live_images_are_planned() -> None:
    jobs = plan(app(["nginx:1.25.0"]), spec("nginx", "nginx:1.25.0"), spec("redis", "redis:7.0"))
    assert [type(i).__name__ for i in jobs.items] == ["ImageJob", "ImageResult"]


def test_kustomize_target_name_is_tried_first() -> None:
    live = (ImageRef.parse("jannfis/foobar:1.0.0"), ImageRef.parse("quay.io/jannfis/foobar:2.0"))
    cfg = ImageRef.parse("quay.io/jannfis/foobar:~1.0")
    assert find_live(live, cfg, ImageRef.parse("jannfis/foobar")) == live[0]
    assert find_live(live, cfg, None) == live[1]
    assert find_live(live, cfg, ImageRef.parse("other/x")) == live[1]


def test_unparsable_live_image_is_ignored() -> None:
    job = only_job(plan(app(["NOT VALID::", "nginx:1.0"]), spec("n", "nginx:1.x")))
    assert job.live == ImageRef.parse("nginx:1.0")


# --- configuration errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image_spec", "fragment"),
    [
        (spec("a", "Not/Valid:1"), "invalid image reference"),
        (spec("a", "nginx:stable"), "stable"),
        (spec("a", "nginx", strategy="digest"), "without a version constraint"),
        (spec("a", "nginx:1.x", platforms=("linux",)), "invalid platforms linux"),
        (
            spec(
                "a",
                "nginx:1.x",
                ManifestTarget(helm=HelmTarget(), kustomize=KustomizeTarget("nginx")),
            ),
            "only one of the fields (Helm, Kustomize, Plugin) should be set",
        ),
    ],
)
def test_invalid_configuration_is_an_error(image_spec: ImageSpec, fragment: str) -> None:
    result = only_result(plan(app(["nginx:1.0"]), image_spec))
    assert result.outcome is Outcome.ERROR
    assert result.reason == ImageReason.INVALID_CONFIG
    assert fragment in result.message
    assert result.considered


@pytest.mark.parametrize(
    "image_spec",
    [spec("a", "nginx:1.x", strategy="latest", allow_tags="^1"), spec("a", "nginx:stable")],
)
def test_applications_sharing_an_image_spec_share_its_policy(image_spec: ImageSpec) -> None:
    """One policy (or the same error) per ImageSpec object, as each planning would build."""
    first, second = (plan(app(["nginx:1.0"], name=n), image_spec) for n in ("a", "b"))
    first_item, second_item = only(first), only(second)
    if isinstance(first_item, ImageJob):
        assert isinstance(second_item, ImageJob)
        assert second_item.policy is first_item.policy
        assert second_item.warnings == first_item.warnings
        assert first_item.policy == build_policy(image_spec, first_item.cfg)[0]
    else:
        assert isinstance(second_item, ImageResult)
        assert (second_item.reason, second_item.message) == (
            first_item.reason,
            first_item.message,
        )
        assert first_item.reason == ImageReason.INVALID_CONFIG
    equal = ImageSpec(image_spec.alias, image_spec.image, image_spec.settings)
    assert only(plan(app(["nginx:1.0"]), equal)) == first_item


def test_non_live_image_is_skipped_before_config_is_checked() -> None:
    result = only_result(plan(app(["redis:1"]), spec("a", "nginx:stable")))
    assert result.reason == ImageReason.NOT_LIVE


def test_strategy_warnings_are_kept() -> None:
    job = only_job(plan(app(["nginx:1.0"]), spec("a", "nginx:1.x", strategy="latest")))
    assert job.policy.strategy is named("newest-build")
    assert job.warnings and "deprecated" in job.warnings[0]


def test_invalid_allow_tags_warns_and_matches_nothing() -> None:
    job = only_job(plan(app(["nginx:1.0"]), spec("a", "nginx:1.x", allow_tags="^1")))
    assert job.warnings
    assert not job.policy.allow.matches("1.0")


def test_allow_tags_refused_by_re2_names_the_field_and_re2s_reason() -> None:
    job = only_job(plan(app(["nginx:1.0"]), spec("a", "nginx:1.x", allow_tags=r"regexp:(1)\1")))
    assert list(job.warnings) == [
        "commonUpdateSettings.allowTags: could not compile regexp '(1)\\1' in 'regexp:(1)\\1': "
        "invalid escape sequence: \\1; fix the expression"
    ]
    assert not job.policy.allow.matches("11")


@pytest.mark.parametrize(
    ("ref", "namespace"),
    [
        ("pullsecret:ns/name", "ns"),
        ("secret:other/name#field", "other"),
        ("secret:name#field", None),
        ("env:VAR", None),
        ("ext:/path/to/script", None),
        ("", None),
    ],
)
def test_pull_secret_namespace(ref: str, namespace: str | None) -> None:
    assert pull_secret_namespace(ref) == namespace


# --- scan keys ----------------------------------------------------------------------------------------


def test_scan_key_for_semver() -> None:
    job = only_job(plan(app(["nginx:1.0"]), spec("a", "nginx:1.x")))
    key = job.scan_key
    assert key.api_url == "https://registry-1.docker.io"
    assert key.repository == "library/nginx"
    assert key.credentials == ""
    assert not key.metadata
    assert key.platforms == ()
    assert key.only_tags == ()
    assert job.repository == "library/nginx"


def test_scan_key_for_digest_and_newest_build() -> None:
    a = app(["nginx:1.0"])
    digest = only_job(plan(a, spec("a", "nginx:stable", strategy="digest"))).scan_key
    assert digest.metadata
    assert digest.only_tags == ("stable",)
    rt = runtime_platform()
    assert digest.platforms == (f"{rt.os}/{rt.arch}" + (f"/{rt.variant}" if rt.variant else ""),)
    newest = only_job(
        plan(
            a, spec("a", "nginx", strategy="newest-build", platforms=("linux/arm64", "linux/amd64"))
        )
    ).scan_key
    assert newest.metadata
    assert newest.platforms == ("linux/amd64", "linux/arm64")
    assert newest.only_tags == ()


def test_newest_build_on_time_sorted_registry_needs_no_metadata() -> None:
    def sorted_registry(registry: str, name: str) -> RegistryEndpoint:
        return RegistryEndpoint("r.io", "R", "https://r.io", tag_sort_mode=TagSortMode.LATEST_FIRST)

    config = AppUpdateConfig(
        app(["r.io/a/b:1"]), (spec("a", "r.io/a/b", strategy="newest-build"),), WriteBack(), CR
    )
    item = only(plan_scans(config, sorted_registry))
    assert isinstance(item, ImageJob)
    assert not item.scan_key.metadata
    assert item.scan_key.platforms == ()


def test_equal_configuration_across_apps_shares_one_scan() -> None:
    first = plan(app(["nginx:1.0"], name="one"), spec("a", "nginx:1.x"))
    second = plan(
        app(["docker.io/library/nginx:1.2"], name="two"),
        spec("web", "docker.io/library/nginx:~1.2"),
    )
    third = plan(app(["nginx:1.2"], name="three"), spec("web", "nginx:1.x", pull_secret="env:X"))
    keys = cycle_scan_keys([first, second, third])
    assert len(keys) == 2
    assert keys[0] == only_job(first).scan_key == only_job(second).scan_key
    assert keys[1].credentials == "env:X"


def test_explicit_docker_hub_registry_is_not_the_implicit_one() -> None:
    result = only_result(plan(app(["nginx:1.2"]), spec("web", "docker.io/library/nginx:~1.2")))
    assert result.reason == ImageReason.NOT_LIVE


def test_scan_keys_of_one_app_are_distinct() -> None:
    jobs = plan(app(["nginx:1.0"]), spec("a", "nginx:1.x"), spec("b", "nginx:2.x"))
    assert len(jobs.jobs) == 2
    assert len(jobs.scan_keys) == 1


# --- source and edit kind ----------------------------------------------------------------------------


def test_source_path_and_type() -> None:
    jobs = plan(app(["nginx:1.0"]), spec("a", "nginx:1.x"))
    assert jobs.source_path == ("spec", "source")
    assert jobs.source_type is SourceType.KUSTOMIZE
    assert only_job(jobs).kind == "kustomize"


def test_unsupported_source_type_plans_nothing() -> None:
    jobs = plan(app(["nginx:1.0"], source_type="Directory"), spec("a", "nginx:1.x"))
    assert jobs.items == ()
    assert jobs.note == (
        "skipping app 'ns/app' of type 'Directory' because it's not of supported source type"
    )


def test_git_write_back_target_forces_type() -> None:
    a = app(["nginx:1.0"], source_type="Directory")
    wb = WriteBack(method="git", git=GitSettings(write_back_target="kustomization"))
    jobs = plan_scans(AppUpdateConfig(a, (spec("a", "nginx:1.x"),), wb, CR), endpoint_for)
    assert jobs.source_type is SourceType.KUSTOMIZE
    assert only_job(jobs).kind == "kustomize"


ARGOCD = WriteBack()
GIT = WriteBack(method="git")


@pytest.mark.parametrize(
    ("source_type", "target", "write_back", "expected"),
    [
        (SourceType.HELM, None, ARGOCD, ("helm", ParamNames("", "image.name", "image.tag"), "")),
        (
            SourceType.HELM,
            ManifestTarget(helm=HelmTarget(spec="img")),
            ARGOCD,
            ("helm", ParamNames(spec="img"), ""),
        ),
        (
            SourceType.KUSTOMIZE,
            ManifestTarget(kustomize=KustomizeTarget("orig/img")),
            ARGOCD,
            ("kustomize", ParamNames(), "orig/img"),
        ),
        (SourceType.KUSTOMIZE, None, ARGOCD, ("kustomize", ParamNames(), "")),
        (
            SourceType.PLUGIN,
            None,
            ARGOCD,
            ("plugin", ParamNames("", "IMAGE_NAME", "IMAGE_TAG"), ""),
        ),
        (
            SourceType.PLUGIN,
            ManifestTarget(plugin=PluginTarget(spec="IMG")),
            GIT,
            ("plugin", ParamNames(spec="IMG"), ""),
        ),
        (
            SourceType.PLUGIN,
            ManifestTarget(helm=HelmTarget(tag="t")),
            GIT,
            ("helm", ParamNames("", "image.name", "t"), ""),
        ),
    ],
)
def test_edit_kind(
    source_type: SourceType,
    target: ManifestTarget | None,
    write_back: WriteBack,
    expected: tuple[str, ParamNames, str],
) -> None:
    assert edit_kind(source_type, target, write_back) == expected
