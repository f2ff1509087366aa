"""Checks and field helpers shared by the webhook types (pure): the request size limit, the
HTTP method and content type, shared secrets, required payload fields and URL hosts.

HMAC signatures and timestamps are in :mod:`~argocd_image_updater.webhook.signatures`.
"""

from __future__ import annotations

import re
from typing import Final

from argocd_image_updater.webhook.decoding import Payload
from argocd_image_updater.webhook.events import (
    RejectionReason,
    WebhookRejected,
    WebhookRequest,
    reject,
)
from argocd_image_updater.webhook.signatures import secrets_equal

MAX_BODY_BYTES: Final = 1 << 20
"""Largest accepted request body (1 MiB), like the original."""


def require_post(request: WebhookRequest) -> None:
    if request.method != "POST":
        raise reject(f"invalid HTTP method: {request.method}", RejectionReason.BAD_METHOD)


def require_content_type(request: WebhookRequest, *accepted: str) -> None:
    content_type = request.header("Content-Type")
    lowered = content_type.lower()
    if not any(kind in lowered for kind in accepted):
        raise reject(f"invalid content type: {content_type}", RejectionReason.BAD_CONTENT_TYPE)


def check_shared_secret(given: str, secret: str, missing: str = "missing webhook secret") -> None:
    if not given:
        raise reject(missing, RejectionReason.MISSING_SECRET)
    if not secrets_equal(given, secret):
        raise reject("invalid webhook secret", RejectionReason.BAD_SIGNATURE)


def check_query_secret(request: WebhookRequest, secret: str | None) -> None:
    if secret:
        check_shared_secret(request.param("secret"), secret)


def check_authorization(request: WebhookRequest, secret: str | None) -> None:
    if secret:
        check_shared_secret(
            request.header("Authorization"),
            secret,
            missing="missing Authorization header when secret is configured",
        )


def namespaced(full_name: str, namespace: str, name: str) -> str:
    """``full_name``, else ``namespace/name`` when both are set, else ``name``."""
    if full_name:
        return full_name
    if namespace and name:
        return f"{namespace}/{name}"
    return name


def missing(what: str, where: str = "webhook payload") -> WebhookRejected:
    return reject(f"{what} not found in {where}", RejectionReason.MISSING_FIELD)


_PORT = re.compile(r"[0-9]*")
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def url_host(url: str) -> str | None:
    """The ``host[:port]`` of an absolute URL, or ``None`` when it does not parse as one."""
    if _CONTROL_CHARS.search(url):
        return None
    rest = url.split("://", 1)[1]
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    host = authority.rpartition("@")[2]
    if " " in host:
        return None
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            return None
        port = host[end + 1 :]
        if port and (not port.startswith(":") or not _PORT.fullmatch(port[1:])):
            return None
        return host
    if ":" in host and not _PORT.fullmatch(host.rpartition(":")[2]):
        return None
    return host


def with_scheme(url: str) -> str:
    return url if url.startswith(("http://", "https://")) else f"https://{url}"


def first_dotted_segment(url: str) -> str | None:
    head = url.split("/", 1)[0]
    return head if "." in head else None


def repository_and_push_tag(doc: Payload, full_name: str) -> tuple[str, str]:
    """Docker Hub-style payloads (also Aliyun ACR): the repository from ``full_name`` or
    ``repository.namespace``/``repository.name``, the tag from ``push_data.tag``; both needed."""
    repository = namespaced(
        doc.text(full_name), doc.text("repository.namespace"), doc.text("repository.name")
    )
    if not repository:
        raise missing("repository name")
    tag = doc.text("push_data.tag")
    if not tag:
        raise missing("tag")
    return repository, tag
