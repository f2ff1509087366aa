"""Many copies of a sharded fleet's tag lists asked for at one instant (a full cycle's scans
answered at once): the owners' word read once (``FleetTagLists.checker``), the copies reused and
the listings held counted once (``VouchedLists.asked_together``,
``TagListCache.counted_together``), a copy asked for once a round only."""

from __future__ import annotations

import asyncio

from test_shared_tag_lists import KEYS, Fleet, Registry

from argocd_image_updater.observe.metrics import CACHE_HITS, CACHE_MISSES, FLEET_TAG_LISTS
from argocd_image_updater.registry.cache import TagListCache
from argocd_image_updater.registry.vouched_lists import VouchChecker, VouchedLists
from argocd_image_updater_testing.fleet_members import Witness


def reused() -> float:
    return FLEET_TAG_LISTS.labels("reused")._value.get()


def tag_hits() -> tuple[float, float]:
    return CACHE_HITS.labels("tags")._value.get(), CACHE_MISSES.labels("tags")._value.get()


def test_the_checker_vouches_for_the_others_copies_at_one_instant() -> None:
    fleet = Fleet()
    listings = {k: ("1.0.0",) for k in KEYS}
    b = fleet.lists["b"]
    assert not any(b.checker()(k, fleet.clock[0]) for k in KEYS)  # nothing heard yet
    fleet.warmed(listings)
    check = b.checker()
    assert any(check(k, fleet.clock[0] - 1) for k in KEYS)  # some are vouched for
    assert not any(check(k, fleet.clock[0]) for k in KEYS if b.owns(k))  # not its own
    fleet.clock[0] += 31  # the heartbeats too old: read when the checker is made
    assert any(check(k, fleet.clock[0] - 32) for k in KEYS)
    assert not any(b.checker()(k, fleet.clock[0] - 32) for k in KEYS)
    fleet.clock[0] -= 31
    fleet.members["b"].is_settled = False
    assert not any(b.checker()(k, fleet.clock[0] - 1) for k in KEYS)


class CountingWitness(Witness):
    def __init__(self) -> None:
        super().__init__()
        self.checkers = 0

    def checker(self) -> VouchChecker:
        self.checkers += 1
        return super().checker()


def test_copies_asked_for_together_are_checked_at_one_instant_and_counted_once() -> None:
    witness, clock = CountingWitness(), [1000.0]
    lists = VouchedLists(witness, wall=lambda: clock[0])

    async def copies() -> None:
        lists.new_round()
        for key in KEYS[:5]:
            await lists.names(key, Registry().list_tags, full=True)

    asyncio.run(copies())
    witness.vouched.update(KEYS[:4])
    lists.new_round()
    before = reused()
    with lists.asked_together():
        with lists.asked_together():  # within another: the same block
            assert [lists.reuse(k) for k in KEYS[:5]] == [("1.0.0",)] * 4 + [None]
        assert reused() == before  # counted at the end
    assert reused() == before + 4 and witness.checkers == 1
    assert lists.reuse(KEYS[0]) == ("1.0.0",) and reused() == before + 5  # one by one again


def test_listings_held_together_are_counted_once() -> None:
    cache = TagListCache()
    since = cache.new_round()
    hits, misses = tag_hits()
    with cache.counted_together():
        for key in KEYS[:3]:
            cache.put(key, ("1.0.0",))
        cache.put(KEYS[3], ("1.0.0",), hit=False)
        assert cache.finished(KEYS[0], since) == ("1.0.0",)
        assert tag_hits() == (hits, misses)
    assert tag_hits() == (hits + 4, misses + 1)
    cache.put(KEYS[4], ("1.0.0",))
    assert tag_hits() == (hits + 5, misses + 1)


def test_a_copy_refused_in_the_round_is_not_asked_for_again() -> None:
    witness = Witness()
    lists = VouchedLists(witness)

    async def fetch() -> list[str]:
        return ["1.0.0"]

    async def scenario() -> None:
        lists.new_round()
        await lists.names(KEYS[0], fetch, full=True)
        await lists.names(KEYS[1], fetch, full=True)
        witness.vouched.add(KEYS[1])
        lists.new_round()
        _, copy = lists.listing(KEYS[0], fetch, full=True)
        assert copy is not None  # the cache asks for the copy first
        assert copy(KEYS[0]) is None  # refused: not vouched for
        asked = witness.asked
        fetched, copy = lists.listing(KEYS[0], fetch, full=True)
        assert copy is None  # refused in this round already: listed, not asked again
        assert await fetched() == ["1.0.0"] and witness.asked == asked
        _, copy = lists.listing(KEYS[1], fetch, full=False)
        assert copy is None  # a webhook event's round always lists
        assert lists.reuse(KEYS[1]) == ("1.0.0",)  # vouched for: reused
        lists.new_round()
        _, copy = lists.listing(KEYS[0], fetch, full=True)
        assert copy is not None  # a new round asks again

    asyncio.run(scenario())
