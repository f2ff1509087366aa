"""When a member of a sharded fleet starts its next cycle: at its own slot of the interval.

Without slots every member waits ``--interval`` after its cycle, and a change of the member list
wakes them all at once (:mod:`.membership`), so from then on their cycles run side by side:
their registry and API traffic arrives in bursts, and on shared nodes the cycles compete for
the same CPUs. With slots, member ``i`` of ``n`` (sorted by name, as every member lists them)
starts its cycles at ``i/n`` of the interval on the wall clock, which the nodes share through
NTP; the cycles are spread over the interval and stay spread however long each takes.

``benchmarks/sharding.py`` (3 replicas on 2 vCPUs, 5 s interval) measured the cycles of members
whose cycles overlapped at 0.28–0.35 s of wall time against 0.17–0.20 s alone, and up to a tenth
more CPU (``benchmarks/RESULTS.md``).

The next slot is at least a quarter of an interval after the cycle ended (:data:`LEAST_PAUSE`),
so two cycles never run back to back: a member whose cycles take less than three quarters of the
interval starts one every interval; one whose cycles take longer, at the first of its slots a
quarter of an interval after (every other interval while a cycle takes less than one and three
quarters; without slots, the cycle's time plus the interval, at most an eighth shorter while a
cycle takes less than one interval); one woken early (the member list changed, an
ImageUpdater's spec changed) returns to its slot within one and a quarter intervals.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Final

LEAST_PAUSE: Final = 0.25
"""The least pause after a cycle, as a part of the interval."""


def next_slot(ended: float, interval: float, member: str, members: Collection[str]) -> float:
    """The wall-clock time (seconds since the epoch) at which ``member`` starts its next cycle,
    given when its last one ``ended`` and the live ``members`` (``member`` among them or not)."""
    fleet = sorted({*members, member})
    offset = fleet.index(member) * interval / len(fleet)
    turns = math.ceil((ended + interval * LEAST_PAUSE - offset) / interval)
    return turns * interval + offset
