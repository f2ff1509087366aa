"""The remembered record of a sharded fleet (``run --sharding``): one ConfigMap per shard key
and one per repository (:mod:`~argocd_image_updater.controller.state_objects` names them).

A replica reads and writes only the objects of the keys it holds (the cycle's or webhook event's
keys, given by :meth:`ShardedStateStore.scoped` around their work) and of the repositories they
use. A load takes each object from the watched copy of the state ConfigMaps
(:class:`~argocd_image_updater.controller.state_cache.StateCache`) when there is one, and reads
it (at most :data:`~argocd_image_updater.controller.state_objects.MAX_CONCURRENT_REQUESTS`
requests at once) when there is not, or when this replica did not hold it in its loads before
(a key taken over is read as its previous owner last saved it); an object still at its
resourceVersion is not parsed again. A save writes only the objects whose part changed, each a
conditional replace (or create) behind the write fence, the repositories' first. When another
writer (another replica whose keys use the same repository, the ``release`` command, the replica
that held a key before) changed an object meanwhile, only that object is read again and only its
changes (its Applications', or its repository's) are applied to it.

Switching an existing fleet to ``--sharding`` loses nothing: a key without an object yet takes
its part from the single ConfigMap ``argocd-image-updater-state`` (read once), a repository
without one from the key objects that held repository tables and from the single ConfigMap;
the objects are written at the next save. The single ConfigMap is left as it is (a fleet
switched back goes on from it).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.controller.state_cache import StateCache
from argocd_image_updater.controller.state_objects import (
    bounded,
    key_store,
    repository_store,
)
from argocd_image_updater.controller.state_store import (
    MAX_SAVE_ATTEMPTS,
    STATE_CONFIGMAP,
    ConfigMapStateStore,
)
from argocd_image_updater.kube.client import KubeClient
from argocd_image_updater.model.controller_state import ControllerState
from argocd_image_updater.model.state_parts import (
    Layout,
    Placement,
    by_repository,
    holds_repository,
    key_part,
    merge,
    part_of,
    repos_in,
    repository_part,
    repository_target,
    same_contents,
)
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.ports import StoreError
from argocd_image_updater.pipeline.records import Collected
from argocd_image_updater.pipeline.state_scope import Layouts

log = get_logger("state")

Target = Callable[[ControllerState, bool], ControllerState]
"""What an object's part becomes from its stored part (and whether to take in what the
cycle's record has of it)."""


def _token(keys: Mapping[str, str], repos: Mapping[str, str]) -> str:
    return json.dumps({"k": keys, "r": repos}, separators=(",", ":"), sort_keys=True)


def _versions(token: str) -> tuple[dict[str, str], dict[str, str]]:
    try:
        found = json.loads(token) if token else {}
    except ValueError:
        return {}, {}
    if not isinstance(found, dict):
        return {}, {}
    tables = [found.get("k"), found.get("r")]
    keys, repos = (
        {str(k): str(v) for k, v in t.items()} if isinstance(t, dict) else {} for t in tables
    )
    return keys, repos


class ShardedStateStore:
    """:class:`~argocd_image_updater.pipeline.ports.StateStore` on one ConfigMap per shard key
    and per repository, for the keys in scope (:meth:`scoped`) and their repositories; the
    record's ``token`` holds the resourceVersion of each object as read (JSON)."""

    def __init__(
        self,
        kube: KubeClient,
        namespace: str,
        registries: RegistryConfig,
        cache: StateCache | None = None,
    ) -> None:
        self.kube, self.namespace, self.cache = kube, namespace, cache
        self._layouts = Layouts(registries)
        self._scope: contextvars.ContextVar[Layout | None] = contextvars.ContextVar(
            "state_scope", default=None
        )
        self._keys: dict[str, ConfigMapStateStore] = {}
        self._repos: dict[str, ConfigMapStateStore] = {}
        self._held: set[str] = set()
        """The objects (by name) loaded since their key or repository came into scope."""
        self._pruned: Layout | None = None
        """The layout of the full cycle that last let go of the objects no longer held."""
        self._single: ControllerState | None = None
        """The single ConfigMap of an unsharded fleet, read once (empty when there is none)."""
        self._merged: ControllerState | None = None
        """The record last loaded or saved, handed out again while every object holds."""
        self._placement: Placement | None = None
        """The placement of the last save (:meth:`_placement_of`)."""
        self._steady: tuple[str, Layout] | None = None
        """The version and scope of the record last saved whole (every object as it holds):
        a save of that very record without a change has nothing to write and reads nothing."""
        self._reads = 0
        """Raised with every object read or written, and whenever the objects held change."""
        self._quiet: tuple[Layout, int, int] | None = None
        """The scope, the watched copy's revision and :attr:`_reads` when :attr:`_merged` was
        last loaded or saved whole: while all three hold, so does every object's part, and a
        load hands out :attr:`_merged` again without going over them (see :meth:`load`)."""

    @contextlib.contextmanager
    def scoped(self, collected: Collected) -> Iterator[None]:
        """Loads and saves within this block (of this task and those it starts) are of the keys
        of ``collected`` (narrowed to this replica's share) and their repositories."""
        layout = self._layouts.layout(collected)
        # A full cycle: the objects no longer held are let go. None are under the layout that
        # let go of them last (a steady fleet's, handed out again by ``Layouts``): what was
        # held since is of its keys. That look over every object cost one of three replicas
        # in ``benchmarks/sharding.py`` 0.5 ms of CPU a steady cycle.
        if collected.listed and layout is not self._pruned:
            self._pruned = layout
            repos = frozenset().union(*layout.repos.values())
            self._keys = {k: s for k, s in self._keys.items() if k in layout.keys}
            self._repos = {r: s for r, s in self._repos.items() if r in repos}
            stores = [*self._keys.values(), *self._repos.values()]
            held = self._held & {store.name for store in stores}
            if len(held) != len(self._held):
                self._held, self._reads = held, self._reads + 1
            if self.cache is not None:
                self.cache.keep(self._held)
        reset = self._scope.set(layout)
        try:
            yield
        finally:
            self._scope.reset(reset)

    def _key_store(self, key: str) -> ConfigMapStateStore:
        store = self._keys.get(key)
        if store is None:
            store = self._keys[key] = key_store(self.kube, self.namespace, key)
        return store

    def _repo_store(self, repo: str) -> ConfigMapStateStore:
        store = self._repos.get(repo)
        if store is None:
            store = self._repos[repo] = repository_store(self.kube, self.namespace, repo)
        return store

    def _known(self, store: ConfigMapStateStore) -> ControllerState | None:
        """``store``'s part as read or written last, or the newer copy watched, when it was
        held before and the watched copy tells; None when it must be read."""
        cache = self.cache
        if cache is None or store.name not in self._held:
            return None
        mine = store.last
        found = cache.newer(store.name, mine.token if mine is not None else "")
        if found is None:
            return mine if mine is not None else store.absent
        if isinstance(found, dict):
            return store.parse(found)
        return None

    async def _read(self, store: ConfigMapStateStore) -> ControllerState:
        """``store``'s part: :meth:`_known`, else read."""
        known = self._known(store)
        if known is not None:
            return known
        if self.cache is not None:
            self.cache.want(store.name)  # before the read: no later change is missed
        part = await store.read()
        self._held.add(store.name)
        self._reads += 1
        return part

    async def _read_all(self, stores: list[ConfigMapStateStore]) -> list[ControllerState]:
        """Each store's part (:meth:`_read`); those the watched copy answers without a task
        of their own (see :meth:`_known_parts`)."""
        known = self._known_parts(stores)
        missing = [store for store, part in zip(stores, known, strict=True) if part is None]
        read = iter(await bounded(functools.partial(self._read, store) for store in missing))
        return [part if part is not None else next(read) for part in known]

    def _known_parts(self, stores: list[ConfigMapStateStore]) -> list[ControllerState | None]:
        """The parts the watched copy answers (:meth:`_known`), None for those to read. A
        steady cycle reads none: a task per object to learn that cost a replica holding 340
        keys over 490 repositories (one of three in ``benchmarks/sharding.py``) 4.2 ms of CPU
        a load, up to two loads a cycle, against 0.7 ms answered here (measured on such a
        store, 2 vCPU AMD EPYC, CPython 3.11)."""
        return [self._known(store) for store in stores]

    def _quiet_mark(self, layout: Layout) -> tuple[Layout, int, int] | None:
        return (layout, self.cache.revision, self._reads) if self.cache is not None else None

    async def load(self) -> ControllerState:
        """The record of the keys in scope. A steady cycle's loads (the cycle's, then the
        shipments') hand out the record last loaded or saved while nothing it was made of can
        have changed (:attr:`_quiet`): going over the 830 objects of one of three replicas in
        ``benchmarks/sharding.py`` to find that took about 1.5 ms of CPU a load (a CPU
        profile, 2 vCPU AMD EPYC, CPython 3.11)."""
        layout = self._scope.get()
        if layout is None:
            return ControllerState(token=_token({}, {}))
        mark = self._quiet_mark(layout)
        if self._merged is not None and mark is not None and mark == self._quiet:
            return self._merged.copy()
        keys = sorted(layout.keys)
        repos = sorted(frozenset().union(*layout.repos.values()))
        found = await self._read_all([*map(self._key_store, keys), *map(self._repo_store, repos)])
        key_parts = dict(zip(keys, found[: len(keys)], strict=True))
        repo_parts = dict(zip(repos, found[len(keys) :], strict=True))
        token = _token(
            {key: part.token for key, part in key_parts.items()},
            {repo: part.token for repo, part in repo_parts.items()},
        )
        merged = self._merged
        if merged is not None and merged.token == token:
            self._quiet = self._quiet_mark(layout)
            return merged.copy()
        took = False
        keys_missing = [key for key, part in key_parts.items() if not part.token]
        repos_missing = [repo for repo, part in repo_parts.items() if not part.token]
        single = await self._single_record() if keys_missing or repos_missing else None
        holders: dict[str, list[ControllerState]] = {}  # key objects of before, by repository
        for part in key_parts.values() if repos_missing else ():
            for repo in repos_in(part):
                holders.setdefault(repo, []).append(part)
        for repo in repos_missing:  # from the key objects of before, and the single record
            sources = [*holders.get(repo, ()), *([single] if single is not None else [])]
            pieces = [repository_part(source, repo) for source in sources]
            if any(piece.contents()[1] or piece.contents()[2] for piece in pieces):
                repo_parts[repo] = merge(pieces)
                took = True
        parts = {key: key_part(part) for key, part in key_parts.items()}
        if keys_missing and single is not None:
            inverse: dict[str, list[str]] = {}
            for app, key in layout.apps.items():
                inverse.setdefault(key, []).append(app)
            for key in keys_missing:
                parts[key] = part_of(single, inverse.get(key, ()), ())
                took |= bool(parts[key].contents()[0] or parts[key].contents()[3])
        merged = merge([*(parts[key] for key in keys), *(repo_parts[r] for r in repos)], token)
        self._merged = None if took else merged.copy()
        self._quiet = self._quiet_mark(layout)
        return merged

    async def _single_record(self) -> ControllerState:
        if self._single is None:
            self._single = await ConfigMapStateStore(self.kube, self.namespace).load()
            if any(self._single.contents()):
                log.info(
                    "taking the remembered record of the keys and repositories without a "
                    "ConfigMap of their own from ConfigMap %s/%s",
                    self.namespace,
                    STATE_CONFIGMAP,
                )
        return self._single

    async def _stored(
        self, stores: Mapping[str, ConfigMapStateStore], versions: Mapping[str, str]
    ) -> tuple[dict[str, ControllerState], list[str]]:
        """Each object's part at the version the record was loaded from, and the objects
        written since (by another save of this replica: read again)."""
        stored: dict[str, ControllerState] = {}
        stale: list[str] = []
        for name, version in versions.items():
            last = stores[name].last
            if last is None and not version:
                stored[name] = stores[name].absent
            elif last is not None and last.token == version:
                stored[name] = last
            else:
                stale.append(name)
        for name, part in zip(stale, await self._read_all([stores[n] for n in stale]), strict=True):
            stored[name] = part
        return stored, stale

    def _placement_of(self, layout: Layout, stored: Mapping[str, ControllerState]) -> Placement:
        """The :class:`Placement` of ``layout`` over the keys' ``stored`` parts: the last save's
        made again only for the parts that changed since, while the layout is the same."""
        last = self._placement
        if last is not None and (last.layout is layout or last.layout == layout):
            placement = last.restored(stored)
        else:
            placement = Placement(layout, stored)
        self._placement = placement
        return placement

    async def save(self, state: ControllerState) -> None:
        layout = self._scope.get()
        if layout is None:
            if state.changed:
                log.warning("the remembered record of no shard key is held: nothing saved")
            return
        if not state.changed and self._steady == (state.token, layout):
            # A steady cycle's save: 4-8 ms of CPU for a replica holding 340 keys over 490
            # repositories (benchmarks/sharding.py, one of three) to find nothing to write.
            return
        self._steady = None
        key_versions, repo_versions = _versions(state.token)
        key_stores = {key: self._key_store(key) for key in key_versions}
        repo_stores = {repo: self._repo_store(repo) for repo in repo_versions}
        stored_keys, stale_keys = await self._stored(key_stores, key_versions)
        stored_repos, stale_repos = await self._stored(repo_stores, repo_versions)
        placement = self._placement_of(layout, stored_keys)
        routed, homeless = placement.route(state.operations)
        by_repo, homeless_repos = by_repository(state.operations, repo_versions)
        if homeless or homeless_repos:
            log.debug(
                "%d changes of the remembered record belong to no key or repository held",
                homeless + homeless_repos,
            )

        dirty_repos = [
            repo
            for repo in sorted(repo_versions)
            if by_repo.get(repo)
            or repo in stale_repos
            or (not repo_versions[repo] and holds_repository(state, repo))
        ]

        def repo_job(repo: str) -> Job:
            def target(stored: ControllerState, take: bool) -> ControllerState:
                return repository_target(repo, stored, by_repo.get(repo, []), state, take=take)

            take = not repo_versions[repo] and repo not in stale_repos  # none yet: take them
            return Job(repo, repo_stores[repo], stored_repos[repo], target, take)

        conflicts = await self._write_all(list(map(repo_job, dirty_repos)), repo_versions)
        lacking = placement.lacking(state)
        dirty_keys = [
            key
            for key in sorted(key_versions)
            if routed.get(key) or key in stale_keys or key in lacking
        ]

        def key_job(key: str) -> Job:
            def target(stored: ControllerState, take: bool) -> ControllerState:
                return placement.target(key, stored, routed.get(key, []), state, take_apps=take)

            return Job(key, key_stores[key], stored_keys[key], target, key not in stale_keys)

        conflicts |= await self._write_all(list(map(key_job, dirty_keys)), key_versions)
        token = _token(key_versions, repo_versions)
        newer = conflicts or bool(stale_keys) or bool(stale_repos)  # another writer's changes
        if newer:
            parts = [
                key_part(_current(key_stores[key], key_versions[key], stored_keys[key]))
                for key in sorted(key_versions)
            ] + [
                _current(repo_stores[repo], repo_versions[repo], stored_repos[repo])
                for repo in sorted(repo_versions)
            ]
            state.adopt(merge(parts, token))
        state.saved(token)
        whole = not (newer or homeless or homeless_repos)
        self._merged = state.copy() if whole else None
        self._steady = (token, layout) if whole else None
        self._quiet = self._quiet_mark(layout)

    async def _write_all(self, jobs: list[Job], versions: dict[str, str]) -> bool:
        """Write each job's object, ``versions`` (by key or repository) updated to the version
        each is at now; whether any had changed meanwhile. A :class:`StoreError` when any
        cannot be written."""
        results = await bounded(functools.partial(self._write, job) for job in jobs)
        failed = [result for result in results if isinstance(result, StoreError)]
        if failed:
            self._merged = None
            more = f" (and {len(failed) - 1} more objects)" if len(failed) > 1 else ""
            raise StoreError(f"{failed[0]}{more}")
        conflicts = False
        for job, result in zip(jobs, results, strict=True):
            assert not isinstance(result, StoreError)
            conflict, versions[job.name] = result
            conflicts |= conflict
        return conflicts

    async def _write(self, job: Job) -> tuple[bool, str] | StoreError:
        """Write the job's part; whether its object had changed meanwhile, and the version it
        is at now (a StoreError when it cannot be written)."""
        store, stored, take = job.store, job.stored, job.take
        conflict = False
        try:
            for _ in range(MAX_SAVE_ATTEMPTS):
                target = job.target(stored, take)
                if same_contents(target, stored):
                    return conflict, stored.token
                self._reads += 1  # before the write: whatever it does, the object may change
                if await store.write(target):
                    if self.cache is not None:
                        self.cache.wrote(store.name, target.token)
                    return conflict, target.token
                log.debug("%s changed since it was read; applying its changes again", store.where)
                conflict, take = True, False
                stored = await store.read()
                self._held.add(store.name)
                self._reads += 1
        except StoreError as err:
            return err
        return StoreError(f"cannot write {store.where}: it kept changing while it was written")


@dataclass(frozen=True, slots=True)
class Job:
    """An object to write: ``name`` (its key or repository), its store, its part as stored,
    what that becomes, and whether it takes in what the cycle's record has of it."""

    name: str
    store: ConfigMapStateStore
    stored: ControllerState
    target: Target
    take: bool


def _current(store: ConfigMapStateStore, version: str, stored: ControllerState) -> ControllerState:
    """The part of ``store``'s object at ``version``: as last read or written, else ``stored``."""
    last = store.last
    return last if last is not None and last.token == version else stored
