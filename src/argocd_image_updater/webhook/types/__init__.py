"""Webhook types: each module of this package is one type (pure, no I/O).

A type module defines ``WEBHOOK_TYPE``, a :class:`WebhookType` carrying its name (the ``type=``
value), its secret setting, its payload schema and its parser;
:mod:`~argocd_image_updater.webhook.registry` finds every module here, and the dispatcher, the
process settings, the docs and the chart are derived from or checked against that list. Adding
a type is one new module here, plus its tests and its docs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.webhook.decoding import Schema
from argocd_image_updater.webhook.events import WebhookRequest

Clock = Callable[[], float]


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


@dataclass(frozen=True, slots=True)
class WebhookType:
    """One webhook type and every name derived from it.

    ``setting`` names its secret everywhere: the flag ``--<setting>-webhook-secret``, the
    environment variable ``<SETTING>_WEBHOOK_SECRET``, the ``argocd-image-updater-secret`` key
    ``webhook.<setting>-secret`` and the chart value ``webhook.secrets.<setting in camelCase>``
    (``_`` in ``setting`` becomes ``-`` in the flag and the key).
    """

    name: str
    """The ``type`` query parameter (or ``X-Registry-Type`` header) that selects it."""
    setting: str
    label: str
    """How help texts name the sender (``Docker Hub``)."""
    secret_in: str
    """Where the sender puts the secret (Markdown, for the docs table)."""
    schema: Schema
    new_parser: Callable[[Clock], WebhookParser]
    """The parser; it gets the receiver's clock (for signature timestamps)."""
    needs_secret: bool = False
    """Only ever served with a configured secret, even with ``--webhook-require-secret=false``."""

    @property
    def option(self) -> str:
        """The name of its secret in the process settings."""
        return f"{self.setting}_webhook_secret"

    @property
    def flag(self) -> str:
        return f"--{self.setting.replace('_', '-')}-webhook-secret"

    @property
    def env(self) -> str:
        return f"{self.setting.upper()}_WEBHOOK_SECRET"

    @property
    def secret_key(self) -> str:
        """Its key in the ``argocd-image-updater-secret`` Secret."""
        return f"webhook.{self.setting.replace('_', '-')}-secret"

    @property
    def chart_key(self) -> str:
        """Its key under ``webhook.secrets`` in the Helm chart's values."""
        first, *rest = self.setting.split("_")
        return first + "".join(part.capitalize() for part in rest)
