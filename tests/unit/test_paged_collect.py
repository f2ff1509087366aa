"""A cycle reads the Applications of a paged store page by page into its views: what it
selects is what a store listing everything at once gives."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from argocd_image_updater.controller.sources import LegacyFilter, collect
from argocd_image_updater.controller.views import ApplicationViews
from argocd_image_updater.pipeline.ports import PagedApplications

IMAGE_LIST = "argocd-image-updater.argoproj.io/image-list"


def app(name: str, version: str, image: str = "nginx") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "argocd",
            "uid": f"uid-{name}",
            "resourceVersion": version,
            "annotations": {IMAGE_LIST: f"app={image}"},
            "managedFields": [{"manager": "argocd"}],
        },
        "spec": {"source": {"repoURL": "https://example.com/r.git", "kustomize": {}}},
        "status": {
            "sourceType": "Kustomize",
            "summary": {"images": [f"{image}:1"]},
            "resources": [{"kind": "Deployment", "name": name}],
        },
    }


class Listed:
    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects

    async def list_applications(self, namespace: str | None) -> list[dict[str, Any]]:
        return list(self.objects)

    async def list_image_updaters(self, namespace: str | None) -> list[dict[str, Any]]:
        return []

    async def get_application(self, namespace: str, name: str) -> dict[str, Any] | None:
        return None


class Paged(Listed):
    def __init__(self, objects: list[dict[str, Any]], size: int) -> None:
        super().__init__(objects)
        self.size = size
        self.pages = 0

    async def application_pages(self, namespace: str | None) -> AsyncIterator[list[dict[str, Any]]]:
        for start in range(0, len(self.objects), self.size):
            self.pages += 1
            yield self.objects[start : start + self.size]


async def test_a_paged_store_gives_the_same_selection_and_keeps_unchanged_views() -> None:
    objects = [app(f"a{i}", "1", image=f"repo/img{i}") for i in range(7)]
    objects.append({"metadata": {"name": "broken", "namespace": "argocd"}, "spec": "bad"})
    paged = Paged(objects, size=3)
    assert isinstance(paged, PagedApplications)
    views = ApplicationViews()
    plain = await collect(Listed(objects), None, LegacyFilter(), read_crs=False)
    first = await collect(paged, None, LegacyFilter(), read_crs=False, views=views)
    assert paged.pages == 3
    assert first.listed == plain.listed
    assert [c.app.name for c, _ in first.configs] == [c.app.name for c, _ in plain.configs]
    assert [c.images for c, _ in first.configs] == [c.images for c, _ in plain.configs]
    assert len(first.problems) == len(plain.problems) == 1 and "broken" in first.problems[0]
    for config, _ in first.configs:  # reduced to what is read
        assert "managedFields" not in config.app.raw["metadata"]
        assert "resources" not in config.app.raw["status"]
    objects[2] = app("a2", "2", image="repo/other")
    second = await collect(paged, None, LegacyFilter(), read_crs=False, views=views)
    assert views.reused == 6
    before = {c.app.name: c.app for c, _ in first.configs}
    after = {c.app.name: c.app for c, _ in second.configs}
    assert after["a2"] is not before["a2"] and after["a2"].resource_version == "2"
    assert all(after[name] is before[name] for name in after if name != "a2")
