"""Webhook payloads decoded like Go decodes them into structs, and the webhook request and event
values."""

from __future__ import annotations

import pytest
from webhook_requests import (
    SECRET,
    post,
    rejected,
)

from argocd_image_updater.webhook import (
    Headers,
    RegistryEvent,
    WebhookRejected,
    WebhookRequest,
    normalise_registry,
    repository_key,
)
from argocd_image_updater.webhook.types.docker import DockerHubParser

DOCKER = DockerHubParser()


# --------------------------------------------------------------------------- JSON decoding rules


def test_payload_decoding_follows_go_struct_rules() -> None:
    # field names match case-insensitively and the last matching key wins
    raw = b'{"Repository":{"Repo_Name":"a/b"},"push_data":{"tag":"x","TAG":"y"}}'
    event = DOCKER.parse(post(None, raw=raw))
    assert (event.repository, event.tag) == ("a/b", "y")
    # null leaves a field empty; unknown fields are ignored
    raw = b'{"repository":{"name":"app","namespace":null},"push_data":{"tag":"1"},"x":[1]}'
    assert DOCKER.parse(post(None, raw=raw)).repository == "app"
    # a JSON null body decodes to an empty payload
    assert rejected(DOCKER.parse, post(None, raw=b"null")).reason == "missing-field"


@pytest.mark.parametrize(
    "raw",
    [
        b"[]",
        b'"text"',
        b'{"repository":"myuser/myapp","push_data":{"tag":"1"}}',
        b'{"repository":{"name":"a"},"push_data":{"tag":1}}',
        b'{"repository":{"name":"a"},"push_data":{"tag":"1"},"x":NaN}',
    ],
)
def test_wrongly_typed_payloads_are_malformed(raw: bytes) -> None:
    error = rejected(DOCKER.parse, post(None, raw=raw))
    assert (error.status, error.reason) == (400, "malformed-json")
    assert error.message.startswith("failed to parse webhook payload: ")


def test_type_errors_name_the_field() -> None:
    raw = b'{"repository":{"name":"a"},"push_data":{"tag":1}}'
    assert "push_data.tag" in rejected(DOCKER.parse, post(None, raw=raw)).message


# --------------------------------------------------------------------------- values


def test_headers_are_case_insensitive_and_never_show_values() -> None:
    headers = Headers({"Authorization": SECRET, "X-GitHub-Event": "package"})
    assert headers["authorization"] == SECRET and "x-github-event" in headers
    assert headers.value("missing") == "" and len(headers) == 2
    assert sorted(headers) == ["Authorization", "X-GitHub-Event"]
    assert SECRET not in repr(headers)
    request = WebhookRequest(method="POST", query={"secret": SECRET}, headers=headers)
    assert request.header("AUTHORIZATION") == SECRET and request.param("secret") == SECRET
    assert SECRET not in repr(request)


def test_request_body_must_be_bytes() -> None:
    with pytest.raises(TypeError, match="body must be bytes"):
        WebhookRequest(method="POST", body="{}")  # type: ignore[arg-type]


def test_rejection_carries_status_message_and_reason() -> None:
    error = WebhookRejected("request body too large", reason="too-large", status=413)
    assert (error.status, error.message, error.reason, str(error)) == (
        413,
        "request body too large",
        "too-large",
        "request body too large",
    )


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("", "docker.io"),
        ("docker.io", "docker.io"),
        ("index.docker.io", "docker.io"),
        ("Registry-1.Docker.IO", "docker.io"),
        ("https://index.docker.io/v1/", "docker.io"),
        ("GHCR.io", "ghcr.io"),
        ("localhost:5000", "localhost:5000"),
        (
            "123456789012.dkr.ecr.us-east-1.amazonaws.com",
            "123456789012.dkr.ecr.us-east-1.amazonaws.com",
        ),
    ],
)
def test_normalise_registry(host: str, expected: str) -> None:
    assert normalise_registry(host) == expected


def test_repository_key() -> None:
    assert repository_key("", "nginx") == ("docker.io", "library/nginx")
    assert repository_key("index.docker.io", "library/nginx") == ("docker.io", "library/nginx")
    assert repository_key("docker.io", "myuser/myapp") == ("docker.io", "myuser/myapp")
    assert repository_key("ghcr.io", "nginx") == ("ghcr.io", "nginx")
    assert repository_key("Quay.io", "/dexidp/dex") == ("quay.io", "dexidp/dex")


def test_event_text_form() -> None:
    assert str(RegistryEvent("ghcr.io", "a/b", "1.0", "sha256:x")) == "ghcr.io/a/b:1.0@sha256:x"
    assert str(RegistryEvent("", "a/b", "1.0")) == "a/b:1.0"
