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
from argocd_image_updater.model.state_parts import Layout, Placement, merge, part_of, same_contents
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


def test_a_record_split_by_key_holds_each_keys_entries_and_merges_back_whole() -> None:
    state, layout = _record(), _layout()
    parts = _parts(state, layout)
    one, c = parts["ns/one"], parts["ns/c"]
    assert set(one.contents()[0]) == {"ns/a", "ns/b"} and set(c.contents()[0]) == {"ns/c"}
    assert one.last_write("ns/b", "web") == WriteRecord(
        "2.0.0", NOW, held="1.9.0", via="git", commit="abc", held_by="someone"
    )
    # A repository used by both keys is in both; one used by one key only in that key's.
    assert one.first_seen_of(BASE) == c.first_seen_of(BASE) == {"1": NOW, "2": NOW}
    assert one.seen_digest(BASE, "2") == c.seen_digest(BASE, "2") == "sha256:" + "b" * 64
    assert one.first_seen_of(API) == {} and c.first_seen_of(WEB) == {}
    assert set(one.shipments()) == {"ns/a"} and set(c.shipments()) == {"ns/c"}
    assert same_contents(merge([parts[k] for k in sorted(parts)]), state)
    assert same_contents(part_of(state, ["ns/c"], [BASE, API]), c)


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


def test_each_change_goes_to_the_keys_it_concerns_only() -> None:
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
    assert [name for name, _ in routed["ns/one"]] == ["write", "seen"]
    assert [name for name, _ in routed["ns/c"]] == ["seen", "seen"]
    assert homeless == 1
    # The changes followed: only the keys whose part they change, each with its own.
    state = merge([stored["ns/c"], stored["ns/one"]])
    state.set_shipments({"ns/a": {"web": {"stage": "Synced"}}, "ns/c": {"api": {"x": 1}}})
    routed, _ = placement.route(state.operations)
    assert routed == {"ns/one": [("ships", ({"ns/a": {"web": {"stage": "Synced"}}},))]}


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


def test_a_part_that_lacks_an_application_or_repository_of_its_key_is_filled_in() -> None:
    layout = _layout()
    state = _record()
    state.saved("x")
    # ns/one's object holds only ns/a; ns/b moved in from another key, web is new to it.
    stored = part_of(state, ["ns/a"], [BASE], token="5")
    placement = Placement(layout, {"ns/one": stored})
    assert placement.lacks("ns/one", stored, state)
    target = placement.target("ns/one", stored, [], state)
    assert target.last_write("ns/b", "web") == state.last_write("ns/b", "web")
    assert target.first_seen_of(WEB) == {"1.0.0": NOW}
    assert not placement.lacks("ns/one", target, state)
    assert placement.target("ns/one", stored, [], state, take_apps=False).writes_of("ns/b") == {}


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
    assert len(parts) == 1000
    sizes = []
    for part in parts.values():
        stored = part.to_stored()
        assert not stored.dropped and stored.size <= MAX_BYTES
        sizes.append(stored.size)
    assert max(sizes) < 64_000  # a key's object grows with the key, not the fleet
    back = merge(list(parts.values()))
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
