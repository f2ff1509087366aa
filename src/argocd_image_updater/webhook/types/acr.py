"""Azure Container Registry webhooks (``type=acr``): ``push`` events."""

from __future__ import annotations

from typing import ClassVar, Final

from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.model.webhook_types import ACR
from argocd_image_updater.webhook.checks import (
    check_authorization,
    missing,
    require_content_type,
    require_post,
)
from argocd_image_updater.webhook.decoding import INT, STR, Schema, decode_payload
from argocd_image_updater.webhook.events import RejectionReason, WebhookRequest, reject
from argocd_image_updater.webhook.types import WebhookType

NAME: Final = ACR.name
SCHEMA: Final[Schema] = {
    "action": STR,
    "target": {
        "mediaType": STR,
        "size": INT,
        "digest": STR,
        "length": INT,
        "repository": STR,
        "tag": STR,
    },
    "request": {"id": STR, "host": STR, "method": STR},
}


class AcrParser:
    """Azure Container Registry: JSON content type, the secret is the ``Authorization`` header.

    A digest-only push yields an event with an empty tag, like the original.
    """

    __slots__ = ()
    type_name: ClassVar[str] = NAME

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        require_post(request)
        require_content_type(request, "application/json")
        check_authorization(request, secret)

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = decode_payload(request.body, SCHEMA)
        action = doc.text("action")
        if action != "push":
            raise reject(f"ignoring action: {action}", RejectionReason.WRONG_EVENT)
        repository = doc.text("target.repository")
        if not repository:
            raise missing("repository name")
        return RegistryEvent(
            doc.text("request.host"),
            repository,
            doc.text("target.tag"),
            doc.text("target.digest"),
            source_type=self.type_name,
        )


WEBHOOK_TYPE: Final = WebhookType.of(ACR, schema=SCHEMA, new_parser=lambda clock: AcrParser())
