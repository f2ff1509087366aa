"""The remembered record split by shard key and by repository, and put together again (pure).

With ``run --sharding`` the record (:class:`~argocd_image_updater.model.controller_state.
ControllerState`) is stored in parts: one per shard key (an ImageUpdater ``namespace/name``, or
an Application of the v0.x annotations) holding the write records and the changes followed of
that key's Applications, and one per repository holding its first-seen times and digests. No
part grows with the fleet: a key's with its key, a repository's with its tags. A repository
used by several keys (a shared base image) is stored once, whoever uses it.

* :class:`Layout` says where things go: each Application's key, each key's repositories (as the
  cycle's selection gives them).
* :class:`Placement` adds what the stored key parts already hold: an Application found in a
  key's part stays there (an Application that moved to another ImageUpdater: as the single
  record keeps it, until forgotten).
* :func:`merge` puts the parts a replica holds together into the one record a cycle uses: an
  Application's write record per image alias from the part that wrote it last, each tag's
  earliest first-seen time, any part's digest (the parts are given in order; the first wins),
  an Application's changes followed from the first part that has them.
* :meth:`Placement.route` splits the unsaved changes of Applications (the operations) by key,
  :func:`by_repository` those of repositories by repository, so that an object that changed
  meanwhile (another writer: a replica whose keys use the same repository, the ``release``
  command, the replica that owned the key before) is read again and only its own changes are
  applied to it.
* :meth:`Placement.target` is what a key's part becomes (writes and changes followed only),
  :func:`repository_target` what a repository's part becomes.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from argocd_image_updater.model.controller_state import (
    APP_OPERATIONS,
    REPO_OPERATIONS,
    SHIPMENTS_OPERATION,
    ControllerState,
    Operation,
    WriteRecord,
)


@dataclass(frozen=True, slots=True)
class Layout:
    """Where the entries of the record belong: ``apps``, each Application's (``namespace/name``)
    shard key; ``repos``, each shard key's repositories (``<registry host>/<path>``)."""

    apps: Mapping[str, str]
    repos: Mapping[str, frozenset[str]]
    keys: frozenset[str] = field(init=False, repr=False, compare=False)
    """Every key of ``apps`` and ``repos``, made once: a test of each of a replica's keys
    against it (as a cycle's scope lets go of the objects no longer held) made it again per
    key before, 40% of a sharded replica's state work at 1,000 keys (a CPU profile of
    ``benchmarks/sharding.py``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", frozenset(self.repos) | frozenset(self.apps.values()))


def apps_in(part: ControllerState) -> set[str]:
    """The Applications ``part`` holds anything of."""
    writes, _, _, shipments = part.contents()
    return {*writes, *shipments}


def repos_in(part: ControllerState) -> set[str]:
    """The repositories ``part`` holds tags of."""
    _, first_seen, digests, _ = part.contents()
    return {*first_seen, *digests}


def part_of(
    state: ControllerState, apps: Iterable[str], repos: Iterable[str], token: str = ""
) -> ControllerState:
    """What ``state`` holds of ``apps`` and ``repos`` (without its unsaved changes)."""
    writes, first_seen, digests, shipments = state.contents()
    apps, repos = list(apps), list(repos)
    return ControllerState(
        {app: writes[app] for app in apps if app in writes},
        {repo: first_seen[repo] for repo in repos if repo in first_seen},
        {repo: digests[repo] for repo in repos if repo in digests},
        token,
        {app: shipments[app] for app in apps if app in shipments},
    )


def merge(parts: Sequence[ControllerState], token: str = "") -> ControllerState:
    """One record of ``parts`` (see the module documentation for who wins)."""
    writes: dict[str, dict[str, WriteRecord]] = {}
    first_seen: dict[str, dict[str, datetime]] = {}
    digests: dict[str, dict[str, str]] = {}
    shipments: dict[str, Any] = {}
    for part in parts:
        p_writes, p_first_seen, p_digests, p_shipments = part.contents()
        for app, records in p_writes.items():
            mine = writes.get(app)
            if mine is None:
                writes[app] = dict(records)
                continue
            for alias, record in records.items():
                if alias not in mine or record.at > mine[alias].at:
                    mine[alias] = record
        for repo, tags in p_first_seen.items():
            seen = first_seen.get(repo)
            if seen is None:
                first_seen[repo] = dict(tags)
                continue
            for tag, moment in tags.items():
                if tag not in seen or moment < seen[tag]:
                    seen[tag] = moment
        for repo, by_tag in p_digests.items():
            known = digests.setdefault(repo, {})
            for tag, digest in by_tag.items():
                known.setdefault(tag, digest)
        for app, entry in p_shipments.items():
            shipments.setdefault(app, entry)
    return ControllerState(writes, first_seen, digests, token, shipments)


class Placement:
    """Which keys hold each Application: the :class:`Layout`, and whatever the keys' stored
    parts (``stored``, by key) already hold.

    :meth:`restored` makes the placement of the same layout over newer stored parts going over
    only the keys whose part is another object: a sharded replica saves twice a cycle (the
    cycle's record, then the changes followed), and placing its 1,700 Applications from
    scratch each time cost one of three replicas in ``benchmarks/sharding.py`` about 1.7 ms of
    CPU a save (a CPU profile; 2 vCPU AMD EPYC, CPython 3.11)."""

    def __init__(self, layout: Layout, stored: Mapping[str, ControllerState]) -> None:
        self.layout = layout
        self._stored = stored
        self.apps: dict[str, set[str]] = {}
        """By key: the Applications of its part."""
        self._app_keys: dict[str, set[str]] = {}
        self._held: dict[str, frozenset[str]] = {}
        """By key with a stored part: the Applications that part holds anything of."""
        self._lacked: dict[str, frozenset[str] | None] = {}
        """For :meth:`lacking`, by key with a stored part: the Applications of the key its part
        lacks (None: the part holds repository tables), made when first asked."""
        for app, key in layout.apps.items():
            self._place(app, key)
        self._of_layout = {key: frozenset(apps) for key, apps in self.apps.items()}
        """By key: its Applications as the layout places them."""
        for key, part in stored.items():
            held = self._held[key] = frozenset(apps_in(part))
            for app in held:
                self._place(app, key)

    def _place(self, app: str, key: str) -> None:
        self.apps.setdefault(key, set()).add(app)
        self._app_keys.setdefault(app, set()).add(key)

    def restored(self, stored: Mapping[str, ControllerState]) -> Placement:
        """The placement of :attr:`layout` over ``stored`` (this one is left as it is); the
        keys of ``stored`` whose part is the one placed here are taken as they are."""
        if stored.keys() != self._stored.keys():
            return Placement(self.layout, stored)
        changed = [key for key, part in stored.items() if part is not self._stored[key]]
        other = copy.copy(self)
        other._stored = stored
        if not changed:
            return other
        other.apps, other._app_keys, other._held = (
            dict(self.apps),
            dict(self._app_keys),
            {**self._held},
        )
        other._lacked = {k: v for k, v in self._lacked.items() if k not in changed}
        for key in changed:
            held = other._held[key] = frozenset(apps_in(stored[key]))
            if held == self._held[key]:
                continue
            apps = self._of_layout.get(key, frozenset()) | held
            before = self.apps.get(key, set())
            for app in before - apps:
                other._app_keys[app] = other._app_keys[app] - {key}
                if not other._app_keys[app]:
                    del other._app_keys[app]
            for app in apps - before:
                other._app_keys[app] = other._app_keys.get(app, set()) | {key}
            if apps:
                other.apps[key] = set(apps)
            else:
                other.apps.pop(key, None)
        return other

    def lacking(self, merged: ControllerState) -> set[str]:
        """The keys placed over a stored part whose part :meth:`lacks` anything (each with the
        part placed): what each part lacks is worked out once per part (a save asks it of each
        of a replica's 340 keys)."""
        writes, _, _, shipments = merged.contents()
        found: set[str] = set()
        lacked = self._lacked
        for key, part in self._stored.items():
            if key in lacked:
                missing = lacked[key]
            else:
                _, first_seen, digests, _ = part.contents()
                tables = bool(first_seen or digests)
                missing = lacked[key] = (
                    None if tables else frozenset(self.apps.get(key, set()) - self._held[key])
                )
            if missing is None or not (
                writes.keys().isdisjoint(missing) and shipments.keys().isdisjoint(missing)
            ):
                found.add(key)
        return found

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(self.apps) | self.layout.keys

    def keys_of_app(self, app: str) -> frozenset[str]:
        return frozenset(self._app_keys.get(app, ()))

    def route(self, operations: Iterable[Operation]) -> tuple[dict[str, list[Operation]], int]:
        """The operations on Applications by the keys they change, and how many changed no key
        here (an Application none of the keys holds); the operations on repositories are left
        to :func:`by_repository`. The changes followed are replaced as a whole: only the last
        such change counts, and only for the keys whose part it changes."""
        routed: dict[str, list[Operation]] = {}
        homeless = 0
        ships: Mapping[str, Any] | None = None
        for name, args in operations:
            if name == SHIPMENTS_OPERATION:
                ships = args[0]
                continue
            if name in REPO_OPERATIONS:
                continue
            if name not in APP_OPERATIONS:  # pragma: no cover - a unit test checks
                raise ValueError(f"unknown operation {name}")
            keys = self._app_keys.get(args[0], set())
            homeless += not keys
            for key in keys:
                routed.setdefault(key, []).append((name, args))
        if ships is not None:
            by_key, without = self._ships_by_key(ships)
            for key in self.apps:
                mine = by_key.get(key, {})
                stored = self._stored.get(key)
                if mine != (stored.contents()[3] if stored is not None else {}):
                    routed.setdefault(key, []).append((SHIPMENTS_OPERATION, (mine,)))
            homeless += without
        return routed, homeless

    def _ships_by_key(self, ships: Mapping[str, Any]) -> tuple[dict[str, dict[str, Any]], int]:
        """The changes followed (by Application) split by the keys holding their Applications,
        and how many belong to none: one pass over them. Going over them once per key instead
        cost a replica holding 340 keys whose 1,700 Applications all had changes followed 47 ms
        of CPU a save, 2.2 ms in all with this (``timeit``, 2 vCPU AMD EPYC, CPython 3.11)."""
        by_key: dict[str, dict[str, Any]] = {}
        without = 0
        for app, entry in ships.items():
            keys = self._app_keys.get(app)
            if not keys:
                without += 1
                continue
            for key in keys:
                by_key.setdefault(key, {})[app] = entry
        return by_key, without

    def lacks(self, key: str, stored: ControllerState, merged: ControllerState) -> bool:
        """Whether ``stored`` (``key``'s part) lacks an Application of the key that ``merged``
        holds, or still holds tables of repositories (as stored before they had objects of
        their own): the part is then written even without a change."""
        writes, _, _, shipments = merged.contents()
        _, s_first_seen, s_digests, _ = stored.contents()
        if s_first_seen or s_digests:
            return True
        held = self._held.get(key) if stored is self._stored.get(key) else None
        if held is None:
            held = frozenset(apps_in(stored))
        return any(app in writes or app in shipments for app in self.apps.get(key, set()) - held)

    def target(
        self,
        key: str,
        stored: ControllerState,
        operations: Iterable[Operation],
        merged: ControllerState,
        *,
        take_apps: bool = True,
    ) -> ControllerState:
        """What ``key``'s part becomes: ``stored`` (as read, with its version) with the key's
        ``operations`` applied and, with ``take_apps``, the records that ``merged`` (the
        cycle's record) has of the key's Applications that ``stored`` has nothing of; without
        any repository's tables (those have objects of their own)."""
        part = stored.copy().apply(operations)
        writes, _, _, shipments = part.contents()
        m_writes, _, _, m_shipments = merged.contents()
        new_writes = dict(writes)
        new_shipments = dict(shipments)
        if take_apps:
            had = apps_in(stored)
            for app in self.apps.get(key, ()):
                if app in had:
                    continue
                if app in m_writes and app not in new_writes:
                    new_writes[app] = m_writes[app]
                if app in m_shipments and app not in new_shipments:
                    new_shipments[app] = m_shipments[app]
        return ControllerState(new_writes, {}, {}, stored.token, new_shipments)


def by_repository(
    operations: Iterable[Operation], repos: Collection[str]
) -> tuple[dict[str, list[Operation]], int]:
    """The operations on repositories by repository, for ``repos`` (those held), and how many
    concern a repository not held."""
    routed: dict[str, list[Operation]] = {}
    homeless = 0
    for name, args in operations:
        if name not in REPO_OPERATIONS:
            continue
        if args[0] in repos:
            routed.setdefault(args[0], []).append((name, args))
        else:
            homeless += 1
    return routed, homeless


def repository_part(state: ControllerState, repo: str, token: str = "") -> ControllerState:
    """What ``state`` holds of ``repo``: its first-seen times and digests."""
    return part_of(state, (), (repo,), token)


def key_part(state: ControllerState) -> ControllerState:
    """What ``state`` (a key's stored part) holds of Applications, at its version: the tables
    of repositories a key's part held before they had objects of their own left out."""
    return part_of(state, apps_in(state), (), state.token)


def holds_repository(merged: ControllerState, repo: str) -> bool:
    _, first_seen, digests, _ = merged.contents()
    return repo in first_seen or repo in digests


def repository_target(
    repo: str,
    stored: ControllerState,
    operations: Iterable[Operation],
    merged: ControllerState,
    *,
    take: bool = False,
) -> ControllerState:
    """What ``repo``'s part becomes: ``stored`` (as read, with its version) with the
    repository's ``operations`` applied and, with ``take`` (its object did not exist: the
    tables come from the parts stored before), what ``merged`` has of it: the earliest
    first-seen times, the digests ``stored`` lacks."""
    part = stored.copy().apply(operations)
    if not take:
        return repository_part(part, repo, stored.token)
    _, first_seen, digests, _ = part.contents()
    _, m_first_seen, m_digests, _ = merged.contents()
    new_first_seen = dict(first_seen)
    new_digests = dict(digests)
    if repo in m_first_seen:
        new_first_seen[repo] = _earliest(first_seen.get(repo, {}), m_first_seen[repo])
    if repo in m_digests:
        new_digests[repo] = {**m_digests[repo], **digests.get(repo, {})}
    return ControllerState({}, new_first_seen, new_digests, stored.token)


def _earliest(
    mine: Mapping[str, datetime], other: Mapping[str, datetime]
) -> Mapping[str, datetime]:
    if not mine or mine == other:
        return other
    merged = dict(mine)
    for tag, moment in other.items():
        if tag not in merged or moment < merged[tag]:
            merged[tag] = moment
    return merged


def same_contents(one: ControllerState, other: ControllerState) -> bool:
    """Whether two records hold the same entries (whatever their versions)."""
    return one.contents() == other.contents()
