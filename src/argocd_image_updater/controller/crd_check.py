"""Reads the installed ImageUpdater CRD at start and again every hour, and tells
:class:`~argocd_image_updater.report.installed_crd.InstalledCrd` which fields its schema keeps.

Users often move over from the original project with its CRD still installed (its chart keeps
CRDs, Helm does not upgrade them, many clusters manage CRDs apart from the controller); the API
server then silently drops every field that CRD lacks. Reading the CRD needs ``get`` on
``customresourcedefinitions`` (cluster-scoped); without it the controller learns from its status
writes instead (said once). A re-read that finds the same ``resourceVersion`` changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any, Final

from argocd_image_updater.kube.client import Kind, KubeClient, KubeError, resource_path
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.report.crd_schema import CRD_NAME, CRD_VERSION
from argocd_image_updater.report.installed_crd import InstalledCrd

log = get_logger("crd")

CRDS: Final[Kind] = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")
PERIOD: Final = 3600.0
"""Seconds between two reads of the CRD."""


def served_schema(crd: Mapping[str, Any], version: str = CRD_VERSION) -> Mapping[str, Any] | None:
    """The ``openAPIV3Schema`` of ``version`` in a CustomResourceDefinition, if it has one."""
    versions = (crd.get("spec") or {}).get("versions") or ()
    for entry in versions:
        if isinstance(entry, Mapping) and entry.get("name") == version:
            schema = (entry.get("schema") or {}).get("openAPIV3Schema")
            return schema if isinstance(schema, Mapping) else None
    return None


class CrdCheck:
    def __init__(self, kube: KubeClient, crd: InstalledCrd, period: float = PERIOD) -> None:
        self.kube = kube
        self.crd = crd
        self.period = period
        self._version = ""
        self._task: asyncio.Task[None] | None = None

    async def check(self) -> None:
        """Read the CRD once; a failure is logged and leaves what is known as it was."""
        try:
            crd = await self.kube.request("GET", resource_path(CRDS, None, CRD_NAME))
        except KubeError as err:
            if err.status in (401, 403, 404):
                self.crd.use_writes(str(err))
            else:
                log.warning("cannot read the ImageUpdater CRD %s: %s", CRD_NAME, str(err))
            return
        if not isinstance(crd, Mapping):
            return
        version = str((crd.get("metadata") or {}).get("resourceVersion") or "")
        if version and version == self._version:
            return
        schema = served_schema(crd)
        if schema is None:
            log.warning("the ImageUpdater CRD %s serves no %s", CRD_NAME, CRD_VERSION)
            return
        self._version = version
        self.crd.use_schema(schema)

    async def start(self) -> None:
        """Check now, then every :attr:`period` seconds in the background until :meth:`close`."""
        await self.check()
        self._task = asyncio.create_task(self._again())

    async def _again(self) -> None:
        while True:
            await asyncio.sleep(self.period)
            try:
                await self.check()
            except Exception as err:  # a surprise in one read never ends the re-reads
                log.error(
                    "checking the ImageUpdater CRD failed: %s: %s", type(err).__name__, str(err)
                )

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
