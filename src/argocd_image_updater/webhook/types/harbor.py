"""Harbor webhooks (``type=harbor``): ``PUSH_ARTIFACT`` events."""

from __future__ import annotations

from typing import ClassVar, Final

from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.model.webhook_types import HARBOR
from argocd_image_updater.webhook.checks import (
    check_authorization,
    first_dotted_segment,
    missing,
    namespaced,
    require_content_type,
    require_post,
    url_host,
    with_scheme,
)
from argocd_image_updater.webhook.decoding import INT, MAP, STR, Schema, decode_payload
from argocd_image_updater.webhook.events import RejectionReason, WebhookRequest, reject
from argocd_image_updater.webhook.types import WebhookType

NAME: Final = HARBOR.name
SCHEMA: Final[Schema] = {
    "type": STR,
    "occur_at": INT,
    "operator": STR,
    "event_data": {
        "resources": [{"digest": STR, "tag": STR, "resource_url": STR}],
        "repository": {
            "date_created": INT,
            "name": STR,
            "namespace": STR,
            "repo_full_name": STR,
            "repo_type": STR,
        },
        "custom_attributes": MAP,
    },
}


def registry_from_resource_url(resource_url: str) -> str:
    """The registry host of a Harbor ``resource_url`` (``harbor`` when it cannot be parsed)."""
    host = url_host(with_scheme(resource_url))
    if host is not None:
        return host
    return first_dotted_segment(resource_url) or "harbor"


class HarborParser:
    """Harbor: JSON content type, the secret is the whole ``Authorization`` header."""

    __slots__ = ()
    type_name: ClassVar[str] = NAME

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        require_post(request)
        require_content_type(request, "application/json")
        check_authorization(request, secret)

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = decode_payload(request.body, SCHEMA)
        event_type = doc.text("type")
        if event_type != "PUSH_ARTIFACT":
            raise reject(f"unsupported event type: {event_type}", RejectionReason.WRONG_EVENT)
        resources = doc.docs("event_data.resources")
        if not resources:
            raise reject("no resources found in webhook payload", RejectionReason.MISSING_FIELD)
        resource = resources[0]
        tag = resource.text("tag")
        if not tag:
            raise missing("tag")
        repository = namespaced(
            doc.text("event_data.repository.repo_full_name"),
            doc.text("event_data.repository.namespace"),
            doc.text("event_data.repository.name"),
        )
        if not repository:
            raise missing("repository name")
        resource_url = resource.text("resource_url")
        registry = registry_from_resource_url(resource_url) if resource_url else "harbor"
        return RegistryEvent(
            registry, repository, tag, resource.text("digest"), source_type=self.type_name
        )


WEBHOOK_TYPE: Final = WebhookType.of(HARBOR, schema=SCHEMA, new_parser=lambda clock: HarborParser())
