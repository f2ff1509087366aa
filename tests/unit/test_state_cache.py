"""The watched copy of the state ConfigMaps: what it tells a load (its events given by hand)."""

from __future__ import annotations

from typing import Any, cast

from argocd_image_updater.controller.state_cache import UNKNOWN, StateCache
from argocd_image_updater.kube.client import KubeClient


def cm(name: str, version: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version}, "data": {}}


def listed(*objects: dict[str, Any], wanted: tuple[str, ...] = ("a", "b")) -> StateCache:
    cache = StateCache(cast(KubeClient, None), "argocd")
    for name in wanted:
        cache.want(name)
    cache._listing = {}  # as at the start of each watch: a list first
    for obj in objects:
        cache._observe("ADDED", obj)
    assert cache.newer("a", "1") is UNKNOWN  # not listed yet
    cache._observe("BOOKMARK", {"metadata": {"resourceVersion": "10"}})
    return cache


def test_a_load_takes_a_newer_copy_and_keeps_its_own_otherwise() -> None:
    cache = listed(cm("a", "5"), cm("x", "6"))
    assert cache.synced
    assert cache.newer("a", "5") is None  # what it read: current
    assert cache.newer("a", "7") is None  # it wrote 7 since; the watch has not caught up
    assert cache.newer("a", "4") == cm("a", "5")  # another writer's, newer
    assert cache.newer("b", "") is None  # watched since before it was read: still none
    assert cache.newer("x", "6") is UNKNOWN  # not held: read it
    cache._observe("MODIFIED", cm("b", "12"))
    assert cache.newer("b", "") == cm("b", "12")  # created by another writer meanwhile
    cache._observe("MODIFIED", cm("b", "11"))  # an older event late: ignored
    assert cache.newer("b", "11") == cm("b", "12")


def test_it_cannot_tell_when_unsynced_deleted_or_the_versions_do_not_order() -> None:
    cache = listed(cm("a", "5"))
    cache._observe("DELETED", cm("a", "8"))
    assert cache.newer("a", "5") is UNKNOWN
    cache._observe("MODIFIED", cm("b", "v2"))
    assert cache.newer("b", "v1") is UNKNOWN  # not integers: read it
    cache.synced = False  # the watch ended
    cache._observe("MODIFIED", cm("a", "9"))
    assert cache.newer("a", "9") is UNKNOWN


def test_only_the_configmaps_held_are_kept() -> None:
    cache = listed(cm("a", "5"), cm("b", "6"))
    cache.keep({"a"})
    assert cache.newer("b", "6") is UNKNOWN
    cache._observe("MODIFIED", cm("b", "7"))
    assert "b" not in cache._objects and cache.newer("a", "4") == cm("a", "5")


def test_the_echo_of_its_own_write_leaves_the_revision() -> None:
    cache = listed(cm("a", "5"), cm("b", "6"))
    cache.wrote("a", "7")
    cache.wrote("b", "8")
    revision = cache.revision
    cache._observe("MODIFIED", cm("a", "7"))  # the echo of the write
    assert cache.revision == revision
    assert cache.newer("a", "7") is None and cache.newer("a", "6") == cm("a", "7")
    cache._observe("MODIFIED", cm("a", "9"))  # another writer's change after it
    assert cache.revision > revision and cache.newer("a", "7") == cm("a", "9")
    revision = cache.revision
    cache._observe("MODIFIED", cm("b", "9"))  # another writer's change passed the write
    assert cache.revision > revision
    revision = cache.revision
    cache._observe("MODIFIED", cm("b", "8"))  # late, older: ignored, as before
    assert cache.revision == revision and cache.newer("b", "8") == cm("b", "9")


def test_an_echo_raises_the_revision_when_the_answer_changes() -> None:
    cache = listed(cm("a", "5"))
    cache._observe("DELETED", cm("a", "6"))
    cache.wrote("a", "7")  # created again by this replica: it said "read it" before
    revision = cache.revision
    cache._observe("ADDED", cm("a", "7"))
    assert cache.revision > revision and cache.newer("a", "7") is None
    cache.wrote("a", "8")
    cache._observe("MODIFIED", cm("a", "6"))  # an older event, late: the write is still due
    revision = cache.revision
    cache._observe("MODIFIED", cm("a", "8"))
    assert cache.revision == revision
    cache.wrote("x", "3")  # not held: nothing kept
    assert "x" not in cache._written
    cache.wrote("a", "9")
    cache.keep({"b"})
    assert cache._written == {}
