"""The controller's remembered record: changes, replay onto a newer copy, serialization."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta

import pytest

from argocd_image_updater.model.controller_state import (
    DIGESTS_KEY,
    FIRST_SEEN_KEY,
    MAX_BYTES,
    SHIPMENTS_KEY,
    WRITES_KEY,
    ControllerState,
    StateError,
    WriteRecord,
    repo_key,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
REPO = repo_key("registry.example.com", "team/web")


def test_writes_are_remembered_per_app_and_alias_and_a_new_write_ends_a_hold() -> None:
    state = ControllerState()
    assert not state.changed
    state.record_write("argocd/shop", "web", "1.2.0", NOW)
    state.mark_live("argocd/shop", "web")
    state.mark_held("argocd/shop", "web", "1.1.0")
    assert state.last_write("argocd/shop", "web") == WriteRecord("1.2.0", NOW, True, "1.1.0")
    assert state.changed
    state.record_write("argocd/shop", "web", "1.3.0", NOW + timedelta(hours=1))
    assert state.last_write("argocd/shop", "web") == WriteRecord("1.3.0", NOW + timedelta(hours=1))
    assert state.last_write("argocd/shop", "api") is None


def test_nothing_changes_when_the_same_thing_is_recorded_again() -> None:
    state = ControllerState()
    state.record_write("argocd/shop", "web", "1.2.0", NOW)
    state.record_first_seen(REPO, ["1.0", "1.1"], NOW)
    state.record_digest(REPO, "1.1", "sha256:" + "a" * 64)
    state.saved("7")
    state.record_write("argocd/shop", "web", "1.2.0", NOW)
    state.record_first_seen(REPO, ["1.0", "1.1"], NOW + timedelta(days=1))
    state.record_digest(REPO, "1.1", "sha256:" + "a" * 64)
    state.mark_live("argocd/other", "web")  # no record: nothing to mark
    state.release("argocd/other")
    assert not state.changed and state.token == "7"


def test_first_seen_keeps_the_first_time_and_prune_forgets_tags_gone_from_the_registry() -> None:
    state = ControllerState()
    state.record_first_seen(REPO, ["1.0", "1.1"], NOW)
    state.record_first_seen(REPO, ["1.1", "1.2"], NOW + timedelta(hours=2))
    assert state.first_seen(REPO, "1.1") == NOW
    assert state.first_seen(REPO, "1.2") == NOW + timedelta(hours=2)
    state.record_digest(REPO, "1.0", "sha256:" + "b" * 64)
    state.prune_tags(REPO, {"1.1", "1.2"})
    assert state.first_seen(REPO, "1.0") is None and state.seen_digest(REPO, "1.0") is None
    assert set(state.first_seen_of(REPO)) == {"1.1", "1.2"}


def test_digests_seen_are_remembered_per_repository_and_tag() -> None:
    state = ControllerState()
    assert state.seen_digest(REPO, "1.0") is None
    state.record_digest(REPO, "1.0", "sha256:" + "1" * 64)
    state.record_digest(REPO, "1.0", "sha256:" + "2" * 64)
    assert state.seen_digest(REPO, "1.0") == "sha256:" + "2" * 64
    assert state.seen_digest(repo_key("other.io", "team/web"), "1.0") is None


def test_release_forgets_the_writes_of_the_given_aliases_or_all() -> None:
    state = ControllerState()
    for alias in ("web", "api", "worker"):
        state.record_write("argocd/shop", alias, "1.0", NOW)
    state.release("argocd/shop", ["web"])
    assert set(state.writes_of("argocd/shop")) == {"api", "worker"}
    state.release("argocd/shop")
    assert state.writes_of("argocd/shop") == {}


def test_apps_that_no_longer_exist_are_forgotten_in_the_watched_namespaces_only() -> None:
    state = ControllerState()
    for key in ("argocd/a", "argocd/b", "team/c"):
        state.record_write(key, "web", "1.0", NOW)
    state.prune_apps({"argocd/a"}, ["argocd"])
    assert state.last_write("argocd/b", "web") is None
    assert state.last_write("team/c", "web") is not None  # not watched: kept
    state.prune_apps(set(), None)
    assert state.writes_of("argocd/a") == {} and state.writes_of("team/c") == {}


def test_a_round_trip_through_the_stored_data() -> None:
    state = ControllerState()
    state.record_write("argocd/shop", "web", "1.2.0", NOW)
    state.mark_live("argocd/shop", "web")
    state.record_first_seen(REPO, ["1.2.0"], NOW)
    state.record_digest(REPO, "1.2.0", "sha256:" + "c" * 64)
    data = state.to_data()
    assert data["version"] == "1"
    assert json.loads(data[WRITES_KEY]) == {
        "argocd/shop": {"web": {"tag": "1.2.0", "at": "2026-03-01T12:00:00Z", "live": True}}
    }
    back = ControllerState.from_data(data, token="42")
    assert back.token == "42" and not back.changed
    assert back.to_data() == data
    assert ControllerState.from_data({}).to_data() == ControllerState().to_data()


def test_unsaved_changes_are_applied_again_onto_a_newer_copy() -> None:
    ours = ControllerState.from_data(ControllerState().to_data(), token="1")
    ours.record_write("argocd/shop", "web", "1.2.0", NOW)
    ours.record_first_seen(REPO, ["1.2.0"], NOW)
    theirs = ControllerState(token="1")
    theirs.record_write("argocd/shop", "api", "3.0", NOW)
    theirs.record_first_seen(REPO, ["1.2.0"], NOW - timedelta(days=1))
    newer = ControllerState.from_data(theirs.to_data(), token="2")
    ours.adopt(ours.replay_onto(newer))
    assert ours.token == "2" and ours.changed
    assert set(ours.writes_of("argocd/shop")) == {"web", "api"}
    assert ours.first_seen(REPO, "1.2.0") == NOW - timedelta(days=1)  # the earlier time stays


def test_the_largest_repositories_digests_then_first_seen_times_give_way_to_the_size_bound() -> (
    None
):
    state = ControllerState()
    state.record_write("argocd/shop", "web", "1.0", NOW)
    big, small = repo_key("r.io", "big"), repo_key("r.io", "small")
    state.record_first_seen(big, [f"1.{i}" for i in range(300)], NOW)
    state.record_first_seen(small, ["1.0"], NOW)
    state.record_digest(big, "1.0", "sha256:" + "d" * 64)
    data = state.to_data(limit=2_000)
    assert json.loads(data[DIGESTS_KEY]) == {}
    assert set(json.loads(data[FIRST_SEEN_KEY])) == {small}
    assert "argocd/shop" in json.loads(data[WRITES_KEY])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"version": "2"}, "version: layout 2 is not 1"),
        ({"version": "1", WRITES_KEY: "{"}, "writes.json: not JSON"),
        ({"version": "1", WRITES_KEY: "[]"}, "writes.json: expected a JSON object"),
        ({"version": "1", WRITES_KEY: '{"a/b": {"web": {"at": "x"}}}'}, "a/b.web: expected"),
        (
            {"version": "1", WRITES_KEY: '{"a/b": {"web": {"tag": "1", "at": "soon"}}}'},
            "writes.json: a/b.web.at: not an RFC 3339 time",
        ),
        ({"version": "1", FIRST_SEEN_KEY: '{"r/x": {"1": "soon"}}'}, "first-seen.json: r/x"),
        ({"version": "1", DIGESTS_KEY: '{"r/x": 3}'}, "digests.json: r/x"),
    ],
)
def test_a_record_that_cannot_be_read_names_the_key(data: dict[str, str], message: str) -> None:
    with pytest.raises(StateError, match=message.replace(".", r"\.")):
        ControllerState.from_data(data)


def _fleet_state(apps: int, repos: int = 0, tags: int = 0) -> ControllerState:
    state = ControllerState()
    for n in range(apps):
        state.record_write(
            f"team-{n % 50}/service-{n}", "web", f"1.{n}.0", NOW + timedelta(minutes=n)
        )
    for r in range(repos):
        repo = repo_key("registry.example.com", f"team/service-{r}")
        state.record_first_seen(repo, [f"1.{t}.0" for t in range(tags)], NOW)
        state.record_digest(repo, "1.0.0", "sha256:" + f"{r:064x}")
    return state


def test_a_record_that_fits_is_stored_as_plain_data() -> None:
    state = _fleet_state(10)
    stored = state.to_stored()
    assert stored.binary == {} and stored.data == state.to_data() and not stored.dropped


def test_a_record_too_large_for_plain_data_is_stored_compressed_whole() -> None:
    state = _fleet_state(12_000)
    assert _plain_size(state.to_data(limit=10**9)) > MAX_BYTES
    stored = state.to_stored()
    assert stored.size <= MAX_BYTES and not stored.dropped
    assert set(stored.binary) == {
        key + ".gz" for key in (WRITES_KEY, FIRST_SEEN_KEY, DIGESTS_KEY, SHIPMENTS_KEY)
    }
    assert stored.data == {"version": "1"}
    back = ControllerState.from_stored(stored.data, stored.binary, token="7")
    assert back.to_data(limit=10**9) == state.to_data(limit=10**9)
    assert back.last_write("team-3/service-12003", "web") is None
    assert back.last_write("team-3/service-11953", "web") is not None


def test_a_record_too_large_even_compressed_sheds_hints_then_the_oldest_writes() -> None:
    state = _fleet_state(3_000, repos=400, tags=50)
    stored = state.to_stored(limit=15_000)
    assert stored.size <= 15_000
    assert set(stored.dropped) == {DIGESTS_KEY, FIRST_SEEN_KEY, WRITES_KEY}
    back = ControllerState.from_stored(stored.data, stored.binary)
    kept = [n for n in range(3_000) if back.last_write(f"team-{n % 50}/service-{n}", "web")]
    assert kept and kept == list(range(3_000 - len(kept), 3_000))  # the newest writes stay
    assert len(kept) == 3_000 - stored.dropped[WRITES_KEY]
    # The same order of shedding for plain data, within its own bound.
    data = state.to_data(limit=40_000)
    assert _plain_size(data) <= 40_000
    assert json.loads(data[DIGESTS_KEY]) == {} and json.loads(data[FIRST_SEEN_KEY]) == {}


def test_compressed_tables_that_cannot_be_read_name_their_key() -> None:
    with pytest.raises(StateError, match=r"writes\.json\.gz: not gzip-compressed JSON"):
        ControllerState.from_stored({"version": "1"}, {WRITES_KEY + ".gz": b"not gzip"})
    packed = gzip.compress(b"[]")
    with pytest.raises(StateError, match=r"writes\.json: expected a JSON object"):
        ControllerState.from_stored({"version": "1"}, {WRITES_KEY + ".gz": packed})


def _plain_size(data: dict[str, str]) -> int:
    return sum(len(k) + len(v.encode()) for k, v in data.items())


def test_shipments_set_for_some_applications_keep_the_others() -> None:
    """Static shards share one record: each replaces the changes it follows, not the others'."""
    state = ControllerState(
        shipments={"argocd/a": {"web": {"n": 1}}, "argocd/b": {"web": {"n": 2}}}
    )
    state.set_shipments({"argocd/c": {"web": {"n": 3}}}, apps={"argocd/a", "argocd/c"})
    assert state.shipments() == {"argocd/b": {"web": {"n": 2}}, "argocd/c": {"web": {"n": 3}}}
    other = ControllerState(shipments={"argocd/b": {"web": {"n": 9}}, "argocd/d": {}})
    assert state.replay_onto(other).shipments() == {
        "argocd/b": {"web": {"n": 9}},
        "argocd/c": {"web": {"n": 3}},
        "argocd/d": {},
    }
    state.set_shipments({})
    assert state.shipments() == {}


def test_an_application_gone_forgets_its_changes_followed() -> None:
    state = ControllerState(shipments={"argocd/a": {"web": {}}, "argocd/b": {"web": {}}})
    state.prune_apps({"argocd/b"}, None)
    assert state.shipments() == {"argocd/b": {"web": {}}}
