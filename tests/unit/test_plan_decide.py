"""End-to-end planning of one application (the original's UpdateApplication cases, UA-*).

The "registry" is a mapping from repository to the tags a scan would return (or the exception it
raised); the Application spec after the run is obtained by applying the plan's JSON patch.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.platform import Platform
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.tags import PlatformImage, TagInfo
from argocd_image_updater.model.update_config import (
    AppUpdateConfig,
    GitSettings,
    HelmTarget,
    ImageSpec,
    KustomizeTarget,
    ManifestTarget,
    PluginTarget,
    UpdateSettings,
    Verification,
    WriteBack,
)
from argocd_image_updater.plan.choices import ChoiceMemory, ScanOutcome, ScanResults
from argocd_image_updater.plan.decide import needs_update, plan_app
from argocd_image_updater.plan.jobs import AppJobs, ScanKey, plan_scans
from argocd_image_updater.plan.model import (
    SIGNATURE_CHECK_PENDING,
    AppPlan,
    ImageReason,
    Outcome,
    SignatureCheck,
)
from argocd_image_updater.plan.patch import json_patch_ops
from argocd_image_updater.policy.strategies import UpdateStrategy, named

D = "sha256:" + "1234567890abcdef" * 4
N = "sha256:" + "1" * 64
O = "sha256:" + "2" * 64  # noqa: E741
CR = "imageupdater guestbook/iu"

Registry = Mapping[str, Sequence[TagInfo] | Exception]


@dataclass(frozen=True)
class FakeScan:
    tags: tuple[TagInfo, ...]
    order_hint: Mapping[str, int] | None = None


def tags(*names: str, digest: str = "") -> list[TagInfo]:
    return [TagInfo(n, digest=digest) for n in names]


def app_object(
    live: Sequence[str],
    *,
    source: dict[str, Any] | None = None,
    source_type: str = "Kustomize",
    name: str = "guestbook",
    namespace: str = "guestbook",
) -> dict[str, Any]:
    if source is None:
        source = {"repoURL": "https://example.com/repo", "path": "app", "kustomize": {}}
    return {
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": "100"},
        "spec": {"project": "default", "source": source},
        "status": {"sourceType": source_type, "summary": {"images": list(live)}},
    }


def kustomize(*images: str) -> dict[str, Any]:
    return {
        "repoURL": "https://example.com/repo",
        "path": "app",
        "kustomize": {"images": list(images)},
    }


def helm(**params: str) -> dict[str, Any]:
    return {
        "repoURL": "https://example.com/charts",
        "chart": "c",
        "helm": {"parameters": [{"name": k, "value": v} for k, v in params.items()]},
    }


def image(
    alias: str,
    ref: str,
    *,
    strategy: str | None = None,
    force: bool | None = None,
    pull_secret: str | None = None,
    ignore: tuple[str, ...] | None = None,
    allow: str | None = None,
    target: ManifestTarget | None = None,
    verification: Verification | None = None,
) -> ImageSpec:
    settings = UpdateSettings(
        strategy=strategy,
        force_update=force,
        pull_secret=pull_secret,
        ignore_tags=ignore,
        allow_tags=allow,
    )
    return ImageSpec(alias, ref, settings, target, verification)


def kustomize_target(name: str) -> ManifestTarget:
    return ManifestTarget(kustomize=KustomizeTarget(name))


@dataclass
class Run:
    obj: dict[str, Any]
    jobs: AppJobs
    plan: AppPlan
    requested: list[ScanKey]

    @property
    def spec_after(self) -> dict[str, Any]:
        return apply_ops(self.obj, json_patch_ops(self.obj, self.plan))["spec"]

    @property
    def source_after(self) -> dict[str, Any]:
        src: dict[str, Any] = self.spec_after["source"]
        return src

    def counters(self) -> tuple[int, int, int, int]:
        p = self.plan
        return p.considered, p.updated, p.skipped, p.errors


def apply_ops(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """A minimal RFC 6902 applier (add/replace) for the tests."""
    doc = copy.deepcopy(doc)
    for op in ops:
        tokens = op["path"].split("/")[1:]
        parent: Any = doc
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent[token]
        last = tokens[-1]
        if isinstance(parent, list):
            if last == "-":
                parent.append(op["value"])
            else:
                parent[int(last)] = op["value"]
        else:
            assert op["op"] == "add" or last in parent
            parent[last] = op["value"]
    return doc


def endpoint_for(registry: str, name: str) -> RegistryEndpoint:
    return RegistryConfig().endpoint_for(registry, name)


def run(
    obj: dict[str, Any],
    images: Sequence[ImageSpec],
    registry: Registry,
    *,
    write_back: WriteBack | None = None,
    origin: str = CR,
    rejected: Mapping[str, str] | None = None,
    checks: Mapping[str, SignatureCheck] | None = None,
) -> Run:
    config = AppUpdateConfig(
        Application.from_object(obj), tuple(images), write_back or WriteBack(), origin
    )
    jobs = plan_scans(config, endpoint_for)
    results: dict[ScanKey, ScanOutcome] = {}
    for key in jobs.scan_keys:
        found = registry[key.repository]
        if isinstance(found, Exception):
            results[key] = found
        else:
            only = set(key.only_tags)
            results[key] = FakeScan(tuple(t for t in found if not only or t.name in only))
    return Run(
        obj, jobs, plan_app(jobs, results, rejected=rejected, checks=checks), list(jobs.scan_keys)
    )


# --- UA-1..24 -----------------------------------------------------------------------------------


def test_ua1_two_images_updated_in_kustomize_spec() -> None:
    obj = app_object(
        ["gcr.io/jannfis/foobar:1.0.1", "gcr.io/jannfis/barbar:1.0.1"],
        source=kustomize("jannfis/foobar:1.0.1", "jannfis/barbar:1.0.1"),
    )
    r = run(
        obj,
        [
            image("foobar", "gcr.io/jannfis/foobar:>=1.0.1"),
            image("barbar", "gcr.io/jannfis/barbar:>=1.0.1"),
        ],
        {"jannfis/foobar": tags("1.0.2", "1.0.3"), "jannfis/barbar": tags("1.0.2", "1.0.3")},
    )
    assert r.counters() == (2, 2, 0, 0)
    assert r.source_after["kustomize"]["images"] == [
        "gcr.io/jannfis/foobar:1.0.3",
        "gcr.io/jannfis/barbar:1.0.3",
    ]
    assert [c.new_tag for c in r.plan.changes] == ["1.0.3", "1.0.3"]
    assert [c.old_tag for c in r.plan.changes] == ["1.0.1", "1.0.1"]


def test_ua2_updated_and_repository_requested() -> None:
    obj = app_object(["jannfis/foobar:1.0.0"], source=kustomize("jannfis/foobar:1.0.0"))
    r = run(obj, [image("foobar", "jannfis/foobar:~1.0.0")], {"jannfis/foobar": tags("1.0.1")})
    assert r.counters() == (1, 1, 0, 0)
    assert (r.plan.app_name, r.plan.app_namespace) == ("guestbook", "guestbook")
    assert [k.repository for k in r.requested] == ["jannfis/foobar"]
    assert r.requested[0].api_url == "https://registry-1.docker.io"
    assert r.source_after["kustomize"]["images"] == ["jannfis/foobar:1.0.1"]


def test_ua3_two_images_both_updated() -> None:
    obj = app_object(["jannfis/foobar:1.0.0", "jannfis/barbar:1.0.0"])
    r = run(
        obj,
        [image("a", "jannfis/foobar:~1.0.0"), image("b", "jannfis/barbar:~1.0.0")],
        {"jannfis/foobar": tags("1.0.1"), "jannfis/barbar": tags("1.0.1")},
    )
    assert r.counters() == (2, 2, 0, 0)
    assert r.source_after["kustomize"]["images"] == ["jannfis/foobar:1.0.1", "jannfis/barbar:1.0.1"]


def test_ua4_kustomize_name_finds_live_image_of_other_registry() -> None:
    obj = app_object(["jannfis/foobar:1.0.0"], source=kustomize("jannfis/foobar:1.0.0"))
    r = run(
        obj,
        [
            image(
                "foobar",
                "quay.io/jannfis/foobar:~1.0.0",
                force=True,
                target=kustomize_target("jannfis/foobar"),
            )
        ],
        {"jannfis/foobar": tags("1.0.1")},
    )
    assert r.counters() == (1, 1, 0, 0)
    (job,) = r.jobs.jobs
    assert job.endpoint.prefix == "quay.io"
    assert job.live == ImageRef.parse("jannfis/foobar:1.0.0")
    assert r.source_after["kustomize"]["images"] == ["jannfis/foobar=quay.io/jannfis/foobar:1.0.1"]


def test_ua5_kustomize_name_with_other_repository() -> None:
    obj = app_object(["jannfis/foobar:1.0.0"], source=kustomize("jannfis/foobar:1.0.0"))
    r = run(
        obj,
        [
            image(
                "foobar",
                "quay.io/someorg/foobar:~1.0.0",
                force=True,
                target=kustomize_target("jannfis/foobar"),
            )
        ],
        {"someorg/foobar": tags("1.0.1")},
    )
    assert r.counters() == (1, 1, 0, 0)
    # As in Argo CD's MergeImage, the named override is added after the plain entry of another
    # repository; kustomize applies them in order, so the override wins.
    assert r.source_after["kustomize"]["images"] == [
        "jannfis/foobar:1.0.0",
        "jannfis/foobar=quay.io/someorg/foobar:1.0.1",
    ]


def test_ua6_live_image_without_tag_is_updated() -> None:
    obj = app_object(["jannfis/foobar"], source=kustomize("jannfis/foobar"))
    r = run(obj, [image("a", "jannfis/foobar:1.0.x")], {"jannfis/foobar": tags("1.0.1")})
    assert r.counters() == (1, 1, 0, 0)
    assert r.plan.changes[0].old_tag == ""
    assert r.source_after["kustomize"]["images"] == ["jannfis/foobar:1.0.1"]


def test_ua7_pull_secret_in_app_namespace_is_the_scan_credential() -> None:
    obj = app_object(["jannfis/foobar:1.0.0"])
    r = run(
        obj,
        [image("dummy", "jannfis/foobar:1.0.1", pull_secret="secret:guestbook/bar#creds")],
        {"jannfis/foobar": tags("1.0.1")},
    )
    assert r.counters() == (1, 1, 0, 0)
    assert r.requested[0].credentials == "secret:guestbook/bar#creds"
    assert r.jobs.jobs[0].pull_secret == "secret:guestbook/bar#creds"


@pytest.mark.parametrize(
    ("secret", "namespace"),
    [
        ("secret:other-ns/bar#creds", "other-ns"),  # UA-8
        ("pullsecret:other-ns/docker-pull-secret", "other-ns"),  # UA-9
    ],
)
def test_ua8_ua9_pull_secret_in_other_namespace_is_an_error(secret: str, namespace: str) -> None:
    obj = app_object(["jannfis/foobar:1.0.0"])
    r = run(obj, [image("dummy", "jannfis/foobar:1.0.1", pull_secret=secret)], {})
    assert r.counters() == (1, 0, 0, 1)
    assert r.requested == []
    (result,) = r.plan.results
    assert result.reason == ImageReason.PULL_SECRET_NAMESPACE
    assert result.message == (
        f"commonUpdateSettings.pullSecret namespace '{namespace}' differs from app namespace "
        "'guestbook'"
    )


def test_legacy_annotations_allow_pull_secret_in_other_namespace() -> None:
    obj = app_object(["jannfis/foobar:1.0.0"])
    r = run(
        obj,
        [image("dummy", "jannfis/foobar:1.0.1", pull_secret="pullsecret:other-ns/s")],
        {"jannfis/foobar": tags("1.0.1")},
        origin="annotations",
    )
    assert r.counters() == (1, 1, 0, 0)


@pytest.mark.parametrize(
    "error",
    [RuntimeError("internal server error"), PermissionError("401 unauthorized")],
)
def test_ua11_ua12_ua21_registry_error(error: Exception) -> None:
    obj = app_object(["jannfis/foobar:1.0.0"])
    r = run(obj, [image("a", "jannfis/foobar:1.0.1")], {"jannfis/foobar": error})
    assert r.counters() == (1, 0, 0, 1)
    (result,) = r.plan.results
    assert result.outcome is Outcome.ERROR
    assert result.reason == ImageReason.REGISTRY_ERROR
    assert str(error) in result.message
    assert json_patch_ops(obj, r.plan) == []


def test_missing_scan_result_is_an_error() -> None:
    obj = app_object(["jannfis/foobar:1.0.0"])
    config = AppUpdateConfig(
        Application.from_object(obj), (image("a", "jannfis/foobar:1.0.1"),), WriteBack(), CR
    )
    plan = plan_app(plan_scans(config, endpoint_for), {})
    assert (plan.considered, plan.errors) == (1, 1)
    assert plan.results[0].reason == ImageReason.REGISTRY_ERROR


def test_ua13_image_not_live_is_skipped() -> None:
    obj = app_object(["jannfis/foobar:1.0.0"])
    r = run(obj, [image("a", "jannfis/barbar:1.0.1")], {})
    assert r.counters() == (0, 0, 1, 0)
    (result,) = r.plan.results
    assert result.reason == ImageReason.NOT_LIVE
    assert (
        result.message
        == "Image 'jannfis/barbar' seems not to be live in this application, skipping"
    )


def test_ua14_up_to_date() -> None:
    obj = app_object(["jannfis/foobar:1.0.1"], source=kustomize("jannfis/foobar:1.0.1"))
    r = run(obj, [image("a", "jannfis/foobar:1.0.1")], {"jannfis/foobar": tags("1.0.1")})
    assert r.counters() == (1, 0, 0, 0)
    assert r.plan.results[0].outcome is Outcome.UP_TO_DATE
    assert not r.plan.has_changes
    assert [(e.value, e.changed) for e in r.plan.managed] == [("jannfis/foobar:1.0.1", False)]
    assert json_patch_ops(obj, r.plan) == []


def test_ua15_kustomize_target_with_other_registry_is_an_update() -> None:
    obj = app_object(["jannfis/foobar:1.0.1"], source=kustomize("jannfis/foobar:1.0.1"))
    r = run(
        obj,
        [
            image(
                "foobar", "gcr.io/jannfis/foobar:>=1.0.1", target=kustomize_target("jannfis/foobar")
            )
        ],
        {"jannfis/foobar": tags("1.0.1")},
    )
    assert r.counters() == (1, 1, 0, 0)
    assert r.source_after["kustomize"]["images"] == ["jannfis/foobar=gcr.io/jannfis/foobar:1.0.1"]


def test_ua16_same_registry_without_kustomize_target_is_up_to_date() -> None:
    obj = app_object(["gcr.io/jannfis/foobar:1.0.1"])
    r = run(
        obj, [image("foobar", "gcr.io/jannfis/foobar:>=1.0.1")], {"jannfis/foobar": tags("1.0.1")}
    )
    assert r.counters() == (1, 0, 0, 0)


def test_ua17_no_semver_tag_is_skipped() -> None:
    obj = app_object(["jannfis/foobar:one"])
    r = run(
        obj,
        [image("dummy", "jannfis/foobar")],
        {"jannfis/foobar": tags("one", "two", "three", "four")},
    )
    assert r.counters() == (1, 0, 1, 0)
    (result,) = r.plan.results
    assert result.reason == ImageReason.NO_CANDIDATE
    assert result.detail
    assert result.detail in result.message


def test_ua18_ignore_everything_is_skipped() -> None:
    obj = app_object(["jannfis/foobar:1.0.0"])
    r = run(
        obj, [image("dummy", "jannfis/foobar", ignore=("*",))], {"jannfis/foobar": tags("1.0.1")}
    )
    assert r.counters() == (1, 0, 1, 0)


def test_ua19_registry_inferred_from_prefix() -> None:
    obj = app_object(["example.io/jannfis/example:1.0.1"])
    r = run(
        obj,
        [image("a", "example.io/jannfis/example:1.0.x")],
        {"jannfis/example": tags("1.0.1", "1.0.2")},
    )
    assert r.counters() == (1, 1, 0, 0)
    assert r.requested[0].api_url == "https://example.io"


def test_ua20_registry_endpoint_failure_is_an_error() -> None:
    def broken(registry: str, name: str) -> RegistryEndpoint:
        raise ValueError("no such registry")

    obj = app_object(["jannfis/foobar:1.0.0"])
    config = AppUpdateConfig(
        Application.from_object(obj), (image("a", "jannfis/foobar:1.0.1"),), WriteBack(), CR
    )
    plan = plan_app(plan_scans(config, broken), {})
    assert (plan.considered, plan.updated, plan.errors) == (1, 0, 1)
    assert "no such registry" in plan.results[0].message


def test_ua22_no_tags_is_skipped_not_an_error() -> None:
    obj = app_object(["jannfis/foobar:1.0.1"])
    r = run(obj, [image("a", "jannfis/foobar:1.0.1")], {"jannfis/foobar": []})
    assert r.counters() == (1, 0, 1, 0)


def test_ua23_forced_image_without_tags_writes_nothing() -> None:
    obj = app_object([], source=kustomize())
    r = run(obj, [image("a", "jannfis/db-migrations", force=True)], {"jannfis/db-migrations": []})
    assert r.counters() == (1, 0, 1, 0)
    assert r.plan.managed == ()
    assert json_patch_ops(obj, r.plan) == []


def test_ua24_invalid_constraint_is_an_error_without_scan() -> None:
    obj = app_object(["jannfis/foobar:stable"])
    r = run(obj, [image("a", "jannfis/foobar:stable")], {})
    assert r.counters() == (1, 0, 0, 1)
    assert r.requested == []
    assert r.plan.results[0].reason == ImageReason.INVALID_CONFIG


# --- digest strategy (UA-25..27, UA-32, UA-33 / HP-15, IP-44) ----------------------------------------


def test_ua25_forced_digest_job_without_live_image() -> None:
    obj = app_object([], source=kustomize(), name="job-app", namespace="default")
    r = run(
        obj,
        [
            image(
                "job-image",
                "gcr.io/org/job-image:latest",
                strategy="digest",
                force=True,
                target=kustomize_target("org/job-image"),
            )
        ],
        {"org/job-image": tags("latest", digest=D)},
        origin="imageupdater default/iu",
    )
    assert r.counters() == (1, 1, 0, 0)
    (entry,) = r.source_after["kustomize"]["images"]
    assert entry == f"org/job-image=gcr.io/org/job-image:latest@{D}"
    (change,) = r.plan.changes
    assert change.image.tag == "latest"
    assert change.new_digest == D
    assert change.new_tag == f"latest@{D}"
    assert r.requested[0].only_tags == ("latest",)
    assert r.requested[0].metadata


def test_ua26_digest_keeps_tag_name_and_second_run_is_up_to_date() -> None:
    ref = "docker.io/library/nginx:latest-bookworm"
    obj = app_object([ref], source=kustomize(ref))
    spec = image("nginx", ref, strategy="digest")
    r = run(obj, [spec], {"library/nginx": tags("latest-bookworm", digest=D)})
    assert r.counters() == (1, 1, 0, 0)
    (entry,) = r.source_after["kustomize"]["images"]
    assert "latest-bookworm" in entry
    assert "@sha256:" in entry
    assert ImageRef.parse(entry).tag == "latest-bookworm"

    again = app_object([f"{ref}@{D}"], source=kustomize(entry))
    r2 = run(again, [spec], {"library/nginx": tags("latest-bookworm", digest=D)})
    assert r2.counters() == (1, 0, 0, 0)
    assert r2.source_after["kustomize"]["images"] == [entry]


def test_ua27_same_digest_under_other_tag_is_equal() -> None:
    current = f"docker.io/library/nginx:latest@{D}"
    obj = app_object([current], source=kustomize(current))
    r = run(
        obj,
        [image("nginx", "docker.io/library/nginx:latest-bookworm", strategy="digest")],
        {"library/nginx": tags("latest", "latest-bookworm", digest=D)},
    )
    assert r.counters() == (1, 0, 0, 0)
    assert json_patch_ops(obj, r.plan) == []


def test_ua32_digest_picks_the_stale_container() -> None:
    obj = app_object(
        [f"docker.io/library/nginx:latest@{N}", f"docker.io/library/nginx:latest@{O}"],
        source=kustomize(f"docker.io/nginx:latest@{O}"),
    )
    r = run(
        obj,
        [image("web", "docker.io/library/nginx:latest", strategy="digest")],
        {"library/nginx": tags("latest", digest=N)},
    )
    assert r.counters() == (1, 1, 0, 0)
    assert r.plan.changes[0].old_tag == f"latest@{O}"
    assert r.plan.changes[0].old_digest == O
    assert r.source_after["kustomize"]["images"] == [f"docker.io/nginx:latest@{N}"]


def test_ip44_digest_prefers_same_tag_with_stale_digest() -> None:
    r_name = "registry.example.com/org/app"
    obj = app_object(
        [f"{r_name}:develop@{N}", f"{r_name}:develop@{O}"],
        source=helm(**{"image.name": r_name, "image.tag": f"develop@{O}"}),
        source_type="Helm",
    )
    r = run(
        obj,
        [image("app", f"{r_name}:develop", strategy="digest")],
        {"org/app": tags("develop", digest=N)},
    )
    assert r.counters() == (1, 1, 0, 0)
    assert r.plan.results[0].current == f"{r_name}:develop@{O}"
    params = {p["name"]: p["value"] for p in r.source_after["helm"]["parameters"]}
    assert params["image.tag"] == f"develop@{N}"


def test_ua33_hp15_bare_digest_live_keeps_configured_tag_name() -> None:
    obj = app_object(
        [f"docker.io/library/nginx@{D}"],
        source=helm(**{"image.name": "docker.io/library/nginx", "image.tag": f"develop@{D}"}),
        source_type="Helm",
    )
    r = run(
        obj,
        [image("web", "docker.io/library/nginx:develop", strategy="digest")],
        {"library/nginx": tags("develop", digest=D)},
    )
    assert r.counters() == (1, 0, 0, 0)
    tag_edit = next(e for e in r.plan.managed if e.name == "image.tag")
    assert tag_edit.value == f"develop@{D}"
    assert not tag_edit.changed


def test_digest_update_from_tag_without_digest_in_helm() -> None:
    obj = app_object(
        ["nginx:1.25"],
        source=helm(**{"image.name": "nginx", "image.tag": "1.25"}),
        source_type="Helm",
    )
    r = run(
        obj,
        [image("web", "nginx:1.25", strategy="digest")],
        {"library/nginx": tags("1.25", digest=D)},
    )
    assert r.counters() == (1, 1, 0, 0)
    params = {p["name"]: p["value"] for p in r.source_after["helm"]["parameters"]}
    assert params == {"image.name": "nginx", "image.tag": f"1.25@{D}"}
    assert r.plan.changes[0].new_version == D
    assert r.plan.changes[0].old_version == "1.25"


# --- verification (UA-28..31) --------------------------------------------------------------------


def _verified_run(
    verification: Verification | None,
    rejected: Mapping[str, str] | None = None,
    checks: Mapping[str, SignatureCheck] | None = None,
) -> Run:
    obj = app_object(["gcr.io/jannfis/foobar:1.0.1"])
    return run(
        obj,
        [image("foobar", "gcr.io/jannfis/foobar:>=1.0.1", verification=verification)],
        {"jannfis/foobar": tags("1.0.1", "1.0.2")},
        rejected=rejected,
        checks=checks,
    )


def test_ua28_verification_disabled_updates() -> None:
    assert _verified_run(Verification(enabled=False)).counters() == (1, 1, 0, 0)


def test_ua29_verification_without_method_is_an_error() -> None:
    r = _verified_run(Verification(enabled=True))
    assert r.counters() == (1, 0, 0, 1)
    assert r.plan.results[0].reason == ImageReason.VERIFICATION_FAILED
    assert not r.plan.has_changes


KEYED = Verification(enabled=True, cosign_secret_name="keys", cosign_key="cosign.pub")


def test_verification_fails_closed_without_a_check_of_the_chosen_tag() -> None:
    for checks in (None, {"foobar": SignatureCheck("1.0.1", D)}):  # none, or another tag's
        r = _verified_run(KEYED, checks=checks)
        assert r.counters() == (1, 0, 0, 1)
        (result,) = r.plan.results
        assert (result.reason, result.detail) == (
            ImageReason.VERIFICATION_FAILED,
            SIGNATURE_CHECK_PENDING,
        )
        assert result.chosen == "gcr.io/jannfis/foobar:1.0.2"
        assert r.plan.changes == () and all(not e.changed for e in r.plan.managed)


def test_ua30_ua31_rejected_by_signature_check() -> None:
    refused = SignatureCheck("1.0.2", error="no signature found")
    r = _verified_run(KEYED, checks={"foobar": refused})
    assert r.counters() == (1, 0, 0, 1)
    assert r.plan.results[0].message == (
        "Not updating image to 'gcr.io/jannfis/foobar:1.0.2': signature verification failed: "
        "no signature found"
    )
    assert r.plan.changes == ()
    assert all(not e.changed for e in r.plan.managed)


def test_a_verified_tag_is_written_with_the_verified_digest() -> None:
    r = _verified_run(KEYED, checks={"foobar": SignatureCheck("1.0.2", D)})
    assert r.counters() == (1, 1, 0, 0)
    (change,) = r.plan.changes
    assert (change.new_tag, change.new_digest) == (f"1.0.2@{D}", D)
    assert r.plan.results[0].chosen == f"gcr.io/jannfis/foobar:1.0.2@{D}"


# --- already set (UA-34) and counters -----------------------------------------------------------


def test_ua34_new_image_already_in_spec_is_not_an_update() -> None:
    obj = app_object(
        ["jannfis/foobar:1.0.0"],
        source=helm(**{"image.name": "jannfis/foobar", "image.tag": "1.0.1"}),
        source_type="Helm",
    )
    r = run(obj, [image("a", "jannfis/foobar:1.0.x")], {"jannfis/foobar": tags("1.0.1")})
    assert r.counters() == (1, 0, 0, 0)
    (result,) = r.plan.results
    assert (result.outcome, result.reason) == (Outcome.UP_TO_DATE, ImageReason.ALREADY_SET)
    assert result.message == "New image jannfis/foobar:1.0.1 already set in spec"
    assert json_patch_ops(obj, r.plan) == []
    assert len(r.plan.managed) == 2


def test_counters_over_mixed_outcomes() -> None:
    obj = app_object(
        ["a/updated:1.0.0", "a/current:2.0.0", "a/broken:1.0.0", "a/none:1.0.0"],
        source=kustomize(),
    )
    r = run(
        obj,
        [
            image("u", "a/updated:1.x"),
            image("c", "a/current:2.x"),
            image("b", "a/broken:1.x"),
            image("n", "a/none:1.x"),
            image("gone", "a/notlive:1.x"),
            image("bad", "a/current:latest"),
        ],
        {
            "a/updated": tags("1.0.0", "1.1.0"),
            "a/current": tags("2.0.0"),
            "a/broken": RuntimeError("boom"),
            "a/none": tags("0.9"),
        },
    )
    assert r.counters() == (5, 1, 2, 2)
    assert [res.outcome for res in r.plan.results] == [
        Outcome.UPDATED,
        Outcome.UP_TO_DATE,
        Outcome.ERROR,
        Outcome.SKIPPED,
        Outcome.SKIPPED,
        Outcome.ERROR,
    ]
    assert [res.alias for res in r.plan.results] == ["u", "c", "b", "n", "gone", "bad"]
    # the up-to-date image is re-set so that every managed image is listed
    assert [e.value for e in r.plan.managed] == ["a/updated:1.1.0", "a/current:2.0.0"]
    assert r.source_after["kustomize"]["images"] == ["a/updated:1.1.0", "a/current:2.0.0"]


# --- Helm, plugin and multi-source apps -----------------------------------------------------------


def test_helm_app_with_alias_specific_parameters() -> None:
    obj = app_object(
        ["jannfis/foobar:1.0.0"],
        source=helm(**{"image.tag": "1.0.0", "image.name": "jannfis/foobar"}),
        source_type="Helm",
    )
    target = ManifestTarget(helm=HelmTarget(name="foobar.image.name", tag="foobar.image.tag"))
    r = run(
        obj,
        [image("foobar", "jannfis/foobar:1.0.x", target=target)],
        {"jannfis/foobar": tags("1.0.1")},
    )
    assert r.counters() == (1, 1, 0, 0)
    assert r.source_after["helm"]["parameters"] == [
        {"name": "image.tag", "value": "1.0.0"},
        {"name": "image.name", "value": "jannfis/foobar"},
        {"name": "foobar.image.name", "value": "jannfis/foobar", "forceString": True},
        {"name": "foobar.image.tag", "value": "1.0.1", "forceString": True},
    ]


def test_helm_spec_parameter() -> None:
    obj = app_object(["nginx:1.0.0"], source=helm(), source_type="Helm")
    target = ManifestTarget(helm=HelmTarget(spec="image.full"))
    r = run(obj, [image("web", "nginx:1.x", target=target)], {"library/nginx": tags("1.2.0")})
    assert r.source_after["helm"]["parameters"] == [
        {"name": "image.full", "value": "nginx:1.2.0", "forceString": True}
    ]


def test_plugin_app_gets_env_entries() -> None:
    source = {
        "repoURL": "https://example.com/repo",
        "path": "p",
        "plugin": {
            "name": "cmp",
            "env": [
                {"name": "REDIS_IMAGE_NAME", "value": "myregistry.io/redis"},
                {"name": "REDIS_IMAGE_TAG", "value": "6.0.0"},
            ],
        },
    }
    obj = app_object(["myregistry.io/redis:6.0.0"], source=source, source_type="Plugin")
    target = ManifestTarget(plugin=PluginTarget(name="REDIS_IMAGE_NAME", tag="REDIS_IMAGE_TAG"))
    r = run(
        obj,
        [image("redis", "myregistry.io/redis:7.x", target=target)],
        {"redis": tags("6.0.0", "7.0.0")},
    )
    assert r.counters() == (1, 1, 0, 0)
    assert r.source_after["plugin"]["env"] == [
        {"name": "REDIS_IMAGE_NAME", "value": "myregistry.io/redis"},
        {"name": "REDIS_IMAGE_TAG", "value": "7.0.0"},
    ]
    assert [e.kind for e in r.plan.changes[0].edits] == ["plugin"]


def test_plugin_app_with_git_method_and_no_plugin_target_is_written_as_helm() -> None:
    obj = app_object(["nginx:1.0.0"], source={"repoURL": "r", "plugin": {}}, source_type="Plugin")
    r = run(
        obj,
        [image("web", "nginx:1.x")],
        {"library/nginx": tags("1.1.0")},
        write_back=WriteBack(method="git", git=GitSettings()),
    )
    assert [(e.kind, e.name, e.value) for e in r.plan.managed] == [
        ("helm", "image.name", "nginx"),
        ("helm", "image.tag", "1.1.0"),
    ]


def _multi(source_types: list[str], sources: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": "ms", "namespace": "guestbook", "resourceVersion": "5"},
        "spec": {"sources": sources},
        "status": {"sourceTypes": source_types, "summary": {"images": ["nginx:1.0.0"]}},
    }


def test_multi_source_kustomize_source_next_to_helm_chart() -> None:
    chart = {"repoURL": "https://charts", "chart": "c", "targetRevision": "1.0"}
    git = {"repoURL": "https://git", "path": "k", "kustomize": {"images": ["nginx:1.0.0"]}}
    obj = _multi(["Kustomize", "Helm"], [chart, git])
    r = run(obj, [image("web", "nginx:1.x")], {"library/nginx": tags("1.1.0")})
    assert r.plan.source_path == ("spec", "sources", 1)
    assert r.plan.source_type == "Kustomize"
    spec = r.spec_after
    assert spec["sources"][0] == chart
    assert spec["sources"][1]["kustomize"]["images"] == ["nginx:1.1.0"]


def test_multi_source_helm_by_status_index_creates_helm_block() -> None:
    chart = {"repoURL": "https://charts", "chart": "c"}
    values = {"repoURL": "https://git", "ref": "values"}
    obj = _multi(["Helm", "Directory"], [chart, values])
    r = run(obj, [image("web", "nginx:1.x")], {"library/nginx": tags("1.1.0")})
    assert r.plan.source_path == ("spec", "sources", 0)
    ops = json_patch_ops(obj, r.plan)
    assert ops[0] == {"op": "replace", "path": "/metadata/resourceVersion", "value": "5"}
    assert ops[1]["path"] == "/spec/sources/0/helm"
    assert r.spec_after["sources"][1] == values


def test_directory_app_is_not_planned() -> None:
    obj = app_object(["nginx:1.0.0"], source={"repoURL": "r", "path": "p"}, source_type="Directory")
    r = run(obj, [image("web", "nginx:1.x")], {})
    assert r.plan.results == ()
    assert r.counters() == (0, 0, 0, 0)
    assert "not of supported source type" in r.plan.note


# --- needs_update rule ----------------------------------------------------------------------------


def _ref(text: str) -> ImageRef:
    return ImageRef.parse(text)


@pytest.mark.parametrize(
    ("live", "chosen", "strategy", "expected"),
    [
        ("a/b:1.0", TagInfo("1.0"), named("semver"), False),
        ("a/b:1.0", TagInfo("1.1"), named("semver"), True),
        ("a/b", TagInfo("1.0"), named("semver"), True),
        ("a/b:1.0", TagInfo("1.0", digest=D), named("digest"), True),
        (f"a/b:1.0@{D}", TagInfo("1.0", digest=D), named("digest"), False),
        (f"a/b:1.0@{N}", TagInfo("1.0", digest=D), named("digest"), True),
        (f"a/b:old@{D}", TagInfo("new", digest=D), named("newest-build"), False),
        ("a/b:1.0", TagInfo("1.0", digest=D), named("newest-build"), True),
    ],
)
def test_needs_update(live: str, chosen: TagInfo, strategy: UpdateStrategy, expected: bool) -> None:
    assert needs_update(_ref(live), _ref("a/b:1.x"), chosen, strategy) is expected


def test_needs_update_forced_and_kustomize_rename() -> None:
    assert needs_update(None, _ref("a/b:1.x"), TagInfo("1.0"), named("semver"))
    live, cfg = _ref("a/b:1.0"), _ref("gcr.io/a/b:1.x")
    assert not needs_update(live, cfg, TagInfo("1.0"), named("semver"))
    assert needs_update(live, cfg, TagInfo("1.0"), named("semver"), kustomize_target=True)


def test_labels_of_chosen_tag_are_carried() -> None:
    platform = Platform("linux", "amd64")
    tag = TagInfo(
        "1.1.0",
        digest=D,
        images=(PlatformImage(platform, D, labels={"org.opencontainers.image.revision": "abc"}),),
    )
    obj = app_object(["nginx:1.0.0"])
    spec = image("web", "nginx:1.x", strategy="newest-build")
    spec = ImageSpec(
        spec.alias, spec.image, UpdateSettings(strategy="newest-build", platforms=("linux/amd64",))
    )
    r = run(obj, [spec], {"library/nginx": [tag]})
    assert r.counters() == (1, 1, 0, 0)
    assert r.plan.changes[0].labels == {"org.opencontainers.image.revision": "abc"}
    assert r.requested[0].platforms == ("linux/amd64",)


def test_newest_build_writes_tag_names_not_digests() -> None:
    """GT-9: only the digest strategy pins digests; a metadata scan's digest is not written."""
    platform = Platform("linux", "amd64")
    created = datetime(2026, 1, 2, tzinfo=UTC)
    newer = TagInfo("1.1.0", digest=D, images=(PlatformImage(platform, D, created),))
    current = TagInfo(
        "1.0.0",
        digest="sha256:" + "0" * 64,
        images=(PlatformImage(platform, "", created.replace(day=1)),),
    )
    spec = ImageSpec(
        "web", "nginx", UpdateSettings(strategy="newest-build", platforms=("linux/amd64",))
    )
    r = run(app_object(["nginx:1.0.0"]), [spec], {"library/nginx": [current, newer]})
    assert r.counters() == (1, 1, 0, 0)
    assert r.plan.changes[0].new_tag == "1.1.0"
    # Already on the newest build: up to date, even though the scan knows its digest.
    r = run(app_object(["nginx:1.1.0"]), [spec], {"library/nginx": [current, newer]})
    assert r.counters() == (1, 0, 0, 0)


# --- one tag choice per (scan, policy) ----------------------------------------------------------


def _jobs_of(name: str, live: str, spec: ImageSpec) -> AppJobs:
    obj = app_object([live], source=kustomize(live), name=name)
    config = AppUpdateConfig(Application.from_object(obj), (spec,), WriteBack(), CR)
    return plan_scans(config, endpoint_for)


def test_applications_sharing_a_scan_and_policy_share_one_choice() -> None:
    semver = [
        _jobs_of(f"app-{i}", "example.com/app:1.0.0", image("a", "example.com/app"))
        for i in range(5)
    ]
    constrained = _jobs_of("pinned", "example.com/app:1.0.0", image("a", "example.com/app:~1.0"))
    ignoring = _jobs_of(
        "ignoring", "example.com/app:1.0.0", image("a", "example.com/app", ignore=("2.*",))
    )
    results = ScanResults()
    for jobs in (*semver, constrained, ignoring):
        for key in jobs.scan_keys:
            results[key] = FakeScan(tuple(tags("1.0.0", "1.0.1", "2.0.0")))

    plans = [plan_app(jobs, results) for jobs in semver]
    assert results.choices_made == 1
    assert all(p.results[0].chosen == "example.com/app:2.0.0" for p in plans)
    assert plan_app(constrained, results).results[0].chosen == "example.com/app:1.0.1"
    assert plan_app(ignoring, results).results[0].chosen == "example.com/app:1.0.1"
    assert results.choices_made == 3


def test_a_later_cycle_reuses_the_choice_only_while_the_tags_are_the_same() -> None:
    memory = ChoiceMemory()
    jobs = _jobs_of("app-0", "example.com/app:1.0.0", image("a", "example.com/app"))

    def cycle(*names: str) -> tuple[str | None, int]:
        results = ScanResults(memory=memory)
        for key in jobs.scan_keys:
            results[key] = FakeScan(tuple(tags(*names)))
        chosen = plan_app(jobs, results).results[0].chosen
        memory.keep(results)
        return chosen, results.choices_made

    assert cycle("1.0.0", "1.1.0") == ("example.com/app:1.1.0", 1)
    assert cycle("1.0.0", "1.1.0") == ("example.com/app:1.1.0", 0)  # same tags: reused
    assert cycle("1.0.0", "1.1.0", "1.2.0") == ("example.com/app:1.2.0", 1)  # a new tag
    assert cycle("1.0.0", "1.1.0") == ("example.com/app:1.1.0", 1)  # one gone
