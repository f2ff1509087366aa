"""The watched copy of Applications and ImageUpdaters: what it serves, given its events and our
writes by hand (the watch itself runs against the API fake in the integration tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from argocd_image_updater.controller.spec_watch import SpecChanges
from argocd_image_updater.controller.watched_objects import (
    WatchedFleet,
    WatchedObjects,
    reduced_application,
)
from argocd_image_updater.kube.client import APPLICATIONS, KubeClient


def app(name: str, version: str, tag: str = "1.0", namespace: str = "argocd") -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "resourceVersion": version,
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {"source": {"kustomize": {"images": [f"web:{tag}"]}}, "project": "default"},
        "status": {"resources": [{"kind": "Deployment"}], "sync": {"status": "Synced"}},
    }


def listed(*objects: dict[str, Any], version: str = "10") -> WatchedObjects:
    copy = WatchedObjects(
        cast(KubeClient, None), APPLICATIONS, "argocd", reduced_application, "Applications"
    )
    copy._begin()  # as at the start of each watch: a list first
    for obj in objects:
        copy._observe("ADDED", obj)
    assert copy.objects() is None  # not listed yet: the cycle lists
    copy._observe("BOOKMARK", {"metadata": {"resourceVersion": version}})
    return copy


def tags(copy: WatchedObjects) -> dict[str, str]:
    kept = copy.objects()
    assert kept is not None
    return {
        o["metadata"]["name"]: o["spec"]["source"]["kustomize"]["images"][0].split(":")[1]
        for o in kept
    }


def test_objects_are_kept_reduced_at_their_newest_version() -> None:
    copy = listed(app("a", "5"), app("b", "6"))
    kept = copy.objects()
    assert kept is not None and len(kept) == 2
    assert "managedFields" not in kept[0]["metadata"] and "project" not in kept[0]["spec"]
    assert kept[0]["status"] == {"sync": {"status": "Synced"}}
    copy._observe("MODIFIED", app("a", "12", "2.0"))
    copy._observe("MODIFIED", app("a", "11", "1.5"))  # an older event late: ignored
    copy._observe("ADDED", app("c", "13"))
    copy._observe("DELETED", app("b", "14"))
    assert tags(copy) == {"a": "2.0", "c": "1.0"}


def test_our_write_is_kept_until_the_watch_brings_something_newer() -> None:
    copy = listed(app("a", "5"))
    copy.written(app("a", "20", "2.0"))  # our patch's answer; its event is on its way
    assert tags(copy) == {"a": "2.0"}
    copy._observe("MODIFIED", app("a", "15", "1.1"))  # an earlier change by another: older
    assert tags(copy) == {"a": "2.0"}
    copy._observe("MODIFIED", app("a", "20", "2.0"))  # our own, watched
    copy._observe("MODIFIED", app("a", "21", "1.0"))  # someone set it back afterwards
    assert tags(copy) == {"a": "1.0"}
    copy.written(app("a", "20", "2.0"))  # a late answer never undoes a newer change
    assert tags(copy) == {"a": "1.0"}


def test_a_deleted_object_is_not_brought_back_by_a_late_answer() -> None:
    copy = listed(app("a", "5"), app("b", "6"))
    copy._observe("DELETED", app("a", "30"))
    copy.written(app("a", "29", "2.0"))  # written before the deletion, answered after it
    assert tags(copy) == {"b": "1.0"}
    copy.written(app("x", "9"))  # absent from a listing at 10: deleted before it
    assert tags(copy) == {"b": "1.0"}
    copy.written(app("new", "31"))  # created after the listing: kept (its event follows)
    copy.written(app("elsewhere", "32", namespace="team-b"))  # not this copy's scope
    assert tags(copy) == {"b": "1.0", "new": "1.0"}


def test_writes_during_a_listing_are_kept_when_newer_than_it() -> None:
    copy = WatchedObjects(
        cast(KubeClient, None), APPLICATIONS, "argocd", reduced_application, "Applications"
    )
    copy.written(app("a", "3"))  # not watching: nothing is kept
    copy._begin()
    copy._observe("ADDED", app("a", "5"))
    copy.written(app("a", "12", "2.0"))  # after the listing's version
    copy.written(app("gone", "8"))  # absent from the listing, older than it: deleted since
    copy.written(app("born", "11"))  # absent, newer: created and written after it
    copy._observe("BOOKMARK", {"metadata": {"resourceVersion": "10"}})
    assert tags(copy) == {"a": "2.0", "born": "1.0"}


def test_a_copy_that_is_not_current_serves_nothing() -> None:
    copy = listed(app("a", "5"))
    copy._end()  # the watch failed: listed again when it restarts
    assert copy.objects() is None and len(copy) == 0
    copy.written(app("a", "6"))
    assert len(copy) == 0
    other = listed(app("a", "5"))
    other._observe("MODIFIED", app("a", "v7"))  # versions that do not order: never served
    assert other.objects() is None


def test_the_image_updater_copy_wakes_a_cycle_on_a_spec_change_only() -> None:
    fleet = WatchedFleet(cast(KubeClient, None), ["argocd"])
    woken: list[str] = []

    class Wake:
        def set(self) -> None:
            woken.append("wake")

    fleet.spec_changes = SpecChanges(cast(Any, Wake()))
    [copy] = fleet.image_updaters.values()
    copy._on_event = fleet.spec_changes

    def updater(version: str, generation: int) -> dict[str, Any]:
        meta = {"name": "web", "namespace": "argocd", "resourceVersion": version}
        return {"metadata": {**meta, "generation": generation}, "spec": {}, "status": {}}

    copy._begin()
    copy._observe("ADDED", updater("5", 1))  # the listing: nothing changed
    copy._observe("BOOKMARK", {"metadata": {"resourceVersion": "5"}})
    copy._observe("MODIFIED", updater("6", 1))  # a status write
    assert woken == []
    copy._observe("MODIFIED", updater("7", 2))
    assert woken == ["wake"]
    kept = copy.objects()
    assert kept is not None and kept[0]["metadata"]["resourceVersion"] == "7"


def test_the_stamp_changes_with_what_is_served_only() -> None:
    copy = listed(app("a", "5"), app("b", "6"))
    stamp, served = copy.revision, copy.objects()
    copy._observe("MODIFIED", app("a", "5"))  # the version kept: the same object again
    copy.written(app("b", "6"))  # our write's answer, seen already
    copy._observe("MODIFIED", app("a", "4", "0.9"))  # older: ignored
    copy._observe("DELETED", app("c", "7"))  # not kept
    assert copy.revision == stamp
    again = copy.objects()
    assert again is not None and served is not None
    assert all(map(lambda x, y: x is y, again, served))
    changes: list[Callable[[], None]] = [
        lambda: copy._observe("MODIFIED", app("a", "8", "2.0")),
        lambda: copy.written(app("b", "9", "2.0")),
        lambda: copy._observe("ADDED", app("d", "10")),
        lambda: copy._observe("DELETED", app("d", "11")),
        lambda: copy._begin(),  # listed again
    ]
    for change in changes:
        before = copy.revision
        change()
        assert copy.revision > before


def test_the_store_tells_what_was_replaced_in_place_since_a_stamp() -> None:
    from argocd_image_updater.controller.stores import KubeStore

    fleet = WatchedFleet(cast(KubeClient, None), ["argocd"], image_updaters=False)
    copy = fleet.applications["argocd"]
    store = KubeStore(cast(KubeClient, None))
    assert store.revision(["argocd"], False) is None  # no watched copy: listed
    store.watched = fleet
    assert store.revision(["argocd"], False) is None  # not listed yet
    copy._begin()
    for obj in (app("a", "5"), app("b", "6")):
        copy._observe("ADDED", obj)
    copy._observe("BOOKMARK", {"metadata": {"resourceVersion": "10"}})
    stamp = store.revision(["argocd"], False)
    assert stamp is not None and store.replaced_since(stamp, ["argocd"], False) == ({}, {})
    copy._observe("MODIFIED", app("a", "11", "2.0"))
    copy.written(app("b", "12", "2.0"))
    found = store.replaced_since(stamp, ["argocd"], False)
    assert found is not None
    assert {key: o["metadata"]["resourceVersion"] for key, o in found[0].items()} == {
        ("argocd", "a"): "11",
        ("argocd", "b"): "12",
    }
    later = store.revision(["argocd"], False)
    assert later != stamp and store.replaced_since(later, ["argocd"], False) == ({}, {})
    copy._observe("ADDED", app("c", "13"))  # added: not only replaced
    assert store.replaced_since(later, ["argocd"], False) is None
    assert store.replaced_since(stamp, ["argocd"], False) is None
    assert store.replaced_since(("another",), ["argocd"], False) is None  # not its stamp
    assert store.revision(["argocd"], True) is None  # no copy of the ImageUpdaters
