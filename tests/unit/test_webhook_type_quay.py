"""The ``quay.io`` webhook type."""

from __future__ import annotations

from typing import Any

import pytest
from webhook_requests import (
    QUAY_PAYLOAD,
    SECRET,
    body_of,
    post,
    rejected,
    with_changes,
)

from argocd_image_updater.webhook.types.quay import QuayParser, registry_from_docker_url

# --------------------------------------------------------------------------- Quay (17e)

QUAY = QuayParser()


def test_quay_validation() -> None:
    QUAY.validate(post({}, query={"secret": SECRET}), SECRET)
    assert (
        rejected(QUAY.validate, post({}, query={"secret": "x"}), SECRET).reason == "bad-signature"
    )
    assert rejected(QUAY.validate, post({}, method="GET"), SECRET).reason == "bad-method"
    assert rejected(QUAY.validate, post({}), SECRET).message == "missing webhook secret"


@pytest.mark.parametrize(
    ("docker_url", "tags", "expected_registry", "expected_tag"),
    [
        ("quay.io/mynamespace/repository", ["latest"], "quay.io", "latest"),
        ("quay.apps.example.com/mynamespace/repository", ["dev"], "quay.apps.example.com", "dev"),
        ("https://quay.internal.corp/ariss/alrl", ["v1.0"], "quay.internal.corp", "v1.0"),
        ("", ["latest"], "quay.io", "latest"),
        (..., ["latest"], "quay.io", "latest"),
        ("quay.io/mynamespace/repository", ["latest", "v1.0"], "quay.io", "latest"),
    ],
)
def test_quay_parse(
    docker_url: Any, tags: list[str], expected_registry: str, expected_tag: str
) -> None:
    payload = with_changes(
        with_changes(QUAY_PAYLOAD, "docker_url", docker_url), "updated_tags", tags
    )
    event = QUAY.parse(post(payload))
    assert (event.registry, event.repository, event.tag) == (
        expected_registry,
        "mynamespace/repository",
        expected_tag,
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (body_of(with_changes(QUAY_PAYLOAD, "updated_tags", [])), "no tags in the payload"),
        (b'{"invalid":"data"}', "no tags in the payload"),
        (b"{}", "no tags in the payload"),
        (b"", "failed to parse webhook payload"),
        (body_of(with_changes(QUAY_PAYLOAD, "updated_tags", "latest")), "failed to parse"),
    ],
)
def test_quay_parse_errors(raw: bytes, message: str) -> None:
    assert message in rejected(QUAY.parse, post(None, raw=raw)).message


@pytest.mark.parametrize(
    ("docker_url", "expected"),
    [
        ("quay.io/ns/repo", "quay.io"),
        ("quay.apps.example.com/ns/repo", "quay.apps.example.com"),
        ("https://quay.internal.corp/ns/repo", "quay.internal.corp"),
        ("http://quay.internal.corp/ns/repo", "quay.internal.corp"),
        ("quay.internal.corp:8443/ns/repo", "quay.internal.corp:8443"),
        ("quay.apps.example.com", "quay.apps.example.com"),
        ("quay.custom.io:bad:port/ns/repo", "quay.custom.io:bad:port"),
        ("/ns/repo", "quay.io"),
    ],
)
def test_registry_from_quay_docker_url(docker_url: str, expected: str) -> None:
    assert registry_from_docker_url(docker_url) == expected
