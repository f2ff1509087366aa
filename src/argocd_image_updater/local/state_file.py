"""The controller's remembered record in a file (local mode, ``--state-dir``): ``state.json``.

The file holds one JSON object (``version``, ``writes``, ``firstSeen``, ``digests``,
``shipments``). A save
holds an exclusive lock on ``state.lock`` while it reads the file again (another process, e.g.
the ``release`` command, may have changed it: the unsaved changes are then applied to the newer
copy) and replaces it atomically (a temporary file in the same directory, then a rename).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from argocd_image_updater.model.controller_state import (
    DIGESTS_KEY,
    FIRST_SEEN_KEY,
    MAX_INFLATED_BYTES,
    SHIPMENTS_KEY,
    VERSION_KEY,
    WRITES_KEY,
    ControllerState,
    StateError,
)
from argocd_image_updater.pipeline.ports import StoreError

STATE_FILE: Final = "state.json"
LOCK_FILE: Final = "state.lock"
_FIELDS: Final = {
    WRITES_KEY: "writes",
    FIRST_SEEN_KEY: "firstSeen",
    DIGESTS_KEY: "digests",
    SHIPMENTS_KEY: "shipments",
}


class FileStateStore:
    """:class:`~argocd_image_updater.pipeline.ports.StateStore` on ``<dir>/state.json``."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / STATE_FILE

    async def load(self) -> ControllerState:
        return await asyncio.to_thread(self._load)

    async def save(self, state: ControllerState) -> None:
        if state.changed:
            await asyncio.to_thread(self._save, state)

    def _load(self) -> ControllerState:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return ControllerState()
        except OSError as err:
            raise StoreError(f"cannot read {self.path}: {err.strerror or err}") from None
        try:
            doc = json.loads(raw)
            if not isinstance(doc, dict):
                raise StateError("expected a JSON object")
            data = {VERSION_KEY: str(doc.get("version", ""))}
            for key, name in _FIELDS.items():
                data[key] = json.dumps(doc.get(name) or {})
            return ControllerState.from_data(data, _token(raw))
        except (ValueError, StateError) as err:
            raise StoreError(f"{self.path}: {err}") from None

    def _save(self, state: ControllerState) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with _locked(self.directory / LOCK_FILE):
                current = self._load()
                if current.token != state.token:
                    state.adopt(state.replay_onto(current))
                    if not state.changed:
                        return
                data = state.to_data(limit=MAX_INFLATED_BYTES)  # a file has no 1 MiB bound
                doc: dict[str, Any] = {"version": int(data[VERSION_KEY])}
                for key, name in _FIELDS.items():
                    doc[name] = json.loads(data[key])
                text = (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()
                _write_atomically(self.path, text)
                state.saved(_token(text))
        except OSError as err:
            raise StoreError(f"cannot write {self.path}: {err.strerror or err}") from None


def _token(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_atomically(path: Path, content: bytes) -> None:
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
