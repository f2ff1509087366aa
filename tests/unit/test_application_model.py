from __future__ import annotations

from typing import Any

import pytest

from argocd_image_updater.model.application import (
    Application,
    ApplicationError,
    EnvEntry,
    HelmParameter,
    SourceType,
    forced_source_type,
)


def app_obj(
    *,
    source: dict[str, Any] | None = None,
    sources: list[dict[str, Any]] | None = None,
    hydrator: dict[str, Any] | None = None,
    source_type: str | None = None,
    source_types: list[str] | None = None,
    images: list[str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"project": "default"}
    if source is not None:
        spec["source"] = source
    if sources is not None:
        spec["sources"] = sources
    if hydrator is not None:
        spec["sourceHydrator"] = {"drySource": hydrator, "syncSource": {"targetBranch": "env"}}
    status: dict[str, Any] = {}
    if source_type is not None:
        status["sourceType"] = source_type
    if source_types is not None:
        status["sourceTypes"] = source_types
    if images is not None:
        status["summary"] = {"images": images}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": "guestbook",
            "namespace": "argocd",
            "labels": {"team": "a"},
            "annotations": {"x": "y"},
            "resourceVersion": "42",
            "uid": "u-1",
        },
        "spec": spec,
        "status": status,
    }


def test_metadata_and_single_source_fields() -> None:
    app = Application.from_object(
        app_obj(
            source={
                "repoURL": "https://example.com/repo",
                "path": "charts/app",
                "targetRevision": "main",
                "helm": {
                    "parameters": [
                        {"name": "image.tag", "value": "1.0", "forceString": True},
                        {"name": "replicas", "value": "2"},
                    ]
                },
            },
            source_type="Helm",
        )
    )
    assert (app.name, app.namespace, app.qualified_name) == (
        "guestbook",
        "argocd",
        "argocd/guestbook",
    )
    assert dict(app.labels) == {"team": "a"}
    assert dict(app.annotations) == {"x": "y"}
    assert (app.resource_version, app.uid) == ("42", "u-1")
    assert app.raw["kind"] == "Application"
    assert not app.is_multi_source
    (src,) = app.sources
    assert src.spec_path == ("source",)
    assert src.index is None
    assert (src.repo_url, src.path, src.target_revision) == (
        "https://example.com/repo",
        "charts/app",
        "main",
    )
    assert src.kind is SourceType.HELM
    assert src.helm_parameters == (
        HelmParameter("image.tag", "1.0", True),
        HelmParameter("replicas", "2", False),
    )
    assert src.helm_parameter("image.tag") == HelmParameter("image.tag", "1.0", True)
    assert src.helm_parameter("missing") is None


def test_kustomize_images_and_plugin_env() -> None:
    app = Application.from_object(
        app_obj(
            sources=[
                {"repoURL": "r1", "kustomize": {"images": ["nginx:1.0", "a=b:2"]}},
                {
                    "repoURL": "r2",
                    "plugin": {"name": "cmp", "env": [{"name": "IMG", "value": "x"}]},
                },
            ],
            source_types=["Kustomize", "Plugin"],
        )
    )
    first, second = app.sources
    assert first.kustomize_images == ("nginx:1.0", "a=b:2")
    assert first.kind is SourceType.KUSTOMIZE
    assert second.plugin_name == "cmp"
    assert second.plugin_env == (EnvEntry("IMG", "x"),)
    assert second.plugin_env_value("IMG") == "x"
    assert second.spec_path == ("sources", 1)
    assert second.index == 1


# UA-37 / UA-38
def test_live_images_come_from_status_summary() -> None:
    imgs = ["nginx:1.12.2", "that/image", "quay.io/dexidp/dex:v1.23.0"]
    assert Application.from_object(app_obj(images=imgs)).live_images == tuple(imgs)
    assert Application.from_object(app_obj()).live_images == ()


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda o: o.pop("metadata"), "metadata"),
        (lambda o: o["metadata"].pop("name"), "metadata.name"),
        (lambda o: o["metadata"].__setitem__("labels", {"a": 1}), "metadata.labels.a"),
        (lambda o: o["spec"].__setitem__("source", "x"), "spec.source"),
        (
            lambda o: o["spec"].__setitem__("sources", [{"helm": {"parameters": [{"name": 5}]}}]),
            "spec.sources[0].helm.parameters[0].name",
        ),
        (
            lambda o: o["spec"].__setitem__("source", {"kustomize": {"images": "nginx"}}),
            "spec.source.kustomize.images",
        ),
        (
            lambda o: o["status"].__setitem__("summary", {"images": ["a", 3]}),
            "status.summary.images[1]",
        ),
        (lambda o: o["status"].__setitem__("sourceTypes", "Helm"), "status.sourceTypes"),
    ],
)
def test_malformed_objects_name_the_field(mutate: Any, path: str) -> None:
    obj = app_obj(source={"repoURL": "r"})
    mutate(obj)
    with pytest.raises(ApplicationError) as err:
        Application.from_object(obj)
    assert f"{path}:" in str(err.value)


def test_non_mapping_is_rejected() -> None:
    with pytest.raises(ApplicationError, match="expected an object"):
        Application.from_object(["not", "an", "app"])  # type: ignore[arg-type]


# §6.1 detection order
@pytest.mark.parametrize(
    ("status_type", "expected"),
    [
        ("Helm", SourceType.HELM),
        ("Kustomize", SourceType.KUSTOMIZE),
        ("Plugin", SourceType.PLUGIN),
        ("Directory", SourceType.DIRECTORY),
        ("", SourceType.UNKNOWN),
        ("Jsonnet", SourceType.UNKNOWN),
    ],
)
def test_single_source_type_comes_from_status(status_type: str, expected: SourceType) -> None:
    app = Application.from_object(app_obj(source={"repoURL": "r"}, source_type=status_type))
    assert app.source_type() is expected


def test_supported_types() -> None:
    assert [t for t in SourceType if t.is_supported] == [
        SourceType.HELM,
        SourceType.KUSTOMIZE,
        SourceType.PLUGIN,
    ]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("kustomization", SourceType.KUSTOMIZE),
        ("kustomization:../bar", SourceType.KUSTOMIZE),
        ("helmvalues", SourceType.HELM),
        ("helmvalues:/env/values-prod.yaml", SourceType.HELM),
        ("target/folder/app-parameters.yaml", SourceType.HELM),
        ("values.yml", SourceType.HELM),
        ("path/.argocd-source-app.yaml", None),
        ("helmvalues:/x/values.json", None),
        ("some/file.txt", None),
        ("", None),
        (None, None),
    ],
)
def test_forced_source_type(target: str | None, expected: SourceType | None) -> None:
    assert forced_source_type(target) is expected


# WB-29 / WB-31: the write-back target forces the type
def test_target_forces_type_over_status() -> None:
    plugin = Application.from_object(app_obj(source={"repoURL": "r"}, source_type="Plugin"))
    assert plugin.source_type() is SourceType.PLUGIN
    assert plugin.source_type("kustomization:.") is SourceType.KUSTOMIZE
    multi = Application.from_object(
        app_obj(sources=[{"repoURL": "a"}, {"repoURL": "b"}], source_types=["Kustomize", "Helm"])
    )
    assert multi.source_type() is SourceType.KUSTOMIZE
    assert multi.source_type("values/prod.yaml") is SourceType.HELM
    assert multi.source_type("dir/.argocd-source-guestbook.yaml") is SourceType.KUSTOMIZE
    directory = Application.from_object(app_obj(source={"repoURL": "r"}, source_type="Directory"))
    assert directory.source_type("helmvalues") is SourceType.HELM


def test_multi_source_type_is_first_supported_status_type_else_directory() -> None:
    app = Application.from_object(
        app_obj(
            sources=[{"repoURL": "a"}, {"repoURL": "b"}],
            source_types=["Directory", "Plugin", "Helm"],
            source_type="Helm",
        )
    )
    assert app.source_type() is SourceType.PLUGIN
    none = Application.from_object(
        app_obj(sources=[{"repoURL": "a"}], source_types=["Directory"], source_type="Helm")
    )
    assert none.source_type() is SourceType.DIRECTORY


# WB-33
def test_source_hydrator_uses_the_dry_source_block() -> None:
    app = Application.from_object(
        app_obj(
            hydrator={
                "repoURL": "https://g/r",
                "path": "app",
                "targetRevision": "main",
                "helm": {},
            },
            source_type="Directory",
        )
    )
    assert app.source_type() is SourceType.HELM
    src = app.write_source()
    assert src.spec_path == ("sourceHydrator", "drySource")
    assert (src.repo_url, src.path, src.target_revision) == ("https://g/r", "app", "main")
    assert app.source_hydrator == src
    plain = Application.from_object(
        app_obj(hydrator={"repoURL": "r", "path": "p"}, source_type="Kustomize")
    )
    assert plain.source_type() is SourceType.KUSTOMIZE


# WB-32
def test_multi_source_write_source_prefers_block_of_detected_type() -> None:
    sources: list[dict[str, Any]] = [
        {"repoURL": "chart-repo", "chart": "redis", "targetRevision": "18.2.3"},
        {"repoURL": "git-repo", "path": "k", "kustomize": {}},
        {"repoURL": "git-repo", "path": "h", "helm": {}},
    ]
    helm = Application.from_object(app_obj(sources=sources, source_types=["Helm", "Kustomize"]))
    assert helm.write_source().spec_path == ("sources", 2)
    kust = Application.from_object(app_obj(sources=sources, source_types=["Kustomize", "Helm"]))
    assert kust.write_source().spec_path == ("sources", 1)


def test_multi_source_write_source_uses_status_index_when_no_block() -> None:
    sources = [
        {"repoURL": "https://charts.bitnami.com", "chart": "redis", "targetRevision": "18.2.3"},
        {"repoURL": "https://git/repo", "path": "overlays/prod", "targetRevision": "main"},
    ]
    app = Application.from_object(app_obj(sources=sources, source_types=["Helm", "Kustomize"]))
    assert app.write_source("kustomization").spec_path == ("sources", 1)
    assert app.write_source().spec_path == ("sources", 0)


def test_multi_source_falls_back_to_any_block_then_first() -> None:
    with_block = Application.from_object(
        app_obj(
            sources=[{"repoURL": "a"}, {"repoURL": "b", "plugin": {}}],
            source_types=["Directory", "Directory"],
        )
    )
    assert with_block.write_source().spec_path == ("sources", 1)
    bare = Application.from_object(
        app_obj(sources=[{"repoURL": "a"}, {"repoURL": "b"}], source_types=["Directory"])
    )
    assert bare.write_source().spec_path == ("sources", 0)
    assert bare.is_multi_source


def test_write_source_without_any_source_is_an_error() -> None:
    app = Application.from_object(app_obj())
    with pytest.raises(
        ApplicationError, match="application source is not defined for argocd/guestbook"
    ):
        app.write_source()


# WB-35 .. WB-38 (the caller falls back to the write source when no repo matches)
def test_source_for_repo() -> None:
    app = Application.from_object(
        app_obj(
            sources=[
                {
                    "repoURL": "https://charts.bitnami.com",
                    "chart": "redis",
                    "targetRevision": "18.2.3",
                    "helm": {},
                },
                {"repoURL": "https://git/repo", "targetRevision": "main"},
            ],
            source_types=["Helm", "Directory"],
        )
    )
    found = app.source_for_repo("https://git/repo")
    assert found is not None and found.target_revision == "main"
    assert app.source_for_repo("https://other") is None
    assert app.write_source().target_revision == "18.2.3"


def test_application_view_is_hashable_by_identity() -> None:
    obj = app_obj(source={"repoURL": "r"})
    a, b = Application.from_object(obj), Application.from_object(obj)
    assert a != b
    assert len({a, a, b}) == 2
