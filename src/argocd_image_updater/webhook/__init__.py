"""Registry webhooks: request and event values, payload parsers and signature checks (no I/O).

The HTTP server hands each call to :meth:`WebhookParsers.handle` as a :class:`WebhookRequest`
and gets a :class:`RegistryEvent` back, or a :class:`WebhookRejected` carrying the answer. Each
webhook type is one module of :mod:`argocd_image_updater.webhook.types`.
"""

from __future__ import annotations

from argocd_image_updater.model.registry_event import (
    RegistryEvent,
    normalise_registry,
    repository_key,
)
from argocd_image_updater.webhook.checks import MAX_BODY_BYTES
from argocd_image_updater.webhook.events import (
    Headers,
    RejectionReason,
    WebhookRejected,
    WebhookRequest,
)
from argocd_image_updater.webhook.registry import SECRET_ENV_VARS, SECRET_KEYS, webhook_types
from argocd_image_updater.webhook.router import WebhookParsers, detect_type
from argocd_image_updater.webhook.signatures import sign_generic
from argocd_image_updater.webhook.types import WebhookParser, WebhookType

__all__ = [
    "MAX_BODY_BYTES",
    "SECRET_ENV_VARS",
    "SECRET_KEYS",
    "Headers",
    "RegistryEvent",
    "RejectionReason",
    "WebhookParser",
    "WebhookParsers",
    "WebhookRejected",
    "WebhookRequest",
    "WebhookType",
    "detect_type",
    "normalise_registry",
    "repository_key",
    "sign_generic",
    "webhook_types",
]
