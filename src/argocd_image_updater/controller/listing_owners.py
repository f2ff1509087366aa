"""Which member of a sharded fleet lists each repository for the others (pure): rendezvous
hashing with a bound on each member's load.

Rendezvous hashing alone gives each member a binomial share of the repositories: in
``benchmarks/sharding.py`` 500 repositories over 3 members fell 183 / 161 / 156 (and 191 in
another round), and the member listing 183 spent about 10 % more CPU a cycle than an even share
would have cost it. Here the repositories are taken in the order of their ids, and each goes to
the member of highest weight (:func:`~argocd_image_updater.controller.shards.weight`, as for
shard keys) that still has room under a cap of :data:`SLACK` above an even share: no member
lists more than the cap, and a repository needed or no longer needed moves only the few whose
first member was full. Every member works the owners out from the same member list and the same
repositories needed, and so agrees on each; where two members' needs differ, the owner's hash of
what it listed differs from what the other expects of it now, and only the repositories it
owned under the other's needs (or member list) before they last changed, and owns now, are
vouched for (:mod:`~argocd_image_updater.controller.fleet_tag_lists`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import Final

from argocd_image_updater.controller.shards import weight

SLACK: Final = 0.02
"""How far above an even share a member's load may go (room for a repository added or gone to
stay with the member it goes to first, rather than move others)."""


def ranked(key: str, members: Collection[str]) -> tuple[str, ...]:
    """``members`` by their weight for ``key``, highest first (ties by name, highest first: the
    first is :func:`~argocd_image_updater.controller.shards.owner`)."""
    return tuple(sorted(members, key=lambda member: (weight(member, key), member), reverse=True))


def bounded_owners(
    keys: Collection[str],
    members: Collection[str],
    ranking: Callable[[str], tuple[str, ...]],
) -> dict[str, str]:
    """The owner of each of ``keys`` (distinct ids) among ``members``; ``ranking(key)``: every
    member, by its weight for ``key`` (:func:`ranked`, or a copy of it kept)."""
    if not members:
        return {}
    cap = math.ceil(len(keys) * (1 + SLACK) / len(members))
    loads = dict.fromkeys(members, 0)
    owners: dict[str, str] = {}
    for key in sorted(keys):
        for member in ranking(key):
            if loads[member] < cap:
                loads[member] += 1
                owners[key] = member
                break
    return owners
