"""The controller loop: a cycle every ``--interval``, early cycles on ImageUpdater spec changes,
graceful shutdown (the cycle in flight finishes its writes; a patch is atomic, so nothing is ever
half-written). With leader election a cycle runs only while this replica leads and is cancelled
when it stops leading (:mod:`~argocd_image_updater.controller.leading`)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import signal
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.controller.credentials import CredentialsCache
from argocd_image_updater.controller.cycle import CycleContext, run_cycle
from argocd_image_updater.controller.cycle_context import FleetScanning
from argocd_image_updater.controller.cycle_slots import next_slot
from argocd_image_updater.controller.kept_collection import KeptCollection
from argocd_image_updater.controller.leading import Leadership, LeadershipLost, run_as_leader
from argocd_image_updater.controller.plan_reuse import PlanReuse
from argocd_image_updater.controller.shards import ShardKeeper, keep_shard
from argocd_image_updater.controller.sources import LegacyFilter, collect
from argocd_image_updater.controller.spec_watch import Restarts, watch_specs
from argocd_image_updater.controller.views import ApplicationViews, ImageUpdaterViews
from argocd_image_updater.kube.errors import KubeError
from argocd_image_updater.model.controller_state import ControllerState
from argocd_image_updater.model.resources import IMAGE_UPDATERS
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.observe import metrics
from argocd_image_updater.observe.health import Health
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.ports import (
    ApplicationStore,
    AppWriter,
    BatchWriter,
    StateStore,
    StoreError,
)
from argocd_image_updater.pipeline.records import Collected, CycleResult
from argocd_image_updater.plan.choices import ChoiceMemory
from argocd_image_updater.registry.scanner import Scanner
from argocd_image_updater.report.cycle_metrics import forget_cr
from argocd_image_updater.report.reporter import Reporter
from argocd_image_updater.verify.policy import ConfigMapReader
from argocd_image_updater.verify.verifier import Verifier

if TYPE_CHECKING:  # the Kubernetes client is loaded only where a cluster is used
    from argocd_image_updater.controller.fleet_events import FleetEvents
    from argocd_image_updater.controller.membership import Membership
    from argocd_image_updater.controller.state_sweep import StateSweep
    from argocd_image_updater.controller.watched_objects import WatchedFleet
    from argocd_image_updater.kube.client import KubeClient

log = get_logger("controller")

SHUTDOWN_GRACE_SECONDS = 25.0


_heap_settled: set[bool] = set()


def _settle_heap(*, after_first_cycle: bool = False) -> None:
    """Once per process, before and after the first cycle: what lives then (modules, clients,
    settings, the caches the first cycle filled) lives for the whole process, so it is kept out
    of the collector's full passes, which would traverse it again and again. A cycle allocates
    millions of short-lived objects (the listed Applications): the young generation is collected
    every 50,000 allocations instead of 700 (a third less CPU at 10,000 Applications; cyclic
    garbage waits a little longer, a few MB at most)."""
    if after_first_cycle in _heap_settled:
        return
    _heap_settled.add(after_first_cycle)
    # Garbage frozen now could never be freed: the young generations are collected first. Not
    # the old one: a full pass traverses every live object (0.06 s after start-up, 0.2 s after
    # a first cycle of 1,000 Applications) and found no more garbage than the young pass does
    # (about a hundred objects after start-up, none after the cycle).
    gc.collect(1)
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a cycle runs: what a cycle allocates is freed by
    reference counting (a full collection after one finds about a hundred objects), and every
    young collection during it traverses the objects the cycle keeps, again and again (5% of
    a cold cycle's CPU at 1,000 Applications). The young objects a cycle leaves are collected
    when the collector's own threshold is reached, after a cycle, every few cycles: a young
    collection after every cycle walked the 3,000-30,000 objects it kept (the caches of the
    next cycle, most of them replaced again by then) in 5-15 ms at 5,000 Applications and
    found nothing to free."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` where the C library has none (musl, macOS)."""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def _return_free_memory() -> None:
    """After a cycle: hand the C heap's free pages back to the system. A cycle's transient
    objects (listed pages, their text, the plans of changed Applications) are freed between
    the objects kept for the next cycle, and glibc keeps the pages they held; at 10,000
    Applications that is about 6 MB more resident memory every cycle starts from. A few ms."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _trim_kept_selection(collected: Collected) -> None:
    """The cycle's selection is kept for webhook events, which write no status and forget no
    Application: the listed statuses of its ImageUpdaters (a few kB each) and the names of
    every listed Application are let go once the cycle is reported, so that the next listing's
    are not read while the last one's are still kept."""
    collected.listed = set()
    if collected.shared:  # a watched copy's objects: kept by the copy anyway
        return
    for cr in collected.crs:
        if "status" in cr.raw:
            cr.raw = {key: value for key, value in cr.raw.items() if key != "status"}


@dataclass(slots=True)
class Controller:
    store: ApplicationStore
    registries: RegistryConfig
    scanner: Scanner
    credentials: CredentialsCache
    writer_for: Callable[[AppUpdateConfig], AppWriter | None]
    namespaces: Sequence[str] | None
    legacy: LegacyFilter
    interval: timedelta
    dry_run: bool = False
    max_concurrent_apps: int = 10
    read_crs: bool = True
    kube: KubeClient | None = None
    health: Health | None = None
    elector: Leadership | None = None
    """Who may write: the leader election, or the membership of a sharded fleet (``shards``)."""
    shards: Membership | None = None
    """``run --sharding``: this replica's membership; a cycle takes only the keys it owns."""
    shard_selector: str | None = None
    """``--shard-selector``: only the objects of this static shard (None: every object)."""
    fleet: FleetEvents | None = None
    fleet_scans: FleetScanning | None = None
    """Sharded: the tag lists each member lists for the fleet, and the others' it reuses."""
    """``run --sharding``: the registry events and back-offs passed between the replicas."""
    batch_writer: BatchWriter | None = None
    reporter: Reporter | None = None
    cycles: int = 0
    known_crs: set[tuple[str, str]] = field(default_factory=set)
    last_collected: Collected | None = None
    """What the last full cycle selected (webhook events reuse it to find the apps to update)."""
    last_collected_at: float = 0.0
    last_result: CycleResult | None = None
    """The last full cycle's result; None when it failed (``run --once`` exits by it)."""
    prepare: Callable[[Collected], Awaitable[Collected]] | None = None
    """Completes the selection before planning (local mode: live images read from files)."""
    verifier: Verifier | None = None
    """Checks image signatures (made from ``scanner`` when not given; kept for its cache)."""
    config_maps: ConfigMapReader | None = None
    """Reads trusted root ConfigMaps of keyless verification (``kube`` when not given)."""
    choices: ChoiceMemory = field(default_factory=ChoiceMemory)
    """The last cycle's tag choices, reused for tag lists that did not change."""
    state_store: StateStore | None = None
    """Where the remembered record (writes, first-seen times, digests) is kept; loaded before
    and saved after each cycle and webhook event (none: nothing is remembered)."""
    state_scope: Callable[[Collected], contextlib.AbstractContextManager[None]] | None = None
    """``run --sharding``: the state store's scope, entered with this replica's share of each
    cycle and webhook event (its loads and saves are of those keys' records)."""
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    views: ApplicationViews = field(default_factory=ApplicationViews)
    """The listed Applications' parsed views, reused while their resourceVersion holds."""
    cr_views: ImageUpdaterViews = field(default_factory=ImageUpdaterViews)
    """The listed ImageUpdaters' parsed views and what they selected, reused likewise."""
    plans: PlanReuse = field(default_factory=PlanReuse)
    """The last full cycle's scan jobs and plans, reused for Applications whose inputs held."""
    kept_collection: KeptCollection = field(default_factory=KeptCollection)
    """The last full cycle's collection, handed out again while the watched copy holds."""
    shard_keeper: ShardKeeper = field(default_factory=ShardKeeper)
    """Each full cycle's share of the selection, gone over again where it changed only."""
    watch_restarts: Restarts = field(default_factory=Restarts)
    """The backoff before a watch (of ImageUpdaters, of Applications) starts again after a
    failure."""
    sweep: StateSweep | None = None
    """``run --sharding``: deletes the state ConfigMaps of keys that are gone."""
    watched: WatchedFleet | None = None
    """The watched copy of Applications and ImageUpdaters the store serves from (Applications
    from the Kubernetes API), kept while the loop runs (not with ``--once``)."""

    def is_leader(self) -> bool:
        """Only the leader scans and writes (always true without leader election)."""
        return self.elector is None or self.elector.is_leader()

    async def cycle(self) -> CycleResult:
        if self.cycles == 0:
            _settle_heap()
        with _collector_paused():
            result = await self._cycle()
        if self.cycles == 0:
            _settle_heap(after_first_cycle=True)
        _return_free_memory()
        self.cycles += 1
        metrics.LAST_SUCCESSFUL_CYCLE.set(time.time())
        if self.health is not None:
            self.health.cycle_finished()
        return result

    async def _cycle(self) -> CycleResult:
        collected = await collect(
            self.store,
            self.namespaces,
            self.legacy,
            self.read_crs,
            self.views,
            self.cr_views,
            self.kept_collection,
        )
        present = self._present_if_sweeping(collected)  # before the shard narrows it
        with self.shard(collected, full=True):
            result = await self._process(collected)
        if present is not None and self.sweep is not None and self.is_leader():
            await self.sweep.sweep(time.monotonic(), present, self._sweeps)
        return result

    def _present_if_sweeping(self, collected: Collected) -> set[str] | None:
        """The keys that exist (every ImageUpdater and Application listed) when this cycle
        sweeps the state ConfigMaps of gone keys (:mod:`.state_sweep`): not when it read no
        ImageUpdaters, or skipped an object it could not read (a key would look gone)."""
        sweep = self.sweep
        if sweep is None or self.shards is None or self.dry_run:
            return None
        if not self.read_crs or collected.problems:
            return None
        if not sweep.due(time.monotonic()):
            return None
        return {f"{cr.namespace}/{cr.name}" for cr in collected.crs} | collected.listed

    def _sweeps(self, key: str) -> bool:
        """Whether this replica sweeps the state ConfigMap of ``key``: in a namespace it
        watches, and its own under its member list."""
        namespace = key.partition("/")[0]
        if self.namespaces is not None and namespace not in self.namespaces:
            return False
        return self.shards is not None and self.shards.owns(key)

    def shard(
        self, collected: Collected, *, full: bool = False
    ) -> contextlib.AbstractContextManager[None]:
        """Narrow ``collected`` to this replica's share (``--shard-selector``, ``--sharding``),
        held while the work of a cycle (``full``) or a webhook event processes it."""
        held: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
        if self.shards is not None or self.shard_selector is not None:
            owns = self.shards.owns if self.shards is not None else None
            if full:
                members = self.shards.view if self.shards is not None else None
                keys = self.shard_keeper.keep(collected, self.shard_selector, owns, members)
            else:
                keys = keep_shard(collected, self.shard_selector, owns)
            if self.shards is not None:
                held = self.shards.holding(keys, full=full)
        if self.state_scope is None:
            return held
        return _entered_together(held, self.state_scope(collected))

    async def _process(self, collected: Collected) -> CycleResult:
        present = {(cr.namespace, cr.name) for cr in collected.crs}
        for namespace, name in self.known_crs - present:
            forget_cr(namespace, name)  # a deleted ImageUpdater's series disappear
        self.known_crs = present
        self.last_collected, self.last_collected_at = collected, time.monotonic()
        if self.reporter is not None:
            await self.reporter.reconciling(collected)
        result = await self.update(collected, full=True)
        if self.reporter is not None:
            await self.reporter.report(collected, result, dry_run=self.dry_run)
        _trim_kept_selection(collected)
        return result

    async def update(self, collected: Collected, *, full: bool = False) -> CycleResult:
        """Scan, plan and write the selected Applications (a full cycle or, not ``full``, a
        webhook event's)."""
        if self.verifier is None:
            self.verifier = Verifier(self.scanner)
        state, keep = await self._load_state()
        prepared = await self.prepare(collected) if self.prepare is not None else collected
        context = CycleContext(
            self.registries,
            self.scanner,
            self.credentials,
            self.writer_for,
            dry_run=self.dry_run,
            max_concurrent_apps=self.max_concurrent_apps,
            batch_writer=self.batch_writer,
            may_write=self.is_leader,
            verifier=self.verifier,
            config_maps=self.config_maps or self.kube,
            choices=self.choices,
            plans=self.plans if full else None,
            fleet=self.fleet_scans if full else None,
            state=state,
            now=self.clock(),
        )
        result = await run_cycle(prepared, context)
        if full:
            state.prune_apps(collected.listed, self.namespaces)
            if self.reporter is not None:  # the changes followed: saved with the rest
                into = state if keep else None
                await self.reporter.follow(collected, result, dry_run=self.dry_run, into=into)
        if keep and not self.dry_run and self.is_leader():
            try:
                await self.state_store.save(state)  # type: ignore[union-attr]
            except StoreError as err:
                log.error("%s; the next cycle tries again", str(err))
        return result

    async def _load_state(self) -> tuple[ControllerState, bool]:
        """The remembered record, and whether it may be saved (not when it could not be read:
        a record this version cannot read is never overwritten)."""
        if self.state_store is None:
            return ControllerState(), False
        try:
            return await self.state_store.load(), True
        except StoreError as err:
            log.error(
                "%s; this cycle goes on without the remembered writes and first-seen times, "
                "and saves nothing",
                str(err),
            )
            return ControllerState(), False

    async def run(self, once: bool = False, stop: asyncio.Event | None = None) -> None:
        stop = stop or asyncio.Event()
        wake = asyncio.Event()
        if self.shards is not None:
            self.shards.on_view_change = wake.set  # keys move: the next cycle runs at once
        watcher = None
        if not once and self.watched is not None:  # ImageUpdaters' spec changes wake it too
            watcher = asyncio.create_task(
                self.watched.run(stop, self.health, wake, self.watch_restarts)
            )
        elif not once and self.kube is not None and self.read_crs:
            watcher = asyncio.create_task(self._watch_specs(wake, stop))
        try:
            while not stop.is_set():
                if self.elector is not None and not self.elector.is_leader():
                    if self.health is not None:
                        self.health.standing_by()
                    # Past the renew deadline but not stepped down yet: wait for that first.
                    leading = self.elector.leading
                    await _wait_any(
                        stop, self.elector.not_leading if leading.is_set() else leading, 5.0
                    )
                    continue
                wake.clear()
                try:
                    self.last_result = await run_as_leader(
                        self.elector, self.cycle(), "update cycle"
                    )
                except LeadershipLost:
                    self.last_result = None
                    continue
                except (KubeError, OSError) as err:
                    self.last_result = None
                    log.error("update cycle failed: %s", str(err))
                except Exception as err:  # objects fail one by one; this is a last resort
                    self.last_result = None
                    log.error(
                        "update cycle failed unexpectedly, the next one runs as planned: %s: %s",
                        type(err).__name__,
                        str(err),
                    )
                if once or self.interval <= timedelta(0):
                    return
                await _wait_any(stop, wake, self._pause())
        finally:
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher

    def _pause(self) -> float:
        """Seconds until the next cycle: the interval, or in a sharded fleet until this
        member's slot of it (:mod:`.cycle_slots`)."""
        interval = self.interval.total_seconds()
        if self.shards is None:
            return interval
        now = self.clock().timestamp()
        return next_slot(now, interval, self.shards.member, self.shards.view) - now

    async def _watch_specs(self, wake: asyncio.Event, stop: asyncio.Event) -> None:
        """Wake the loop when an ImageUpdater's spec changes (:mod:`.spec_watch`)."""
        from argocd_image_updater.kube.watch import follow

        kube = self.kube
        assert kube is not None
        scopes: list[str | None] = list(self.namespaces) if self.namespaces is not None else [None]
        await watch_specs(
            lambda scope: follow(kube, IMAGE_UPDATERS, scope),
            scopes,
            wake,
            stop,
            self.health,
            self.watch_restarts,
        )


@contextlib.contextmanager
def _entered_together(
    first: contextlib.AbstractContextManager[None], then: contextlib.AbstractContextManager[None]
) -> Iterator[None]:
    with first, then:
        yield


async def _wait_any(first: asyncio.Event, second: asyncio.Event, seconds: float) -> None:
    tasks = [asyncio.create_task(first.wait()), asyncio.create_task(second.wait())]
    try:
        await asyncio.wait(tasks, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


def install_signal_handlers(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, _on_signal, stop, sig)


def _on_signal(stop: asyncio.Event, sig: signal.Signals) -> None:
    if stop.is_set():
        return
    log.info("received %s, finishing the current cycle and stopping", sig.name)
    stop.set()


async def run_until_stopped(controller: Controller, once: bool) -> None:
    stop = asyncio.Event()
    install_signal_handlers(stop)
    task = asyncio.create_task(controller.run(once=once, stop=stop))
    stopper = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    if task not in done:
        # Give the cycle in flight time to finish its writes, then abandon it.
        try:
            async with asyncio.timeout(SHUTDOWN_GRACE_SECONDS):
                await asyncio.shield(task)
        except TimeoutError:
            log.warning("cycle did not finish within %ss, abandoning it", SHUTDOWN_GRACE_SECONDS)
            task.cancel()
    stopper.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
