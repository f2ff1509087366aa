"""The events ConfigMap's documents: bounded, checked when read, a bad entry left out and named."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from argocd_image_updater.model.fleet_events import (
    BACKOFF_HOSTS,
    BACKOFF_MAX,
    EVENT_MAX_AGE,
    RING_SIZE,
    Backoff,
    EntryError,
    RingEntry,
    appended,
    check_event,
    merged_backoffs,
    parse_backoffs,
    parse_events,
    render_backoffs,
    render_events,
)
from argocd_image_updater.model.registry_event import RegistryEvent

NOW = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)
EVENT = RegistryEvent("ghcr.io", "team/web", "1.2.0", "sha256:" + "a" * 64, "ghcr.io")


def entry(number: int, at: datetime = NOW) -> RingEntry:
    return RingEntry(f"id{number}", "pod-a", at, EVENT)


def test_entries_survive_the_round_trip() -> None:
    ring = [entry(1), entry(2, NOW + timedelta(milliseconds=5))]
    parsed, problems = parse_events(render_events(ring))
    assert (parsed, problems) == (ring, [])
    backoffs = [Backoff("ghcr.io", NOW + timedelta(seconds=30), "pod-a")]
    assert parse_backoffs(render_backoffs(backoffs), NOW) == (backoffs, [])


def test_the_ring_keeps_the_newest_entries_none_too_old_each_once() -> None:
    old = entry(0, NOW - EVENT_MAX_AGE - timedelta(seconds=1))
    ring = appended([old, *(entry(n) for n in range(1, RING_SIZE + 5))], [entry(3)], NOW)
    assert len(ring) == RING_SIZE
    assert old not in ring
    assert [e.id for e in ring][-1] == "id3"  # added again: moved to the end, kept once
    assert len({e.id for e in ring}) == RING_SIZE


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"member": "b", "time": "2026-12-04T10:00:00Z", "repository": "r"}, "id: expected"),
        ({"id": "x", "member": "b", "time": "yesterday", "repository": "r"}, "time: 'yesterday'"),
        ({"id": "x", "member": "b", "time": "2026-12-04T10:00:00", "repository": "r"}, "zone"),
        ({"id": "x", "member": "b", "time": "2026-12-04T10:00:00Z", "repository": ""}, "empty"),
        ({"id": "x", "member": "b", "time": "2026-12-04T10:00:00Z", "repository": 3}, "string"),
        (
            {"id": "x", "member": "b", "time": "2026-12-04T10:00:00Z", "repository": "r" * 300},
            "repository: longer than 256",
        ),
        ("just text", "expected an object"),
    ],
)
def test_a_malformed_entry_is_left_out_and_named(raw: object, problem: str) -> None:
    text = json.dumps([raw, entry(1).to_json()])
    parsed, problems = parse_events(text)
    assert [e.id for e in parsed] == ["id1"]
    assert len(problems) == 1 and problems[0].startswith("events.json[0]: ")
    assert problem in problems[0]


@pytest.mark.parametrize(
    ("text", "problem"),
    [("{not json", "not JSON"), ('{"a": 1}', "expected a JSON list"), ("x" * 600_000, "longer")],
)
def test_a_malformed_document_reads_as_empty(text: str, problem: str) -> None:
    parsed, problems = parse_events(text)
    assert parsed == [] and problem in problems[0]


def test_back_offs_are_bounded_and_the_later_one_wins() -> None:
    text = json.dumps(
        {
            "ghcr.io": {"until": "2026-12-04T11:00:00Z", "member": "pod-b"},  # an hour: capped
            "quay.io": {"until": "2026-12-04T09:00:00Z", "member": "pod-b"},  # over
            "docker.io": {"until": "soon", "member": "pod-b"},
        }
    )
    found, problems = parse_backoffs(text, NOW)
    assert found == [Backoff("ghcr.io", NOW + BACKOFF_MAX, "pod-b")]
    assert problems == ["backoffs.json['docker.io']: until: 'soon' is not an RFC 3339 time"]
    short = Backoff("ghcr.io", NOW + timedelta(seconds=5), "pod-a")
    long = Backoff("ghcr.io", NOW + timedelta(seconds=50), "pod-c")
    assert merged_backoffs([short], [long], NOW) == [long]
    assert merged_backoffs([long], [short], NOW) == [long]
    many = [Backoff(f"r{n}.test", NOW + timedelta(seconds=n + 1), "a") for n in range(100)]
    kept = merged_backoffs(many, [], NOW)
    assert len(kept) == BACKOFF_HOSTS
    assert min(b.until for b in kept) == NOW + timedelta(seconds=100 - BACKOFF_HOSTS + 1)


def test_an_event_too_large_for_an_entry_is_refused_naming_the_field() -> None:
    check_event(EVENT)
    with pytest.raises(EntryError, match="tag: longer than 128"):
        check_event(RegistryEvent("ghcr.io", "team/web", "t" * 129))
    with pytest.raises(EntryError, match="repository: empty"):
        check_event(RegistryEvent("ghcr.io", "", "1"))
