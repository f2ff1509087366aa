"""The remembered record split by shard key, and put together again (pure).

With ``run --sharding`` the record (:class:`~argocd_image_updater.model.controller_state.
ControllerState`) is stored as one part per shard key (an ImageUpdater ``namespace/name``, or
an Application of the v0.x annotations): the write records and the changes followed of that
key's Applications, and the first-seen times and digests of the repositories they use. No part
grows with the fleet, only with its key. A repository used by several keys is in the part of
each (its tags are bounded by the repository, not by the fleet).

* :class:`Layout` says where things go: each Application's key, each key's repositories (as the
  cycle's selection gives them).
* :class:`Placement` adds what the stored parts already hold: an Application or a repository
  found in a key's part stays there (an Application that moved to another ImageUpdater, a
  repository no longer used: as the single record keeps them, until forgotten).
* :func:`merge` puts the parts a replica holds together into the one record a cycle uses: an
  Application's write record per image alias from the part that wrote it last, each tag's
  earliest first-seen time, any part's digest (the parts are given in key order; the first
  wins), an Application's changes followed from the first part that has them.
* :meth:`Placement.route` splits the unsaved changes (the operations) by key, so that a key
  whose stored part changed meanwhile (another writer: the ``release`` command, the replica
  that owned the key before) is read again and only that key's changes are applied to it.
* :meth:`Placement.target` is what a key's part becomes: the stored part with the key's
  changes, and what the merged record has for the key that the part lacks (an Application's
  records found in another part — moved in, or taken over from the single record of an
  unsharded fleet — and the first-seen times and digests of its repositories).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
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

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(self.repos) | frozenset(self.apps.values())


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
    """Which keys hold each Application and repository: the :class:`Layout`, and whatever the
    keys' stored parts (``stored``, by key) already hold."""

    def __init__(self, layout: Layout, stored: Mapping[str, ControllerState]) -> None:
        self.layout = layout
        self._stored = stored
        self.apps: dict[str, set[str]] = {}
        """By key: the Applications of its part."""
        self.repos: dict[str, set[str]] = {}
        """By key: the repositories of its part."""
        self._app_keys: dict[str, set[str]] = {}
        self._repo_keys: dict[str, set[str]] = {}
        for app, key in layout.apps.items():
            self._place(app, key, self.apps, self._app_keys)
        for key, repos in layout.repos.items():
            for repo in repos:
                self._place(repo, key, self.repos, self._repo_keys)
        for key, part in stored.items():
            for app in apps_in(part):
                self._place(app, key, self.apps, self._app_keys)
            for repo in repos_in(part):
                self._place(repo, key, self.repos, self._repo_keys)

    @staticmethod
    def _place(name: str, key: str, of_key: dict[str, set[str]], keys: dict[str, set[str]]) -> None:
        of_key.setdefault(key, set()).add(name)
        keys.setdefault(name, set()).add(key)

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(self.apps) | frozenset(self.repos) | self.layout.keys

    def keys_of_app(self, app: str) -> frozenset[str]:
        return frozenset(self._app_keys.get(app, ()))

    def keys_of_repo(self, repo: str) -> frozenset[str]:
        return frozenset(self._repo_keys.get(repo, ()))

    def route(self, operations: Iterable[Operation]) -> tuple[dict[str, list[Operation]], int]:
        """``operations`` by the keys they change, and how many changed no key here (an
        Application or repository none of the keys holds or uses). The changes followed are
        replaced as a whole: only the last such change counts, and only for the keys whose
        part it changes."""
        routed: dict[str, list[Operation]] = {}
        homeless = 0
        ships: Mapping[str, Any] | None = None
        for name, args in operations:
            if name == SHIPMENTS_OPERATION:
                ships = args[0]
                continue
            if name in APP_OPERATIONS:
                keys = self._app_keys.get(args[0], set())
            elif name in REPO_OPERATIONS:
                keys = self._repo_keys.get(args[0], set())
            else:  # pragma: no cover - every operation is classified (a unit test checks)
                raise ValueError(f"unknown operation {name}")
            homeless += not keys
            for key in keys:
                routed.setdefault(key, []).append((name, args))
        if ships is not None:
            for key, apps in self.apps.items():
                mine = {app: entry for app, entry in ships.items() if app in apps}
                stored = self._stored.get(key)
                if mine != (stored.contents()[3] if stored is not None else {}):
                    routed.setdefault(key, []).append((SHIPMENTS_OPERATION, (mine,)))
            homeless += sum(1 for app in ships if app not in self._app_keys)
        return routed, homeless

    def lacks(self, key: str, stored: ControllerState, merged: ControllerState) -> bool:
        """Whether ``stored`` (``key``'s part) lacks an Application of the key or one of its
        repositories that ``merged`` holds (the part is then written even without a change)."""
        writes, first_seen, digests, shipments = merged.contents()
        have_apps, have_repos = apps_in(stored), repos_in(stored)
        if any(
            (app in writes or app in shipments) and app not in have_apps
            for app in self.apps.get(key, ())
        ):
            return True
        return any(
            (repo in first_seen or repo in digests) and repo not in have_repos
            for repo in self.repos.get(key, ())
        )

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
        ``operations`` applied, then what ``merged`` (the cycle's record) has for the key that
        it lacks: the first-seen times (the earliest wins) and digests of its repositories and,
        with ``take_apps``, the records of its Applications that ``stored`` has nothing of."""
        part = stored.copy().apply(operations)
        writes, first_seen, digests, shipments = part.contents()
        m_writes, m_first_seen, m_digests, m_shipments = merged.contents()
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
        new_first_seen = dict(first_seen)
        new_digests = dict(digests)
        for repo in self.repos.get(key, ()):
            if repo in m_first_seen:
                new_first_seen[repo] = _earliest(first_seen.get(repo, {}), m_first_seen[repo])
            if repo in m_digests and digests.get(repo) != m_digests[repo]:
                new_digests[repo] = {**m_digests[repo], **digests.get(repo, {})}
        return ControllerState(new_writes, new_first_seen, new_digests, stored.token, new_shipments)


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
