"""The ``acr`` webhook type."""

from __future__ import annotations

import pytest
from webhook_requests import (
    ACR_DIGEST,
    ACR_PAYLOAD,
    SECRET,
    body_of,
    post,
    rejected,
    with_changes,
)

from argocd_image_updater.webhook.types.acr import AcrParser

# --------------------------------------------------------------------------- Azure ACR (17f)

ACR = AcrParser()


def test_acr_validation() -> None:
    ACR.validate(post({}, headers={"Authorization": SECRET}), SECRET)
    ACR.validate(post({}), None)
    assert rejected(ACR.validate, post({}, method="GET"), SECRET).reason == "bad-method"
    plain = post({}, headers={"Content-Type": "text/plain"})
    assert rejected(ACR.validate, plain, None).message == "invalid content type: text/plain"
    missing = rejected(ACR.validate, post({}), SECRET)
    assert missing.message == "missing Authorization header when secret is configured"
    wrong = rejected(ACR.validate, post({}, headers={"Authorization": "Basic eA=="}), SECRET)
    assert wrong.message == "invalid webhook secret"


def test_acr_digest_only_push_has_an_empty_tag() -> None:
    event = ACR.parse(post(with_changes(ACR_PAYLOAD, "target.tag", "")))
    assert (event.registry, event.repository, event.tag, event.digest) == (
        "mojrodevops.azurecr.io",
        "hello-world",
        "",
        ACR_DIGEST,
    )


@pytest.mark.parametrize(
    ("raw", "message", "reason"),
    [
        (
            body_of(with_changes(ACR_PAYLOAD, "action", "delete")),
            "ignoring action: delete",
            "wrong-event",
        ),
        (
            body_of(with_changes(ACR_PAYLOAD, "target.repository", ...)),
            "repository name not found in webhook payload",
            "missing-field",
        ),
        (b"{not json", "failed to parse webhook payload", "malformed-json"),
        (b"", "failed to parse webhook payload", "malformed-json"),
    ],
)
def test_acr_parse_errors(raw: bytes, message: str, reason: str) -> None:
    error = rejected(ACR.parse, post(None, raw=raw))
    assert message in error.message and error.reason == reason
