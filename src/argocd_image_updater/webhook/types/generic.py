"""The ``generic`` webhook type: a JSON ``{"registry", "repository", "tag", "digest"}`` notification
signed with HMAC-SHA256, for CI pipelines and registries without a dedicated type.

Header ``X-Signature-256: sha256=<hex>`` over ``"<X-Timestamp>.<raw body>"``, the timestamp being
unix seconds no more than five minutes away from the receiver's clock."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar, Final

from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.model.webhook_types import GENERIC
from argocd_image_updater.webhook.checks import (
    missing,
    require_post,
)
from argocd_image_updater.webhook.decoding import STR, Schema, decode_payload
from argocd_image_updater.webhook.events import RejectionReason, WebhookRequest, reject
from argocd_image_updater.webhook.signatures import (
    GENERIC_TIMESTAMP_TOLERANCE,
    generic_signing_input,
    parse_timestamp,
    timestamp_fresh,
    verify_prefixed_signature,
)
from argocd_image_updater.webhook.types import Clock, WebhookType

NAME: Final = GENERIC.name
SCHEMA: Final[Schema] = {
    "registry": STR,
    "repository": STR,
    "tag": STR,
    "digest": STR,
}


@dataclass(frozen=True, slots=True)
class GenericParser:
    """Our own signed notification for registries or pipelines without a dedicated type.

    Headers: ``X-Timestamp: <unix seconds>`` and ``X-Signature-256: sha256=<hex>``, the hex being
    HMAC-SHA256 (keyed with the secret) of ``"<X-Timestamp>.<raw body>"``. A timestamp more than
    five minutes away from ``clock()`` is refused, so a captured notification cannot be replayed
    later. Body: ``{"registry", "repository", "tag", "digest"}``; all but ``digest`` required.
    """

    clock: Clock = time.time
    tolerance: float = GENERIC_TIMESTAMP_TOLERANCE
    type_name: ClassVar[str] = NAME

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        require_post(request)
        if not secret:
            return
        signature = request.header("X-Signature-256")
        if not signature:
            raise reject("missing webhook signature", RejectionReason.MISSING_SECRET)
        stamp_text = request.header("X-Timestamp")
        if not stamp_text:
            raise reject("missing X-Timestamp header", RejectionReason.BAD_TIMESTAMP)
        stamp = parse_timestamp(stamp_text)
        if stamp is None:
            raise reject(
                "invalid X-Timestamp header: expected unix seconds", RejectionReason.BAD_TIMESTAMP
            )
        signed = generic_signing_input(stamp_text, request.body)
        if not verify_prefixed_signature(signature, secret, signed):
            raise reject("invalid webhook signature", RejectionReason.BAD_SIGNATURE)
        if not timestamp_fresh(stamp, self.clock(), self.tolerance):
            raise reject(
                f"webhook timestamp is more than {self.tolerance:g} seconds away from "
                "the current time",
                RejectionReason.BAD_TIMESTAMP,
            )

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = decode_payload(request.body, SCHEMA)
        registry = doc.text("registry")
        if not registry:
            raise missing("registry")
        repository = doc.text("repository")
        if not repository:
            raise missing("repository name")
        tag = doc.text("tag")
        if not tag:
            raise missing("tag")
        return RegistryEvent(
            registry, repository, tag, doc.text("digest"), source_type=self.type_name
        )


WEBHOOK_TYPE: Final = WebhookType.of(
    GENERIC, schema=SCHEMA, new_parser=lambda clock: GenericParser(clock=clock)
)
