"""What ``controller.fleet_tag_lists.FleetTagLists`` reads of a sharded replica's membership,
held by hand: its member name and list, whether it is settled, the annotations it puts on its
member Lease."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping


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
