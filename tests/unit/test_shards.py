"""Rendezvous hashing of shard keys and the static shard label: pure, deterministic."""

from __future__ import annotations

import dataclasses
from collections import Counter

from argocd_image_updater.controller.membership import MEMBER_PREFIX, member_name
from argocd_image_updater.controller.shards import (
    SHARD_LABEL,
    Ownership,
    ShardKeeper,
    keep_shard,
    owner,
    shard_matches,
    weight,
)
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.pipeline.records import Collected, CRState
from argocd_image_updater_testing import objects

KEYS = [f"team-{i % 7}/updater-{i}" for i in range(3000)]


def owners(members: list[str]) -> dict[str, str | None]:
    return {key: owner(key, members) for key in KEYS}


def test_the_owner_is_the_same_whatever_the_order_of_the_members() -> None:
    members = ["a", "b", "c", "d"]
    assert owners(members) == owners(list(reversed(members)))
    assert owner("x/y", []) is None
    assert weight("a", "x/y") == weight("a", "x/y") != weight("b", "x/y")


def test_keys_spread_evenly_over_the_members() -> None:
    counts = Counter(owners(["a", "b", "c"]).values())
    assert set(counts) == {"a", "b", "c"}
    assert all(800 < n < 1200 for n in counts.values()), counts


def test_a_join_moves_about_one_nth_of_the_keys_and_only_to_the_new_member() -> None:
    before, after = owners(["a", "b", "c"]), owners(["a", "b", "c", "d"])
    moved = [key for key in KEYS if before[key] != after[key]]
    assert all(after[key] == "d" for key in moved)
    assert 0.18 < len(moved) / len(KEYS) < 0.32  # about 1/4


def test_a_leave_moves_only_the_keys_of_the_member_that_left() -> None:
    before, after = owners(["a", "b", "c", "d"]), owners(["a", "b", "d"])
    moved = {key for key in KEYS if before[key] != after[key]}
    assert moved == {key for key in KEYS if before[key] == "c"}
    assert 0.18 < len(moved) / len(KEYS) < 0.32


def test_two_views_with_both_members_never_give_a_key_to_both() -> None:
    # The handover rule rests on this: A and B disagree only when one misses from a view.
    for key in KEYS[:500]:
        with_c, without_c = owner(key, ["a", "b", "c"]), owner(key, ["a", "b"])
        if with_c in ("a", "b"):
            assert with_c == without_c


def test_ownership_answers_as_rendezvous_hashing_under_each_member_set() -> None:
    ownership = Ownership("b")
    for members in (["a", "b", "c"], ["a", "b"], ["b", "c", "d"], ["a", "b", "c"]):
        member_set = frozenset(members)
        for _ in range(2):  # the second time from what was kept
            assert {k for k in KEYS if ownership.owns(k, member_set)} == {
                k for k in KEYS if owner(k, members) == "b"
            }


def test_ownership_forgets_its_answers_when_the_member_set_changes() -> None:
    ownership = Ownership("b")
    moving = next(k for k in KEYS if owner(k, ["a", "b"]) == "b" and owner(k, ["b", "c"]) == "c")
    assert ownership.owns(moving, frozenset({"a", "b"}))
    assert not ownership.owns(moving, frozenset({"b", "c"}))  # c joined, a left
    assert ownership.owns(moving, frozenset({"b", "a"}))  # an equal set, not the same object


def test_ownership_lets_go_of_keys_not_asked_for_during_a_whole_cycle() -> None:
    ownership, members = Ownership("a"), frozenset({"a", "b"})
    ownership.owns("ns/kept", members)
    ownership.owns("ns/deleted", members)
    ownership.next_cycle()
    ownership.owns("ns/kept", members)  # asked for again: kept
    assert len(ownership) == 2
    ownership.next_cycle()
    assert len(ownership) == 1


def test_the_shard_selector_follows_the_label() -> None:
    assert shard_matches(None, {SHARD_LABEL: "x"})
    assert shard_matches(None, None)
    assert shard_matches("x", {SHARD_LABEL: "x"})
    assert not shard_matches("x", {SHARD_LABEL: "y"})
    assert not shard_matches("x", {})
    assert shard_matches("!", {"other": "x"})
    assert not shard_matches("!", {SHARD_LABEL: "x"})


def _cr(name: str, shard: str | None = None) -> CRState:
    labels = {SHARD_LABEL: shard} if shard else {}
    raw = {"metadata": {"name": name, "namespace": "argocd", "labels": labels}}
    return CRState(namespace="argocd", name=name, generation=1, resource_version="1", raw=raw)


def _config(name: str, shard: str | None = None) -> AppUpdateConfig:
    labels = {SHARD_LABEL: shard} if shard else None
    app = Application.from_object(objects.application(name, labels=labels))
    return AppUpdateConfig(app=app, images=())


def _collected() -> Collected:
    crs = [_cr("one"), _cr("two", "blue")]
    collected = Collected(crs=list(crs), listed={"argocd/a", "argocd/b", "argocd/c", "argocd/d"})
    collected.configs = [
        (_config("a"), crs[0]),
        (_config("b"), crs[1]),
        (_config("c"), None),
        (_config("d", "blue"), None),
    ]
    return collected


def test_keep_shard_keeps_an_imageupdater_with_its_applications_and_owned_annotated_apps() -> None:
    collected = _collected()
    keys = keep_shard(collected, None, lambda key: key in {"argocd/two", "argocd/c"})
    assert keys == {"argocd/two", "argocd/c"}
    assert [cr.name for cr in collected.crs] == ["two"]
    assert [config.app.name for config, _ in collected.configs] == ["b", "c"]
    assert len(collected.listed) == 4  # what exists is not narrowed
    # The others' Applications: their repositories may be this member's to list.
    assert [config.app.name for config in collected.others] == ["a", "d"]
    assert collected.elsewhere == {"argocd/a", "argocd/d"}


def test_keep_shard_tells_apart_the_applications_of_imageupdaters_kept_and_left() -> None:
    collected = _collected()
    config, state = collected.configs[1]
    assert state is not None
    collected.configs[1] = (config, dataclasses.replace(state))  # an equal state, not the same
    keys = keep_shard(collected, None, lambda key: key == "argocd/two")
    assert keys == {"argocd/two"}
    assert [config.app.name for config, _ in collected.configs] == ["b"]
    assert collected.elsewhere == {"argocd/a", "argocd/c", "argocd/d"}


def test_keep_shard_with_a_selector_keeps_only_that_static_shard() -> None:
    collected = _collected()
    assert keep_shard(collected, "blue", None) == {"argocd/two", "argocd/d"}
    unlabelled = _collected()
    assert keep_shard(unlabelled, "!", None) == {"argocd/one", "argocd/c"}
    # Another static shard's Applications are not the others' of this one.
    members = _collected()
    assert keep_shard(members, "blue", lambda key: key == "argocd/two") == {"argocd/two"}
    assert [config.app.name for config in members.others] == ["d"]


_MEMBER_LISTS: dict[frozenset[str] | None, object] = {}
"""One object per member list, as a membership keeps its view while it holds."""


def _split(
    keeper: ShardKeeper, collected: Collected, selector: str | None, owned: set[str] | None
) -> tuple[object, ...]:
    narrowed = dataclasses.replace(collected, crs=list(collected.crs), configs=collected.configs)
    members = _MEMBER_LISTS.setdefault(None if owned is None else frozenset(owned), object())
    owns = None if owned is None else owned.__contains__
    keys = keeper.keep(narrowed, selector, owns, members)
    return (
        keys,
        [cr.name for cr in narrowed.crs],
        [(config.app.name, state and state.name) for config, state in narrowed.configs],
        [config.app.name for config in narrowed.others],
        narrowed.elsewhere,
    )


def test_the_keeper_of_each_cycle_splits_as_a_first_look_would() -> None:
    """What changed from one cycle to the next is gone over again, what did not is taken as
    it was: either way the split is the one of a first look (a keeper without memory)."""
    crs = [_cr(f"u{i}", "blue" if i % 3 == 0 else None) for i in range(6)]
    configs: list[tuple[AppUpdateConfig, CRState | None]] = [
        (_config(f"a{i}"), crs[i % 6]) for i in range(24)
    ]
    configs += [(_config("legacy-1"), None), (_config("legacy-2", "blue"), None)]
    configs.append((_config("a0"), crs[1]))  # selected by two ImageUpdaters
    keeper = ShardKeeper()
    owned = {"argocd/u0", "argocd/u1", "argocd/u4", "argocd/legacy-1"}

    def check(selector: str | None = None, owns: set[str] | None = owned) -> None:
        collected = Collected(crs=list(crs), configs=list(configs))
        assert _split(keeper, collected, selector, owns) == _split(
            ShardKeeper(), collected, selector, owns
        )

    def renew() -> None:
        """A new cycle's records of the same ImageUpdaters (as read: the same objects)."""
        crs[:] = [dataclasses.replace(cr) for cr in crs]
        by_name = {cr.name: cr for cr in crs}
        configs[:] = [(c, s and by_name.get(s.name, s)) for c, s in configs]

    check()
    check()  # nothing changed
    configs[2] = (_config(configs[2][0].app.name), configs[2][1])  # the same app, read again
    check()
    crs[1] = dataclasses.replace(crs[1])  # a status written: each of its pairs names it
    configs[:] = [(c, crs[1]) if s is not None and s.name == "u1" else (c, s) for c, s in configs]
    configs[24] = (_config("legacy-1"), None)
    check()
    assert keeper.mended == 2  # the split mended where they were replaced
    renew()
    check()
    configs[3] = (_config("a3-new"), configs[3][1])  # an Application changed
    configs[5] = (configs[5][0], dataclasses.replace(crs[5]))  # an equal ImageUpdater
    check()
    crs[2] = _cr("u2")  # an ImageUpdater read again: its Applications' pairs still name the old
    check()
    configs[:] = [(c, crs[2]) if s is not None and s.name == "u2" else (c, s) for c, s in configs]
    check()
    owned = {"argocd/u2", "argocd/u3", "argocd/legacy-2"}  # the member list changed
    check(owns=owned)
    check(owns=owned)
    crs[0] = dataclasses.replace(crs[0], raw={"metadata": {"labels": {SHARD_LABEL: "red"}}})
    configs[:] = [(c, crs[0]) if s is not None and s.name == "u0" else (c, s) for c, s in configs]
    check("blue", owned)  # another static shard, labels changed
    renew()
    check("blue", owned)
    check(None, None)
    del configs[7]
    del crs[4]  # an ImageUpdater gone, its Applications' pairs still listed
    check(None, owned)
    check(None, owned)


def test_the_keeper_hands_out_its_split_of_the_very_same_selection_again() -> None:
    keeper, asked = ShardKeeper(), []

    def owns(key: str) -> bool:
        asked.append(key)
        return key in {"argocd/two", "argocd/c"}

    first = _collected()
    crs, configs, members = list(first.crs), list(first.configs), object()
    assert keeper.keep(first, None, owns, members) == {"argocd/two", "argocd/c"}
    assert asked
    asked.clear()
    again = Collected(crs=list(crs), configs=list(configs), listed=first.listed)
    assert keeper.keep(again, None, owns, members) == {"argocd/two", "argocd/c"}
    assert not asked  # nothing gone over
    assert (again.crs, again.configs, again.others, again.elsewhere) == (
        first.crs,
        first.configs,
        first.others,
        first.elsewhere,
    )
    assert again.configs is not first.configs  # lists of its own
    # Another member list (a new object): gone over again.
    other = Collected(crs=list(crs), configs=list(configs), listed=first.listed)
    keeper.keep(other, None, owns, object())
    assert asked


def test_member_names_are_lease_names_and_distinct_per_process() -> None:
    assert member_name("Updater-7f9_x") == "updater-7f9-x"
    assert member_name("") != member_name("")
    assert len(MEMBER_PREFIX + member_name("p" * 400)) <= 253
