"""The ``ghcr.io`` webhook type."""

from __future__ import annotations

from typing import Any

import pytest
from webhook_requests import (
    GHCR_PAYLOAD,
    SECRET,
    body_of,
    github_signature,
    post,
    rejected,
    with_changes,
)

from argocd_image_updater.webhook import (
    WebhookRequest,
)
from argocd_image_updater.webhook.signatures import verify_prefixed_signature
from argocd_image_updater.webhook.types.ghcr import GhcrParser

# --------------------------------------------------------------------------- GHCR (17c)

GHCR = GhcrParser()


def ghcr_request(payload: Any = GHCR_PAYLOAD, **headers: str) -> WebhookRequest:
    return post(payload, headers={"X-GitHub-Event": "package", **headers})


def test_ghcr_validation() -> None:
    body = body_of(GHCR_PAYLOAD)
    GHCR.validate(ghcr_request(**{"X-Hub-Signature-256": github_signature(SECRET, body)}), SECRET)
    GHCR.validate(ghcr_request(), None)
    cases = [
        (post(GHCR_PAYLOAD, method="GET"), "invalid HTTP method: GET", "bad-method"),
        (post(GHCR_PAYLOAD), "missing X-GitHub-Event header", "wrong-event"),
        (
            post(GHCR_PAYLOAD, headers={"X-GitHub-Event": "push"}),
            "unsupported event type: push",
            "wrong-event",
        ),
        (ghcr_request(), "missing webhook signature", "missing-secret"),
        (
            ghcr_request(**{"X-Hub-Signature-256": "sha256=invalid"}),
            "invalid webhook signature",
            "bad-signature",
        ),
        (
            ghcr_request(**{"X-Hub-Signature-256": github_signature(SECRET, b"other body")}),
            "invalid webhook signature",
            "bad-signature",
        ),
    ]
    for request, message, reason in cases:
        error = rejected(GHCR.validate, request, SECRET)
        assert (error.message, error.reason) == (message, reason)


def test_github_signature_check() -> None:
    body = b'{"action":"published"}'
    good = github_signature(SECRET, body)
    assert verify_prefixed_signature(good, SECRET, body)
    assert not verify_prefixed_signature("sha256=invalid", SECRET, body)
    assert not verify_prefixed_signature(good.removeprefix("sha256="), SECRET, body)
    assert not verify_prefixed_signature("", SECRET, body)
    assert not verify_prefixed_signature(good, SECRET, body + b" ")
    assert not verify_prefixed_signature(good, SECRET + "x", body)


@pytest.mark.parametrize("package_type", ["container", "CONTAINER", "Container"])
def test_ghcr_package_type_is_case_insensitive(package_type: str) -> None:
    payload = with_changes(GHCR_PAYLOAD, "package.package_type", package_type)
    event = GHCR.parse(ghcr_request(payload))
    assert (event.registry, event.repository, event.tag) == ("ghcr.io", "myuser/myapp", "v1.0.0")


def test_ghcr_owner_and_name_are_lower_cased() -> None:
    payload = with_changes(GHCR_PAYLOAD, "package.owner.login", "MyOrg")
    payload = with_changes(payload, "package.name", "My-Service")
    assert GHCR.parse(ghcr_request(payload)).repository == "myorg/my-service"


def test_ghcr_tag_fallback_order() -> None:
    no_tag = with_changes(GHCR_PAYLOAD, "package.package_version.container_metadata", ...)
    by_name = with_changes(no_tag, "package.package_version.name", "v2.0.0")
    assert GHCR.parse(ghcr_request(by_name)).tag == "v2.0.0"
    by_version = with_changes(by_name, "package.package_version.name", "")
    by_version = with_changes(by_version, "package.package_version.version", "v3.0.0")
    assert GHCR.parse(ghcr_request(by_version)).tag == "v3.0.0"


@pytest.mark.parametrize(
    ("path", "value", "message", "reason"),
    [
        ("action", "updated", "ignoring action: updated", "wrong-event"),
        ("package.package_type", "npm", "unsupported package type: npm", "wrong-event"),
        ("package.name", ..., "package name not found in webhook payload", "missing-field"),
        ("package.owner", ..., "package owner not found in webhook payload", "missing-field"),
        ("package.package_version", {}, "tag not found in webhook payload", "missing-field"),
        ("package.name", 12, "failed to parse webhook payload", "malformed-json"),
    ],
)
def test_ghcr_parse_errors(path: str, value: Any, message: str, reason: str) -> None:
    error = rejected(GHCR.parse, ghcr_request(with_changes(GHCR_PAYLOAD, path, value)))
    assert message in error.message and error.reason == reason


def test_ghcr_empty_payload_is_an_ignored_action() -> None:
    assert rejected(GHCR.parse, ghcr_request({})).message == "ignoring action: "
