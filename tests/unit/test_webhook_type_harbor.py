"""The ``harbor`` webhook type."""

from __future__ import annotations

from typing import Any

import pytest
from webhook_requests import (
    HARBOR_PAYLOAD,
    SECRET,
    post,
    rejected,
    with_changes,
)

from argocd_image_updater.webhook.types.harbor import HarborParser

# --------------------------------------------------------------------------- Harbor (17d)

HARBOR = HarborParser()


def test_harbor_validation() -> None:
    HARBOR.validate(post({}, headers={"Authorization": SECRET}), SECRET)
    HARBOR.validate(post({}, headers={"Content-Type": "application/json; charset=utf-8"}), None)
    cases = [
        (post({}, method="GET"), "invalid HTTP method: GET", "bad-method"),
        (
            post({}, headers={"Content-Type": "text/plain", "Authorization": SECRET}),
            "invalid content type: text/plain",
            "bad-content-type",
        ),
        (post({}), "missing Authorization header when secret is configured", "missing-secret"),
        (
            post({}, headers={"Authorization": "Bearer nope"}),
            "invalid webhook secret",
            "bad-signature",
        ),
    ]
    for request, message, reason in cases:
        error = rejected(HARBOR.validate, request, SECRET)
        assert (error.message, error.reason) == (message, reason)


def harbor_with(resource_url: str | None, repository: dict[str, str], tag: str) -> dict[str, Any]:
    resource: dict[str, str] = {"digest": "sha256:abc123", "tag": tag}
    if resource_url is not None:
        resource["resource_url"] = resource_url
    payload = with_changes(HARBOR_PAYLOAD, "event_data.resources", [resource])
    return with_changes(payload, "event_data.repository", repository)


@pytest.mark.parametrize(
    ("resource_url", "repository", "tag", "expected"),
    [
        (
            "harbor.example.com/image-name:tag",
            {"repo_full_name": "image-name", "name": "other", "namespace": "ns"},
            "tag",
            ("harbor.example.com", "image-name"),
        ),
        (
            "registry.example.com/myproject/myapp:latest",
            {"namespace": "myproject", "name": "myapp"},
            "latest",
            ("registry.example.com", "myproject/myapp"),
        ),
        (None, {"name": "myapp"}, "v2.0.0", ("harbor", "myapp")),
        ("http://harbor.local:8080/p/app:1", {"name": "app"}, "1", ("harbor.local:8080", "app")),
        ("bad.host:port:x/p/app:1", {"name": "app"}, "1", ("bad.host:port:x", "app")),
    ],
)
def test_harbor_registry_and_repository_rules(
    resource_url: str | None, repository: dict[str, str], tag: str, expected: tuple[str, str]
) -> None:
    event = HARBOR.parse(post(harbor_with(resource_url, repository, tag)))
    assert (event.registry, event.repository, event.tag, event.digest) == (
        *expected,
        tag,
        "sha256:abc123",
    )


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("type", "DELETE_ARTIFACT", "unsupported event type: DELETE_ARTIFACT"),
        ("event_data.resources", [], "no resources found in webhook payload"),
        ("event_data.resources", [{"digest": "sha256:1"}], "tag not found in webhook payload"),
        ("event_data.repository", {}, "repository name not found in webhook payload"),
        ("occur_at", "yesterday", "failed to parse webhook payload"),
    ],
)
def test_harbor_parse_errors(path: str, value: Any, message: str) -> None:
    error = rejected(HARBOR.parse, post(with_changes(HARBOR_PAYLOAD, path, value)))
    assert message in error.message


def test_harbor_validate_then_parse_without_resource_url() -> None:
    payload = harbor_with(None, {"repo_full_name": "library/myapp"}, "v1.0.0")
    request = post(payload, headers={"Authorization": SECRET})
    HARBOR.validate(request, SECRET)
    event = HARBOR.parse(request)
    assert (event.registry, event.repository, event.tag) == ("harbor", "library/myapp", "v1.0.0")
