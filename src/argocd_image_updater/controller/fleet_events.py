"""What the replicas of a sharded fleet (``run --sharding``) pass each other: the registry
events one of them received as webhook calls, for the owners of the other keys, and the
registry back-offs one learned from a ``429``. Both go through one small watched object, the
ConfigMap ``argocd-image-updater-events`` in the controller's namespace (its format, bounds and
checks: :mod:`argocd_image_updater.model.fleet_events`).

Why a watched object rather than calls to the peer pods through a headless Service: it needs
nothing the controller does not have already (its Role writes ConfigMaps in its namespace and
watches them), no Service, no peer discovery, no authentication between pods and no TLS of
their own; it works the same for members that are not reachable from each other and for static
shards in one namespace, and a replica that was away finds what it missed when its watch
resumes. It costs one ConfigMap write per burst of events and one watch event per replica; the
API server's watch delivers within milliseconds.

Publishing: an event accepted by this replica's webhook server is added to the ring at once,
alongside its handling here for this replica's own keys; what arrives while a write is under way
goes into the next one (the latest event per repository). A write is a conditional replace with
the ``resourceVersion`` last seen (created when there is none), read again and retried on a
conflict, and passes the write fence: only a settled member writes. A write that fails is
logged and dropped: the owners' next cycles update the Applications anyway.

Following: every member watches the ConfigMap (supervised like the watch of ImageUpdaters:
restarted after a failure, reported in ``/healthz`` after five in a row) and hands each entry it
has not seen, that another member published and that is not older than five minutes to
``receive`` (the webhook dispatcher, which handles it for this replica's keys). What the ring
holds when a member starts is not replayed: its first full cycle comes first anyway. Back-offs
are honoured from the start (:class:`~argocd_image_updater.registry.fleet_budget.FleetBudget`).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

from argocd_image_updater.controller.membership import Membership
from argocd_image_updater.controller.spec_watch import Restarts, supervised
from argocd_image_updater.kits.fence import WriteFenced, check_fence, fenced_context
from argocd_image_updater.kube.client import CONFIGMAPS, KubeClient, KubeError
from argocd_image_updater.model.fleet_events import (
    BACKOFFS_KEY,
    EVENT_MAX_AGE,
    EVENTS_CONFIGMAP,
    EVENTS_KEY,
    Backoff,
    EntryError,
    RingEntry,
    appended,
    check_event,
    merged_backoffs,
    parse_backoffs,
    parse_events,
    render_backoffs,
    render_events,
)
from argocd_image_updater.model.registry_event import RegistryEvent, repository_key
from argocd_image_updater.observe import metrics
from argocd_image_updater.observe.health import Health
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.registry.fleet_budget import FleetBudget

log = get_logger("fleet")

MAX_WRITE_ATTEMPTS: Final = 8
NOT_MEMBER: Final = "this replica is not a settled member of the fleet"
LABELS: Final = {
    "app.kubernetes.io/name": "argocd-image-updater",
    "app.kubernetes.io/part-of": "argocd-image-updater",
    "app.kubernetes.io/component": "fleet-events",
}


class FleetEvents:
    """This member's side of the events ConfigMap: :meth:`publish` and :meth:`publish_backoff`
    add to it, :meth:`run` writes and follows it; ``receive`` gets the other members' events."""

    def __init__(
        self,
        kube: KubeClient,
        namespace: str,
        member: str,
        *,
        settled: Callable[[], bool],
        budget: FleetBudget | None = None,
        health: Health | None = None,
        restarts: Restarts | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._kube, self.namespace, self.member = kube, namespace, member
        self._settled, self._budget, self._clock = settled, budget, clock
        self.health, self.restarts = health, restarts
        self.receive: Callable[[RegistryEvent], object] | None = None
        """Where the other members' events go (none: they are only marked as seen)."""
        self._events: dict[tuple[str, str], RingEntry] = {}
        self._backoffs: dict[str, Backoff] = {}
        self._wake = asyncio.Event()
        self._current: dict[str, Any] | None = None
        """The ConfigMap as last read or written (None: not found, or not read yet)."""
        self._seen: set[str] | None = None
        """The ids in the ring as last read; None until the watch first listed it."""
        self._reported: set[str] = set()

    @property
    def following(self) -> bool:
        """Whether the watch has read the ConfigMap (or found none) at least once."""
        return self._seen is not None

    @property
    def where(self) -> str:
        return f"ConfigMap {self.namespace}/{EVENTS_CONFIGMAP}"

    # --- publishing ----------------------------------------------------------------------------

    def publish(self, event: RegistryEvent) -> None:
        """Add ``event`` (received here as a webhook call) to the ring for the other members."""
        try:
            check_event(event)
        except EntryError as err:
            log.warning("not passing on a registry event to the other replicas: %s", str(err))
            metrics.FLEET_EVENTS_ERRORS.labels("write").inc()
            return
        key = repository_key(event.registry, event.repository)
        self._events.pop(key, None)
        self._events[key] = RingEntry(uuid.uuid4().hex[:16], self.member, self._clock(), event)
        self._wake.set()

    def publish_backoff(self, host: str, until: float) -> None:
        """Tell the other members that registry ``host`` wants requests to wait until ``until``
        (wall-clock seconds since the epoch)."""
        moment = datetime.fromtimestamp(until, UTC)
        known = self._backoffs.get(host)
        if known is not None and known.until >= moment:
            return
        self._backoffs[host] = Backoff(host, moment, self.member)
        self._wake.set()

    async def _write_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            events, self._events = list(self._events.values()), {}
            backoffs, self._backoffs = list(self._backoffs.values()), {}
            try:
                await self._write(events, backoffs)
            except Exception as err:  # KubeError, WriteFenced; anything else is a last resort
                metrics.FLEET_EVENTS_ERRORS.labels("write").inc(len(events) + len(backoffs))
                why = str(err) if isinstance(err, KubeError | WriteFenced) else repr(err)
                log.warning(
                    "could not pass %d registry event(s) and %d back-off(s) on to the other "
                    "replicas (their next cycles find the new tags anyway): %s",
                    len(events),
                    len(backoffs),
                    why,
                )
                continue
            metrics.FLEET_EVENTS_FORWARDED.labels("sent").inc(len(events))
            metrics.FLEET_BACKOFFS_SHARED.labels("sent").inc(len(backoffs))

    async def _write(self, events: list[RingEntry], backoffs: list[Backoff]) -> None:
        current = self._current
        for attempt in range(MAX_WRITE_ATTEMPTS):
            if attempt or current is None:
                current = await self._read()
            now = self._clock()
            data = _data(current)
            ring, _ = parse_events(data.get(EVENTS_KEY))
            running, _ = parse_backoffs(data.get(BACKOFFS_KEY), now)
            body: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": EVENTS_CONFIGMAP, "namespace": self.namespace},
                "data": {
                    EVENTS_KEY: render_events(appended(ring, events, now)),
                    BACKOFFS_KEY: render_backoffs(merged_backoffs(running, backoffs, now)),
                },
            }
            body["metadata"]["labels"] = LABELS
            check_fence(f"writing {self.where}")
            try:
                if current is None:
                    stored = await self._kube.create_configmap(self.namespace, body)
                else:
                    version = str((current.get("metadata") or {}).get("resourceVersion") or "")
                    body["metadata"]["resourceVersion"] = version
                    stored = await self._kube.replace_configmap(
                        self.namespace, EVENTS_CONFIGMAP, body
                    )
            except KubeError as err:
                if not (err.is_conflict or err.is_not_found):
                    raise
                # Another member wrote first: read its copy and add ours to it.
                await asyncio.sleep(random.uniform(0, 0.02 * (attempt + 1)))
                continue
            self._current = stored
            return
        raise KubeError(0, f"cannot write {self.where}: it kept changing while it was written")

    async def _read(self) -> dict[str, Any] | None:
        try:
            return await self._kube.get_configmap(self.namespace, EVENTS_CONFIGMAP)
        except KubeError as err:
            if err.is_not_found:
                return None
            raise

    # --- following -----------------------------------------------------------------------------

    def _observe(self, kind: str, obj: dict[str, Any]) -> None:
        """One event of the watch of the ConfigMap."""
        if kind == "BOOKMARK":
            if self._seen is None:
                self._seen = set()  # listed, not found: whatever comes next is new
            return
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or meta.get("name") != EVENTS_CONFIGMAP:
            return
        if kind == "DELETED":
            self._current = None
            return
        if kind not in ("ADDED", "MODIFIED"):
            return
        self._current = obj
        now = self._clock()
        data = _data(obj)
        entries, problems = parse_events(data.get(EVENTS_KEY))
        backoffs, more = parse_backoffs(data.get(BACKOFFS_KEY), now)
        self._report(problems + more)
        for backoff in backoffs:
            if backoff.member == self.member or self._budget is None:
                continue
            if self._budget.heard(backoff.host, backoff.until.timestamp()):
                metrics.FLEET_BACKOFFS_SHARED.labels("received").inc()
                log.info(
                    "registry %s asked %s to back off: its requests wait until %s",
                    backoff.host,
                    backoff.member,
                    backoff.until.isoformat(timespec="seconds"),
                )
        ids = {entry.id for entry in entries}
        seen, self._seen = self._seen, ids
        if seen is None:
            return  # the ring as this member found it: not replayed
        for entry in entries:
            if entry.id in seen or entry.member == self.member or now - entry.at > EVENT_MAX_AGE:
                continue
            metrics.FLEET_EVENTS_FORWARDED.labels("received").inc()
            log.info(
                "registry event received by replica %s",
                entry.member,
                webhook_registry=entry.event.registry,
                webhook_repository=entry.event.repository,
                webhook_tag=entry.event.tag,
            )
            if self.receive is not None:
                self.receive(entry.event)

    def _report(self, problems: list[str]) -> None:
        """Log each malformed entry once (not again at every change of the ConfigMap)."""
        for problem in problems:
            if problem not in self._reported:
                metrics.FLEET_EVENTS_ERRORS.labels("read").inc()
                log.warning("%s: skipping a malformed entry: %s", self.where, problem)
        self._reported = set(problems)

    async def run(self, stop: asyncio.Event) -> None:
        """Write what is published and follow the ConfigMap until ``stop`` is set."""
        from argocd_image_updater.kube.watch import follow

        def source() -> Any:
            return follow(
                self._kube,
                CONFIGMAPS,
                self.namespace,
                field_selector=f"metadata.name={EVENTS_CONFIGMAP}",
            )

        tasks = [
            asyncio.create_task(
                self._write_loop(), context=fenced_context(self._settled, NOT_MEMBER)
            ),
            asyncio.create_task(
                supervised(
                    f"watch of {self.where}",
                    source,
                    self._observe,
                    stop,
                    self.health,
                    self.restarts,
                )
            ),
        ]
        try:
            await stop.wait()
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task


def join_fleet(
    membership: Membership, kube: KubeClient, budget: FleetBudget, health: Health | None = None
) -> FleetEvents:
    """The events ConfigMap of ``membership``'s fleet, in the controller's namespace; the
    registry ``budget`` is shared from now on: its rate divided among the live members of the
    static shard, its back-offs passed on through the ConfigMap."""
    fleet = FleetEvents(
        kube,
        kube.namespace,
        membership.member,
        settled=membership.settled,
        budget=budget,
        health=health,
    )
    budget.join(lambda: len(membership.view), fleet.publish_backoff)
    return fleet


def _data(obj: dict[str, Any] | None) -> dict[str, str]:
    data = (obj or {}).get("data")
    if not isinstance(data, dict):
        return {}
    return {key: value for key, value in data.items() if isinstance(value, str)}
