"""Receiver types: one module each, defining ``TARGET`` (a :class:`TargetType`), found by
:mod:`argocd_image_updater.notify.registry`. A type turns a :class:`~..events.Batch` into the
requests to send (usually one); signing, delivery and retries are the dispatcher's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from argocd_image_updater.notify.events import Batch, Event


@dataclass(frozen=True, slots=True)
class Payload:
    """One request: its body, its ``Content-Type`` and the events it carries (for metrics)."""

    body: bytes
    content_type: str
    events: tuple[Event, ...]
    headers: dict[str, str] = field(default_factory=dict)


class TargetType(Protocol):
    @property
    def name(self) -> str:
        """The ``type`` value of a target (``slack``)."""
        ...

    def render(self, batch: Batch) -> list[Payload]:
        """The requests carrying ``batch`` (pure)."""
        ...
