"""Webhook types: each module of this package is one type (pure, no I/O).

A type module defines ``WEBHOOK_TYPE``, a :class:`WebhookType` carrying its description from
``model.webhook_types`` (the ``type=`` value and its secret setting), its payload schema and its
parser;
:mod:`~argocd_image_updater.webhook.registry` finds every module here, and the dispatcher, the
process settings (from the descriptions in ``model.webhook_types``), the docs and the chart are
derived from or checked against that list. Adding a type is its description plus one new module
here, with its tests and its docs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Final, Protocol

from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.model.webhook_types import WebhookDescription
from argocd_image_updater.webhook.decoding import Schema
from argocd_image_updater.webhook.events import WebhookRequest

Clock = Callable[[], float]
_DESCRIBED: Final = tuple(f.name for f in fields(WebhookDescription))


class WebhookParser(Protocol):
    """Checks and decodes one registry's webhook notifications."""

    @property
    def type_name(self) -> str: ...

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        """Raise :class:`WebhookRejected` unless the request is an authentic notification."""
        ...

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        """The pushed image, or :class:`WebhookRejected` when the payload is unusable."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookType(WebhookDescription):
    """One webhook type: its description (``model.webhook_types``: name, secret setting and the
    names derived from it), its payload schema and its parser."""

    schema: Schema
    new_parser: Callable[[Clock], WebhookParser]
    """The parser; it gets the receiver's clock (for signature timestamps)."""

    @classmethod
    def of(
        cls,
        description: WebhookDescription,
        *,
        schema: Schema,
        new_parser: Callable[[Clock], WebhookParser],
    ) -> WebhookType:
        values = (getattr(description, name) for name in _DESCRIBED)
        return cls(*values, schema=schema, new_parser=new_parser)

    def describes(self, description: WebhookDescription) -> bool:
        """Whether this type carries exactly ``description``."""
        return all(getattr(self, name) == getattr(description, name) for name in _DESCRIBED)
