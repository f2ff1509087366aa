"""Parsed ImageUpdater views are reused across cycles only while what parsing reads holds, and
what is kept of an object does not change with it."""

from __future__ import annotations

from typing import Any

from argocd_image_updater.config.imageupdater import ImageUpdater
from argocd_image_updater.controller.views import ImageUpdaterViews


def updater(pattern: str = "app-*") -> dict[str, Any]:
    return {
        "apiVersion": "argocd-image-updater.argoproj.io/v1alpha1",
        "kind": "ImageUpdater",
        "metadata": {"name": "iu", "namespace": "argocd", "generation": 3, "uid": "u"},
        "spec": {
            "applicationRefs": [
                {"namePattern": pattern, "images": [{"alias": "web", "imageName": "nginx"}]}
            ]
        },
    }


def cycle(views: ImageUpdaterViews, obj: dict[str, Any]) -> ImageUpdater:
    views.begin()
    try:
        return views.parse(obj)[0]
    finally:
        views.end()


def test_an_unchanged_imageupdater_keeps_its_view() -> None:
    views = ImageUpdaterViews()
    first = cycle(views, updater())
    assert cycle(views, updater()) is first and views.reused == 1


def test_a_spec_changed_in_place_is_read_again() -> None:
    views = ImageUpdaterViews()
    obj = updater()
    first = cycle(views, obj)
    obj["spec"]["applicationRefs"][0]["namePattern"] = "web-*"  # the same dicts, changed
    second = cycle(views, obj)
    assert second is not first and views.reused == 0
    assert second.spec.application_refs[0].name_pattern == "web-*"
    assert cycle(views, updater("web-*")) is second and views.reused == 1


def shared_cycle(views: ImageUpdaterViews, obj: dict[str, Any]) -> ImageUpdater:
    views.begin()
    try:
        return views.parse(obj, shared=True)[0]
    finally:
        views.end()


def test_a_watched_copys_object_is_reused_and_an_equal_new_object_too() -> None:
    views = ImageUpdaterViews()
    kept = updater()
    first = shared_cycle(views, kept)
    assert shared_cycle(views, kept) is first
    replaced = updater()  # a status write: a new object, the same spec
    replaced["status"] = {"conditions": []}
    assert shared_cycle(views, replaced) is first
    assert shared_cycle(views, replaced) is first and views.reused == 1
    changed = updater("web-*")
    changed["metadata"]["generation"] = 4
    assert shared_cycle(views, changed) is not first
