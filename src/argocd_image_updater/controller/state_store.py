"""The controller's remembered record (:class:`~argocd_image_updater.model.controller_state.
ControllerState`) in a ConfigMap of the controller's namespace, ``argocd-image-updater-state``.

The data keys hold JSON documents (see the model); a record too large for them (1 MiB in all) is
stored gzip-compressed in ``binaryData`` instead, and one too large even then leaves out its
oldest hints, then its oldest write records, with a warning. A save is a conditional replace with the
resourceVersion the record was loaded from; when another writer (a replica that was leader
before, the ``release`` command) changed it meanwhile, the newer copy is loaded and the unsaved
changes are applied to it again. Nothing is written when nothing changed.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final

from argocd_image_updater.kits.fence import WriteFenced, check_fence
from argocd_image_updater.kube.client import KubeClient, KubeError
from argocd_image_updater.model.controller_state import ControllerState, StateError
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.ports import StoreError

log = get_logger("state")

STATE_CONFIGMAP: Final = "argocd-image-updater-state"
MAX_SAVE_ATTEMPTS: Final = 5
LABELS: Final = {
    "app.kubernetes.io/name": "argocd-image-updater",
    "app.kubernetes.io/part-of": "argocd-image-updater",
    "app.kubernetes.io/component": "state",
}


class ConfigMapStateStore:
    """:class:`~argocd_image_updater.pipeline.ports.StateStore` on a ConfigMap (``labels`` and
    ``annotations``: besides :data:`LABELS`, on the ConfigMap written)."""

    def __init__(
        self,
        kube: KubeClient,
        namespace: str,
        name: str = STATE_CONFIGMAP,
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.labels = {**LABELS, **(labels or {})}
        self.annotations = dict(annotations or {})
        self._last: ControllerState | None = None
        """The record as last read or written: a ConfigMap still at its resourceVersion is not
        parsed again (a copy of it is handed out)."""
        self.absent = ControllerState()
        """The record of this ConfigMap while there is none, as :meth:`read` gives it (read it,
        never change it): one object, not a new one per read. A sharded replica asks after
        hundreds of objects not written yet twice a load or a save; making an empty record for
        each was a third of its state work (a CPU profile of ``benchmarks/sharding.py``)."""

    @property
    def where(self) -> str:
        return f"ConfigMap {self.namespace}/{self.name}"

    @property
    def last(self) -> ControllerState | None:
        """The record as last read or written (with its version; never change it)."""
        return self._last

    async def load(self) -> ControllerState:
        return (await self.read()).copy()

    async def read(self) -> ControllerState:
        """The stored record as :meth:`load` gives it, but not a copy: the record as last read
        while the ConfigMap is still at its resourceVersion (read it, never change it)."""
        try:
            cm = await self.kube.get_configmap(self.namespace, self.name)
        except KubeError as err:
            if err.is_not_found:
                return self.absent
            raise StoreError(f"cannot read {self.where}: {err}") from err
        return self.parse(cm)

    def parse(self, cm: Mapping[str, Any] | None) -> ControllerState:
        """The record of ``cm`` (this store's ConfigMap as read or watched; None: there is
        none) as :meth:`read` gives it."""
        if cm is None:
            return self.absent
        version = str((cm.get("metadata") or {}).get("resourceVersion") or "")
        if self._last is not None and version and self._last.token == version:
            return self._last
        try:
            binary = {
                key: base64.b64decode(value, validate=True)
                for key, value in (cm.get("binaryData") or {}).items()
            }
            state = ControllerState.from_stored(cm.get("data") or {}, binary, version)
        except binascii.Error as err:
            raise StoreError(f"{self.where}: binaryData is not base64: {err}") from None
        except StateError as err:
            raise StoreError(f"{self.where}: {err}") from None
        self._last = state
        return state

    async def save(self, state: ControllerState) -> None:
        for _ in range(MAX_SAVE_ATTEMPTS):
            if not state.changed:
                return
            if await self.write(state):
                return
            log.debug("%s changed since it was read; applying the changes again", self.where)
            state.adopt(state.replay_onto(await self.load()))
        raise StoreError(f"cannot write {self.where}: it kept changing while it was written")

    async def write(self, state: ControllerState) -> bool:
        """Store the contents of ``state`` if the ConfigMap is still at the version ``state`` was
        read at (``state.token``; "": none stored yet), and mark ``state`` saved; False, with
        nothing written, when it is not (another writer changed it)."""
        stored_form = state.to_stored()
        if stored_form.dropped:
            log.warning(
                "%s is full: left out the oldest entries to fit (%s)",
                self.where,
                ", ".join(f"{key}: {n}" for key, n in stored_form.dropped.items()),
            )
        metadata: dict[str, Any] = {
            "name": self.name,
            "namespace": self.namespace,
            "labels": self.labels,
        }
        if self.annotations:
            metadata["annotations"] = self.annotations
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata,
            "data": stored_form.data,
        }
        if stored_form.binary:
            body["binaryData"] = {
                key: base64.b64encode(value).decode() for key, value in stored_form.binary.items()
            }
        try:
            check_fence(f"writing {self.where}")
        except WriteFenced as err:
            raise StoreError(str(err)) from None
        try:
            if state.token:
                metadata["resourceVersion"] = state.token
                stored = await self.kube.replace_configmap(self.namespace, self.name, body)
            else:
                stored = await self.kube.create_configmap(self.namespace, body)
        except KubeError as err:
            if not (err.is_conflict or (err.is_not_found and state.token)):
                raise StoreError(f"cannot write {self.where}: {err}") from err
            return False
        state.saved(str((stored.get("metadata") or {}).get("resourceVersion") or ""))
        self._last = state.copy()
        return True
