"""Finding an app of apps' parent (``writeBackTarget: application``): the tracking annotation
wins over the instance label; ``<namespace>_<name>`` names a parent in another namespace."""

from __future__ import annotations

from typing import Any

import pytest

from argocd_image_updater.model.application import Application
from argocd_image_updater.writeback.formats.base import TargetError
from argocd_image_updater.writeback.parent import find_parent, parent_ref
from argocd_image_updater_testing import objects


def child(
    labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> Application:
    return Application.from_object(
        objects.application("web", "team", labels=labels, annotations=annotations)
    )


@pytest.mark.parametrize(
    ("labels", "annotations", "expected"),
    [
        ({"app.kubernetes.io/instance": "platform"}, None, ("argocd", "platform")),
        ({"app.kubernetes.io/instance": "ops_platform"}, None, ("ops", "platform")),
        (
            {"app.kubernetes.io/instance": "other"},
            {"argocd.argoproj.io/tracking-id": "platform:argoproj.io/Application:team/web"},
            ("argocd", "platform"),
        ),
        (None, None, None),
        ({"app.kubernetes.io/instance": " "}, None, None),
    ],
)
def test_the_parent_is_named_by_the_tracking_annotation_or_label(
    labels: dict[str, str] | None,
    annotations: dict[str, str] | None,
    expected: tuple[str, str] | None,
) -> None:
    assert parent_ref(child(labels, annotations), "argocd") == expected


@pytest.mark.parametrize("repo_url", ["", "https://git.example.com/deploy.git"])
async def test_the_parent_and_its_source_are_read_or_the_error_names_them(repo_url: str) -> None:
    parent = objects.application("platform", "argocd", repo_url=repo_url, path="apps")

    async def lookup(namespace: str, name: str) -> dict[str, Any] | None:
        return parent if (namespace, name) == ("argocd", "platform") else None

    if not repo_url:
        with pytest.raises(TargetError, match="'argocd/platform' has no source repoURL"):
            await find_parent(child({"app.kubernetes.io/instance": "platform"}), "argocd", lookup)
        return
    found, source = await find_parent(
        child({"app.kubernetes.io/instance": "platform"}), "argocd", lookup
    )
    assert (found.name, source.path, source.repo_url) == ("platform", "apps", repo_url)
    with pytest.raises(TargetError, match="the parent Application 'argocd/gone' is not found"):
        await find_parent(child({"app.kubernetes.io/instance": "gone"}), "argocd", lookup)
