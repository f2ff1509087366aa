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
