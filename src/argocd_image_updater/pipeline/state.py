"""A :class:`~argocd_image_updater.pipeline.ports.StateStore` that keeps the record in memory
(local mode without ``--state-dir``: remembered for as long as the process runs)."""

from __future__ import annotations

from argocd_image_updater.model.controller_state import ControllerState


class MemoryStateStore:
    def __init__(self) -> None:
        self._stored = ControllerState(token="0")
        self._version = 0

    async def load(self) -> ControllerState:
        return self._stored.copy()

    async def save(self, state: ControllerState) -> None:
        if state.changed and state.token != self._stored.token:
            state.adopt(state.replay_onto(self._stored.copy()))
        if not state.changed:
            return
        self._version += 1
        self._stored = state.copy(token=str(self._version))
        state.saved(str(self._version))
