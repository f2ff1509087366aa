"""Which state ConfigMaps of gone shard keys a sharded replica deletes, and when."""

from __future__ import annotations

from argocd_image_updater.controller.state_objects import SHARD_KEY_ANNOTATION
from argocd_image_updater.controller.state_sweep import key_object, to_delete

GONE = ("argocd-image-updater-state-aa", "shop/gone", "7")
KEPT = ("argocd-image-updater-state-bb", "shop/kept", "8")
THEIRS = ("argocd-image-updater-state-cc", "other/gone", "9")


def ours(key: str) -> bool:
    return key.startswith("shop/")


def test_a_gone_key_is_marked_first_and_deleted_at_the_next_sweep() -> None:
    now, marked = to_delete([GONE, KEPT], {"shop/kept"}, ours, {})
    assert now == []
    assert marked == {GONE[0]: "7"}
    now, marked = to_delete([GONE, KEPT], {"shop/kept"}, ours, marked)
    assert now == [GONE]
    assert marked == {}


def test_a_key_that_came_back_is_kept_and_no_longer_marked() -> None:
    _, marked = to_delete([GONE], set(), ours, {})
    now, marked = to_delete([GONE], {"shop/gone"}, ours, marked)
    assert (now, marked) == ([], {})


def test_a_configmap_written_since_it_was_marked_is_marked_again_not_deleted() -> None:
    _, marked = to_delete([GONE], set(), ours, {})
    written = (GONE[0], GONE[1], "12")
    now, marked = to_delete([written], set(), ours, marked)
    assert now == []
    assert marked == {GONE[0]: "12"}


def test_another_replicas_or_an_unwatched_namespaces_key_is_left_alone() -> None:
    now, marked = to_delete([THEIRS], set(), ours, {THEIRS[0]: "9"})
    assert (now, marked) == ([], {})


def test_a_listed_configmap_names_its_key_and_version() -> None:
    obj = {
        "metadata": {
            "name": "argocd-image-updater-state-aa",
            "resourceVersion": "7",
            "annotations": {SHARD_KEY_ANNOTATION: "shop/gone"},
        }
    }
    assert key_object(obj) == GONE
    for broken in (
        {},
        {"metadata": None},
        {"metadata": {"name": "x", "resourceVersion": "1"}},
        {"metadata": {"name": "x", "resourceVersion": "1", "annotations": {"other": "a/b"}}},
        {"metadata": {"name": "x", "annotations": {SHARD_KEY_ANNOTATION: "a/b"}}},
        {"metadata": {"resourceVersion": "1", "annotations": {SHARD_KEY_ANNOTATION: ""}}},
    ):
        assert key_object(broken) is None
