"""Parsed Application views are reused across cycles only while the object is unchanged."""

from __future__ import annotations

from typing import Any

import pytest

from argocd_image_updater.controller.views import ApplicationViews
from argocd_image_updater.model.application import ApplicationError


def app(name: str, version: str = "1", uid: str = "u1", image: str = "nginx") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "argocd", "uid": uid}
    if version:
        meta["resourceVersion"] = version
    return {
        "metadata": meta,
        "spec": {"source": {"repoURL": "https://example.com/r.git", "kustomize": {}}},
        "status": {"summary": {"images": [image]}},
    }


def cycle(views: ApplicationViews, *objects: dict[str, Any]) -> list[Any]:
    views.begin()
    try:
        return [views.view(obj) for obj in objects]
    finally:
        views.end()


def test_an_unchanged_object_keeps_its_view() -> None:
    views = ApplicationViews()
    (first,) = cycle(views, app("a"))
    (second,) = cycle(views, app("a"))
    assert second is first and views.reused == 1


def test_a_new_resource_version_or_uid_is_read_again() -> None:
    views = ApplicationViews()
    (first,) = cycle(views, app("a", image="nginx:1"))
    (changed,) = cycle(views, app("a", version="2", image="nginx:2"))
    assert changed is not first and changed.live_images == ("nginx:2",)
    (recreated,) = cycle(views, app("a", version="2", uid="u2"))
    assert recreated is not changed and recreated.uid == "u2"
    assert views.reused == 0


def test_objects_without_a_resource_version_are_always_read() -> None:
    views = ApplicationViews()
    (first,) = cycle(views, app("a", version=""))
    (second,) = cycle(views, app("a", version=""))
    assert second is not first and views.reused == 0


def test_a_view_not_listed_in_a_cycle_is_dropped() -> None:
    views = ApplicationViews()
    (first,) = cycle(views, app("a"))
    cycle(views, app("b"))
    (again,) = cycle(views, app("a"))
    assert again is not first


def test_a_malformed_object_raises_as_when_read_directly() -> None:
    bad = app("a")
    bad["spec"] = {"source": "not an object"}
    views = ApplicationViews()
    views.begin()
    with pytest.raises(ApplicationError, match=r"spec\.source"):
        views.view(bad)


def test_listed_objects_are_reduced_only_when_read() -> None:
    views = ApplicationViews()
    listed = app("a")
    listed["status"]["resources"] = [{"kind": "Deployment", "name": "a"}]
    views.begin()
    first = views.view(listed, compact=True)
    views.end()
    assert "resources" not in first.raw["status"]  # the view keeps what is read
    assert first.live_images == ("nginx",)
    views.begin()
    again = views.view(app("a"), compact=True)
    views.end()
    assert again is first and views.reused == 1
