"""The watch of ImageUpdaters that starts a cycle early when one's spec changes (its
``metadata.generation``), like the original, under supervision: whatever ends it (an API
error, a malformed event, a bug) is logged with the resource watched, and the watch starts
again after a backoff (1 s doubling up to 60 s, with jitter); after
:data:`FAILURES_UNHEALTHY` failures in a row ``/healthz`` reports it until it works again.
With Applications from the Kubernetes API the watch is the one of the watched copy of
ImageUpdaters (:mod:`~argocd_image_updater.controller.watched_objects`), which hands every event
to :class:`SpecChanges` too. The supervision, :func:`supervised`, serves every watch of the
controller (the watched copies, the events ConfigMap of a sharded fleet too)."""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Final

from argocd_image_updater.kube.errors import KubeError
from argocd_image_updater.observe.health import Health
from argocd_image_updater.observe.log import get_logger

log = get_logger("controller")

FAILURES_UNHEALTHY: Final = 5
RESTART_BASE: Final = 1.0
RESTART_CAP: Final = 60.0

Events = AsyncIterator[tuple[str, dict[str, Any]]]


@dataclass
class Restarts:
    """The backoff between a failed watch and its next start."""

    base: float = RESTART_BASE
    cap: float = RESTART_CAP

    def delay(self, failures: int) -> float:
        backoff = min(self.cap, self.base * 2.0 ** max(0, failures - 1))
        return backoff * (0.5 + random.random() / 2)


class SpecChanges:
    """Sets :attr:`wake` when an ImageUpdater's spec changes (its ``metadata.generation``):
    the handler of every event of a watch of ImageUpdaters (:func:`watch_specs`, or the
    watched copy of :mod:`~argocd_image_updater.controller.watched_objects`, which shares the
    watch). The first sight of an ImageUpdater (a listing) wakes nothing; one created later
    does."""

    def __init__(self, wake: asyncio.Event | None = None) -> None:
        self.wake = wake
        self._seen: dict[tuple[str, str], int] = {}

    def __call__(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata")
        if kind not in ("ADDED", "MODIFIED", "DELETED") or not isinstance(meta, dict):
            return
        key = (str(meta.get("namespace")), str(meta.get("name")))
        if kind == "DELETED":
            self._seen.pop(key, None)
            return
        generation = meta.get("generation")
        generation = generation if isinstance(generation, int) else 0
        if self._seen.get(key) != generation:
            first = key not in self._seen
            self._seen[key] = generation
            if not first or kind == "MODIFIED":
                log.info(
                    "ImageUpdater spec changed, starting a cycle",
                    imageUpdater_namespace=key[0],
                    imageUpdater_name=key[1],
                )
                if self.wake is not None:
                    self.wake.set()


async def watch_specs(
    source: Callable[[str | None], Events],
    scopes: list[str | None],
    wake: asyncio.Event,
    stop: asyncio.Event,
    health: Health | None = None,
    restarts: Restarts | None = None,
) -> None:
    """Set ``wake`` when an ImageUpdater's spec changes in any of ``scopes`` (namespaces, None:
    all); ``source(scope)`` is the stream of its changes
    (:func:`argocd_image_updater.kube.watch.follow`). Used where ImageUpdaters are not kept
    watched (Applications from Argo CD's API)."""
    changed = SpecChanges(wake)
    await asyncio.gather(
        *(
            supervised(
                f"watch of ImageUpdaters in {scope or 'all namespaces'}",
                functools.partial(source, scope),
                changed,
                stop,
                health,
                restarts,
            )
            for scope in scopes
        )
    )


async def supervised(
    name: str,
    source: Callable[[], Events],
    handle: Callable[[str, dict[str, Any]], None],
    stop: asyncio.Event,
    health: Health | None = None,
    restarts: Restarts | None = None,
    works: Callable[[], bool] | None = None,
) -> None:
    """Hand every event of ``source()`` to ``handle`` until ``stop`` is set (or the task is
    cancelled); whatever ends the stream (an API error, a malformed event, an error of
    ``handle``) is logged naming the watch, ``name``, which starts again after a backoff and
    is reported to ``health`` after :data:`FAILURES_UNHEALTHY` failures in a row. An event
    shows that the stream works again (the failures in a row start over) when ``works()``
    says so before it is handled (default: any event)."""
    restarts = restarts or Restarts()
    failures = 0
    while not stop.is_set():
        try:
            async for kind, obj in source():
                if failures and (works is None or works()):
                    failures = 0
                    log.info("%s works again", name)
                    if health is not None:
                        health.part_recovered(name)
                handle(kind, obj)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            failures += 1
            why = str(err) if isinstance(err, KubeError) else f"{type(err).__name__}: {err}"
            delay = restarts.delay(failures)
            log.warning(
                "%s failed (%d in a row): %s; starting it again in %.1fs",
                name,
                failures,
                why,
                delay,
            )
            if health is not None and failures >= FAILURES_UNHEALTHY:
                health.part_failing(name, f"failed {failures} times in a row: {why}")
            await _wait(stop, delay)


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    try:
        async with asyncio.timeout(seconds):
            await stop.wait()
    except TimeoutError:
        pass
