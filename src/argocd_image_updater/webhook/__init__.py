"""Registry webhooks: request and event values, payload parsers and signature checks (no I/O).

The HTTP server hands each call to :meth:`WebhookParsers.handle` as a :class:`WebhookRequest`
and gets a :class:`RegistryEvent` back, or a :class:`WebhookRejected` carrying the answer.
"""

from __future__ import annotations

from argocd_image_updater.webhook.events import (
    DOCKER_HUB,
    Headers,
    Reason,
    RegistryEvent,
    WebhookRejected,
    WebhookRequest,
    normalise_registry,
    repository_key,
)
from argocd_image_updater.webhook.parsers import (
    MAX_BODY_BYTES,
    SECRET_ENV_VARS,
    SECRET_KEYS,
    WebhookParser,
    WebhookParsers,
    detect_type,
)
from argocd_image_updater.webhook.signatures import sign_generic

__all__ = [
    "DOCKER_HUB",
    "MAX_BODY_BYTES",
    "SECRET_ENV_VARS",
    "SECRET_KEYS",
    "Headers",
    "Reason",
    "RegistryEvent",
    "WebhookParser",
    "WebhookParsers",
    "WebhookRejected",
    "WebhookRequest",
    "detect_type",
    "normalise_registry",
    "repository_key",
    "sign_generic",
]
