"""Where a tag is chosen: a cycle's scan outcomes (:class:`ScanResults`), each tag choice made
from them once per (scan, policy), and the choices of the last cycle kept across cycles
(:class:`ChoiceMemory`). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeAlias

from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.plan.jobs import ScanKey
from argocd_image_updater.policy.min_age import TagAges
from argocd_image_updater.policy.select import Policy, PolicyError, Selection, choose


class ScanResultLike(Protocol):
    """What the planner reads from a registry scan result."""

    @property
    def tags(self) -> Sequence[TagInfo]: ...

    @property
    def order_hint(self) -> Mapping[str, int] | None: ...


ScanOutcome: TypeAlias = ScanResultLike | Exception

PinKey: TypeAlias = tuple[str, str, str, str]
"""A pinned tag: registry API, repository, credential reference, tag name."""


_Choice: TypeAlias = tuple[tuple[TagInfo, ...], Mapping[str, int] | None, Selection | PolicyError]
"""A choice with the tags and order hint it was made from."""


class ChoiceMemory:
    """The tag choices of the last cycle, kept by the controller across cycles: a scan that
    lists the same tags as last time (the steady state) reuses its choice instead of choosing
    again, so a cycle where nothing changed costs a comparison of tag lists per scan.

    Fast path of the cycle's choose stage. Measured with ``benchmarks/cycle.py`` (1,000
    Applications, 200 repositories): with the choice made once per (scan, policy), 200 choices
    instead of 1,000 per cycle, and none in a steady cycle; together with the other changes of
    that day the steady cycle's CPU fell by 40–60% in interleaved pairs (benchmarks/RESULTS.md,
    *Controller cycle*, "a cycle's cost grows with what changed")."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: dict[tuple[ScanKey, Policy], _Choice] = {}

    def keep(self, results: ScanResults) -> None:
        """Remember the choices of ``results`` (a whole cycle's) and forget older ones."""
        self._last = dict(results.choices)

    def recall(
        self,
        key: ScanKey,
        policy: Policy,
        tags: tuple[TagInfo, ...],
        hint: Mapping[str, int] | None,
    ) -> _Choice | None:
        found = self._last.get((key, policy))
        if found is None or found[1] != hint or found[0] != tags:
            return None
        return found


class ScanResults(dict[ScanKey, ScanOutcome]):
    """A cycle's scan outcomes by scan key, remembering each tag choice made from them.

    Applications that share a scan and a policy get the same choice: it is made once per
    (scan, policy) and reused (the policy holds everything the choice depends on: strategy,
    constraint, allow and ignore filters, platforms). With a :class:`ChoiceMemory`, a choice
    of the last cycle is reused when the scan found exactly the same tags. Pure: a new mapping
    per cycle, no I/O.
    """

    __slots__ = ("_memory", "_pins", "ages", "choices", "choices_made")

    def __init__(self, *args: Any, memory: ChoiceMemory | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._memory = memory
        self.ages: dict[ScanKey, TagAges] = {}
        """When the tags of each scan were first seen, and the time now (``minAge``)."""
        self._pins: dict[PinKey, str | Exception] = {}
        self.choices: dict[tuple[ScanKey, Policy], _Choice] = {}
        self.choices_made = 0
        """How many choices were made (not reused) so far."""

    @staticmethod
    def pin_key(key: ScanKey, tag: str) -> PinKey:
        """Scans that differ only in what they fetch share the digest of a tag."""
        return (key.api_url, key.repository, key.credentials, tag)

    def pin(self, key: PinKey, digest: str | Exception) -> None:
        """Record the digest the registry gave for a chosen tag (or why it gave none)."""
        self._pins[key] = digest

    def pinned(self, key: ScanKey, tag: str) -> str | Exception | None:
        """The digest recorded for ``tag`` of the scan ``key``; ``None`` when not asked for."""
        return self._pins.get(self.pin_key(key, tag))

    def choose(self, key: ScanKey, policy: Policy, scan: ScanResultLike) -> Selection:
        """The choice of ``policy`` from ``scan`` (the outcome stored under ``key``)."""
        found = self.choice(key, policy, scan)
        if isinstance(found[2], PolicyError):
            raise found[2]
        return found[2]

    def choice(self, key: ScanKey, policy: Policy, scan: ScanResultLike) -> _Choice:
        """:meth:`choose`'s record: the tags, the order hint and the choice (or its error).
        The record of a choice reused from the last cycle is last cycle's very object."""
        memo = (key, policy)
        found = self.choices.get(memo)
        if found is None:
            tags, hint = tuple(scan.tags), scan.order_hint
            ages = self.ages.get(key) if policy.min_age is not None else None
            # A choice by age depends on the time: it is never reused from the last cycle.
            memory = self._memory if ages is None else None
            found = memory.recall(key, policy, tags, hint) if memory else None
            if found is None:
                self.choices_made += 1
                try:
                    chosen: Selection | PolicyError = choose(policy, tags, hint, ages)
                except PolicyError as err:
                    chosen = err
                found = (tags, hint, chosen)
            self.choices[memo] = found
        return found
