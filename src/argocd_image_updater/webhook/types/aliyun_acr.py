"""Alibaba Cloud Container Registry webhooks (``type=aliyun-acr``)."""

from __future__ import annotations

from typing import ClassVar, Final

from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.model.webhook_types import ALIYUN_ACR
from argocd_image_updater.webhook.checks import (
    check_query_secret,
    repository_and_push_tag,
    require_post,
)
from argocd_image_updater.webhook.decoding import STR, Schema, decode_payload
from argocd_image_updater.webhook.events import WebhookRequest
from argocd_image_updater.webhook.types import WebhookType

NAME: Final = ALIYUN_ACR.name
SCHEMA: Final[Schema] = {
    "push_data": {"digest": STR, "pushed_at": STR, "tag": STR},
    "repository": {
        "date_created": STR,
        "name": STR,
        "namespace": STR,
        "region": STR,
        "repo_authentication_type": STR,
        "repo_full_name": STR,
        "repo_origin_type": STR,
        "repo_type": STR,
    },
}


class AliyunAcrParser:
    """Alibaba Cloud ACR: optional secret in the ``secret`` query parameter.

    The registry comes from the ``registry_url`` query parameter (needed for Enterprise Edition
    instances), else ``registry.<region>.aliyuncs.com``, else stays empty like the original.
    """

    __slots__ = ()
    type_name: ClassVar[str] = NAME

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        require_post(request)
        check_query_secret(request, secret)

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = decode_payload(request.body, SCHEMA)
        repository, tag = repository_and_push_tag(doc, "repository.repo_full_name")
        registry = request.param("registry_url")
        region = doc.text("repository.region")
        if not registry and region:
            registry = f"registry.{region}.aliyuncs.com"
        return RegistryEvent(
            registry, repository, tag, doc.text("push_data.digest"), source_type=self.type_name
        )


WEBHOOK_TYPE: Final = WebhookType.of(
    ALIYUN_ACR, schema=SCHEMA, new_parser=lambda clock: AliyunAcrParser()
)
