"""The dispatcher of webhook calls (pure): picks the type a request names, applies the
registration rules and the size limit, then the type's checks and parser.

Secrets are passed per type name (``{"docker.io": "…", "generic": "…"}``); empty means none.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Final

from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.webhook.checks import MAX_BODY_BYTES
from argocd_image_updater.webhook.events import RejectionReason, WebhookRequest, reject
from argocd_image_updater.webhook.registry import webhook_types
from argocd_image_updater.webhook.types import Clock, WebhookParser

NO_HANDLERS_MESSAGE: Final = (
    "no webhook handlers are registered; configure at least one *-webhook-secret "
    "or set --webhook-require-secret=false"
)


def detect_type(request: WebhookRequest) -> str:
    """The requested webhook type: query ``type`` first, else header ``X-Registry-Type``."""
    return request.param("type") or request.header("X-Registry-Type")


class WebhookParsers:
    """All webhook types, the registration rules and request dispatching.

    Registration follows the original: with ``require_secret`` only types with a configured
    secret accept calls; without it every type accepts calls (those without a secret
    unauthenticated) except the ones that need a secret (``generic``, whose whole purpose is
    signed delivery).
    """

    def __init__(self, clock: Clock = time.time) -> None:
        self._types = {t.name: t for t in webhook_types()}
        self._parsers: dict[str, WebhookParser] = {
            name: t.new_parser(clock) for name, t in self._types.items()
        }

    @property
    def types(self) -> tuple[str, ...]:
        """Every known type name, sorted."""
        return tuple(sorted(self._parsers))

    def for_type(self, type_name: str) -> WebhookParser:
        """The parser for ``type_name``; :class:`WebhookRejected` for an unknown type."""
        parser = self._parsers.get(type_name)
        if parser is None:
            raise reject(
                f"invalid registry type: {type_name}. Supported types: {', '.join(self.types)}",
                RejectionReason.UNSUPPORTED_TYPE,
            )
        return parser

    def _check_secret_names(self, secrets: Mapping[str, str]) -> None:
        unknown = sorted(name for name in secrets if name not in self._parsers)
        if unknown:
            raise ValueError(
                f"webhook secrets: unknown webhook type(s) {', '.join(map(repr, unknown))}; "
                f"known types: {', '.join(self.types)}"
            )

    def registered(self, secrets: Mapping[str, str], require_secret: bool) -> tuple[str, ...]:
        """The type names that accept calls, sorted. ``secrets`` is keyed by type name."""
        self._check_secret_names(secrets)
        return tuple(
            name
            for name in self.types
            if secrets.get(name) or (not require_secret and not self._types[name].needs_secret)
        )

    def handle(
        self,
        request: WebhookRequest,
        secrets: Mapping[str, str],
        require_secret: bool,
        max_body: int = MAX_BODY_BYTES,
    ) -> RegistryEvent:
        """Check and decode one call; :class:`WebhookRejected` carries the answer otherwise."""
        if len(request.body) > max_body:
            raise reject("request body too large", RejectionReason.TOO_LARGE, status=413)
        registered = self.registered(secrets, require_secret)
        if not registered:
            raise reject(NO_HANDLERS_MESSAGE, RejectionReason.NO_HANDLERS)
        type_name = detect_type(request)
        supported = ", ".join(registered)
        if not type_name:
            raise reject(
                f"missing registry type parameter. Supported types: {supported}",
                RejectionReason.UNSUPPORTED_TYPE,
            )
        if type_name not in registered:
            raise reject(
                f"invalid registry type: {type_name}. Supported types: {supported}",
                RejectionReason.UNSUPPORTED_TYPE,
            )
        parser = self._parsers[type_name]
        parser.validate(request, secrets.get(type_name) or None)
        return parser.parse(request)
