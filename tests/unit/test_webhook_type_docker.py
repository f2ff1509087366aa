"""The ``docker.io`` webhook type."""

from __future__ import annotations

import pytest
from webhook_requests import (
    DOCKER_HUB_PAYLOAD,
    SECRET,
    post,
    rejected,
)

from argocd_image_updater.webhook.types.docker import DockerHubParser

# --------------------------------------------------------------------------- Docker Hub (17b)

DOCKER = DockerHubParser()


def test_docker_hub_validation() -> None:
    DOCKER.validate(post({}, query={"secret": SECRET}), SECRET)
    DOCKER.validate(post({}), None)
    cases = [
        (post({}, method="GET"), SECRET, "invalid HTTP method: GET", "bad-method"),
        (post({}), SECRET, "missing webhook secret", "missing-secret"),
        (post({}, query={"secret": "wrong"}), SECRET, "invalid webhook secret", "bad-signature"),
    ]
    for request, secret, message, reason in cases:
        error = rejected(DOCKER.validate, request, secret)
        assert (error.status, error.message, error.reason) == (400, message, reason)


@pytest.mark.parametrize(
    ("repository", "tag", "expected"),
    [
        ({"repo_name": "myuser/myapp", "name": "x", "namespace": "y"}, "v1.0.0", "myuser/myapp"),
        ({"namespace": "myuser", "name": "myapp"}, "latest", "myuser/myapp"),
        ({"name": "myapp"}, "v2.0.0", "myapp"),
    ],
)
def test_docker_hub_repository_rules(repository: dict[str, str], tag: str, expected: str) -> None:
    event = DOCKER.parse(post({"repository": repository, "push_data": {"tag": tag}}))
    assert (event.registry, event.repository, event.tag) == ("docker.io", expected, tag)


@pytest.mark.parametrize(
    ("raw", "message", "reason"),
    [
        (
            b'{"repository":{},"push_data":{"tag":"v1"}}',
            "repository name not found",
            "missing-field",
        ),
        (b'{"repository":{"name":"myapp"},"push_data":{}}', "tag not found", "missing-field"),
        (b"{}", "repository name not found in webhook payload", "missing-field"),
        (b'{"repository": ', "failed to parse webhook payload", "malformed-json"),
        (b"", "failed to parse webhook payload", "malformed-json"),
    ],
)
def test_docker_hub_parse_errors(raw: bytes, message: str, reason: str) -> None:
    error = rejected(DOCKER.parse, post(None, raw=raw))
    assert error.status == 400 and message in error.message and error.reason == reason


def test_validate_then_parse_reads_the_same_body() -> None:
    request = post(DOCKER_HUB_PAYLOAD, query={"secret": SECRET})
    DOCKER.validate(request, SECRET)
    assert DOCKER.parse(request).repository == "myuser/myapp"
