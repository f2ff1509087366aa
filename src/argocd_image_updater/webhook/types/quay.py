"""Quay webhooks (``type=quay.io``), self-hosted Quay included."""

from __future__ import annotations

from typing import ClassVar, Final

from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.model.webhook_types import QUAY
from argocd_image_updater.webhook.checks import (
    check_query_secret,
    first_dotted_segment,
    require_post,
    url_host,
    with_scheme,
)
from argocd_image_updater.webhook.decoding import STR, STRS, Schema, decode_payload
from argocd_image_updater.webhook.events import RejectionReason, WebhookRequest, reject
from argocd_image_updater.webhook.types import WebhookType

NAME: Final = QUAY.name
SCHEMA: Final[Schema] = {
    "name": STR,
    "repository": STR,
    "namespace": STR,
    "docker_url": STR,
    "homepage": STR,
    "updated_tags": STRS,
}


def registry_from_docker_url(docker_url: str) -> str:
    """The registry host of a Quay ``docker_url`` (``quay.io`` when none can be found)."""
    host = url_host(with_scheme(docker_url))
    if host:
        return host
    return first_dotted_segment(docker_url) or "quay.io"


class QuayParser:
    """Quay: optional secret in the ``secret`` query parameter; the first updated tag is used."""

    __slots__ = ()
    type_name: ClassVar[str] = NAME

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        require_post(request)
        check_query_secret(request, secret)

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = decode_payload(request.body, SCHEMA)
        tags = doc.strings("updated_tags")
        if not tags:
            raise reject("no tags in the payload", RejectionReason.MISSING_FIELD)
        docker_url = doc.text("docker_url")
        registry = registry_from_docker_url(docker_url) if docker_url else "quay.io"
        return RegistryEvent(registry, doc.text("repository"), tags[0], source_type=self.type_name)


WEBHOOK_TYPE: Final = WebhookType.of(QUAY, schema=SCHEMA, new_parser=lambda clock: QuayParser())
