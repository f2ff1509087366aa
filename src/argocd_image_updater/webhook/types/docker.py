"""Docker Hub webhooks (``type=docker.io``)."""

from __future__ import annotations

from typing import ClassVar, Final

from argocd_image_updater.model.dockerhub import DOCKER_HUB
from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.model.webhook_types import DOCKER
from argocd_image_updater.webhook.checks import (
    check_query_secret,
    repository_and_push_tag,
    require_post,
)
from argocd_image_updater.webhook.decoding import STR, Schema, decode_payload
from argocd_image_updater.webhook.events import WebhookRequest
from argocd_image_updater.webhook.types import WebhookType

NAME: Final = DOCKER.name
SCHEMA: Final[Schema] = {
    "repository": {"name": STR, "namespace": STR, "repo_name": STR},
    "push_data": {"tag": STR},
}


class DockerHubParser:
    """Docker Hub: optional secret in the ``secret`` query parameter."""

    __slots__ = ()
    type_name: ClassVar[str] = NAME

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        require_post(request)
        check_query_secret(request, secret)

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = decode_payload(request.body, SCHEMA)
        repository, tag = repository_and_push_tag(doc, "repository.repo_name")
        return RegistryEvent(DOCKER_HUB, repository, tag, source_type=self.type_name)


WEBHOOK_TYPE: Final = WebhookType.of(
    DOCKER, schema=SCHEMA, new_parser=lambda clock: DockerHubParser()
)
