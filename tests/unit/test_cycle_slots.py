"""Each member of a sharded fleet starts its cycles at its own slot of the interval."""

from __future__ import annotations

import pytest

from argocd_image_updater.controller.cycle_slots import next_slot

MEMBERS = {"a", "b", "c"}


@pytest.mark.parametrize(("member", "offset"), [("a", 0.0), ("b", 10.0), ("c", 20.0)])
def test_members_take_evenly_spread_slots_in_name_order(member: str, offset: float) -> None:
    assert next_slot(2990.5, 30.0, member, MEMBERS) == pytest.approx(3000.0 + offset)


def test_a_steady_member_starts_a_cycle_every_interval() -> None:
    start = next_slot(1000.0, 30.0, "b", MEMBERS)
    for _ in range(5):
        following = next_slot(start + 4.0, 30.0, "b", MEMBERS)  # a cycle of 4 s
        assert following == pytest.approx(start + 30.0)
        start = following


def test_the_next_cycle_is_at_least_a_quarter_of_an_interval_after_the_last_ended() -> None:
    # Woken 1 s before its slot (at 3010): not twice in a row, but the slot after.
    assert next_slot(3009.0, 30.0, "b", MEMBERS) == pytest.approx(3040.0)
    # Woken 8 s before it: that slot.
    assert next_slot(3002.0, 30.0, "b", MEMBERS) == pytest.approx(3010.0)
    # A cycle of 22 s (started at its slot, 3040) leaves the next slot; one of 23 s skips it.
    assert next_slot(3040.0 + 22.0, 30.0, "b", MEMBERS) == pytest.approx(3070.0)
    assert next_slot(3040.0 + 23.0, 30.0, "b", MEMBERS) == pytest.approx(3100.0)


@pytest.mark.parametrize("ended", [0.0, 7.25, 1_790_000_123.4, 1_790_000_129.9])
def test_the_pause_is_between_a_quarter_and_one_and_a_quarter_intervals(ended: float) -> None:
    for member in MEMBERS:
        pause = next_slot(ended, 30.0, member, MEMBERS) - ended
        assert 7.5 <= pause < 37.5


def test_a_member_not_yet_in_the_list_counts_itself() -> None:
    assert next_slot(2990.5, 30.0, "d", MEMBERS) == pytest.approx(3000.0 + 22.5)
    assert next_slot(2990.5, 30.0, "a", set()) == pytest.approx(3000.0)


def test_slots_follow_the_member_list() -> None:
    assert next_slot(2990.5, 30.0, "c", {"a", "c"}) == pytest.approx(3015.0)
    assert next_slot(2990.5, 30.0, "c", {"a", "b", "c", "d"}) == pytest.approx(3015.0)
    assert next_slot(2990.5, 30.0, "d", {"a", "b", "c", "d"}) == pytest.approx(3022.5)
