"""Metrics for a process that never exposes them (the one-shot ``test`` command).

``test`` counts registry requests like every command, but nothing reads the counts, and loading
``prometheus_client`` (with its exposition servers and collectors) is a sixth of the command's
start-up. A command that wants this calls :func:`switch_off` before anything imports
:mod:`argocd_image_updater.observe.metrics`, which then builds its metrics from the classes below:
same interface, no effect.
"""

from __future__ import annotations

from typing import Any

off = False
"""Whether :mod:`argocd_image_updater.observe.metrics` builds no-op metrics."""


def switch_off() -> None:
    global off
    off = True


class _NoOp:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def labels(self, *args: Any, **kwargs: Any) -> _NoOp:
        return self

    def inc(self, amount: float = 1) -> None:
        pass

    def dec(self, amount: float = 1) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, amount: float) -> None:
        pass


class Counter(_NoOp):
    pass


class Gauge(_NoOp):
    pass


class Histogram(_NoOp):
    pass


class CollectorRegistry(_NoOp):
    pass


class ProcessCollector(_NoOp):
    pass
