"""GitHub Container Registry webhooks (``type=ghcr.io``): ``package`` events."""

from __future__ import annotations

from typing import ClassVar, Final

from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.model.webhook_types import GHCR
from argocd_image_updater.webhook.checks import (
    missing,
    require_post,
)
from argocd_image_updater.webhook.decoding import STR, Schema, decode_payload
from argocd_image_updater.webhook.events import RejectionReason, WebhookRequest, reject
from argocd_image_updater.webhook.signatures import (
    verify_prefixed_signature,
)
from argocd_image_updater.webhook.types import WebhookType

NAME: Final = GHCR.name
SCHEMA: Final[Schema] = {
    "action": STR,
    "package": {
        "name": STR,
        "package_type": STR,
        "owner": {"login": STR},
        "registry": {"url": STR},
        "package_version": {
            "version": STR,
            "name": STR,
            "container_metadata": {"tag": {"name": STR}},
        },
    },
}


class GhcrParser:
    """GitHub Container Registry: ``package`` events signed in ``X-Hub-Signature-256``."""

    __slots__ = ()
    type_name: ClassVar[str] = NAME

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        require_post(request)
        event = request.header("X-GitHub-Event")
        if not event:
            raise reject("missing X-GitHub-Event header", RejectionReason.WRONG_EVENT)
        if event != "package":
            raise reject(f"unsupported event type: {event}", RejectionReason.WRONG_EVENT)
        if secret:
            signature = request.header("X-Hub-Signature-256")
            if not signature:
                raise reject("missing webhook signature", RejectionReason.MISSING_SECRET)
            if not verify_prefixed_signature(signature, secret, request.body):
                raise reject("invalid webhook signature", RejectionReason.BAD_SIGNATURE)

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = decode_payload(request.body, SCHEMA)
        action = doc.text("action")
        if action != "published":
            raise reject(f"ignoring action: {action}", RejectionReason.WRONG_EVENT)
        package_type = doc.text("package.package_type")
        if package_type.lower() != "container":
            raise reject(f"unsupported package type: {package_type}", RejectionReason.WRONG_EVENT)
        name = doc.text("package.name")
        if not name:
            raise missing("package name")
        owner = doc.text("package.owner.login")
        if not owner:
            raise missing("package owner")
        tag = (
            doc.text("package.package_version.container_metadata.tag.name")
            or doc.text("package.package_version.name")
            or doc.text("package.package_version.version")
        )
        if not tag:
            raise missing("tag")
        repository = f"{owner}/{name}".lower()
        return RegistryEvent("ghcr.io", repository, tag, source_type=self.type_name)


WEBHOOK_TYPE: Final = WebhookType.of(GHCR, schema=SCHEMA, new_parser=lambda clock: GhcrParser())
