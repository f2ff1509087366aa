"""Held by hand for tests of a sharded fleet's shared tag lists: what
``controller.fleet_tag_lists.FleetTagLists`` reads of a replica's membership (its member name
and list, whether it is settled, the annotations it puts on its member Lease), and a witness of
``registry.vouched_lists.VouchedLists`` that vouches for the keys it is given."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from argocd_image_updater.registry.cache import TagListKey
from argocd_image_updater.registry.vouched_lists import VouchChecker


class Members:
    """A membership of ``member`` with the member list ``view``."""

    def __init__(self, member: str, view: Collection[str]) -> None:
        self.member, self.view = member, frozenset(view)
        self.annotations: dict[str, str] = {}
        self.on_leases: Callable[[Mapping[str, Mapping[str, str]]], None] | None = None
        self.is_settled = True

    def settled(self) -> bool:
        return self.is_settled

    def annotate(self, key: str, value: str) -> None:
        self.annotations[key] = value


def exchange(members: Mapping[str, Members]) -> None:
    """Pass every member's Lease annotations to every member, as a membership refresh does."""
    seen = {name: dict(m.annotations) for name, m in members.items()}
    for m in members.values():
        assert m.on_leases is not None
        m.on_leases(seen)


class Witness:
    """Vouches for the keys in :attr:`vouched`; counts the questions and keeps what it is
    told."""

    def __init__(self) -> None:
        self.vouched: set[TagListKey] = set()
        self.asked = 0
        self.told: list[
            tuple[TagListKey, tuple[str, ...] | None, tuple[str, ...] | None, bool]
        ] = []

    def vouches(
        self, key: TagListKey, listed_at: float, names: tuple[str, ...] | None = None
    ) -> bool:
        self.asked += 1
        return key in self.vouched

    def checker(self) -> VouchChecker:
        return self.vouches

    def listed(
        self,
        key: TagListKey,
        names: tuple[str, ...] | None,
        before: tuple[str, ...] | None,
        *,
        full: bool,
    ) -> None:
        self.told.append((key, names, before, full))
