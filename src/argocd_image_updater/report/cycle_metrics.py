"""Per-cycle metrics with the original's names, fitting its Grafana dashboard.

Gauges are per ImageUpdater CR (``image_updater_cr_name``, ``image_updater_cr_namespace``);
counters are per Application and CR, so the dashboard's ``sum by (application)`` works.
Applications configured by legacy annotations get empty CR labels. The dashboard's
``images_updated_error_total`` is exported as an alias of ``images_errors_total``.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Sequence
from typing import Final

from prometheus_client import Counter, Gauge, Histogram

from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater.pipeline.records import AppOutcome, CRState, CycleResult
from argocd_image_updater.report.app_counters import AppCounters

_P = "argocd_image_updater_"
CR_LABELS: Final = ("image_updater_cr_name", "image_updater_cr_namespace")
APP_LABELS: Final = ("application", *CR_LABELS)

TIME_TO_LIVE: Final = Histogram(
    _P + "time_to_live_seconds",
    "Seconds from writing an image change to Argo CD reporting it synced, healthy and running, "
    "per write-back method",
    ("method",),
    buckets=(30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600),
    registry=REGISTRY,
)
NOT_SHIPPED: Final = Counter(
    _P + "images_not_shipped",
    "Image changes not live within their ImageUpdater's spec.shipTimeout, per write-back method",
    ("method",),
    registry=REGISTRY,
)
APPLICATIONS_WATCHED: Final = Gauge(
    _P + "applications_watched_total",
    "Number of applications matched in the last cycle, per ImageUpdater",
    CR_LABELS,
    registry=REGISTRY,
)
IMAGES_WATCHED: Final = Gauge(
    _P + "images_watched_total",
    "Number of images considered in the last cycle, per ImageUpdater",
    CR_LABELS,
    registry=REGISTRY,
)
IMAGES_WAITING: Final = Gauge(
    _P + "images_waiting",
    "Number of images not updated in the last cycle although a newer tag exists, by reason: "
    "too-young (below minAge), held (a rollback or manual hold), waiting-for-sync",
    ("reason",),
    registry=REGISTRY,
)
WAITING_REASONS: Final = ("too-young", "held", "waiting-for-sync")
APP_COUNTERS: Final = AppCounters(
    (
        (
            _P + "images_updated",
            "Number of images updated (written; never in dry-run), per application",
            "updated",
        ),
        (
            _P + "images_errors",
            "Number of errors while checking or updating images, per application",
            "errors",
        ),
        (
            _P + "images_updated_error",
            "Same as images_errors_total (the name the original's dashboard queries)",
            "errors",
        ),
    ),
    APP_LABELS,
)
"""The three per-Application counters (``images_updated``, ``images_errors`` and its alias
``images_updated_error``), two numbers per Application (:mod:`.app_counters`)."""
REGISTRY.register(APP_COUNTERS)

CRKey = tuple[str, str]
"""(namespace, name); ("", "") for applications configured by legacy annotations."""

_lock = threading.Lock()
_gauged: dict[CRKey, tuple[int, int]] = {}
"""The gauges' values as last set, per CR (a value that did not change is not set again)."""


def _cr_key(outcome: AppOutcome) -> CRKey:
    return (outcome.cr.namespace, outcome.cr.name) if outcome.cr is not None else ("", "")


def record_cycle(
    result: CycleResult, *, dry_run: bool, crs: Sequence[CRState] = (), gauges: bool = True
) -> None:
    """Update the metrics after a cycle.

    ``crs`` are the CRs of the cycle (``Collected.crs``): a CR without matched applications then
    reports 0, and a CR that failed as a whole counts one error (``application=""``). Gauges of
    CRs absent from the cycle are removed; counters stay until :func:`forget_cr`. With
    ``gauges`` False (a cycle over a few apps only, after a webhook) only counters move.
    """
    apps: dict[CRKey, int] = {}
    images: dict[CRKey, int] = {}
    with _lock:
        for cr in crs:
            key = (cr.namespace, cr.name)
            apps.setdefault(key, 0)
            images.setdefault(key, 0)
            if cr.error is not None:
                _count(key, "", errors=1, updated=0)
        for outcome in result.apps:
            key = _cr_key(outcome)
            plan = outcome.plan
            apps[key] = apps.get(key, 0) + 1
            images[key] = images.get(key, 0) + (plan.considered if plan is not None else 0)
            updated = len(plan.changes) if plan is not None and outcome.written else 0
            errors = (plan.errors if plan is not None else 0) + (1 if outcome.error else 0)
            _count(key, outcome.app, errors=errors, updated=0 if dry_run else updated)
        if not gauges:
            return
        waiting = collections.Counter(
            str(r.reason)
            for outcome in result.apps
            if outcome.plan is not None
            for r in outcome.plan.results
            if r.reason in WAITING_REASONS
        )
        for reason in WAITING_REASONS:
            IMAGES_WAITING.labels(reason).set(waiting[reason])
        for key, number in apps.items():
            values = (number, images[key])
            if _gauged.get(key) == values:
                continue
            labels = (key[1], key[0])
            APPLICATIONS_WATCHED.labels(*labels).set(number)
            IMAGES_WATCHED.labels(*labels).set(values[1])
            _gauged[key] = values
        for key in _gauged.keys() - apps.keys():
            _remove_gauges(key)


def _count(key: CRKey, app: str, *, errors: int, updated: int) -> None:
    """Increment (and create at 0, so ``increase()`` sees the first step) an app's counters;
    nothing to do for counters that exist and do not move (most apps of most cycles)."""
    if not errors and not updated and APP_COUNTERS.has(key, app):
        return
    APP_COUNTERS.inc(key, app, updated=updated, errors=errors)


def _remove_gauges(key: CRKey) -> None:
    _gauged.pop(key, None)
    for gauge in (APPLICATIONS_WATCHED, IMAGES_WATCHED):
        with contextlib.suppress(KeyError):
            gauge.remove(key[1], key[0])


def forget_cr(namespace: str, name: str) -> None:
    """Remove every series of a deleted ImageUpdater."""
    key = (namespace, name)
    with _lock:
        _remove_gauges(key)
        APP_COUNTERS.remove(key)
