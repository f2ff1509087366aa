"""Write-back target formats: the registry, and each format reads back what it renders."""

from __future__ import annotations

from typing import Any

import pytest

from argocd_image_updater.model.application import Application
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.update_config import (
    AppUpdateConfig,
    GitSettings,
    ImageSpec,
    WriteBack,
)
from argocd_image_updater.plan.jobs import edit_kind
from argocd_image_updater.plan.model import AppPlan, ImageResult, Outcome, ParamEdit
from argocd_image_updater.plan.params import thaw
from argocd_image_updater.writeback.formats import (
    DEFAULT_FORMAT,
    TargetError,
    formats,
    named,
    parse_target,
)
from argocd_image_updater.writeback.formats.base import ImageLookup

IMAGE = "ghcr.io/example/web"


def test_formats_are_found_by_name_in_position_order() -> None:
    assert [f.name for f in formats()] == [
        "application",
        "chartfile",
        "kustomization",
        "override",
        "helmvalues",
        "directory",
    ]
    assert named(DEFAULT_FORMAT).prefix is None
    assert all(named(f.name) is f for f in formats())
    with pytest.raises(KeyError):
        named("jsonnet")


@pytest.mark.parametrize(
    ("text", "kind", "path"),
    [
        ("", "override", "app/.argocd-source-web.yaml"),
        ("kustomization", "kustomization", "app"),
        ("kustomization:/base", "kustomization", "base"),
        ("helmvalues", "helmvalues", "app/values.yaml"),
        ("helmvalues:prod.yaml", "helmvalues", "app/prod.yaml"),
        ("/env/.argocd-source-web.yaml", "override", "env/.argocd-source-web.yaml"),
        ("env/values.yml", "helmvalues", "env/values.yml"),
        ("env/params.json", "override", "env/params.json"),
    ],
)
def test_parse_target(text: str, kind: str, path: str) -> None:
    parsed = parse_target(text, "app", "app/.argocd-source-web.yaml", "Application 'argocd/web'")
    assert (parsed.kind, parsed.file_path) == (kind, path)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("kustomizations", "use 'kustomization'"),
        ("base/kustomization.yaml", "is a kustomization file"),
        ("env/", "names a directory"),
        ("../outside.yaml", "leaves the repository"),
        ("helmvalues:/", "names a directory"),
    ],
)
def test_parse_target_refuses_naming_the_setting(text: str, problem: str) -> None:
    with pytest.raises(TargetError) as err:
        parse_target(text, "app", "app/.argocd-source-web.yaml", "Application 'argocd/web'")
    assert f"Application 'argocd/web': gitConfig.writeBackTarget '{text}'" in str(err.value)
    assert problem in str(err.value)


def _config(source_type: str, block: dict[str, Any], target: str) -> AppUpdateConfig:
    app = Application.from_object(
        {
            "metadata": {"name": "web", "namespace": "argocd"},
            "spec": {"source": {"repoURL": "https://git.example.com/r", "path": "app", **block}},
            "status": {"sourceType": source_type},
        }
    )
    write_back = WriteBack(method="git", git=GitSettings(write_back_target=target))
    return AppUpdateConfig(app=app, images=(ImageSpec("web", IMAGE),), write_back=write_back)


def _plan(config: AppUpdateConfig, edits: list[ParamEdit]) -> AppPlan:
    result = ImageResult(
        "web", IMAGE, f"{IMAGE}:1.0", f"{IMAGE}:2.0", Outcome.UPDATED, "updated", ""
    )
    return AppPlan.build(
        app_name="web",
        app_namespace="argocd",
        source_path=("spec", "source"),
        source_type=config.app.source_type(config.write_back.write_back_target).value,
        results=[result],
        managed=edits,
    )


HELM = ("Helm", {"helm": {}})
HELM_EDITS = [
    ParamEdit("helm", "image.name", IMAGE, changed=True),
    ParamEdit("helm", "image.tag", "2.0", changed=True),
]
KUSTOMIZE = ("Kustomize", {"kustomize": {}})
KUSTOMIZE_EDITS = [ParamEdit("kustomize", IMAGE, f"{IMAGE}:2.0", changed=True)]


@pytest.mark.parametrize(
    ("app", "edits", "target", "existing"),
    [
        (HELM, HELM_EDITS, "", None),
        (HELM, HELM_EDITS, "helmvalues", "image:\n  name: old\n  tag: '1.0'\n"),
        (KUSTOMIZE, KUSTOMIZE_EDITS, "", "kustomize:\n  images:\n  - other:3\n"),
        (KUSTOMIZE, KUSTOMIZE_EDITS, "kustomization", "resources:\n- app.yaml\n"),
    ],
)
def test_each_format_reads_back_what_it_renders(
    app: tuple[str, dict[str, Any]], edits: list[ParamEdit], target: str, existing: str | None
) -> None:
    config = _config(*app, target)
    parsed = parse_target(target, "app", "app/.argocd-source-web.yaml", "web")
    fmt = named(parsed.kind)
    text = fmt.render(existing, parsed.file_path, config, _plan(config, edits))
    assert text is not None
    cfg = ImageRef.parse(IMAGE)
    kind, names, kustomize_name = edit_kind(
        config.app.source_type(target or None), None, config.write_back
    )
    lookup = ImageLookup(kind, names, kustomize_name, cfg)
    source = thaw(config.app.write_source(target or None).raw)
    # (a values file keeps its short form of the name: example/web)
    assert fmt.current_image(text, source, lookup).endswith("example/web:2.0")
    assert fmt.current_image(existing, source, lookup) in ("", "old:1.0")
