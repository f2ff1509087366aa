"""CloudEvents v1.0 webhooks (``type=cloudevents``): AWS ECR via EventBridge, or any container event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Final

from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.model.webhook_types import CLOUDEVENTS
from argocd_image_updater.webhook.checks import (
    check_shared_secret,
    first_dotted_segment,
    missing,
    require_content_type,
    require_post,
)
from argocd_image_updater.webhook.decoding import MAP, STR, Schema, decode_payload
from argocd_image_updater.webhook.events import RejectionReason, WebhookRequest, reject
from argocd_image_updater.webhook.types import WebhookType

NAME: Final = CLOUDEVENTS.name
SCHEMA: Final[Schema] = {
    "specversion": STR,
    "type": STR,
    "source": STR,
    "subject": STR,
    "id": STR,
    "time": STR,
    "datacontenttype": STR,
    "data": MAP,
}


def ecr_registry(source: str, data: Mapping[str, object]) -> str:
    """``<account>.dkr.ecr.<region>.amazonaws.com`` from an ECR ``urn:``/``arn:`` source.

    ``data.registryId`` wins over the account in the source; ``""`` for other sources.
    """
    if not source.startswith(("urn:aws:ecr:", "arn:aws:ecr:")):
        return ""
    parts = source.split(":")
    if len(parts) < 5:
        return ""
    region, account = parts[3], parts[4]
    registry_id = data.get("registryId")
    if isinstance(registry_id, str) and registry_id:
        account = registry_id
    return f"{account}.dkr.ecr.{region}.amazonaws.com"


def registry_from_source(source: str) -> str:
    """The registry host named by a CloudEvents ``source`` (URL host or a dotted first segment)."""
    if source.startswith(("http://", "https://")):
        return source.split("/")[2]
    return first_dotted_segment(source) or ""


def _data_text(data: Mapping[str, object], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


class CloudEventsParser:
    """CloudEvents v1.0 in structured mode (AWS ECR via EventBridge, or any container event).

    The secret may come in the ``secret`` query parameter or the ``X-Webhook-Secret`` header.
    """

    __slots__ = ()
    type_name: ClassVar[str] = NAME

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        require_post(request)
        require_content_type(request, "application/json", "application/cloudevents+json")
        if secret:
            given = request.param("secret") or request.header("X-Webhook-Secret")
            check_shared_secret(given, secret)

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = decode_payload(request.body, SCHEMA)
        if not doc.text("specversion"):
            raise reject("missing CloudEvents specversion", RejectionReason.MISSING_FIELD)
        event_type = doc.text("type")
        if not event_type:
            raise reject("missing CloudEvents type", RejectionReason.MISSING_FIELD)
        data = doc.mapping("data")
        repository, tag, digest = "", "", ""
        subject_repo, colon, subject_tag = doc.text("subject").partition(":")
        if colon:
            repository, tag = subject_repo, subject_tag
        if event_type.startswith("com.amazon.ecr."):
            repository = _data_text(data, "repositoryName") or repository
            tag = _data_text(data, "imageTag") or tag
            digest = _data_text(data, "imageDigest") or ""
            registry = ecr_registry(doc.text("source"), data)
        elif "container" in event_type or "image" in event_type:
            repository = (
                _data_text(data, "repositoryName") or _data_text(data, "repository") or repository
            )
            tag = _data_text(data, "imageTag") or _data_text(data, "tag") or tag
            found = _data_text(data, "imageDigest")
            digest = found if found is not None else (_data_text(data, "digest") or "")
            registry_url = _data_text(data, "registryUrl")
            if registry_url is None:
                registry_url = _data_text(data, "registry")
            if registry_url is None:
                registry_url = registry_from_source(doc.text("source"))
            registry = registry_url
        else:
            raise reject(f"unsupported CloudEvents type: {event_type}", RejectionReason.WRONG_EVENT)
        where = "CloudEvents payload"
        if not repository:
            raise missing("repository name", where)
        if not tag:
            raise missing("tag", where)
        if not registry:
            raise missing("registry URL", where)
        return RegistryEvent(registry, repository, tag, digest, source_type=self.type_name)


WEBHOOK_TYPE: Final = WebhookType.of(
    CLOUDEVENTS, schema=SCHEMA, new_parser=lambda clock: CloudEventsParser()
)
