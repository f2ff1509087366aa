"""The per-Application counters of the cycle metrics, kept as two numbers per Application.

A labelled ``prometheus_client.Counter`` keeps a child object per series, with its own lock,
value object and creation time: about 0.7 KB each, three series per Application (updated,
errors and the errors' alias), 20 MB at 10,000 Applications. :class:`AppCounters` keeps the
values of an Application's three series in one small list and exposes them, when scraped,
exactly as the three counters would (``_total`` and ``_created`` samples, same names, help
and labels).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from typing import Final

from prometheus_client import metrics as _prometheus_metrics
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

Key = tuple[str, str]
"""(namespace, name) of the ImageUpdater; ("", "") for legacy annotations."""

_UPDATED: Final = 0
_ERRORS: Final = 1
_CREATED: Final = 2


class AppCounters(Collector):
    """Counters per (Application, ImageUpdater): ``families`` are ``(name, help, which)`` with
    ``which`` the value exposed: ``"updated"`` or ``"errors"`` (several families may expose the
    same value, as an alias)."""

    def __init__(self, families: Sequence[tuple[str, str, str]], labels: Sequence[str]) -> None:
        self._families = tuple(families)
        self._labels = tuple(labels)
        self._lock = threading.Lock()
        self._series: dict[Key, dict[str, list[float]]] = {}

    def inc(self, key: Key, app: str, *, updated: int, errors: int) -> None:
        """Add to an Application's counters, creating them at 0 first."""
        with self._lock:
            apps = self._series.setdefault(key, {})
            values = apps.get(app)
            if values is None:
                # 0.0: one shared object (most Applications count no update and no error)
                apps[app] = [
                    float(updated) if updated else 0.0,
                    float(errors) if errors else 0.0,
                    time.time(),
                ]
            else:
                values[_UPDATED] += updated
                values[_ERRORS] += errors

    def has(self, key: Key, app: str) -> bool:
        with self._lock:
            return app in self._series.get(key, ())

    def remove(self, key: Key) -> None:
        """Remove every series of one ImageUpdater."""
        with self._lock:
            self._series.pop(key, None)

    def describe(self) -> Iterator[CounterMetricFamily]:
        for name, documentation, _ in self._families:
            yield CounterMetricFamily(name, documentation, labels=self._labels)

    def collect(self) -> Iterator[CounterMetricFamily]:
        with self._lock:
            rows = [
                ((app, key[1], key[0]), tuple(values))
                for key, apps in self._series.items()
                for app, values in apps.items()
            ]
        created = getattr(_prometheus_metrics, "_use_created", True)
        for name, documentation, which in self._families:
            index = _UPDATED if which == "updated" else _ERRORS
            family = CounterMetricFamily(name, documentation, labels=self._labels)
            for labels, values in rows:
                family.add_metric(
                    labels, values[index], created=values[_CREATED] if created else None
                )
            yield family
