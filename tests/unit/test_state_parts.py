"""The remembered record split by shard key and put together again (pure, plain values), and
the layout a cycle's selection gives it."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime, timedelta

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.config.registries_conf import parse_registries_conf
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.chart import ChartSpec
from argocd_image_updater.model.controller_state import (
    APP_OPERATIONS,
    MAX_BYTES,
    REPO_OPERATIONS,
    SHIPMENTS_OPERATION,
    ControllerState,
    WriteRecord,
    repo_key,
)
from argocd_image_updater.model.state_parts import (
    Layout,
    Placement,
    by_repository,
    holds_repository,
    key_part,
    merge,
    part_of,
    repository_part,
    repository_target,
    same_contents,
)
from argocd_image_updater.model.update_config import AppUpdateConfig, ImageSpec
from argocd_image_updater.pipeline.records import Collected, CRState
from argocd_image_updater.pipeline.state_scope import Layouts, repositories, shard_key
from argocd_image_updater.plan.jobs import plan_scans
from argocd_image_updater_testing import objects

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BASE = repo_key("registry.example.com", "base/runtime")
WEB = repo_key("registry.example.com", "team/web")
API = repo_key("registry.example.com", "team/api")


def _layout() -> Layout:
    """Two keys: ``ns/one`` (Applications a, b: base and web), ``ns/b-legacy`` (c: base, api)."""
    return Layout(
        {"ns/a": "ns/one", "ns/b": "ns/one", "ns/c": "ns/c"},
        {"ns/one": frozenset({BASE, WEB}), "ns/c": frozenset({BASE, API})},
    )


def _record() -> ControllerState:
    state = ControllerState()
    state.record_write("ns/a", "web", "1.0.0", NOW, "argocd")
    state.record_write("ns/b", "web", "2.0.0", NOW, "git", "abc")
    state.mark_held("ns/b", "web", "1.9.0", "someone")
    state.record_write("ns/c", "api", "3.0.0", NOW)
    state.record_first_seen(BASE, ["1", "2"], NOW)
    state.record_first_seen(WEB, ["1.0.0"], NOW)
    state.record_first_seen(API, ["3.0.0"], NOW)
    state.record_digest(BASE, "2", "sha256:" + "b" * 64)
    state.set_shipments({"ns/a": {"web": {"stage": "Written"}}, "ns/c": {"api": {"x": 1}}})
    return state


def _parts(state: ControllerState, layout: Layout) -> dict[str, ControllerState]:
    """Each key's part as a save writes it when nothing was stored yet."""
    placement = Placement(layout, {})
    routed, homeless = placement.route(state.operations)
    assert homeless == 0
    return {
        key: placement.target(key, ControllerState(), routed.get(key, []), state)
        for key in layout.keys
    }


def _repo_parts(state: ControllerState, repos: list[str]) -> dict[str, ControllerState]:
    """Each repository's part as a save writes it when nothing was stored yet."""
    routed, homeless = by_repository(state.operations, repos)
    assert homeless == 0
    return {
        repo: repository_target(repo, ControllerState(), routed.get(repo, []), state)
        for repo in repos
    }


def test_every_operation_of_the_record_belongs_to_an_application_a_repository_or_shipments() -> (
    None
):
    names = {
        name.removeprefix("_op_")
        for name, _ in inspect.getmembers(ControllerState, inspect.isfunction)
        if name.startswith("_op_")
    }
    assert names == APP_OPERATIONS | REPO_OPERATIONS | {SHIPMENTS_OPERATION}
    assert not APP_OPERATIONS & REPO_OPERATIONS


def test_a_record_split_by_key_and_repository_holds_each_ones_entries_and_merges_back_whole() -> (
    None
):
    state, layout = _record(), _layout()
    parts = _parts(state, layout)
    one, c = parts["ns/one"], parts["ns/c"]
    assert set(one.contents()[0]) == {"ns/a", "ns/b"} and set(c.contents()[0]) == {"ns/c"}
    assert one.last_write("ns/b", "web") == WriteRecord(
        "2.0.0", NOW, held="1.9.0", via="git", commit="abc", held_by="someone"
    )
    assert set(one.shipments()) == {"ns/a"} and set(c.shipments()) == {"ns/c"}
    # A key's part holds no repository: each repository has a part of its own, once.
    assert all(not part.contents()[1] and not part.contents()[2] for part in parts.values())
    repos = _repo_parts(state, [BASE, WEB, API])
    assert repos[BASE].first_seen_of(BASE) == {"1": NOW, "2": NOW}
    assert repos[BASE].seen_digest(BASE, "2") == "sha256:" + "b" * 64
    assert set(repos[WEB].contents()[1]) == {WEB} and not repos[WEB].contents()[2]
    everything = [parts[k] for k in sorted(parts)] + [repos[r] for r in sorted(repos)]
    assert same_contents(merge(everything), state)
    assert same_contents(repository_part(state, API), repos[API])


def test_a_repositorys_part_takes_the_tables_stored_before_only_when_it_has_none() -> None:
    """Migration: a repository without an object takes the earliest first-seen times and the
    digests of the parts stored before (a key's part that held repository tables, the single
    record); one that has an object keeps its own (a tag forgotten there stays forgotten)."""
    old_key_part = ControllerState()
    old_key_part.record_write("ns/a", "web", "1.0.0", NOW)
    old_key_part.record_first_seen(BASE, ["1", "2"], NOW)
    old_key_part.record_digest(BASE, "1", "sha256:" + "1" * 64)
    single = ControllerState()
    single.record_first_seen(BASE, ["1", "3"], NOW - timedelta(days=1))
    merged = merge([old_key_part, single])
    state = merge([key_part(old_key_part), repository_part(merged, BASE)])
    state.record_first_seen(BASE, ["4"], NOW + timedelta(hours=1))
    routed, _ = by_repository(state.operations, [BASE])
    taken = repository_target(BASE, ControllerState(), routed[BASE], state, take=True)
    assert taken.first_seen_of(BASE) == {
        "1": NOW - timedelta(days=1),
        "2": NOW,
        "3": NOW - timedelta(days=1),
        "4": NOW + timedelta(hours=1),
    }
    assert taken.seen_digest(BASE, "1") == "sha256:" + "1" * 64
    own = ControllerState()
    own.record_first_seen(BASE, ["1"], NOW)
    own.saved("7")
    kept = repository_target(BASE, own, routed[BASE], state)
    assert kept.first_seen_of(BASE) == {"1": NOW, "4": NOW + timedelta(hours=1)}
    assert kept.token == "7"
    assert key_part(old_key_part).contents()[1:3] == ({}, {})
    assert holds_repository(state, BASE) and not holds_repository(state, WEB)


def test_a_repository_with_very_many_tags_keeps_its_newest_in_its_object() -> None:
    part = ControllerState()
    for n in range(120_000):
        moment = NOW + timedelta(minutes=n)
        part.record_first_seen(BASE, [f"build-{n:06d}-{n * 7919 % 100_000:05d}"], moment)
        part.record_digest(BASE, f"build-{n:06d}-{n * 7919 % 100_000:05d}", f"sha256:{n:064x}")
    stored = part.to_stored()
    assert stored.size <= MAX_BYTES and stored.dropped
    back = ControllerState.from_stored(stored.data, stored.binary)
    kept = back.first_seen_of(BASE)
    assert 0 < len(kept) < 120_000
    newest = max(kept.values())
    assert newest == NOW + timedelta(minutes=119_999)  # the newest tags are kept
    assert min(kept.values()) > NOW  # the oldest went first
    assert len(back.contents()[2].get(BASE, {})) <= len(kept)


def test_merging_parts_keeps_the_earliest_first_seen_time_and_each_aliass_latest_write() -> None:
    older = ControllerState()
    older.record_first_seen(BASE, ["1", "2"], NOW)
    older.record_write("ns/moved", "web", "1.0.0", NOW)
    older.record_write("ns/moved", "api", "5.0.0", NOW)
    older.record_digest(BASE, "1", "sha256:" + "1" * 64)
    newer = ControllerState()
    newer.record_first_seen(BASE, ["2", "3"], NOW + timedelta(hours=1))
    newer.record_write("ns/moved", "web", "1.1.0", NOW + timedelta(hours=1))
    newer.record_digest(BASE, "1", "sha256:" + "2" * 64)
    merged = merge([newer, older], token="t")
    assert merged.first_seen_of(BASE) == {
        "1": NOW,
        "2": NOW,
        "3": NOW + timedelta(hours=1),
    }
    assert merged.last_write("ns/moved", "web") == WriteRecord("1.1.0", NOW + timedelta(hours=1))
    assert merged.last_write("ns/moved", "api") == WriteRecord("5.0.0", NOW)
    assert merged.seen_digest(BASE, "1") == "sha256:" + "2" * 64  # the first part's
    assert merged.token == "t" and not merged.changed


def test_each_change_goes_to_the_keys_or_repository_it_concerns_only() -> None:
    layout = _layout()
    stored = _parts(_record(), layout)
    for part in stored.values():
        part.saved("1")
    placement = Placement(layout, stored)
    state = merge([stored["ns/c"], stored["ns/one"]])
    state.record_write("ns/a", "web", "1.1.0", NOW + timedelta(hours=1))
    state.record_first_seen(API, ["3.1.0"], NOW + timedelta(hours=1))
    state.record_first_seen(BASE, ["3"], NOW + timedelta(hours=1))
    state.record_write("ns/nowhere", "web", "1", NOW)  # an Application no key holds
    routed, homeless = placement.route(state.operations)
    assert [name for name, _ in routed["ns/one"]] == ["write"]
    assert "ns/c" not in routed
    assert homeless == 1
    by_repo, homeless = by_repository(state.operations, [BASE, API, WEB])
    assert {repo: [name for name, _ in ops] for repo, ops in by_repo.items()} == {
        API: ["seen"],
        BASE: ["seen"],
    }
    assert homeless == 0 and by_repository(state.operations, [BASE])[1] == 1
    # The changes followed: only the keys whose part they change, each with its own.
    state = merge([stored["ns/c"], stored["ns/one"]])
    state.set_shipments({"ns/a": {"web": {"stage": "Synced"}}, "ns/c": {"api": {"x": 1}}})
    routed, _ = placement.route(state.operations)
    assert routed == {"ns/one": [("ships", ({"ns/a": {"web": {"stage": "Synced"}}},))]}
    # None followed any longer for ns/c, one for an Application no key holds.
    state = merge([stored["ns/c"], stored["ns/one"]])
    state.set_shipments({"ns/a": {"web": {"stage": "Written"}}, "ns/nowhere": {"web": {}}})
    routed, homeless = placement.route(state.operations)
    assert routed == {"ns/c": [("ships", ({},))]}
    assert homeless == 1


def test_a_key_changed_by_another_writer_gets_only_its_own_changes_again() -> None:
    layout = _layout()
    stored = _parts(_record(), layout)
    for part in stored.values():
        part.saved("1")
    placement = Placement(layout, stored)
    state = merge([stored[k] for k in sorted(stored)])
    state.mark_live("ns/a", "web")
    state.record_write("ns/c", "api", "3.1.0", NOW + timedelta(hours=1))
    routed, _ = placement.route(state.operations)
    # Meanwhile the release command forgot ns/b's write (ns/one's object changed).
    newer = stored["ns/one"].copy(token="2")
    newer.release("ns/b")
    newer.saved("2")
    again = placement.target("ns/one", newer, routed["ns/one"], state, take_apps=False)
    assert again.token == "2"
    assert again.last_write("ns/b", "web") is None  # the release holds
    assert again.last_write("ns/a", "web") == WriteRecord("1.0.0", NOW, live=True, via="argocd")
    assert again.last_write("ns/c", "api") is None  # another key's change stays there
    assert [name for name, _ in routed["ns/c"]] == ["write"]


def test_a_part_that_lacks_an_application_of_its_key_is_filled_in() -> None:
    layout = _layout()
    state = _record()
    state.saved("x")
    # ns/one's object holds only ns/a; ns/b moved in from another key.
    stored = part_of(state, ["ns/a"], [], token="5")
    placement = Placement(layout, {"ns/one": stored})
    assert placement.lacks("ns/one", stored, state)
    assert placement.lacking(state) == {"ns/one"}
    assert placement.lacking(part_of(state, ["ns/a"], [])) == set()  # it holds ns/a
    target = placement.target("ns/one", stored, [], state)
    assert target.last_write("ns/b", "web") == state.last_write("ns/b", "web")
    assert not placement.lacks("ns/one", target, state)
    assert placement.target("ns/one", stored, [], state, take_apps=False).writes_of("ns/b") == {}


def test_a_keys_part_that_still_holds_repository_tables_is_written_without_them() -> None:
    layout = _layout()
    state = _record()
    stored = part_of(state, ["ns/a", "ns/b"], [BASE, WEB], token="5")  # as stored before
    placement = Placement(layout, {"ns/one": stored})
    assert placement.lacks("ns/one", stored, state)
    assert placement.lacking(ControllerState()) == {"ns/one"}  # whatever the record holds
    target = placement.target("ns/one", stored, [], state)
    assert target.contents()[1:3] == ({}, {}) and target.token == "5"
    assert set(target.contents()[0]) == {"ns/a", "ns/b"}
    assert not placement.lacks("ns/one", target, state)


def _placed(placement: Placement) -> tuple[dict[str, set[str]], dict[str, frozenset[str]]]:
    apps = {key: set(found) for key, found in placement.apps.items()}
    every = {app for found in apps.values() for app in found} | {"ns/nowhere"}
    return apps, {app: placement.keys_of_app(app) for app in every}


def test_a_placement_restored_over_newer_parts_is_the_one_made_from_scratch() -> None:
    layout = _layout()
    state = _record()
    state.saved("x")
    one, c = part_of(state, ["ns/a"], [], token="1"), part_of(state, ["ns/c"], [], token="1")
    first = Placement(layout, {"ns/one": one, "ns/c": c})
    changes = state.copy()
    changes.record_write("ns/b", "web", "2.1.0", NOW + timedelta(hours=1))
    changes.set_shipments({"ns/b": {"web": {"stage": "Written"}}})
    same = first.restored({"ns/one": one, "ns/c": c})
    assert _placed(same) == _placed(first)
    # ns/one's object now holds ns/b too, ns/c's an Application that moved there, then none.
    for newer in (
        {"ns/one": part_of(state, ["ns/a", "ns/b"], [], token="2"), "ns/c": c},
        {"ns/one": one, "ns/c": part_of(state, ["ns/c", "ns/b"], [], token="2")},
        {"ns/one": ControllerState(), "ns/c": ControllerState()},
        {"ns/one": one},  # another set of keys
        {"ns/one": one, "ns/c": c, "ns/gone": part_of(state, ["ns/b"], [], token="3")},
    ):
        restored = first.restored(newer)
        fresh = Placement(layout, newer)
        assert _placed(restored) == _placed(fresh)
        for record in (state, changes, ControllerState()):
            lacking = {key for key, part in newer.items() if fresh.lacks(key, part, record)}
            for key, part in newer.items():
                assert restored.lacks(key, part, record) == fresh.lacks(key, part, record)
            assert restored.lacking(record) == fresh.lacking(record) == lacking
        assert restored.route(changes.operations) == fresh.route(changes.operations)
        assert _placed(first) == _placed(Placement(layout, {"ns/one": one, "ns/c": c}))
    # What lacks answers for a part other than the one placed is worked out from it.
    assert first.lacks("ns/one", one, state)
    full = part_of(state, ["ns/a", "ns/b"], [], token="2")
    assert not first.lacks("ns/one", full, state)


def test_100000_writes_over_1000_keys_fit_each_keys_object_and_none_is_lost() -> None:
    state = ControllerState()
    apps: dict[str, str] = {}
    repos: dict[str, frozenset[str]] = {}
    for n in range(100_000):
        app, key = f"team-{n % 50}/app-{n}", f"team-{n % 50}/updater-{n % 1000}"
        apps[app] = key
        state.record_write(app, "main", f"1.{n % 300}.{n}", NOW + timedelta(seconds=n), "git")
    for k in range(1000):
        key = f"team-{k % 50}/updater-{k}"
        repos[key] = frozenset({repo_key("registry.example.com", f"team/svc-{k % 500}"), BASE})
    for r in range(500):
        tags = [f"1.{t}.0" for t in range(100)]
        state.record_first_seen(repo_key("registry.example.com", f"team/svc-{r}"), tags, NOW)
    state.record_first_seen(BASE, [f"{t}" for t in range(200)], NOW)
    layout = Layout(apps, repos)
    parts = _parts(state, layout)
    repo_parts = _repo_parts(state, sorted(frozenset().union(*repos.values())))
    assert len(parts) == 1000 and len(repo_parts) == 501
    sizes = []
    for part in [*parts.values(), *repo_parts.values()]:
        stored = part.to_stored()
        assert not stored.dropped and stored.size <= MAX_BYTES
        sizes.append(stored.size)
    assert max(sizes) < 32_000  # an object grows with its key or repository, not the fleet
    back = merge([*parts.values(), *repo_parts.values()])
    assert same_contents(back, state)
    assert sum(len(records) for records in back.contents()[0].values()) == 100_000


def _app(name: str, images: list[str]) -> Application:
    return Application.from_object(objects.application(name, source_type="Helm", images=images))


def test_the_layout_keys_applications_by_imageupdater_or_by_themselves() -> None:
    cr = CRState(namespace="argocd", name="updater", generation=1, resource_version="1")
    one = AppUpdateConfig(app=_app("one", []), images=(ImageSpec("web", "nginx"),))
    two = AppUpdateConfig(app=_app("two", []), images=(ImageSpec("web", "ghcr.io/org/web"),))
    collected = Collected(configs=[(one, cr), (two, None)], crs=[cr], listed={"argocd/one"})
    layout = Layouts(RegistryConfig()).layout(collected)
    assert shard_key(one, cr) == "argocd/updater" and shard_key(two, None) == "argocd/two"
    assert layout.apps == {"argocd/one": "argocd/updater", "argocd/two": "argocd/two"}
    assert layout.repos == {
        "argocd/updater": {"registry-1.docker.io/library/nginx"},
        "argocd/two": {"ghcr.io/org/web"},
    }


def test_the_layouts_repositories_are_those_the_cycle_remembers_tags_of() -> None:
    registries = parse_registries_conf(
        "registries:\n- name: local\n  prefix: registry.example.com\n"
        "  api_url: https://mirror.example.com\n  defaultns: team\n"
    )
    images = ["nginx:1.25", "registry.example.com/web", "quay.io/org/tool:1.0"]
    app = _app("shop", images)
    config = AppUpdateConfig(
        app=app,
        images=tuple(ImageSpec(f"i{n}", image.partition(":")[0]) for n, image in enumerate(images)),
        charts=(
            ChartSpec("oci", "oci://registry.example.com/charts/web"),
            ChartSpec("helm", "https://charts.example.com/stable/nginx"),
        ),
    )
    jobs = plan_scans(config, registries.endpoint_for)
    cycle = {repo_key(job.endpoint.host, job.repository) for job in jobs.jobs}
    for job in jobs.chart_jobs:  # as age_tags keys them
        host = job.endpoint.host if job.endpoint is not None else job.scan_key.api_url
        cycle.add(repo_key(host, job.repository))
    assert len(jobs.jobs) == 3
    assert repositories(config, registries.endpoint_for) >= cycle
    assert repo_key("mirror.example.com", "team/web") in cycle


def test_the_layouts_of_each_cycle_follow_the_configurations_whatever_is_kept() -> None:
    """A configuration met again is laid out from what was kept of it, a new one (or one of
    another ImageUpdater) anew: either way as a first look lays it out."""
    cr = CRState(namespace="argocd", name="updater", generation=1, resource_version="1")
    one = AppUpdateConfig(app=_app("one", []), images=(ImageSpec("web", "nginx"),))
    two = AppUpdateConfig(app=_app("two", []), images=(ImageSpec("web", "ghcr.io/org/web"),))
    layouts = Layouts(RegistryConfig())

    def check(collected: Collected) -> Layout:
        layout = layouts.layout(collected)
        assert layout == Layouts(RegistryConfig()).layout(collected)
        return layout

    listed = {"argocd/one", "argocd/two"}
    check(Collected(configs=[(one, cr), (two, None)], crs=[cr], listed=listed))
    again = CRState(namespace="argocd", name="other", generation=1, resource_version="1")
    layout = check(Collected(configs=[(one, again), (two, cr)], crs=[again, cr], listed=listed))
    assert layout.apps == {"argocd/one": "argocd/other", "argocd/two": "argocd/updater"}
    # A webhook event's selection (nothing listed), then a changed configuration.
    moved = AppUpdateConfig(app=_app("two", []), images=(ImageSpec("web", "quay.io/org/api"),))
    check(Collected(configs=[(moved, cr)], crs=[cr]))
    layout = check(Collected(configs=[(one, cr), (moved, cr)], crs=[cr], listed=listed))
    assert layout.repos == {
        "argocd/updater": {"registry-1.docker.io/library/nginx", "quay.io/org/api"}
    }
    # An ImageUpdater not among those listed (an equal object) is keyed as itself.
    equal = CRState(namespace="argocd", name="updater", generation=2, resource_version="2")
    check(Collected(configs=[(one, equal)], crs=[cr], listed=listed))
    # The very same selection again (a collection handed out again): the same layout.
    pairs: list[tuple[AppUpdateConfig, CRState | None]] = [(one, cr), (moved, cr)]
    first = check(Collected(configs=list(pairs), crs=[cr], listed=listed))
    assert layouts.layout(Collected(configs=list(pairs), crs=[cr], listed=listed)) is first
    # The same Applications read again in their places (a mended selection): the same layout,
    # unless one of them moved to other repositories.
    one_again = AppUpdateConfig(app=_app("one", []), images=(ImageSpec("web", "nginx"),))
    mended = check(Collected(configs=[(one_again, cr), (moved, cr)], crs=[cr], listed=listed))
    assert mended is first
    elsewhere = AppUpdateConfig(app=_app("one", []), images=(ImageSpec("web", "quay.io/x/y"),))
    other = check(Collected(configs=[(elsewhere, cr), (moved, cr)], crs=[cr], listed=listed))
    assert other is not first and "quay.io/x/y" in other.repos["argocd/updater"]
    # … but not a webhook event's of the same configurations (nothing listed).
    assert layouts.layout(Collected(configs=list(pairs), crs=[cr])) is not first
