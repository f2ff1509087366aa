from __future__ import annotations

import hashlib
from typing import Any

import pytest

from argocd_image_updater.model.application import Application
from argocd_image_updater.model.update_config import GitSettings, PullRequestSettings, WriteBack
from argocd_image_updater.writeback.targets import (
    PR_BRANCH_TEMPLATE,
    GitTarget,
    TargetError,
    default_override_name,
    group_key,
    resolve_target,
)

REPO = "https://example.com/example"


def app(
    *,
    name: str = "testapp",
    namespace: str = "argocd",
    path: str = "some/path",
    revision: str = "main",
    repo: str = REPO,
    sources: list[dict[str, Any]] | None = None,
    source_types: list[str] | None = None,
) -> Application:
    spec: dict[str, Any] = {}
    status: dict[str, Any] = {"sourceType": "Helm"}
    if sources is None:
        spec["source"] = {"repoURL": repo, "path": path, "targetRevision": revision, "helm": {}}
    else:
        spec["sources"] = sources
        status["sourceTypes"] = source_types or []
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return Application.from_object({"metadata": meta, "spec": spec, "status": status})


def git(
    target: str | None = None,
    *,
    branch: str | None = None,
    repository: str | None = None,
    pull_request: bool = False,
    method: str = "git",
) -> WriteBack:
    pr = PullRequestSettings(provider="github") if pull_request else None
    return WriteBack(
        method=method,
        git=GitSettings(
            repository=repository, branch=branch, write_back_target=target, pull_request=pr
        ),
    )


def resolve(application: Application, wb: WriteBack, controller_ns: str = "argocd") -> GitTarget:
    return resolve_target(application, wb, controller_ns)


# -------------------------------------------------------------------- default target (OV-1..3)


@pytest.mark.parametrize(
    ("app_ns", "controller_ns", "expected"),
    [
        ("argocd", "argocd", ".argocd-source-testapp.yaml"),  # OV-3
        ("", "argocd", ".argocd-source-testapp.yaml"),  # OV-3: no namespace
        ("testNS", "argocd", ".argocd-source-testNS_testapp.yaml"),  # OV-3
        ("argocd-test", "default", ".argocd-source-testapp.yaml"),  # OV-1: controller "default"
        ("team-a", "", ".argocd-source-testapp.yaml"),  # unknown controller namespace
    ],
)
def test_ov1_ov3_default_file_name(app_ns: str, controller_ns: str, expected: str) -> None:
    assert default_override_name("testapp", app_ns, controller_ns) == expected


@pytest.mark.parametrize("wb", [WriteBack(), git(), git(None, method="git:repocreds")])
def test_ov2_wb6_default_target(wb: WriteBack) -> None:
    target = resolve(app(name="my-app", namespace="argocd-test"), wb)
    assert target.kind == "override"
    assert target.file_path == "some/path/.argocd-source-argocd-test_my-app.yaml"
    assert target.source_path == "some/path"


def test_default_target_at_the_repository_root() -> None:
    target = resolve(app(path=""), git())
    assert target.file_path == ".argocd-source-testapp.yaml"
    assert target.source_path == "."


def test_argocd_method_ignores_git_target_setting() -> None:  # WB-5
    wb = WriteBack(method="argocd", git=GitSettings(write_back_target="kustomization"))
    assert resolve(app(), wb).kind == "override"


# ------------------------------------------------------------------ kustomization targets


@pytest.mark.parametrize(
    ("target", "path", "expected"),
    [
        ("kustomization", "", "."),  # WB-22
        ("kustomization:.", ".", "."),  # WB-23
        ("kustomization:.", "", "."),  # WB-24
        ("kustomization", "foo/bar", "foo/bar"),  # WB-25
        ("kustomization:/foo", "bar", "foo"),  # WB-26
        ("kustomization:foo", "bar", "bar/foo"),  # WB-27
        ("kustomization:../baz", "bar/foo", "bar/baz"),  # WB-28
        ("kustomization:../bar", "config/foo", "config/bar"),  # WB-9
        ("kustomization:overlays/prod", "some/path", "some/path/overlays/prod"),  # WB-10
        ("kustomization:/", "x", "."),
    ],
)
def test_wb9_wb10_wb22_wb28_kustomize_base(target: str, path: str, expected: str) -> None:
    result = resolve(app(path=path), git(target))
    assert result.kind == "kustomization"
    assert result.file_path == expected


def test_wb10_kustomization_target_key_uses_the_default_override_path() -> None:
    result = resolve(app(path="some/path"), git("kustomization:overlays/prod", branch="main"))
    expected = target_key_of(REPO, "main", "some/path/.argocd-source-testapp.yaml")
    assert result.target_key == expected


# ---------------------------------------------------------------------- helm values targets


@pytest.mark.parametrize(
    ("target", "path", "expected"),
    [
        ("helmvalues", "", "values.yaml"),  # HV-33
        ("helmvalues:./values.yaml", ".", "values.yaml"),  # HV-34
        ("helmvalues:./values.yaml", "", "values.yaml"),  # HV-35
        ("helmvalues", "foo/bar", "foo/bar/values.yaml"),  # HV-36
        ("helmvalues:/foo/app-values.yaml", "bar", "foo/app-values.yaml"),  # HV-37
        ("helmvalues:foo/app-values.yaml", "bar", "bar/foo/app-values.yaml"),  # HV-38
        ("helmvalues:../baz/app-values.yaml", "bar/foo", "bar/baz/app-values.yaml"),  # HV-39
        ("helmvalues:../bar/values.yaml", "config/foo", "config/bar/values.yaml"),  # HV-40
        ("helmvalues", "config/foo", "config/foo/values.yaml"),  # HV-41
        ("helmvalues:/helm/app/values.yaml", "config/foo", "helm/app/values.yaml"),  # HV-42
        ("helmvalues:another/values.yaml", "some/path", "some/path/another/values.yaml"),  # HV-43
    ],
)
def test_hv33_hv43_helm_values_path(target: str, path: str, expected: str) -> None:
    result = resolve(app(path=path), git(target))
    assert result.kind == "helmvalues"
    assert result.file_path == expected


# ----------------------------------------------------------------------- bare path targets


@pytest.mark.parametrize(
    ("target", "kind", "expected"),
    [
        ("target/folder/app-parameters.yaml", "helmvalues", "target/folder/app-parameters.yaml"),
        ("/charts/app/values.yml", "helmvalues", "charts/app/values.yml"),
        (
            "some/path/.argocd-source-testapp.yaml",
            "override",
            "some/path/.argocd-source-testapp.yaml",
        ),
        ("params/override.json", "override", "params/override.json"),
        ("./a/../b/values.yaml", "helmvalues", "b/values.yaml"),
    ],
)
def test_wb11_wb31_bare_targets(target: str, kind: str, expected: str) -> None:
    result = resolve(app(), git(target))
    assert (result.kind, result.file_path) == (kind, expected)


def test_bare_target_key_uses_the_target_verbatim() -> None:
    result = resolve(app(), git("/charts/app/values.yml", branch="main"))
    assert result.target_key == target_key_of(REPO, "main", "/charts/app/values.yml")


@pytest.mark.parametrize(
    "target",
    [
        "overlays/prod/kustomization.yaml",
        "overlays/prod/kustomization.yml",
        "base/Kustomization",
        "kustomization.yaml",
        "kustomizations/values.yaml",
    ],
)
def test_wb12_kustomization_files_as_bare_targets_are_rejected(target: str) -> None:
    with pytest.raises(TargetError, match=r"kustomization") as err:
        resolve(app(), git(target))
    message = str(err.value)
    assert "argocd/testapp" in message and "writeBackTarget" in message and target in message


@pytest.mark.parametrize(
    "target",
    [
        "kustomization:../../..",
        "helmvalues:../../../values.yaml",
        "../outside/values.yaml",
        "kustomization:/../x",
    ],
)
def test_targets_may_not_leave_the_repository(target: str) -> None:
    with pytest.raises(TargetError, match="leaves the repository"):
        resolve(app(path="some/path"), git(target))


@pytest.mark.parametrize("target", ["helmvalues:/", "helmvalues:dir/", "some/dir/"])
def test_targets_naming_a_directory_are_rejected(target: str) -> None:
    with pytest.raises(TargetError, match=r"directory|no values file"):
        resolve(app(), git(target))


def test_source_path_leaving_the_repository_is_rejected() -> None:
    with pytest.raises(TargetError, match=r"source path '\.\./x'"):
        resolve(app(path="../x"), git())


# -------------------------------------------------------------------- repository and branch


def test_wb1_base_and_write_branch() -> None:
    result = resolve(app(), git(branch="mybranch:mytargetbranch"))
    assert result.base_branch == "mybranch"
    assert result.write_branch_template == "mytargetbranch"
    assert result.pushes_elsewhere


def test_wb2_only_write_branch_takes_the_source_revision_as_base() -> None:
    result = resolve(app(revision="release"), git(branch=":mytargetbranch"))
    assert (result.base_branch, result.write_branch_template) == ("release", "mytargetbranch")


def test_wb3_only_base_branch() -> None:
    result = resolve(app(), git(branch="mybranch"))
    assert (result.base_branch, result.write_branch_template) == ("mybranch", None)
    assert not result.pushes_elsewhere


@pytest.mark.parametrize("revision", ["HEAD", ""])
def test_gf3_head_means_the_remote_default(revision: str) -> None:
    assert resolve(app(revision=revision), git()).base_branch == ""


def test_gf1_branch_from_target_revision() -> None:
    assert resolve(app(revision="main"), git()).base_branch == "main"


def test_bad_branch_setting_names_the_app() -> None:
    with pytest.raises(TargetError, match=r"argocd/testapp': gitConfig\.branch"):
        resolve(app(), git(branch="a:b:c"))


MULTI = [
    {"repoURL": "https://charts.bitnami.com/bitnami", "chart": "nginx", "targetRevision": "18.2.3"},
    {"repoURL": "https://github.com/org/config", "path": "apps/web", "targetRevision": "main"},
]


def test_wb35_multi_source_branch_from_the_matching_source() -> None:
    application = app(sources=[{**MULTI[0], "helm": {}}, MULTI[1]], source_types=["Helm", ""])
    result = resolve(application, git(repository="https://github.com/org/config"))
    assert result.repo_url == "https://github.com/org/config"
    assert result.base_branch == "main"


def test_wb36_wb37_multi_source_falls_back_to_the_written_source() -> None:
    application = app(sources=[{**MULTI[0], "helm": {}}, MULTI[1]], source_types=["Helm", ""])
    assert resolve(application, git()).base_branch == "18.2.3"
    other = resolve(application, git(repository="https://github.com/org/unknown"))
    assert other.base_branch == "18.2.3"


def test_gc6_repository_setting_wins_over_repo_url() -> None:
    result = resolve(
        app(repo="https://example-helm-repo.com/example"),
        git(repository=" git@github.com:example/example.git "),
    )
    assert result.repo_url == "git@github.com:example/example.git"


def test_missing_repository_is_an_error() -> None:
    with pytest.raises(TargetError, match="no git repository"):
        resolve(app(repo=""), git())


def test_pull_request_mode_uses_the_pr_branch_template() -> None:
    result = resolve(app(), git(branch="main", pull_request=True))
    assert result.pull_request
    assert result.write_branch_template == PR_BRANCH_TEMPLATE
    assert result.base_branch == "main"
    assert result.target_key == target_key_of(REPO, "main", "some/path/.argocd-source-testapp.yaml")


def test_wb14_pull_request_mode_rejects_colon_branches() -> None:
    with pytest.raises(TargetError, match="pullRequest mode does not support colon branch"):
        resolve(app(), git(branch="main:target", pull_request=True))


def test_target_key_uses_the_configured_branch_not_the_revision() -> None:
    result = resolve(app(revision="main"), git())
    assert result.base_branch == "main"
    assert result.target_key == target_key_of(REPO, "", "some/path/.argocd-source-testapp.yaml")


def target_key_of(repo: str, branch: str, target: str) -> str:
    return hashlib.sha256(f"{repo}|{branch}|{target}".encode()).hexdigest()[:8]


# ------------------------------------------------------------------------------- grouping


def test_group_key_groups_apps_of_one_repository_and_branch() -> None:
    a = resolve(app(name="a", repo="https://github.com/org/repo.git"), git(branch="main"))
    b = resolve(app(name="b", repo="https://github.com/org/repo", path="x"), git(branch="main"))
    c = resolve(app(name="c", repo="https://github.com/org/repo"), git(branch="dev"))
    d = resolve(app(name="d", repo="https://github.com/org/repo"), git(branch="main:bot"))
    assert group_key(a) == group_key(b) == ("https://github.com/org/repo", "main", "")
    assert group_key(a) != group_key(c)
    assert group_key(d) == ("https://github.com/org/repo", "main", "bot")
    assert group_key(d, "bot-rendered")[2] == "bot-rendered"
