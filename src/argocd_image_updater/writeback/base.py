"""What every write-back method provides to the cycle."""

from __future__ import annotations

from typing import Protocol

from argocd_image_updater.model.application import Application
from argocd_image_updater.plan.model import AppPlan


class ConflictError(Exception):
    """The Application changed between read and write (HTTP 409): re-read, re-plan, retry."""


class AppWriter(Protocol):
    """Writes an :class:`AppPlan` back (``argocd`` method: Kubernetes or Argo CD API; ``git``)."""

    async def write(self, app: Application, plan: AppPlan) -> None:
        """Raise :class:`ConflictError` when the Application changed since it was read."""
        ...

    async def reread(self, app: Application) -> Application: ...
