"""Write-back method ``argocd``: set the parameters on the Application object itself.

Unlike the original, which replaces the whole ``.spec`` from a possibly stale copy, the writers
send a JSON patch that touches only the parameters that change and carries the resourceVersion
that was read: if anyone changed the Application in between, the API server answers 409 and the
cycle re-reads, re-plans and retries (nothing of the other edit is lost).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from argocd_image_updater.argocd.client import ArgoCDClient, ArgoCDError
from argocd_image_updater.kits.fence import check_fence
from argocd_image_updater.kube.client import APPLICATIONS, KubeClient, KubeError
from argocd_image_updater.model.application import Application
from argocd_image_updater.pipeline.ports import ConflictError
from argocd_image_updater.plan.model import AppPlan
from argocd_image_updater.plan.patch import json_patch_ops


class KubeAppWriter:
    """Patches Applications through the Kubernetes API. ``written`` is handed each Application
    a patch answers or a re-read returns (the controller's watched copy folds it in, so that
    the next cycle reads its own write)."""

    def __init__(self, kube: KubeClient) -> None:
        self._kube = kube
        self.written: Callable[[dict[str, Any]], None] | None = None

    async def write(self, app: Application, plan: AppPlan) -> None:
        ops = json_patch_ops(app.raw, plan)
        check_fence(f"patching Application {app.namespace}/{app.name}")
        try:
            answer = await self._kube.json_patch(APPLICATIONS, app.namespace, app.name, ops)
        except KubeError as err:
            if err.is_conflict:
                raise ConflictError(str(err)) from None
            raise
        if self.written is not None:
            self.written(answer)

    async def reread(self, app: Application) -> Application:
        found = await self._kube.get_object(APPLICATIONS, app.namespace, app.name)
        if self.written is not None:
            self.written(found)
        return Application.from_object(found)


class ArgoCDAppWriter:
    """Patches Applications through Argo CD's API (``applications_api: argocd``)."""

    def __init__(self, client: ArgoCDClient) -> None:
        self._client = client

    async def write(self, app: Application, plan: AppPlan) -> None:
        ops = json_patch_ops(app.raw, plan)
        check_fence(f"patching Application {app.namespace}/{app.name}")
        try:
            await self._client.patch_application(app.name, app.namespace, ops)
        except ArgoCDError as err:
            if err.is_conflict:
                raise ConflictError(str(err)) from None
            raise

    async def reread(self, app: Application) -> Application:
        return Application.from_object(await self._client.get_application(app.name, app.namespace))
