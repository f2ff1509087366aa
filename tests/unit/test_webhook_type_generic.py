"""The ``generic`` webhook type (signed JSON)."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from webhook_requests import (
    GENERIC_PAYLOAD,
    NOW,
    SECRET,
    generic_request,
    post,
    rejected,
    with_changes,
)

from argocd_image_updater.webhook import (
    WebhookRequest,
    sign_generic,
)
from argocd_image_updater.webhook.types.generic import GenericParser

# --------------------------------------------------------------------------- generic (ours)

GENERIC = GenericParser(clock=lambda: float(NOW))


def test_generic_signed_request_is_accepted_within_the_window() -> None:
    GENERIC.validate(generic_request(), SECRET)
    GENERIC.validate(generic_request(timestamp=NOW - 300), SECRET)
    GENERIC.validate(generic_request(timestamp=NOW + 300), SECRET)
    assert GENERIC.parse(generic_request()).repository == "team/api"


@pytest.mark.parametrize(
    ("request_", "message", "reason"),
    [
        (generic_request(timestamp=NOW - 301), "more than 300 seconds away", "bad-timestamp"),
        (generic_request(timestamp=NOW + 3600), "more than 300 seconds away", "bad-timestamp"),
        (generic_request(secret="another"), "invalid webhook signature", "bad-signature"),
        (
            generic_request(headers={"X-Timestamp": str(NOW + 1)}),
            "invalid webhook signature",
            "bad-signature",
        ),
        (
            generic_request(headers={"X-Signature-256": ""}),
            "missing webhook signature",
            "missing-secret",
        ),
        (
            generic_request(headers={"X-Timestamp": ""}),
            "missing X-Timestamp header",
            "bad-timestamp",
        ),
        (
            generic_request(headers={"X-Timestamp": "yesterday"}),
            "invalid X-Timestamp header: expected unix seconds",
            "bad-timestamp",
        ),
        (
            generic_request(headers={"X-Timestamp": "1.7e9"}),
            "invalid X-Timestamp header: expected unix seconds",
            "bad-timestamp",
        ),
    ],
)
def test_generic_rejections(request_: WebhookRequest, message: str, reason: str) -> None:
    error = rejected(GENERIC.validate, request_, SECRET)
    assert message in error.message and error.reason == reason and error.status == 400


def test_generic_stale_but_authentic_replay_is_refused() -> None:
    captured = generic_request(timestamp=NOW)
    later = GenericParser(clock=lambda: float(NOW + 301))
    assert rejected(later.validate, captured, SECRET).reason == "bad-timestamp"


def test_generic_signature_covers_the_body() -> None:
    good = generic_request()
    tampered = WebhookRequest(
        method="POST",
        headers=dict(good.headers),
        body=good.body.replace(b"2.4.1", b"9.9.9"),
    )
    assert rejected(GENERIC.validate, tampered, SECRET).reason == "bad-signature"


def test_sign_generic_is_hmac_over_timestamp_dot_body() -> None:
    body = b'{"a":1}'
    expected = hmac.new(b"k", b"123." + body, hashlib.sha256).hexdigest()
    assert sign_generic("k", 123, body) == f"sha256={expected}"


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("registry", "registry not found in webhook payload"),
        ("repository", "repository name not found in webhook payload"),
        ("tag", "tag not found in webhook payload"),
    ],
)
def test_generic_required_fields(field: str, message: str) -> None:
    payload = with_changes(GENERIC_PAYLOAD, field, ...)
    assert rejected(GENERIC.parse, post(payload)).message == message
