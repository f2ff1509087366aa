"""Which member lists each repository for a sharded fleet: rendezvous hashing with a bound on
each member's load (:mod:`argocd_image_updater.controller.listing_owners`), with plain values."""

from __future__ import annotations

import math
import random
from collections import Counter

from argocd_image_updater.controller.listing_owners import SLACK, bounded_owners, ranked
from argocd_image_updater.controller.shards import owner
from argocd_image_updater.model.list_heartbeat import list_id

MEMBERS = frozenset({"replica-a", "replica-b", "replica-c"})
IDS = [list_id("https://registry.example", f"team/app-{i}", "") for i in range(500)]


def owners_of(ids: list[str], members: frozenset[str] = MEMBERS) -> dict[str, str]:
    return bounded_owners(ids, members, lambda key: ranked(key, members))


def test_the_first_ranked_member_is_the_rendezvous_owner() -> None:
    for key in IDS[:50]:
        assert ranked(key, MEMBERS)[0] == owner(key, MEMBERS)
        assert sorted(ranked(key, MEMBERS)) == sorted(MEMBERS)


def test_no_member_owns_more_than_its_share_and_the_slack() -> None:
    owners = owners_of(IDS)
    assert owners.keys() == set(IDS) and set(owners.values()) == MEMBERS
    loads = Counter(owners.values())
    cap = math.ceil(len(IDS) * (1 + SLACK) / len(MEMBERS))
    assert max(loads.values()) <= cap == 170
    rendezvous = Counter(owner(key, MEMBERS) for key in IDS)
    assert max(rendezvous.values()) > cap  # what the bound is for, in this sample
    # A repository stays with its rendezvous owner unless that member was full.
    full = {member for member, load in loads.items() if load == cap}
    assert all(owners[key] == owner(key, MEMBERS) or owner(key, MEMBERS) in full for key in IDS)


def test_every_member_works_out_the_same_owners_in_any_order() -> None:
    shuffled = list(IDS)
    random.Random(7).shuffle(shuffled)
    assert owners_of(shuffled) == owners_of(IDS)


def test_a_repository_needed_or_gone_moves_few_others() -> None:
    before = owners_of(IDS[:400])
    for added in IDS[400:440]:
        after = owners_of([*IDS[:400], added])
        assert sum(after[key] != before[key] for key in before) <= 3
    for gone in IDS[:40]:
        after = owners_of([key for key in IDS[:400] if key != gone])
        assert sum(after[key] != before[key] for key in after) <= 3


def test_no_members_no_owners_and_a_lone_member_owns_all() -> None:
    assert owners_of(IDS, frozenset()) == {}
    assert set(owners_of(IDS[:10], frozenset({"solo"})).values()) == {"solo"}
