"""Local mode, pure part: source types and current images read from files (no cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from argocd_image_updater.local.current import (
    FileSnapshot,
    TargetText,
    current_image,
    detect_source_type,
    fill_current,
    with_status,
)
from argocd_image_updater.local.manifests import load_manifests
from argocd_image_updater.model.application import Application, SourceType
from argocd_image_updater.model.update_config import (
    AppUpdateConfig,
    GitSettings,
    HelmTarget,
    ImageSpec,
    ManifestTarget,
    WriteBack,
)

IMAGE = "registry.example.com/shop/web"


def _app(source: dict[str, Any], source_type: SourceType) -> Application:
    raw = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web", "namespace": "argocd"},
        "spec": {"source": {"repoURL": "https://git.example.com/deploy.git", **source}},
    }
    return Application.from_object(with_status(raw, [source_type]))


def _config(app: Application, target: str | None = None, *, helm: HelmTarget | None = None):
    write_back = (
        WriteBack(method="git", git=GitSettings(write_back_target=target))
        if target is not None
        else WriteBack()
    )
    spec = ImageSpec(
        alias="web", image=IMAGE, target=ManifestTarget(helm=helm) if helm is not None else None
    )
    return AppUpdateConfig(app=app, images=(spec,), write_back=write_back)


@pytest.mark.parametrize(
    ("source", "files", "expected"),
    [
        ({"kustomize": {}}, None, SourceType.KUSTOMIZE),
        ({"helm": {"parameters": []}}, ["kustomization.yaml"], SourceType.HELM),
        ({"chart": "web"}, None, SourceType.HELM),
        ({"plugin": {"name": "cmp"}}, None, SourceType.PLUGIN),
        ({"path": "apps/web"}, ["kustomization.yml", "deploy.yaml"], SourceType.KUSTOMIZE),
        ({"path": "apps/web"}, ["Kustomization"], SourceType.KUSTOMIZE),
        ({"path": "charts/web"}, ["Chart.yaml", "values.yaml"], SourceType.HELM),
        ({"path": "raw"}, ["deploy.yaml"], SourceType.DIRECTORY),
        ({"path": "raw"}, None, SourceType.UNKNOWN),
    ],
)
def test_source_type_is_detected_like_the_repo_server(
    source: dict[str, Any], files: list[str] | None, expected: SourceType
) -> None:
    assert detect_source_type(source, files) is expected


KUSTOMIZE_APP = {"path": "apps/web", "kustomize": {"images": [f"{IMAGE}:1.0.0"]}}
HELM_APP = {
    "path": "charts/web",
    "helm": {
        "parameters": [
            {"name": "image.name", "value": IMAGE},
            {"name": "image.tag", "value": "1.0.0"},
        ]
    },
}


@pytest.mark.parametrize(
    ("source", "source_type", "target", "text", "expected"),
    [
        # argocd method: the Application's own parameters
        (KUSTOMIZE_APP, SourceType.KUSTOMIZE, None, None, f"{IMAGE}:1.0.0"),
        (HELM_APP, SourceType.HELM, None, None, f"{IMAGE}:1.0.0"),
        # .argocd-source file overrides the Application's parameters
        (
            KUSTOMIZE_APP,
            SourceType.KUSTOMIZE,
            "",
            f"kustomize:\n  images:\n  - {IMAGE}:1.2.0\n",
            f"{IMAGE}:1.2.0",
        ),
        (
            HELM_APP,
            SourceType.HELM,
            "",
            "helm:\n  parameters:\n  - name: image.tag\n    value: 1.3.0\n    forcestring: true\n",
            f"{IMAGE}:1.3.0",
        ),
        # no override file yet: the Application's parameters count
        (KUSTOMIZE_APP, SourceType.KUSTOMIZE, "", None, f"{IMAGE}:1.0.0"),
        # kustomization images
        (
            {"path": "apps/web"},
            SourceType.KUSTOMIZE,
            "kustomization",
            f"images:\n- name: {IMAGE}\n  newTag: 2.0.0\n",
            f"{IMAGE}:2.0.0",
        ),
        (
            {"path": "apps/web"},
            SourceType.KUSTOMIZE,
            "kustomization",
            f"images:\n- name: web\n  newName: {IMAGE}\n  newTag: 2.1.0\n",
            "",  # names another image: not this one
        ),
        # Helm values file
        (
            {"path": "charts/web"},
            SourceType.HELM,
            "helmvalues",
            f"image:\n  name: {IMAGE}\n  tag: '3.0.0'\n",
            f"{IMAGE}:3.0.0",
        ),
        ({"path": "charts/web"}, SourceType.HELM, "helmvalues", "replicas: 2\n", ""),
        # unparsable target: as if missing
        (KUSTOMIZE_APP, SourceType.KUSTOMIZE, "", "kustomize: [\n", f"{IMAGE}:1.0.0"),
    ],
)
def test_current_image_comes_from_where_the_write_back_writes(
    source: dict[str, Any],
    source_type: SourceType,
    target: str | None,
    text: str | None,
    expected: str,
) -> None:
    app = _app(source, source_type)
    config = _config(app, target)
    kind = {"": "override", None: "override"}.get(target, target or "override")
    found = current_image(
        app,
        config.images[0],
        config,
        TargetText(kind, text) if target is not None else None,  # type: ignore[arg-type]
    )
    assert found == expected


def test_helm_values_with_custom_keys() -> None:
    app = _app({"path": "charts/web"}, SourceType.HELM)
    config = _config(app, "helmvalues", helm=HelmTarget(name="web.repo", tag="web.version"))
    text = f"web:\n  repo: {IMAGE}\n  version: 4.0.0\n"
    assert (
        current_image(app, config.images[0], config, TargetText("helmvalues", text))
        == f"{IMAGE}:4.0.0"
    )


DEPLOY = f"""\
apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
      - {{name: proxy, image: nginx:1.25}}
      - {{name: web, image: "{IMAGE}:2.0.0"}}
"""


def test_a_snapshot_reads_and_lists_like_a_work_tree() -> None:
    tree = FileSnapshot({"a/x.yaml": "x", "a/b/y.yaml": "y", "c.yaml": "c"})
    assert tree.read("a/x.yaml") == "x" and tree.read("a") is None
    assert tree.listdir("a") == ["b", "x.yaml"] and tree.listdir("d") is None
    assert tree.listdir(".") == ["a", "c.yaml"]
    assert tree.files("a", recurse=False) == ["a/x.yaml"]
    assert tree.files("a", recurse=True) == ["a/b/y.yaml", "a/x.yaml"]
    assert tree.files(".", recurse=False) == ["c.yaml"]


@pytest.mark.parametrize(
    ("directory", "files", "expected"),
    [
        ({"recurse": True}, {"raw/deep/deploy.yaml": DEPLOY}, f"{IMAGE}:2.0.0"),
        ({}, {"raw/deep/deploy.yaml": DEPLOY}, ""),  # not recursed into: not found
        ({"exclude": "deploy*"}, {"raw/deploy.yaml": DEPLOY}, ""),
        (
            {},
            {"raw/a.yaml": DEPLOY.replace("2.0.0", "1.0.0"), "raw/b.yaml": DEPLOY},
            f"{IMAGE}:1.0.0",
        ),
    ],
)
def test_a_directory_target_is_read_from_its_manifests(
    directory: dict[str, Any], files: dict[str, str], expected: str
) -> None:
    app = _app({"path": "raw", "directory": directory}, SourceType.DIRECTORY)
    config = _config(app, "directory")
    target = TargetText("directory", None, FileSnapshot(files), "raw")
    assert current_image(app, config.images[0], config, target) == expected


def test_fill_current_sets_live_images_and_forces_images_found_nowhere() -> None:
    app = _app(KUSTOMIZE_APP, SourceType.KUSTOMIZE)
    other = ImageSpec(alias="db", image="registry.example.com/shop/db")
    config = AppUpdateConfig(app=app, images=(_config(app).images[0], other))
    filled = fill_current(config, None)
    assert filled.app.live_images == (f"{IMAGE}:1.0.0",)
    assert filled.app.status_source_type == "Kustomize"
    assert [s.settings.effective_force_update for s in filled.images] == [False, True]


def test_bad_yaml_is_reported_and_the_other_files_are_used(tmp_path: Path) -> None:
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "good.yaml").write_text(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: good\n"
        "spec: {}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ignored\n"
    )
    (tmp_path / "apps" / "bad.yaml").write_text("kind: Application\nmetadata: [\n")
    (tmp_path / "apps" / "noname.yml").write_text(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {namespace: x}\n"
    )
    (tmp_path / "apps" / "iu.yaml").write_text(
        "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\n"
        "metadata: {name: iu, namespace: team}\nspec: {}\n"
    )
    (tmp_path / "chart" / "templates").mkdir(parents=True)
    (tmp_path / "chart" / "Chart.yaml").write_text("name: chart\n")
    (tmp_path / "chart" / "templates" / "app.yaml").write_text("{{ .Values.x }}: [\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "broken.yaml").write_text("[")
    found = load_manifests(tmp_path, "argocd")
    assert [m.key for m in found.applications] == [("argocd", "good")]
    assert [m.key for m in found.image_updaters] == [("team", "iu")]
    assert len(found.problems) == 2
    assert found.problems[0].startswith("apps/bad.yaml: not valid YAML, skipped: line 3, column 1")
    assert found.problems[1] == (
        "apps/noname.yml: document 1: Application: metadata.name: required field is missing, "
        "skipped"
    )


def test_an_unclosed_quote_is_reported_where_it_starts(tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n"
        'spec: {project: "default}\n# more\n# lines\n'
    )
    found = load_manifests(tmp_path, "argocd")
    assert found.problems == [
        "app.yaml: not valid YAML, skipped: line 5, column 17: a quoted scalar that is never "
        "closed (the file ends first)"
    ]


def test_duplicate_application_keeps_the_first(tmp_path: Path) -> None:
    doc = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n"
    (tmp_path / "a.yaml").write_text(doc)
    (tmp_path / "b.yaml").write_text(doc)
    found = load_manifests(tmp_path, "argocd")
    assert [m.path for m in found.applications] == ["a.yaml"]
    assert "also defined in a.yaml" in found.problems[0]


def test_parsed_files_are_cached_by_content_and_returned_as_copies(tmp_path: Path) -> None:
    doc = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {}\n"
    (tmp_path / "a.yaml").write_text(doc.format("a"))
    (tmp_path / "b.yaml").write_text(doc.format("b"))
    cache: dict[str, list[Any]] = {}
    first = load_manifests(tmp_path, "argocd", cache)
    assert len(cache) == 2
    first.applications[0].obj["metadata"]["name"] = "changed by the caller"
    (tmp_path / "b.yaml").write_text(doc.format("b2"))
    second = load_manifests(tmp_path, "argocd", cache)
    assert [m.key for m in second.applications] == [("argocd", "a"), ("argocd", "b2")]
    assert len(cache) == 2  # the old text of b.yaml is forgotten
