"""The liveness and readiness state behind ``/healthz`` and ``/readyz`` (served by
:mod:`argocd_image_updater.observe.server`; kept apart so that a run serving no probe does not load
the HTTP server)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(slots=True)
class Health:
    stall_after: float = 0.0
    """Seconds without a finished cycle after which the process is unhealthy; 0 = never."""
    ready: bool = False
    last_cycle_end: float = field(default_factory=time.monotonic)
    failing: dict[str, str] = field(default_factory=dict)
    """Parts of the process that keep failing (a watch), by name: the process is unhealthy
    while any is."""

    def part_failing(self, name: str, message: str) -> None:
        self.failing[name] = message

    def part_recovered(self, name: str) -> None:
        self.failing.pop(name, None)

    def cycle_finished(self) -> None:
        self.ready = True
        self.last_cycle_end = time.monotonic()

    def standing_by(self) -> None:
        """A follower is ready and alive while it waits for the leadership."""
        self.cycle_finished()

    def healthy(self) -> tuple[bool, str]:
        if self.failing:
            return False, "; ".join(f"{name}: {why}" for name, why in sorted(self.failing.items()))
        if self.stall_after <= 0:
            return True, "ok"
        idle = time.monotonic() - self.last_cycle_end
        if idle > self.stall_after:
            return False, f"no update cycle finished for {idle:.0f}s"
        return True, "ok"
