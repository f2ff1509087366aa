from __future__ import annotations

from typing import Any

import pytest

from argocd_image_updater.config.annotations import (
    TAG_MATCH_DEPRECATED,
    AnnotatedImage,
    AnnotationError,
    SettingKeys,
    config_from_annotations_v0,
    is_annotated,
    read_image_list,
    read_manifest_target,
    read_update_settings,
    read_write_back,
    setting_keys,
)
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.update_config import (
    GitSettings,
    HelmTarget,
    KustomizeTarget,
    ManifestTarget,
    UpdateSettings,
    WriteBack,
    WriteBackLayer,
)

P = "argocd-image-updater.argoproj.io"
IMAGE_LIST = f"{P}/image-list"


def app(annotations: dict[str, str] | None = None, **extra: Any) -> Application:
    obj: dict[str, Any] = {
        "metadata": {"name": "guestbook", "namespace": "argocd", "annotations": annotations or {}},
        "spec": {"source": {"repoURL": "https://g/r", "path": "p"}},
        "status": {"sourceType": "Kustomize"},
    }
    obj.update(extra)
    return Application.from_object(obj)


def images(value: str, **more: str) -> list[AnnotatedImage]:
    return read_image_list(app({IMAGE_LIST: value, **{f"{P}/{k}": v for k, v in more.items()}}))


# --- 2a image-list (useAnnotations reading) -----------------------------------------------------


def test_an1_missing() -> None:
    with pytest.raises(AnnotationError, match="annotation not found"):
        read_image_list(app())


@pytest.mark.parametrize("value", ["", "  ,  ,  "])
def test_an2_an3_empty(value: str) -> None:
    with pytest.raises(AnnotationError, match="annotation is empty"):
        images(value)


def test_an4_to_an10_lists() -> None:
    assert images("docker.io/library/nginx:1.21") == [
        AnnotatedImage("", "docker.io/library/nginx:1.21")
    ]
    assert images("web=docker.io/library/nginx:1.21") == [
        AnnotatedImage("web", "docker.io/library/nginx:1.21")
    ]
    two = images("docker.io/library/nginx:1.21,quay.io/prometheus/node-exporter:v1.5.0")
    assert [(i.alias, i.image) for i in two] == [
        ("", "docker.io/library/nginx:1.21"),
        ("", "quay.io/prometheus/node-exporter:v1.5.0"),
    ]
    three = images(
        "web=docker.io/library/nginx:1.21,docker.io/library/postgres:14,api=quay.io/myorg/api:v2.0"
    )
    assert [i.alias for i in three] == ["web", "", "api"]
    spaced = images("  web = docker.io/library/nginx:1.21  ,  api = quay.io/myorg/api:v2.0  ")
    assert [(i.alias, i.image) for i in spaced] == [
        ("web", "docker.io/library/nginx:1.21"),
        ("api", "quay.io/myorg/api:v2.0"),
    ]
    assert len(images("web=docker.io/library/nginx:1.21,,api=quay.io/myorg/api:v2.0")) == 2


def test_an11_empty_image_name() -> None:
    with pytest.raises(AnnotationError, match="empty image name"):
        images("web=")


def test_an12_to_an14_per_alias_settings_and_targets() -> None:
    (web,) = images(
        "web=docker.io/library/nginx:1.21",
        **{"web.update-strategy": "semver", "web.force-update": "true", "web.allow-tags": "v1.*"},
    )
    assert web.settings == UpdateSettings(strategy="semver", force_update=True, allow_tags="v1.*")
    assert web.target is None
    (helm,) = images(
        "web=nginx",
        **{"web.helm.image-name": "image.repository", "web.helm.image-tag": "image.tag"},
    )
    assert helm.target == ManifestTarget(helm=HelmTarget(name="image.repository", tag="image.tag"))
    (kust,) = images("web=nginx", **{"web.kustomize.image-name": "docker.io/library/nginx"})
    assert kust.target == ManifestTarget(kustomize=KustomizeTarget("docker.io/library/nginx"))


def test_an15_an16_errors_are_wrapped() -> None:
    with pytest.raises(AnnotationError, match="parse common update settings") as err:
        images("web=nginx", **{"web.force-update": "invalid-boolean"})
    assert f"{P}/web.force-update" in str(err.value)
    assert "invalid-boolean" in str(err.value)
    with pytest.raises(AnnotationError, match="parse manifest targets"):
        images("web=nginx", **{"web.helm.image-name": "a", "web.kustomize.image-name": "b"})


def test_an17_to_an21() -> None:
    assert images("my-app=docker.io/library/nginx:1.21")[0].alias == "my-app"
    assert images("web=docker.io/library/nginx@sha256:abc123")[0].image == (
        "docker.io/library/nginx@sha256:abc123"
    )
    (anon,) = images("  =docker.io/library/nginx:1.21", **{".update-strategy": "digest"})
    assert anon == AnnotatedImage("", "docker.io/library/nginx:1.21", None, None)
    web, api, db = images(
        "web=nginx:1.21,api=quay.io/myorg/api:v2.0,db=docker.io/library/postgres:14",
        **{
            "web.update-strategy": "semver",
            "web.helm.image-name": "image.repository",
            "api.force-update": "true",
            "api.kustomize.image-name": "quay.io/myorg/api",
        },
    )
    assert web.settings == UpdateSettings(strategy="semver")
    assert web.target == ManifestTarget(helm=HelmTarget(name="image.repository"))
    assert api.settings == UpdateSettings(force_update=True)
    assert api.target == ManifestTarget(kustomize=KustomizeTarget("quay.io/myorg/api"))
    assert (db.settings, db.target) == (None, None)


# --- 2c keys ------------------------------------------------------------------------------------


def test_an27_to_an29_keys() -> None:
    assert setting_keys("") == SettingKeys(
        allow_tags=f"{P}/allow-tags",
        ignore_tags=f"{P}/ignore-tags",
        force_update=f"{P}/force-update",
        update_strategy=f"{P}/update-strategy",
        pull_secret=f"{P}/pull-secret",
        platforms=None,
        allow_downgrade=f"{P}/allow-downgrade",
        pin_digest=f"{P}/pin-digest",
        min_age=f"{P}/min-age",
        min_age_from=f"{P}/min-age-from",
    )
    web = setting_keys("web")
    assert (web.min_age, web.min_age_from) == (f"{P}/web.min-age", f"{P}/web.min-age-from")
    assert (web.allow_tags, web.platforms) == (f"{P}/web.allow-tags", f"{P}/web.platforms")
    my = setting_keys("my-app")
    assert [my.ignore_tags, my.force_update, my.update_strategy, my.pull_secret] == [
        f"{P}/my-app.ignore-tags",
        f"{P}/my-app.force-update",
        f"{P}/my-app.update-strategy",
        f"{P}/my-app.pull-secret",
    ]
    assert setting_keys("foo/bar").allow_tags == f"{P}/foo/bar.allow-tags"  # verbatim in v1


# --- 2d settings --------------------------------------------------------------------------------


def settings(alias: str = "", **ann: str) -> UpdateSettings | None:
    return read_update_settings(app({f"{P}/{k}": v for k, v in ann.items()}), alias)


def test_an31_to_an38_app_wide() -> None:
    assert settings() is None
    assert settings(**{"update-strategy": "semver"}) == UpdateSettings(strategy="semver")
    assert settings(
        **{
            "update-strategy": "latest",
            "force-update": "false",
            "allow-tags": "v2.*",
            "ignore-tags": "dev,test",
            "pull-secret": "registry-secret",
        }
    ) == UpdateSettings(
        strategy="latest",
        force_update=False,
        allow_tags="v2.*",
        ignore_tags=("dev", "test"),
        pull_secret="registry-secret",
    )
    with pytest.raises(AnnotationError, match="error parsing force update settings"):
        settings(**{"force-update": "invalid"})
    assert settings(**{"force-update": "true"}) == UpdateSettings(force_update=True)
    assert settings(**{"force-update": "False"}) == UpdateSettings(force_update=False)
    assert settings(**{"ignore-tags": " dev , test , latest "}) == UpdateSettings(
        ignore_tags=("dev", "test", "latest")
    )
    assert settings(**{"ignore-tags": "latest"}) == UpdateSettings(ignore_tags=("latest",))
    assert settings(**{"ignore-tags": "dev,,test"}) == UpdateSettings(
        ignore_tags=("dev", "", "test")
    )


def test_an39_to_an44_per_image() -> None:
    assert settings(
        "web",
        **{
            "web.update-strategy": "digest",
            "web.force-update": "true",
            "web.allow-tags": "v3.*",
            "web.ignore-tags": "rc,alpha",
            "web.pull-secret": "web-secret",
            "web.platforms": "linux/amd64,linux/arm64",
        },
    ) == UpdateSettings(
        "digest", True, "v3.*", ("rc", "alpha"), "web-secret", ("linux/amd64", "linux/arm64")
    )
    three = settings("web", **{"web.platforms": "linux/amd64,linux/arm64,linux/arm"})
    assert three is not None and three.platforms == ("linux/amd64", "linux/arm64", "linux/arm")
    assert settings("web", **{"web.platforms": " linux/amd64 , linux/arm64 "}) == UpdateSettings(
        platforms=("linux/amd64", "linux/arm64")
    )
    assert settings("web", **{"web.platforms": "linux/amd64"}) == UpdateSettings(
        platforms=("linux/amd64",)
    )
    # AN-43: no application-wide platforms key
    assert settings(
        "", **{"update-strategy": "semver", "platforms": "linux/amd64"}
    ) == UpdateSettings(strategy="semver")
    assert settings(
        "my-app", **{"my-app.update-strategy": "name", "my-app.force-update": "true"}
    ) == (UpdateSettings(strategy="name", force_update=True))


def test_go_boolean_spellings() -> None:
    for text in ("1", "t", "T", "TRUE", "true", "True"):
        assert settings(**{"force-update": text}) == UpdateSettings(force_update=True)
    for text in ("0", "f", "F", "FALSE", "false", "False"):
        assert settings(**{"force-update": text}) == UpdateSettings(force_update=False)
    for text in ("yes", "", "tRuE"):
        with pytest.raises(AnnotationError):
            settings(**{"force-update": text})


# --- 2e manifest targets ------------------------------------------------------------------------


def target(**ann: str) -> ManifestTarget | None:
    return read_manifest_target(app({f"{P}/{k}": v for k, v in ann.items()}), "web")


def test_an45_to_an54() -> None:
    assert target() is None
    assert (
        target(
            **{
                "web.helm.image-name": "",
                "web.helm.image-tag": "",
                "web.helm.image-spec": "",
                "web.kustomize.image-name": "",
            }
        )
        is None
    )
    assert target(**{"web.kustomize.image-name": "docker.io/library/nginx"}) == ManifestTarget(
        kustomize=KustomizeTarget("docker.io/library/nginx")
    )
    assert target(**{"web.helm.image-name": "image.repository"}) == ManifestTarget(
        helm=HelmTarget(name="image.repository")
    )
    assert target(**{"web.helm.image-name": "n", "web.helm.image-tag": "t"}) == ManifestTarget(
        helm=HelmTarget("n", "t")
    )
    assert target(**{"web.helm.image-spec": "image.full"}) == ManifestTarget(
        helm=HelmTarget(spec="image.full")
    )
    assert target(
        **{"web.helm.image-name": "n", "web.helm.image-tag": "t", "web.helm.image-spec": "s"}
    ) == ManifestTarget(helm=HelmTarget("n", "t", "s"))
    with pytest.raises(
        AnnotationError, match="both helm and kustomize manifest targets configured for alias"
    ):
        target(**{"web.helm.image-tag": "t", "web.kustomize.image-name": "k"})
    assert target(**{"web.kustomize.image-name": "  docker.io/library/nginx  "}) == ManifestTarget(
        kustomize=KustomizeTarget("docker.io/library/nginx")
    )
    assert target(**{"web.helm.image-name": "n", "web.helm.image-tag": ""}) == ManifestTarget(
        helm=HelmTarget(name="n")
    )
    assert target(
        **{
            "web.helm.image-name": "frontend.deployment.image.name",
            "web.helm.image-tag": "quay.io/prometheus/node-exporter",
        }
    ) == ManifestTarget(
        helm=HelmTarget("frontend.deployment.image.name", "quay.io/prometheus/node-exporter")
    )


# --- 2f write-back ------------------------------------------------------------------------------


def wbc(**ann: str) -> WriteBackLayer | None:
    return read_write_back(app({f"{P}/{k}": v for k, v in ann.items()}))


def test_an55_to_an62() -> None:
    assert wbc() is None
    assert wbc(**{"write-back-method": "", "git-branch": " "}) is None
    assert wbc(**{"write-back-method": "argocd"}) == WriteBackLayer(method="argocd")
    assert wbc(**{"write-back-method": "  git  "}) == WriteBackLayer(method="git")
    assert wbc(**{"write-back-target": "helmvalues:./values.yaml"}) == WriteBackLayer(
        git=GitSettings(write_back_target="helmvalues:./values.yaml")
    )
    assert wbc(
        **{
            "write-back-target": "kustomization:./overlays/prod",
            "git-branch": "main:feature-branch",
            "git-repository": "https://github.com/example/repo.git",
        }
    ) == WriteBackLayer(
        git=GitSettings(
            repository="https://github.com/example/repo.git",
            branch="main:feature-branch",
            write_back_target="kustomization:./overlays/prod",
        )
    )
    assert wbc(**{"git-branch": "", "git-repository": "r"}) == WriteBackLayer(
        git=GitSettings(repository="r")
    )
    assert wbc(
        **{"write-back-method": "git:https://github.com/example/repo.git"}
    ) == WriteBackLayer(method="git:https://github.com/example/repo.git")
    assert wbc(**{"git-branch": "main:update-branch"}) == WriteBackLayer(
        git=GitSettings(branch="main:update-branch")
    )


def test_is_annotated() -> None:
    assert is_annotated(app({IMAGE_LIST: ""}))
    assert not is_annotated(app({f"{P}/update-strategy": "semver"}))


# --- v0.x reading -------------------------------------------------------------------------------


def v0(annotations: dict[str, str]) -> tuple[Any, list[str]]:
    full = {k if k == IMAGE_LIST else f"{P}/{k}": v for k, v in annotations.items()}
    return config_from_annotations_v0(app(full))


def test_v0_image_list_items_kept_verbatim() -> None:
    cfg, _ = v0({IMAGE_LIST: " foo, bar "})
    assert [(i.alias, i.image) for i in cfg.images] == [("", "foo"), ("", "bar")]
    cfg, _ = v0({IMAGE_LIST: " foo, bar,baz = qux "})
    assert [(i.alias, i.image) for i in cfg.images] == [("", "foo"), ("", "bar"), ("baz ", " qux")]
    cfg, _ = v0({IMAGE_LIST: "foo=bar", "foo.kustomize.image-name": "baz"})
    assert cfg.images[0].image == "bar"
    assert cfg.images[0].target == ManifestTarget(kustomize=KustomizeTarget("baz"))
    cfg, _ = v0({IMAGE_LIST: "nginx, quay.io/dexidp/dex:v1.23.0"})
    assert len(cfg.images) == 2
    assert cfg.origin == "annotations" and cfg.is_legacy


def test_v0_missing_and_empty_list() -> None:
    with pytest.raises(AnnotationError, match="annotation not found"):
        config_from_annotations_v0(app())
    cfg, warnings = v0({IMAGE_LIST: " , "})
    assert cfg.images == ()
    assert any("annotation is empty" in w for w in warnings)


def test_v0_alias_slash_becomes_underscore() -> None:
    cfg, _ = v0(
        {
            IMAGE_LIST: "foo/dummy=foo/bar:1.12",
            "foo_dummy.helm.image-name": "release.name",
            "foo_dummy.helm.image-tag": "release.tag",
            "foo_dummy.force-update": "true",
        }
    )
    (img,) = cfg.images
    assert img.alias == "foo/dummy"
    assert img.target == ManifestTarget(helm=HelmTarget(name="release.name", tag="release.tag"))
    assert img.settings.force_update is True


def test_v0_helm_spec_wins_and_no_alias_means_defaults() -> None:
    cfg, _ = v0(
        {
            IMAGE_LIST: "dummy=foo/bar:1.12, foo/baz",
            "dummy.helm.image-name": "release.name",
            "dummy.helm.image-tag": "release.tag",
            "dummy.helm.image-spec": "release.image",
            ".helm.image-name": "ignored",
        }
    )
    assert cfg.images[0].target == ManifestTarget(helm=HelmTarget(spec="release.image"))
    assert cfg.images[1].target is None


def test_v0_other_alias_annotations_do_not_apply() -> None:
    cfg, _ = v0({IMAGE_LIST: "dummy2=x", "dummy.kustomize.image-name": "argoproj/argo-cd"})
    assert cfg.images[0].target is None


# AN-67
@pytest.mark.parametrize(
    ("ann", "expected"),
    [
        ({"dummy.force-update": "true"}, True),
        ({"dummy.force-update": "true", "force-update": "false"}, True),
        ({"force-update": "false"}, False),
        ({"force-update": "true"}, True),
        ({"dummy.force-update": "True"}, False),
        ({"dummy.force-update": "1"}, False),
        ({}, None),
    ],
)
def test_v0_force_update_only_exact_true(ann: dict[str, str], expected: bool | None) -> None:
    cfg, _ = v0({IMAGE_LIST: "dummy=foo/bar", **ann})
    assert cfg.images[0].settings.force_update is expected
    assert cfg.images[0].settings.effective_force_update is bool(expected)


# AN-68
def test_v0_pull_secret_image_beats_app_wide() -> None:
    cfg, _ = v0(
        {
            IMAGE_LIST: "dummy=foo/bar",
            "dummy.pull-secret": "pullsecret:image/specific",
            "pull-secret": "pullsecret:app/wide",
        }
    )
    assert cfg.images[0].settings.pull_secret == "pullsecret:image/specific"
    cfg, _ = v0({IMAGE_LIST: "dummy=foo/bar", "pull-secret": "pullsecret:app/wide"})
    assert cfg.images[0].settings.pull_secret == "pullsecret:app/wide"
    cfg, _ = v0({IMAGE_LIST: "dummy=foo/bar"})
    assert cfg.images[0].settings.pull_secret is None


# AN-69
def test_v0_ignore_tags_drop_empty_entries() -> None:
    cfg, _ = v0({IMAGE_LIST: "dummy=foo/bar", "dummy.ignore-tags": "tag1, ,tag2,  tag3  , tag4"})
    assert cfg.images[0].settings.ignore_tags == ("tag1", "tag2", "tag3", "tag4")
    cfg, _ = v0({IMAGE_LIST: "dummy=foo/bar"})
    assert cfg.images[0].settings.ignore_tags is None
    cfg, _ = v0(
        {
            IMAGE_LIST: "dummy=foo/bar",
            "dummy.ignore-tags": "tag1, tag2",
            "ignore-tags": "tag3, tag4",
        }
    )
    assert cfg.images[0].settings.ignore_tags == ("tag1", "tag2")
    cfg, _ = v0({IMAGE_LIST: "dummy=foo/bar", "ignore-tags": "tag3, tag4"})
    assert cfg.images[0].settings.ignore_tags == ("tag3", "tag4")


# ST-7
def test_v0_strategy_lookup() -> None:
    cfg, _ = v0(
        {
            IMAGE_LIST: "a=x, b=y",
            "a.update-strategy": "alphabetical",
            "update-strategy": "newest-build",
        }
    )
    assert [i.settings.strategy for i in cfg.images] == ["alphabetical", "newest-build"]
    cfg, _ = v0({IMAGE_LIST: "a=x", "update-strategy": "digest"})
    assert cfg.images[0].settings.effective_strategy == "digest"
    cfg, _ = v0({IMAGE_LIST: "a=x"})
    assert cfg.images[0].settings.effective_strategy == "semver"


def test_v0_tag_match_fallback_warns() -> None:
    cfg, warnings = v0({IMAGE_LIST: "a=x", "a.tag-match": "regexp:^v1"})
    assert cfg.images[0].settings.allow_tags == "regexp:^v1"
    assert warnings == [TAG_MATCH_DEPRECATED]
    cfg, warnings = v0({IMAGE_LIST: "a=x", "a.tag-match": "regexp:^v1", "allow-tags": "regexp:^v2"})
    assert cfg.images[0].settings.allow_tags == "regexp:^v2"
    assert warnings == []


def test_v0_platforms_are_per_image_only() -> None:
    cfg, _ = v0(
        {
            IMAGE_LIST: "a=x, b=y",
            "a.platforms": "linux/amd64, ,linux/arm64",
            "platforms": "linux/s390x",
        }
    )
    assert cfg.images[0].settings.platforms == ("linux/amd64", "linux/arm64")
    assert cfg.images[1].settings.platforms is None


def test_v0_write_back() -> None:
    cfg, _ = v0({IMAGE_LIST: "a=x"})
    assert cfg.write_back == WriteBack()
    cfg, _ = v0(
        {
            IMAGE_LIST: "a=x",
            "write-back-method": "git:secret:other-ns/creds",
            "git-branch": "main:image-updates",
            "write-back-target": "kustomization:../base",
        }
    )
    assert cfg.write_back.is_git
    assert cfg.write_back.git_credentials_ref == "secret:other-ns/creds"
    assert (cfg.write_back.base_branch, cfg.write_back.write_branch) == ("main", "image-updates")
    with pytest.raises(AnnotationError, match="invalid update mechanism") as err:
        v0({IMAGE_LIST: "a=x", "write-back-method": "svn"})
    assert f"{P}/write-back-method='svn'" in str(err.value)
    with pytest.raises(AnnotationError, match="secret:<namespace>/<name>"):
        v0({IMAGE_LIST: "a=x", "write-back-method": "git:secret:creds"})


def test_min_age_annotations_per_image_and_application_wide() -> None:
    cfg, _ = v0(
        {
            IMAGE_LIST: "web=nginx,api=redis",
            "min-age": "24h",
            "web.min-age": "72h",
            "web.min-age-from": "created",
        }
    )
    web, api = cfg.images
    assert (web.settings.min_age, web.settings.min_age_from) == ("72h", "created")
    assert web.settings.where("min_age") == (
        f"Application argocd/guestbook annotation {P}/web.min-age"
    )
    assert (api.settings.min_age, api.settings.min_age_from) == ("24h", None)
    settings = read_update_settings(app({f"{P}/web.min-age": " 1h "}), "web")
    assert settings is not None and settings.min_age == "1h"
