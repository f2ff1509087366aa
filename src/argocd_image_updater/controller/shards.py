"""Which replica processes what: rendezvous hashing of shard keys over the live members, and the
static shard label (``--shard-selector``).

A shard key is an ImageUpdater (``namespace/name``): all of its Applications, its status and its
git batches stay on one replica. An Application updated through its v0.x annotations is its own
key. Rendezvous (highest-random-weight) hashing gives each key to the member with the highest
``blake2b(member, key)``: every member computes the same owner from the same member set, and when
a member joins or leaves only the keys it gains or had move (about ``1/n`` of them).
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from itertools import compress
from typing import Any, Final, cast

from argocd_image_updater.kits.same_items import changed_places, same_items
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.pipeline.records import Collected, CRState

SHARD_LABEL: Final = "argocd-image-updater.argoproj.io/shard"
SHARD_ANNOTATION: Final = "argocd-image-updater.argoproj.io/shard-selector"
"""On a member Lease: the ``--shard-selector`` of its replica (members of one static shard share
their keys among themselves only)."""
UNLABELLED: Final = "!"
"""``--shard-selector !``: only objects without the shard label (not a valid label value)."""


def weight(member: str, key: str) -> int:
    """The rendezvous weight of ``key`` on ``member`` (stable across processes and versions)."""
    digest = hashlib.blake2b(
        member.encode() + b"\0" + key.encode(), digest_size=8, person=b"aiu-shard"
    ).digest()
    return int.from_bytes(digest, "big")


def owner(key: str, members: Collection[str]) -> str | None:
    """The member that owns ``key`` (the highest weight; ties by name), None without members."""
    if not members:
        return None
    return max(members, key=lambda member: (weight(member, key), member))


class Ownership:
    """Whether ``member`` owns each key under a member set, each answer worked out once per
    member set: a sharded replica asks it of every key of the fleet in every cycle (a key is
    kept or left to another replica), and :func:`owner` costs one blake2b per member and key
    (1,000 keys over 3 members: 2.5 ms of CPU a cycle, against 0.1 ms answered from here;
    measured with ``timeit``, 2 vCPU AMD EPYC, CPython 3.11).

    A new member set forgets every answer. Answers not asked for since the last but one
    :meth:`next_cycle` are let go too (the keys of ImageUpdaters since deleted), so that what is
    kept stays the size of the fleet."""

    def __init__(self, member: str) -> None:
        self.member = member
        self._members: frozenset[str] = frozenset()
        self._answers: dict[str, bool] = {}
        self._before: dict[str, bool] = {}
        """The answers of the cycle before, moved to ``_answers`` when asked for again."""

    def owns(self, key: str, members: frozenset[str]) -> bool:
        """Whether :attr:`member` owns ``key`` among ``members`` (as :func:`owner` says)."""
        if members is not self._members:
            if members != self._members:
                self._answers, self._before = {}, {}
            self._members = members
        answer = self._answers.get(key)
        if answer is None:
            answer = self._before.pop(key, None)
            if answer is None:
                answer = owner(key, members) == self.member
            self._answers[key] = answer
        return answer

    def __len__(self) -> int:
        """How many answers are kept."""
        return len(self._answers) + len(self._before)

    def next_cycle(self) -> None:
        """A cycle begins: what the last but one asked for and the last did not is let go."""
        self._before, self._answers = self._answers, {}


def shard_matches(selector: str | None, labels: Mapping[str, Any] | None) -> bool:
    """Whether an object with ``labels`` belongs to the static shard ``selector``: None (no
    ``--shard-selector``) takes every object; ``!`` those without the shard label; any other
    value those labelled with it."""
    if selector is None:
        return True
    value = (labels or {}).get(SHARD_LABEL)
    if selector == UNLABELLED:
        return value is None
    return value == selector


def leader_lease_name(selector: str | None, default: str) -> str:
    """The leader election Lease of the static shard ``selector``: ``default`` without one, else
    ``shard-<value>-<hash>.<default>`` (one leader per static shard; the hash keeps values that
    read alike apart, ``!`` reads ``unlabelled``)."""
    if selector is None:
        return default
    readable = "unlabelled" if selector == UNLABELLED else selector.lower()
    readable = "".join(c if c.isalnum() else "-" for c in readable).strip("-")[:40]
    digest = hashlib.blake2b(selector.encode(), digest_size=3).hexdigest()
    return f"shard-{readable + '-' if readable else ''}{digest}.{default}"


def _labels(raw: Mapping[str, Any]) -> Mapping[str, Any] | None:
    meta = raw.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else None


def keep_shard(
    collected: Collected, selector: str | None, owns: Callable[[str], bool] | None
) -> set[str]:
    """Narrow ``collected`` in place to this replica's share: ImageUpdaters (with their
    Applications) and v0.x-annotated Applications in the static shard ``selector`` whose key
    ``owns`` accepts (None: every key). Returns the keys kept. What was listed stays as it was
    (it tells which Applications still exist, whoever processes them); the Applications left to
    other replicas go to ``collected.elsewhere``, and those of the static shard among them also
    to ``collected.others``."""
    return ShardKeeper().keep(collected, selector, owns)


_Outcome = tuple[AppUpdateConfig, bool, bool, str]
"""What :func:`keep_shard` made of one selected configuration: the configuration (held: its
identity stays its own), whether it is kept, whether it is left to another member of the static
shard, and its Application (``namespace/name``)."""
_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)
_KEPT, _OTHERS, _APP = operator.itemgetter(1), operator.itemgetter(2), operator.itemgetter(3)


@dataclass(frozen=True, slots=True)
class _Split:
    """A selection's share kept by :class:`ShardKeeper` (its lists never changed)."""

    keys: frozenset[str]
    crs: list[CRState]
    configs: list[tuple[AppUpdateConfig, CRState | None]]
    others: list[AppUpdateConfig]
    elsewhere: set[str]

    def apply(self, collected: Collected) -> set[str]:
        collected.crs, collected.configs = list(self.crs), list(self.configs)
        collected.others, collected.elsewhere = list(self.others), set(self.elsewhere)
        return set(self.keys)


def _outcome(
    pair: tuple[AppUpdateConfig, CRState | None],
    by_id: Mapping[int, tuple[bool, bool]],
    cr_keys: Collection[str],
    selector: str | None,
    owns: Callable[[str], bool] | None,
) -> _Outcome:
    """What the split makes of one selected configuration: its ImageUpdater's verdict (by
    identity, else by key: ``cr_keys`` are those kept), or its own as a v0.x Application."""
    config, state = pair
    app = f"{config.app.namespace}/{config.app.name}"
    if state is not None:
        verdict = by_id.get(id(state))
        if verdict is None:  # equal to a listed one, not the same object
            key = f"{state.namespace}/{state.name}"
            verdict = (shard_matches(selector, _labels(state.raw)), key in cr_keys)
        ours, mine = verdict
    else:
        ours = shard_matches(selector, config.app.labels)
        mine = ours and (owns is None or owns(app))
    return (config, mine, ours and not mine, app)


@dataclass(frozen=True, slots=True)
class _Positions:
    """What a split made of each place of its selection: each listed state's verdict (by
    identity; held by the selection), each configuration's outcome, which states were kept, and
    the keys of those."""

    by_id: dict[int, tuple[bool, bool]]
    outcomes: list[_Outcome]
    cr_flags: list[bool]
    cr_keys: frozenset[str]


class ShardKeeper:
    """:func:`keep_shard` of each full cycle's selection, the configurations gone over one by
    one only where they changed: a configuration met in the last cycle as the very same object
    (a steady fleet's selection hands it out again), selected by a listed ImageUpdater of the
    same key, is kept or left as it was while every listed ImageUpdater keeps its verdict (the
    member list, the static shard and the ImageUpdaters listed are as before: else every
    configuration is gone over again). The Applications of the v0.x annotations, their own
    keys, and those whose ImageUpdater is not a listed object are always gone over.

    Going over the 5,000 Applications of ``benchmarks/sharding.py`` one by one cost each of
    three replicas about 6 ms of CPU a cycle (a CPU profile, 2 vCPU AMD EPYC, CPython 3.11);
    those met before are now taken in passes without Python code per Application, which
    halved it (the 1,000 ImageUpdaters are still gone over one by one)."""

    def __init__(self) -> None:
        self._selector: str | None = None
        self._last: tuple[object, list[CRState], list[Any], _Split] | None = None
        """The last cycle's member list, selection (its lists as given) and split: handed out
        again for the very same selection under the same member list (:func:`same_items`)."""
        self._verdicts: dict[str, tuple[bool, bool]] = {}
        """The last cycle's verdict of each listed ImageUpdater (of the shard, kept), by key."""
        self._ours: dict[int, tuple[Mapping[str, Any], bool]] = {}
        """By the identity of a listed ImageUpdater's object as read: that object (held), and
        whether its labels are of the static shard."""
        self._outcomes: dict[tuple[int, str | None], _Outcome] = {}
        """By the identity of a configuration and the key of its ImageUpdater."""
        self._positions: _Positions | None = None
        """What the last split made of each place of its selection (:meth:`_mended`)."""
        self.mended = 0
        """How many splits were mended (for tests)."""

    def keep(
        self,
        collected: Collected,
        selector: str | None,
        owns: Callable[[str], bool] | None,
        members: object = None,
    ) -> set[str]:
        """As :func:`keep_shard`; ``members``: the member list ``owns`` answers under (the
        same object while it holds), so that a selection handed out again (the same states and
        configurations, :class:`~argocd_image_updater.controller.kept_collection.
        KeptCollection`) is split as last time without going over it."""
        given_crs, given_configs = collected.crs, collected.configs
        last = self._last
        if (
            last is not None
            and selector == self._selector
            and last[0] is members
            and same_items(given_crs, last[1])
            and same_items(given_configs, last[2])
        ):
            return last[3].apply(collected)
        split = self._mended(given_crs, given_configs, selector, owns, members)
        if split is None:
            keys = self._keep(collected, selector, owns)
            split = _Split(
                frozenset(keys),
                collected.crs,
                collected.configs,
                collected.others,
                collected.elsewhere,
            )
        self._last = (members, given_crs, given_configs, split)
        return split.apply(collected)

    def _mended(
        self,
        crs: list[CRState],
        pairs: list[tuple[AppUpdateConfig, CRState | None]],
        selector: str | None,
        owns: Callable[[str], bool] | None,
        members: object,
    ) -> _Split | None:
        """The last split with the states and configurations replaced in their places since
        put in, when each of them keeps its ImageUpdater (or Application) and verdict (a
        collection mended where objects were replaced: :class:`~argocd_image_updater.
        controller.kept_collection.KeptCollection`); None: go over the selection."""
        last, known = self._last, self._positions
        if last is None or known is None or last[0] is not members or selector != self._selector:
            return None
        old_crs, old_pairs = last[1], last[2]
        if len(crs) != len(old_crs) or len(pairs) != len(old_pairs):
            return None
        by_id = known.by_id
        replaced = [(old_crs[i], crs[i]) for i in changed_places(crs, old_crs)]
        if replaced:
            by_id = dict(by_id)
        for old, new in replaced:
            key = f"{new.namespace}/{new.name}"
            ours = shard_matches(selector, _labels(new.raw))
            verdict = (ours, ours and (owns is None or owns(key)))
            if (old.namespace, old.name) != (new.namespace, new.name) or verdict != by_id[id(old)]:
                return None
            del by_id[id(old)]
            by_id[id(new)] = verdict
        outcomes = known.outcomes
        places = changed_places(pairs, old_pairs)
        if places:
            outcomes = list(outcomes)
        for i in places:
            outcome = _outcome(pairs[i], by_id, known.cr_keys, selector, owns)
            if outcome[1:] != outcomes[i][1:]:
                return None
            outcomes[i] = outcome
        self._positions = _Positions(by_id, outcomes, known.cr_flags, known.cr_keys)
        self.mended += 1
        split = last[3]
        return _Split(
            split.keys,
            list(compress(crs, known.cr_flags)),
            list(compress(pairs, map(_KEPT, outcomes))),
            list(compress(map(_FIRST, pairs), map(_OTHERS, outcomes))),
            split.elsewhere,
        )

    def _keep(
        self, collected: Collected, selector: str | None, owns: Callable[[str], bool] | None
    ) -> set[str]:
        if selector != self._selector:
            self._selector, self._ours, self._outcomes = selector, {}, {}
        ours_now: dict[int, tuple[Mapping[str, Any], bool]] = {}
        verdicts: dict[str, tuple[bool, bool]] = {}
        by_id: dict[int, tuple[bool, bool]] = {}
        key_of: dict[int, str] = {}
        crs: list[CRState] = []
        cr_keys: set[str] = set()
        for cr in collected.crs:
            raw, key = cr.raw, f"{cr.namespace}/{cr.name}"
            known = self._ours.get(id(raw))
            ours = (
                known[1]
                if known is not None and known[0] is raw
                else shard_matches(selector, _labels(raw))
            )
            ours_now[id(raw)] = (raw, ours)
            mine = ours and (owns is None or owns(key))
            verdicts[key] = by_id[id(cr)] = (ours, mine)
            key_of[id(cr)] = key
            if mine:
                crs.append(cr)
                cr_keys.add(key)
        self._ours = ours_now
        known_outcomes = self._outcomes if verdicts == self._verdicts else {}
        self._verdicts = verdicts
        pairs = collected.configs
        state_keys = list(map(key_of.get, map(id, map(_SECOND, pairs))))
        idents = list(zip(map(id, map(_FIRST, pairs)), state_keys, strict=True))
        found: list[_Outcome | None] = list(map(known_outcomes.get, idents))
        for i in compress(range(len(found)), map(operator.not_, state_keys)):
            found[i] = None  # v0.x annotations, or an ImageUpdater not a listed object
        keys = set(cr_keys)
        for i in compress(range(len(found)), map(operator.not_, found)):
            outcome = found[i] = _outcome(pairs[i], by_id, cr_keys, selector, owns)
            if outcome[1] and pairs[i][1] is None:  # an Application of its own key, kept
                keys.add(outcome[3])
        done = cast(list[_Outcome], found)  # each one is worked out now
        self._outcomes = dict(zip(idents, done, strict=True))
        cr_flags = [by_id[id(cr)][1] for cr in collected.crs]
        self._positions = _Positions(by_id, done, cr_flags, frozenset(cr_keys))
        kept = list(map(_KEPT, done))
        collected.crs = crs
        collected.configs = list(compress(pairs, kept))
        collected.others = list(compress(map(_FIRST, pairs), map(_OTHERS, done)))
        apps = list(map(_APP, done))
        elsewhere = set(compress(apps, map(operator.not_, kept)))
        if elsewhere:  # an Application selected by an ImageUpdater kept and by one left
            elsewhere -= set(compress(apps, kept))
        collected.elsewhere = elsewhere
        return keys
