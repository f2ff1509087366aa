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


def shared_cycle(views: ApplicationViews, *objects: dict[str, Any]) -> list[Any]:
    """A cycle over a watched copy's kept objects, as the cycle reads them."""
    views.begin()
    try:
        found = []
        for obj in objects:
            known = views.same_object(obj)
            if known is None:
                key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
                known = (views.view(obj, shared_as=key), key)
            found.append(known)
        return found
    finally:
        views.end()


def test_a_watched_copys_unchanged_object_is_found_by_identity_with_its_key() -> None:
    views = ApplicationViews()
    kept = app("a")
    [(first, _)] = shared_cycle(views, kept)
    assert views.same_object(kept) == (first, "argocd/a")
    [(second, key)] = shared_cycle(views, kept)
    assert second is first and key == "argocd/a" and views.reused == 1


def test_an_equal_but_other_object_is_not_found_by_identity() -> None:
    views = ApplicationViews()
    [(first, _)] = shared_cycle(views, app("a"))
    replaced = app("a", version="2", image="nginx:2")  # what a watch event brings
    assert views.same_object(replaced) is None
    [(second, _)] = shared_cycle(views, replaced)
    assert second is not first and second.live_images == ("nginx:2",)
    # An object not met in a cycle is forgotten, however it is met again.
    gone = app("b")
    shared_cycle(views, gone)
    shared_cycle(views, replaced)
    assert views.same_object(gone) is None


def test_indexes_share_positions_while_a_namespace_keeps_its_names_in_order() -> None:
    views = ApplicationViews()
    a, b = cycle(views, app("a"), app("b"))
    first = views.indexes({"argocd": [a, b]})["argocd"]
    a2, b2 = cycle(views, app("a", version="2"), app("b"))
    same = views.indexes({"argocd": [a2, b2]})["argocd"]
    assert same.positions_token is first.positions_token and same.apps == [a2, b2]
    other = views.indexes({"argocd": [b2, a2]})["argocd"]
    assert other.positions_token is not first.positions_token
    assert [x.name for x in other.candidates(["a"])] == ["a"]
