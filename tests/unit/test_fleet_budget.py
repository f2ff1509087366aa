"""A registry's budget shared by a sharded fleet: the rate divided among the live members, a
429 back-off held by every request of every member."""

from __future__ import annotations

import pytest

from argocd_image_updater.registry.fleet_budget import BACKOFF_MAX_SECONDS, FleetBudget
from argocd_image_updater.registry.ratelimit import EndpointLimits, RateLimiter


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Sleeps:
    """Records what a limiter waits, and lets the time pass on ``clock``."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(round(seconds, 6))
        self.clock.now += seconds


def test_an_unshared_budget_divides_nothing_and_holds_nothing() -> None:
    budget = FleetBudget()
    assert not budget.shared
    assert budget.share() == 1
    budget.learned("registry.test", 5.0)
    assert budget.remaining("registry.test") == 0.0


def test_the_share_is_the_number_of_live_members_and_at_least_one() -> None:
    members = 3
    budget = FleetBudget()
    budget.join(lambda: members)
    assert budget.share() == 3
    members = 0  # the member list not read yet (or this member not in it)
    assert budget.share() == 1


async def test_each_member_paces_at_its_share_of_the_rate_updated_when_the_members_change() -> None:
    clock = Clock()
    sleeps = Sleeps(clock)
    members = 3
    budget = FleetBudget(clock=clock)
    budget.join(lambda: members)
    limits = EndpointLimits("registry.test", 30.0, budget=budget, clock=clock, sleep=sleeps)
    for _ in range(4):
        async with limits.slot():
            pass
    assert sleeps.waits == [0.1, 0.1, 0.1]  # 30/s shared by 3: 10/s here
    members = 1  # the others left: the whole rate
    sleeps.waits.clear()
    for _ in range(4):
        async with limits.slot():
            pass
    assert sleeps.waits[1:] == [0.033333] * 3


async def test_without_a_shared_budget_the_whole_rate_is_used() -> None:
    clock = Clock()
    sleeps = Sleeps(clock)
    limits = EndpointLimits("registry.test", 30.0, clock=clock, sleep=sleeps)
    for _ in range(3):
        async with limits.slot():
            pass
    assert sleeps.waits == [0.033333] * 2


async def test_a_back_off_learned_here_holds_every_request_and_is_published() -> None:
    clock, wall = Clock(), Clock(1_800_000_000.0)
    sleeps = Sleeps(clock)
    published: list[tuple[str, float]] = []
    budget = FleetBudget(clock=clock, wall=wall)
    budget.join(lambda: 2, lambda host, until: published.append((host, until)))
    limits = EndpointLimits("registry.test", 0.0, budget=budget, clock=clock, sleep=sleeps)
    limits.backed_off(7.0)
    assert published == [("registry.test", 1_800_000_007.0)]
    budget.learned("registry.test", 2.0)  # shorter than the one running: nothing new
    assert published == [("registry.test", 1_800_000_007.0)]
    async with limits.slot():
        pass
    assert sleeps.waits == [7.0]
    assert budget.remaining("registry.test") == 0.0
    assert budget.remaining("other.test") == 0.0


def test_a_back_off_heard_from_another_member_is_bounded_and_only_extends() -> None:
    clock, wall = Clock(), Clock(1_800_000_000.0)
    budget = FleetBudget(clock=clock, wall=wall)
    budget.join(lambda: 2)
    assert not budget.heard("registry.test", wall.now - 1)  # over already
    assert budget.heard("registry.test", wall.now + 3600)
    assert budget.remaining("registry.test") == BACKOFF_MAX_SECONDS
    assert not budget.heard("registry.test", wall.now + 60)  # the longer one stands
    budget.learned("registry.test", 10_000.0)
    assert budget.remaining("registry.test") == BACKOFF_MAX_SECONDS


def test_a_rate_limiter_can_change_its_rate() -> None:
    clock = Clock()
    limiter = RateLimiter(10, clock=clock)
    assert [round(limiter.reserve(), 3) for _ in range(2)] == [0.0, 0.1]
    limiter.set_rate(5)
    assert [round(limiter.reserve(), 3) for _ in range(2)] == [0.2, 0.4]
    with pytest.raises(ValueError, match="positive"):
        limiter.set_rate(0)
