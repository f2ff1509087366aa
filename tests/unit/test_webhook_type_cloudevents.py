"""The ``cloudevents`` webhook type."""

from __future__ import annotations

from typing import Any

import pytest
from webhook_requests import (
    SECRET,
    post,
    rejected,
)

from argocd_image_updater.webhook.types.cloudevents import (
    CloudEventsParser,
    ecr_registry,
    registry_from_source,
)

# --------------------------------------------------------------------------- CloudEvents (17h)

CLOUDEVENTS = CloudEventsParser()


def test_cloudevents_validation() -> None:
    CLOUDEVENTS.validate(post({}), None)
    CLOUDEVENTS.validate(post({}, headers={"Content-Type": "application/cloudevents+json"}), None)
    CLOUDEVENTS.validate(post({}, query={"secret": SECRET}), SECRET)
    CLOUDEVENTS.validate(post({}, headers={"X-Webhook-Secret": SECRET}), SECRET)
    method = rejected(CLOUDEVENTS.validate, post({}, method="GET"), None)
    assert "invalid HTTP method" in method.message
    text = rejected(CLOUDEVENTS.validate, post({}, headers={"Content-Type": "text/plain"}), None)
    assert "invalid content type" in text.message
    assert rejected(CLOUDEVENTS.validate, post({}), SECRET).message == "missing webhook secret"
    wrong = rejected(CLOUDEVENTS.validate, post({}, headers={"X-Webhook-Secret": "x"}), SECRET)
    assert wrong.message == "invalid webhook secret"


def ecr_event(**data: Any) -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "id": "1",
        "type": "com.amazon.ecr.image.push",
        "source": "urn:aws:ecr:eu-west-1:987654321098:repository/team/my-app",
        "data": data,
    }


def test_cloudevents_ecr_variants() -> None:
    event = CLOUDEVENTS.parse(post(ecr_event(repositoryName="team/my-app", imageTag="latest")))
    assert (event.registry, event.repository, event.tag, event.digest) == (
        "987654321098.dkr.ecr.eu-west-1.amazonaws.com",
        "team/my-app",
        "latest",
        "",
    )
    from_subject = {**ecr_event(result="SUCCESS"), "subject": "myrepo:v2.1.0"}
    event = CLOUDEVENTS.parse(post(from_subject))
    assert (event.repository, event.tag) == ("myrepo", "v2.1.0")


def test_cloudevents_ecr_missing_fields() -> None:
    no_repo = rejected(CLOUDEVENTS.parse, post(ecr_event(imageTag="v1")))
    assert no_repo.message == "repository name not found in CloudEvents payload"
    no_tag = rejected(CLOUDEVENTS.parse, post(ecr_event(repositoryName="r")))
    assert no_tag.message == "tag not found in CloudEvents payload"


def generic_cloudevent(
    event_type: str = "com.example.container.push", **fields: Any
) -> dict[str, Any]:
    return {"specversion": "1.0", "id": "2", "type": event_type, **fields}


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (
            generic_cloudevent(
                data={
                    "repository": "myapp",
                    "tag": "v1.2.3",
                    "digest": "sha256:abc123",
                    "registryUrl": "registry.example.com",
                }
            ),
            ("registry.example.com", "myapp", "v1.2.3", "sha256:abc123"),
        ),
        (
            generic_cloudevent(
                "com.example.image.pushed",
                data={
                    "repositoryName": "project/app",
                    "imageTag": "2.0.0",
                    "imageDigest": "sha256:def456",
                    "registry": "registry.company.com",
                },
            ),
            ("registry.company.com", "project/app", "2.0.0", "sha256:def456"),
        ),
        (
            generic_cloudevent(
                "container.push",
                source="https://ghcr.io/owner/repo",
                data={"repository": "owner/repo", "tag": "v3.0.0"},
            ),
            ("ghcr.io", "owner/repo", "v3.0.0", ""),
        ),
        (
            generic_cloudevent(subject="app:v1:hotfix", source="registry.local/app"),
            ("registry.local", "app", "v1:hotfix", ""),
        ),
    ],
)
def test_cloudevents_generic_container_events(
    event: dict[str, Any], expected: tuple[str, str, str, str]
) -> None:
    parsed = CLOUDEVENTS.parse(post(event))
    assert (parsed.registry, parsed.repository, parsed.tag, parsed.digest) == expected


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"type": "com.amazon.ecr.image.push"}, "missing CloudEvents specversion"),
        ({"specversion": "1.0"}, "missing CloudEvents type"),
        (
            {"specversion": "1.0", "type": "com.example.database.updated"},
            "unsupported CloudEvents type: com.example.database.updated",
        ),
        (
            generic_cloudevent(data={"repository": "a", "tag": "1"}),
            "registry URL not found in CloudEvents payload",
        ),
        (
            generic_cloudevent(data={"repository": "a", "tag": "1", "registryUrl": ""}),
            "registry URL not found in CloudEvents payload",
        ),
        (generic_cloudevent(data=["not", "an", "object"]), "failed to parse webhook payload"),
    ],
)
def test_cloudevents_parse_errors(event: dict[str, Any], message: str) -> None:
    assert message in rejected(CLOUDEVENTS.parse, post(event)).message


def test_ecr_registry_from_source() -> None:
    urn = "urn:aws:ecr:us-east-1:123456789012:repository/myrepo"
    assert ecr_registry(urn, {}) == "123456789012.dkr.ecr.us-east-1.amazonaws.com"
    assert ecr_registry(urn, {"registryId": "555"}) == "555.dkr.ecr.us-east-1.amazonaws.com"
    arn = "arn:aws:ecr:us-west-2:987654321098:repository/my-app"
    assert ecr_registry(arn, {}) == "987654321098.dkr.ecr.us-west-2.amazonaws.com"
    assert ecr_registry("invalid-source", {}) == ""


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("https://registry.example.com/repo", "registry.example.com"),
        ("http://localhost:5000/myrepo", "localhost:5000"),
        ("ghcr.io/owner/repo", "ghcr.io"),
        ("myrepo", ""),
    ],
)
def test_registry_from_cloudevents_source(source: str, expected: str) -> None:
    assert registry_from_source(source) == expected
