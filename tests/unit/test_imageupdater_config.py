from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from argocd_image_updater.config.imageupdater import (
    MSG_IMAGES_REQUIRED,
    MSG_VERIFICATION,
    ImageUpdater,
    ImageUpdaterError,
    compact_image_updater,
    parse_image_updater,
)
from argocd_image_updater.config.imageupdater_refs import (
    ref_settings,
    ref_verification,
    ref_write_back,
)
from argocd_image_updater.config.imageupdater_writeback import (
    MSG_ONE_PROVIDER,
    MSG_ONE_TARGET,
    MSG_PLUGIN_NAME,
    normalize_pr_labels,
)
from argocd_image_updater.model.update_config import (
    GitSettings,
    HelmTarget,
    ManifestTarget,
    PullRequestSettings,
    UpdateSettings,
    Verification,
    WriteBack,
    WriteBackError,
    WriteBackLayer,
    split_branch,
)


def cr(spec: dict[str, Any], *, name: str = "iu", namespace: str = "argocd") -> dict[str, Any]:
    return {
        "apiVersion": "argocd-image-updater.argoproj.io/v1alpha1",
        "kind": "ImageUpdater",
        "metadata": {"name": name, "namespace": namespace, "generation": 3, "uid": "u"},
        "spec": spec,
    }


def ref(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "namePattern": "app-*",
        "images": [{"alias": "web", "imageName": "nginx"}],
    }
    base.update(extra)
    return base


FULL: dict[str, Any] = cr(
    {
        "commonUpdateSettings": {
            "updateStrategy": "semver",
            "forceUpdate": False,
            "ignoreTags": ["dev"],
        },
        "writeBackConfig": {
            "method": "git:secret:argocd/git-creds",
            "gitConfig": {
                "branch": "main",
                "writeBackTarget": "helmvalues",
                "repository": "https://g/r",
            },
        },
        "imagesVerification": {
            "enabled": True,
            "cosignKey": {"secretName": "cosign", "key": "cosign.pub"},
        },
        "applicationRefs": [
            {
                "namePattern": "app-*",
                "labelSelectors": {
                    "matchLabels": {"team": "a"},
                    "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}],
                },
                "commonUpdateSettings": {"forceUpdate": True, "allowTags": "regexp:^v1"},
                "writeBackConfig": {
                    "gitConfig": {"branch": ":update-{{.SHA256}}", "pullRequest": None},
                },
                "imagesVerification": {"enabled": False},
                "images": [
                    {
                        "alias": "web",
                        "imageName": "docker.io/library/nginx:~1.26",
                        "commonUpdateSettings": {"ignoreTags": [], "platforms": ["linux/amd64"]},
                        "manifestTargets": {
                            "helm": {"name": "image.repository", "tag": "image.version"}
                        },
                        "imagesVerification": {"cosignKey": {"secretName": "other", "key": "k"}},
                    },
                    {
                        "alias": "api.v2",
                        "imageName": "ghcr.io/org/api",
                        "manifestTargets": {"plugin": {"spec": "API_IMAGE"}},
                    },
                ],
            },
            {"namePattern": "legacy-*", "useAnnotations": True},
        ],
    }
)


def test_full_resource_parses_with_camel_case_fields() -> None:
    obj = copy.deepcopy(FULL)
    obj["spec"]["applicationRefs"][0]["writeBackConfig"]["gitConfig"].pop("pullRequest")
    iu = parse_image_updater(obj)
    assert isinstance(iu, ImageUpdater)
    assert (iu.name, iu.namespace, iu.metadata.generation) == ("iu", "argocd", 3)
    assert iu.origin == "imageupdater argocd/iu"
    first, second = iu.spec.application_refs
    assert first.label_selectors is not None
    assert first.label_selectors.match_labels == {"team": "a"}
    assert first.images is not None and first.images[1].alias == "api.v2"
    assert second.use_annotations and second.images is None
    assert first.use_annotations is False


def test_settings_fields_have_no_defaults() -> None:
    iu = parse_image_updater(cr({"applicationRefs": [ref(commonUpdateSettings={})]}))
    cs = iu.spec.application_refs[0].common_update_settings
    assert cs is not None
    assert cs.to_settings() == UpdateSettings()
    assert cs.update_strategy is None and cs.force_update is None


# ST-9 and §1.9 through the CR
def test_settings_merge_spec_ref_image() -> None:
    obj = copy.deepcopy(FULL)
    obj["spec"]["applicationRefs"][0]["writeBackConfig"]["gitConfig"].pop("pullRequest")
    iu = parse_image_updater(obj)
    r = iu.spec.application_refs[0]
    settings = ref_settings(iu, r)
    assert settings == UpdateSettings(
        strategy="semver", force_update=True, allow_tags="regexp:^v1", ignore_tags=("dev",)
    )
    assert r.images is not None
    web = r.images[0].to_spec(settings, ref_verification(iu, r))
    assert web.settings.ignore_tags == ()  # explicit empty list clears the inherited value
    assert web.settings.platforms == ("linux/amd64",)
    assert web.settings.force_update is True
    assert web.target == ManifestTarget(
        helm=HelmTarget(name="image.repository", tag="image.version")
    )
    # verification: enabled false at ref level, the image sets a key (enabled defaults to true)
    assert web.verification == Verification(True, "other", "k")
    api = r.images[1].to_spec(settings, ref_verification(iu, r))
    assert api.verification == Verification(False, "cosign", "cosign.pub")
    assert api.target is not None and api.target.plugin is not None
    assert api.target.plugin.spec == "API_IMAGE"


def test_write_back_merge_spec_then_ref() -> None:
    obj = copy.deepcopy(FULL)
    obj["spec"]["applicationRefs"][0]["writeBackConfig"]["gitConfig"].pop("pullRequest")
    iu = parse_image_updater(obj)
    wb = ref_write_back(iu, iu.spec.application_refs[0])
    assert wb.method == "git:secret:argocd/git-creds"
    assert wb.git == GitSettings(
        repository="https://g/r", branch=":update-{{.SHA256}}", write_back_target="helmvalues"
    )
    assert wb.is_git
    assert wb.git_credentials_ref == "secret:argocd/git-creds"
    assert (wb.base_branch, wb.write_branch) == ("", "update-{{.SHA256}}")
    assert wb.write_back_target == "helmvalues"


def test_pull_request_at_ref_level_replaces_the_global_one() -> None:
    spec = {
        "writeBackConfig": {
            "method": "git",
            "gitConfig": {"branch": "main", "pullRequest": {"github": {}, "labels": ["a"]}},
        },
        "applicationRefs": [
            ref(writeBackConfig={"gitConfig": {"pullRequest": {"gitlab": {}}}}),
            ref(namePattern="other", writeBackConfig={"gitConfig": {"repository": "x"}}),
        ],
    }
    iu = parse_image_updater(cr(spec))
    first = ref_write_back(iu, iu.spec.application_refs[0])
    assert first.git.pull_request == PullRequestSettings("gitlab", ())
    assert first.git.branch == "main"
    second = ref_write_back(iu, iu.spec.application_refs[1])
    assert second.git.pull_request == PullRequestSettings("github", ("a",))
    assert second.git.repository == "x"


def test_no_write_back_config_means_argocd() -> None:
    iu = parse_image_updater(cr({"applicationRefs": [ref()]}))
    wb = ref_write_back(iu, iu.spec.application_refs[0])
    assert wb == WriteBack()
    assert wb.method == "argocd" and not wb.is_git
    assert wb.write_back_target is None


def test_verification_absent_everywhere_is_no_policy() -> None:
    iu = parse_image_updater(cr({"applicationRefs": [ref()]}))
    assert ref_verification(iu, iu.spec.application_refs[0]) is None


def bad(spec: dict[str, Any]) -> ImageUpdaterError:
    with pytest.raises(ImageUpdaterError) as err:
        parse_image_updater(cr(spec))
    return err.value


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {
                "applicationRefs": [
                    ref(
                        images=[
                            {"alias": "web", "imageName": "a"},
                            {"alias": "org/app", "imageName": "b"},
                        ]
                    )
                ]
            },
            "spec.applicationRefs[0].images[1].alias: 'org/app' does not match ^[a-zA-Z0-9][a-zA-Z0-9-._]*$",
        ),
        (
            {"applicationRefs": [ref(images=[{"alias": "-x", "imageName": "a"}])]},
            "spec.applicationRefs[0].images[0].alias: '-x' does not match",
        ),
        ({"applicationRefs": []}, "spec.applicationRefs:"),
        ({}, "spec.applicationRefs: required field is missing"),
        (
            {"applicationRefs": [{"namePattern": "a"}]},
            f"spec.applicationRefs[0]: {MSG_IMAGES_REQUIRED}",
        ),
        ({"applicationRefs": [{"namePattern": "a", "images": []}]}, MSG_IMAGES_REQUIRED),
        (
            {"applicationRefs": [{"images": [{"alias": "a", "imageName": "b"}]}]},
            "spec.applicationRefs[0].namePattern: required field is missing",
        ),
        (
            {"applicationRefs": [ref(), ref()]},
            "spec.applicationRefs[1].namePattern: duplicate value 'app-*'",
        ),
        (
            {
                "applicationRefs": [
                    ref(images=[{"alias": "a", "imageName": "x"}, {"alias": "a", "imageName": "y"}])
                ]
            },
            "spec.applicationRefs[0].images[1].alias: duplicate alias 'a'",
        ),
        (
            {
                "applicationRefs": [
                    ref(images=[{"alias": "a", "imageName": "x", "manifestTargets": {}}])
                ]
            },
            f"spec.applicationRefs[0].images[0].manifestTargets: {MSG_ONE_TARGET}",
        ),
        (
            {
                "applicationRefs": [
                    ref(
                        images=[
                            {
                                "alias": "a",
                                "imageName": "x",
                                "manifestTargets": {"helm": {}, "kustomize": {"name": "n"}},
                            }
                        ]
                    )
                ]
            },
            MSG_ONE_TARGET,
        ),
        (
            {
                "applicationRefs": [
                    ref(
                        images=[
                            {"alias": "a", "imageName": "x", "manifestTargets": {"kustomize": {}}}
                        ]
                    )
                ]
            },
            "spec.applicationRefs[0].images[0].manifestTargets.kustomize.name: required field is missing",
        ),
        (
            {
                "applicationRefs": [
                    ref(
                        images=[
                            {
                                "alias": "a",
                                "imageName": "x",
                                "manifestTargets": {"plugin": {"tag": "T"}},
                            }
                        ]
                    )
                ]
            },
            f"spec.applicationRefs[0].images[0].manifestTargets.plugin: {MSG_PLUGIN_NAME}",
        ),
        (
            {
                "applicationRefs": [
                    ref(
                        images=[
                            {
                                "alias": "a",
                                "imageName": "x",
                                "manifestTargets": {"plugin": {"name": ""}},
                            }
                        ]
                    )
                ]
            },
            "spec.applicationRefs[0].images[0].manifestTargets.plugin.name:",
        ),
        (
            {"writeBackConfig": {"method": "svn"}, "applicationRefs": [ref()]},
            "spec.writeBackConfig.method: 'svn' does not match ^(argocd|git|git:[a-zA-Z0-9][a-zA-Z0-9-._/:]*)$",
        ),
        (
            {"writeBackConfig": {"gitConfig": {"pullRequest": {}}}, "applicationRefs": [ref()]},
            f"spec.writeBackConfig.gitConfig.pullRequest: {MSG_ONE_PROVIDER}",
        ),
        (
            {
                "writeBackConfig": {"gitConfig": {"pullRequest": {"github": {}, "gitlab": {}}}},
                "applicationRefs": [ref()],
            },
            MSG_ONE_PROVIDER,
        ),
        (
            {
                "writeBackConfig": {
                    "gitConfig": {"pullRequest": {"github": {}, "labels": ["ok", ""]}}
                },
                "applicationRefs": [ref()],
            },
            "spec.writeBackConfig.gitConfig.pullRequest.labels[1]: label '' must be 1-255 characters long",
        ),
        (
            {
                "writeBackConfig": {
                    "gitConfig": {"pullRequest": {"github": {}, "labels": ["l"] * 101}}
                },
                "applicationRefs": [ref()],
            },
            "spec.writeBackConfig.gitConfig.pullRequest.labels:",
        ),
        (
            {"writeBackConfig": {"gitConfig": {"branch": "a:b:c"}}, "applicationRefs": [ref()]},
            "spec.writeBackConfig.gitConfig.branch: invalid format for git-branch",
        ),
        (
            {
                "writeBackConfig": {
                    "gitConfig": {"branch": "main:target", "pullRequest": {"github": {}}}
                },
                "applicationRefs": [ref()],
            },
            "spec.writeBackConfig.gitConfig.branch: pullRequest mode does not support colon branch format",
        ),
        (
            {"imagesVerification": {}, "applicationRefs": [ref()]},
            f"spec.imagesVerification: {MSG_VERIFICATION}",
        ),
        (
            {"applicationRefs": [ref(imagesVerification={"cosignKey": {"secretName": "s"}})]},
            "spec.applicationRefs[0].imagesVerification.cosignKey.key: required field is missing",
        ),
        (
            {"applicationRefs": [ref(commonUpdateSettings={"ignoreTags": "*"})]},
            "spec.applicationRefs[0].commonUpdateSettings.ignoreTags: expected a list, got str '*'",
        ),
        (
            {"applicationRefs": [ref(commonUpdateSettings={"platforms": "linux/arm64"})]},
            "spec.applicationRefs[0].commonUpdateSettings.platforms: expected a list",
        ),
        (
            {"applicationRefs": [ref(commonUpdateSettings={"forceUpdate": "true"})]},
            "spec.applicationRefs[0].commonUpdateSettings.forceUpdate: expected true or false, got str 'true'",
        ),
        (
            {"applicationRefs": [ref(useAnnotations="yes")]},
            "spec.applicationRefs[0].useAnnotations: expected true or false",
        ),
        (
            {"applicationRefs": [ref(namePatternTypo="x")]},
            "spec.applicationRefs[0].namePatternTypo: unknown field",
        ),
        (
            {"namespace": "argocd", "applicationRefs": [ref()]},
            "spec.namespace: field was removed",
        ),
        (
            {"applicationRefs": [ref(labelSelectors={"matchLabels": {"a": 1}})]},
            "spec.applicationRefs[0].labelSelectors.matchLabels.a: expected a string, got int 1",
        ),
    ],
)
def test_invalid_fields_are_reported_with_their_path(spec: dict[str, Any], expected: str) -> None:
    err = bad(spec)
    assert expected in str(err)
    assert str(err).startswith("invalid ImageUpdater 'argocd/iu': ")
    assert any(expected in line for line in err.errors)


def test_all_problems_are_listed() -> None:
    err = bad(
        {
            "applicationRefs": [
                ref(images=[{"alias": "a/b", "imageName": 1}]),
                ref(namePattern="x", writeBackConfig={"method": "bad"}),
            ]
        }
    )
    assert len(err.errors) == 3


def test_top_level_checks() -> None:
    obj = cr({"applicationRefs": [ref()]})
    obj["apiVersion"] = "argocd-image-updater.argoproj.io/v1beta9"
    with pytest.raises(
        ImageUpdaterError,
        match=re.escape("apiVersion: 'argocd-image-updater.argoproj.io/v1beta9' is not supported"),
    ):
        parse_image_updater(obj)
    obj = cr({"applicationRefs": [ref()]})
    obj["kind"] = "Application"
    with pytest.raises(ImageUpdaterError, match="kind: 'Application' is not an ImageUpdater"):
        parse_image_updater(obj)
    obj = cr({"applicationRefs": [ref()]})
    del obj["metadata"]["name"]
    with pytest.raises(
        ImageUpdaterError, match=re.escape("metadata.name: required field is missing")
    ):
        parse_image_updater(obj)
    with pytest.raises(ImageUpdaterError, match="expected an object"):
        parse_image_updater("spec: {}")  # type: ignore[arg-type]


def test_status_and_metadata_extras_are_accepted() -> None:
    obj = cr({"applicationRefs": [ref()]})
    obj["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    obj["status"] = {"applicationsMatched": 2}
    # accepted, and not copied: the status is read from the listed object
    assert parse_image_updater(obj).status == {}
    assert obj["status"] == {"applicationsMatched": 2}


# WB-20 / WB-21
def test_pull_request_labels_normalization() -> None:
    assert normalize_pr_labels(["image-update", " automated ", "", "image-update"]) == (
        "image-update",
        "automated",
    )
    assert normalize_pr_labels(["", "   "]) is None
    assert normalize_pr_labels(None) is None
    spec = {
        "writeBackConfig": {
            "method": "git",
            "gitConfig": {"pullRequest": {"github": {}, "labels": ["x", " y ", "  ", "x"]}},
        },
        "applicationRefs": [ref()],
    }
    iu = parse_image_updater(cr(spec))
    wb = ref_write_back(iu, iu.spec.application_refs[0])
    assert wb.git.pull_request == PullRequestSettings("github", ("x", "y"))


# --- update_config values ----------------------------------------------------------------------


# ST-9
def test_update_settings_merge() -> None:
    glob = UpdateSettings(strategy="semver", force_update=False)
    app = UpdateSettings(force_update=True, allow_tags="v1.*")
    image = UpdateSettings(allow_tags="rc-*")
    assert UpdateSettings.merge(glob, app, image) == UpdateSettings(
        strategy="semver", force_update=True, allow_tags="rc-*"
    )
    assert UpdateSettings.merge(None, None, None) == UpdateSettings()
    assert UpdateSettings.merge(glob) == glob
    assert glob.merged(None) == glob


def test_empty_list_clears_and_effective_defaults() -> None:
    merged = UpdateSettings(ignore_tags=("a",), platforms=("linux/amd64",)).merged(
        UpdateSettings(ignore_tags=())
    )
    assert merged.ignore_tags == ()
    assert merged.platforms == ("linux/amd64",)
    empty = UpdateSettings()
    assert empty.is_empty
    assert empty.effective_strategy == "semver"
    assert empty.effective_force_update is False
    assert empty.effective_allow_tags == ""
    assert empty.effective_ignore_tags == ()
    assert empty.effective_pull_secret == ""
    assert empty.effective_platforms == ()
    assert UpdateSettings(strategy="digest").effective_strategy == "digest"


def test_verification_merge_field_by_field() -> None:
    assert Verification.merge(None, None) is None
    spec = Verification(True, "s", "k")
    assert Verification.merge(spec, Verification(enabled=False)) == Verification(False, "s", "k")
    assert Verification.merge(spec, None, Verification(True, "s2", "k2")) == Verification(
        True, "s2", "k2"
    )
    assert Verification.merge(None, Verification(False)) == Verification(False)
    assert spec.has_method and not Verification().has_method


# WB-1 .. WB-8
@pytest.mark.parametrize(
    ("branch", "base", "write"),
    [
        ("mybranch:mytargetbranch", "mybranch", "mytargetbranch"),
        (":mytargetbranch", "", "mytargetbranch"),
        ("mybranch", "mybranch", ""),
    ],
)
def test_branch_split(branch: str, base: str, write: str) -> None:
    wb = WriteBack(method="git", git=GitSettings(branch=branch))
    assert (wb.base_branch, wb.write_branch) == (base, write)
    assert split_branch(branch) == (base, write)
    wb.check("argocd")


def test_argocd_method_ignores_git_settings() -> None:
    wb = WriteBack(
        method="argocd", git=GitSettings(branch="a:b:c", write_back_target="kustomization")
    )
    wb.check("argocd")
    assert not wb.is_git
    assert wb.write_back_target is None


@pytest.mark.parametrize(
    ("method", "git", "message"),
    [
        ("unknown", GitSettings(), "invalid update mechanism: unknown"),
        ("unsupported", GitSettings(), "invalid update mechanism: unsupported"),
        (
            "git:error:argocd-image-updater/git-creds",
            GitSettings(),
            "invalid git credentials source",
        ),
        ("git:secret:", GitSettings(), "invalid git credentials source"),
        ("git:secret:a/b/c", GitSettings(), "invalid git credentials source"),
        (
            "git:secret:other/creds",
            GitSettings(),
            "secret namespace 'other' must be the application's namespace 'argocd'",
        ),
        ("git", GitSettings(branch="a:b:c"), "invalid format for git-branch: a:b:c"),
        (
            "git",
            GitSettings(branch="main:target", pull_request=PullRequestSettings("github")),
            "pullRequest mode does not support colon branch format",
        ),
    ],
)
def test_write_back_check_errors(method: str, git: GitSettings, message: str) -> None:
    with pytest.raises(WriteBackError, match=message.replace("(", r"\(").replace(")", r"\)")):
        WriteBack(method=method, git=git).check("argocd")


@pytest.mark.parametrize(
    ("method", "creds"),
    [
        ("git", "repocreds"),
        (" git ", "repocreds"),
        ("git:repocreds", "repocreds"),
        ("git:secret:creds", "secret:creds"),
        ("git:secret:argocd/creds", "secret:argocd/creds"),
    ],
)
def test_git_credentials_ref(method: str, creds: str) -> None:
    wb = WriteBack(method=method)
    assert wb.is_git
    assert wb.git_credentials_ref == creds
    wb.check("argocd")


def test_qualified_secret_and_any_namespace() -> None:
    WriteBack(method="git:secret:other/creds").check(None, qualified_secret=True)
    with pytest.raises(WriteBackError, match="secret:<namespace>/<name>"):
        WriteBack(method="git:secret:creds").check(None, qualified_secret=True)


def test_pull_request_with_plain_branch_is_fine() -> None:
    wb = WriteBack(
        method="git", git=GitSettings(branch="main", pull_request=PullRequestSettings("github"))
    )
    wb.check("argocd")
    assert wb.git.pull_request is not None and wb.git.pull_request.provider == "github"


def test_write_back_layers_merge() -> None:
    glob = WriteBackLayer(method="git", git=GitSettings(repository="r", branch="main"))
    local = WriteBackLayer(git=GitSettings(branch="dev", write_back_target="kustomization"))
    wb = WriteBack.from_layers(glob, None, local)
    assert wb == WriteBack(
        "git", GitSettings(repository="r", branch="dev", write_back_target="kustomization")
    )
    assert WriteBack.from_layers() == WriteBack("argocd", GitSettings())


def test_a_listed_image_updater_keeps_only_what_is_read() -> None:
    obj = cr({"applicationRefs": [ref()]})
    obj["metadata"].update(
        uid="u-1",
        resourceVersion="7",
        generation=2,
        labels={"team": "a"},
        annotations={
            "kubectl.kubernetes.io/last-applied-configuration": '{"spec": {}}',
            "note": "kept",
        },
        managedFields=[{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
        creationTimestamp="2026-01-01T00:00:00Z",
    )
    obj["status"] = {"applicationsMatched": 2}
    compact = compact_image_updater(obj)
    assert compact["metadata"] == {
        "name": obj["metadata"]["name"],
        "namespace": obj["metadata"]["namespace"],
        "uid": "u-1",
        "resourceVersion": "7",
        "generation": 2,
        "labels": {"team": "a"},
        "annotations": {"note": "kept"},
    }
    assert compact["spec"] is obj["spec"] and compact["status"] is obj["status"]
    assert parse_image_updater(compact) == parse_image_updater(obj)
    assert compact_image_updater("not an object") == "not an object"
    assert compact_image_updater({"spec": {}}) == {"spec": {}}
