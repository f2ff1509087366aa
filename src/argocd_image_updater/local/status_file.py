"""The ImageUpdater statuses of local mode, in a file next to the controller's record
(``--state-dir``): ``status.json``.

In the cluster the controller writes each ImageUpdater's ``status`` through the API; local mode
has no API, so with ``--state-dir`` the same status is kept in ``<dir>/status.json`` (one object,
``namespace/name`` → status) for the ``status`` command to read. The manifests stay untouched.
A status computed without a stored one keeps the stored ``lastUpdatedAt`` and ``recentUpdates``
(a cycle that writes nothing keeps them, as in the cluster). Saves hold the same lock as
``state.json`` and replace the file atomically.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from argocd_image_updater.local.state_file import LOCK_FILE, _locked, _token, _write_atomically
from argocd_image_updater.pipeline.ports import StoreError
from argocd_image_updater.report.reporter import Reporter
from argocd_image_updater.report.status import StatusWriter

STATUS_FILE: Final = "status.json"
_KEPT: Final = ("lastUpdatedAt", "recentUpdates")


def read_statuses(directory: str | Path) -> dict[str, dict[str, Any]]:
    """The stored statuses (``namespace/name`` → status); empty when none is stored yet."""
    path = Path(directory) / STATUS_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise StoreError(f"cannot read {path}: {err.strerror or err}") from None
    try:
        doc = json.loads(raw)
    except ValueError as err:
        raise StoreError(f"{path}: not JSON: {err}") from None
    if not isinstance(doc, dict):
        raise StoreError(f"{path}: expected a JSON object")
    return {str(k): v for k, v in doc.items() if isinstance(v, dict)}


class FileStatusStore:
    """:class:`~argocd_image_updater.pipeline.ports.StatusStore` on ``<dir>/status.json``."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / STATUS_FILE

    async def patch_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._patch, f"{namespace}/{name}", patch)

    async def get_image_updater(self, namespace: str, name: str) -> dict[str, Any] | None:
        status = await asyncio.to_thread(read_statuses, self.directory)
        return {"metadata": {"namespace": namespace, "name": name}} | (
            {"status": status[f"{namespace}/{name}"]} if f"{namespace}/{name}" in status else {}
        )

    def _patch(self, key: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with _locked(self.directory / LOCK_FILE):
                statuses = read_statuses(self.directory)
                status = dict(patch.get("status") or {})
                stored = statuses.get(key, {})
                for field in _KEPT:
                    if field not in status and field in stored:
                        status[field] = stored[field]
                statuses[key] = status
                text = (json.dumps(statuses, indent=2, sort_keys=True) + "\n").encode()
                _write_atomically(self.path, text)
        except OSError as err:
            raise StoreError(f"cannot write {self.path}: {err.strerror or err}") from None
        namespace, _, name = key.partition("/")
        meta = {"namespace": namespace, "name": name, "resourceVersion": _token(text)}
        return {"metadata": meta, "status": status}


def local_reporter(state_dir: str) -> Reporter | None:
    """Local mode's report stage: the statuses into ``--state-dir`` (None without one)."""
    if not state_dir:
        return None
    return Reporter(StatusWriter(FileStatusStore(state_dir)), None)
