"""``writeBackTarget: application:<file>``: the Application's own manifest in Git is edited
byte-exact (only the changed values), in the documents naming the Application."""

from __future__ import annotations

from typing import Any

import pytest

from argocd_image_updater.model.application import Application, forced_source_type
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.update_config import (
    AppUpdateConfig,
    GitSettings,
    ImageSpec,
    WriteBack,
)
from argocd_image_updater.plan.charts import is_application_target
from argocd_image_updater.plan.model import (
    AppPlan,
    ImageChange,
    ImageResult,
    Outcome,
    ParamEdit,
    RevisionEdit,
)
from argocd_image_updater.writeback.formats import TargetError, named, parse_target

IMAGE = "ghcr.io/example/web"
WHO = "Application 'argocd/web'"


def _config(source: dict[str, Any], target: str = "application:apps/web.yaml") -> AppUpdateConfig:
    spec: dict[str, Any] = {"source": source} if "repoURL" in source else {"sources": source["s"]}
    app = Application.from_object(
        {"metadata": {"name": "web", "namespace": "argocd"}, "spec": spec, "status": {}}
    )
    write_back = WriteBack(method="git", git=GitSettings(write_back_target=target))
    return AppUpdateConfig(app=app, images=(ImageSpec("web", IMAGE),), write_back=write_back)


def _plan(
    edits: list[ParamEdit],
    source_path: tuple[str | int, ...] = ("spec", "source"),
    revisions: tuple[RevisionEdit, ...] = (),
) -> AppPlan:
    result = ImageResult(
        "web", IMAGE, f"{IMAGE}:1.0", f"{IMAGE}:2.0", Outcome.UPDATED, "updated", ""
    )
    change = ImageChange("web", ImageRef.parse(IMAGE), "1.0", "2.0", "", edits=tuple(edits))
    return AppPlan.build(
        app_name="web",
        app_namespace="argocd",
        source_path=source_path,
        source_type="Helm",
        results=[result],
        changes=[change],
        managed=edits,
        revisions=revisions,
    )


def _render(text: str | None, config: AppUpdateConfig, plan: AppPlan) -> str | None:
    return named("application").render(text, "apps/web.yaml", config, plan)


HELM_SOURCE = {"repoURL": "https://git.example.com/r", "path": "web", "helm": {}}
TAG = ParamEdit("helm", "image.tag", "2.0", changed=True)

CHILDREN = """\
# Children of the platform.
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: api   # another child
spec:
  source:
    helm:
      parameters:
      - name: image.tag
        value: "1.0"
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
spec:
  source:
    repoURL: https://git.example.com/r
    path: web
    helm:
      parameters:
        - name: image.tag   # set by the updater
          value: "1.0"
          forceString: true
        - name: replicas
          value: "2"
"""


def test_the_named_application_alone_is_edited_byte_exact() -> None:
    new = _render(CHILDREN, _config(HELM_SOURCE), _plan([TAG]))
    assert new == CHILDREN.replace(
        '# set by the updater\n          value: "1.0"',
        '# set by the updater\n          value: "2.0"',
    )


def test_a_missing_parameter_is_added_and_an_equal_file_is_left_alone() -> None:
    text = (
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web}\n"
        "spec:\n  source:\n    repoURL: https://git.example.com/r  # repo\n    helm:\n"
        "      valueFiles: [values.yaml]\n"
    )
    config = _config(HELM_SOURCE)
    new = _render(text, config, _plan([TAG]))
    assert new is not None and new.startswith(text)
    assert "parameters:" in new and "image.tag" in new
    assert _render(new, config, _plan([TAG])) is None


def test_kustomize_images_are_matched_by_name() -> None:
    text = (
        "apiVersion: argoproj.io/v1\nkind: Application\nmetadata:\n  name: web\nspec:\n"
        "  source:\n    kustomize:\n      images:\n      - other:3\n"
        f"      - {IMAGE}:1.0  # pinned\n"
    )
    edit = ParamEdit("kustomize", IMAGE, f"{IMAGE}:2.0", changed=True)
    new = _render(text, _config({"repoURL": "https://x", "kustomize": {}}), _plan([edit]))
    assert new == text.replace(f"{IMAGE}:1.0", f"{IMAGE}:2.0")


def test_multi_source_the_planned_source_and_chart_versions_are_written() -> None:
    text = (
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\nspec:\n"
        "  sources:\n  - repoURL: https://charts.example.com\n    chart: web\n"
        "    targetRevision: 1.2.0  # chart\n  - repoURL: https://git.example.com/r\n"
        "    helm:\n      parameters: []\n"
    )
    config = _config({"s": [{"repoURL": "https://x"}, {"repoURL": "https://y"}]})
    revision = RevisionEdit("web", ("spec", "sources", 0), "1.2.0", "1.3.0")
    new = _render(text, config, _plan([TAG], ("spec", "sources", 1), (revision,)))
    assert new == text.replace("1.2.0", "1.3.0").replace(
        "[]", '[{name: image.tag, value: "2.0", forceString: true}]'
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, "no such file"),
        ("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: api}\n", "no "),
        (
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\n"
            "metadata: {name: web, namespace: other}\n",
            "no Application named 'web'",
        ),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n", "no Application"),
        (
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web}\n",
            "not found",
        ),
        ("a: [\n", "not valid YAML"),
    ],
)
def test_errors_name_the_file(text: str | None, problem: str) -> None:
    with pytest.raises(TargetError) as err:
        _render(text, _config(HELM_SOURCE), _plan([TAG]))
    assert str(err.value).startswith("apps/web.yaml: ") and problem in str(err.value)


@pytest.mark.parametrize(
    ("text", "path"),
    [("application:apps/web.yaml", "apps/web.yaml"), ("application:/a/../b/web.yml", "b/web.yml")],
)
def test_parse_from_the_repository_root(text: str, path: str) -> None:
    parsed = parse_target(text, "src", "src/.argocd-source-web.yaml", WHO)
    assert (parsed.kind, parsed.file_path) == ("application", path)
    assert forced_source_type(text) is None and is_application_target(text)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("application", "name the file"),
        ("application:", "name the file"),
        ("application:apps/", "name the file"),
        ("application:/", "name the file"),
        ("application:../x.yaml", "leaves the repository"),
    ],
)
def test_parse_refuses(text: str, problem: str) -> None:
    with pytest.raises(TargetError) as err:
        parse_target(text, "src", "src/.argocd-source-web.yaml", WHO)
    assert f"{WHO}: gitConfig.writeBackTarget '{text}'" in str(err.value)
    assert problem in str(err.value)
