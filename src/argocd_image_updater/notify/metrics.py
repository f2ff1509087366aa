"""Notification metrics (registered on the process registry when this module is imported)."""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter

from argocd_image_updater.observe.metrics import REGISTRY

_P = "argocd_image_updater_"

SENT: Final = Counter(
    _P + "notifications_sent",
    "Notification events delivered, by target type and event (a batched message counts each "
    "event it carries)",
    ["type", "event"],
    registry=REGISTRY,
)
FAILED: Final = Counter(
    _P + "notifications_failed",
    "Notification messages given up on after their retries, by target type and reason",
    ["type", "reason"],
    registry=REGISTRY,
)
DROPPED: Final = Counter(
    _P + "notifications_dropped",
    "Notification messages dropped unsent: the oldest waiting message when a target's queue is "
    "full, and those still waiting at shutdown",
    registry=REGISTRY,
)
