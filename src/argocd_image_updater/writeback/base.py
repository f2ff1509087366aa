"""What every write-back method provides to the cycle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from argocd_image_updater.model.application import Application
from argocd_image_updater.plan.model import AppPlan


class ConflictError(Exception):
    """The Application changed between read and write (HTTP 409): re-read, re-plan, retry."""


@dataclass(slots=True)
class BatchResult:
    """What a batch write did, by Application key (``namespace/name``).

    ``errors``: the Applications that failed, with the message. ``waiting``: per Application,
    the aliases whose new value the target already held (nothing written for them), each with
    a message saying where — they are ``waiting-for-sync``, not updated.
    """

    errors: dict[str, str] = field(default_factory=dict)
    waiting: dict[str, dict[str, str]] = field(default_factory=dict)

    def update(self, other: BatchResult) -> None:
        self.errors.update(other.errors)
        self.waiting.update(other.waiting)


class AppWriter(Protocol):
    """Writes an :class:`AppPlan` back (``argocd`` method: Kubernetes or Argo CD API; ``git``)."""

    async def write(self, app: Application, plan: AppPlan) -> None:
        """Raise :class:`ConflictError` when the Application changed since it was read."""
        ...

    async def reread(self, app: Application) -> Application: ...
