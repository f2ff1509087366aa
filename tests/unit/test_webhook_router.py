"""Dispatching webhook calls: one authentic call per type, the registration rules, the type
parameter, the size limit."""

from __future__ import annotations

from typing import Any

import pytest
from webhook_requests import (
    ACR_DIGEST,
    ACR_PAYLOAD,
    ALIYUN_DIGEST,
    ALIYUN_PAYLOAD,
    ALL_SECRETS,
    DOCKER_HUB_PAYLOAD,
    ECR_CLOUDEVENT,
    ECR_DIGEST,
    GENERIC_PAYLOAD,
    GHCR_PAYLOAD,
    HARBOR_PAYLOAD,
    PARSERS,
    QUAY_PAYLOAD,
    authentic,
    body_of,
    post,
    rejected,
    with_changes,
)

from argocd_image_updater.webhook import (
    SECRET_ENV_VARS,
    SECRET_KEYS,
    RegistryEvent,
    detect_type,
)
from argocd_image_updater.webhook.types.harbor import HarborParser

ALL_SEVEN = ("acr", "aliyun-acr", "cloudevents", "docker.io", "ghcr.io", "harbor", "quay.io")


@pytest.mark.parametrize(
    ("type_name", "payload", "expected"),
    [
        (
            "docker.io",
            DOCKER_HUB_PAYLOAD,
            RegistryEvent("docker.io", "myuser/myapp", "v1.0.0", "", "docker.io"),
        ),
        (
            "ghcr.io",
            GHCR_PAYLOAD,
            RegistryEvent("ghcr.io", "myuser/myapp", "v1.0.0", "", "ghcr.io"),
        ),
        (
            "quay.io",
            QUAY_PAYLOAD,
            RegistryEvent("quay.io", "mynamespace/repository", "latest", "", "quay.io"),
        ),
        (
            "harbor",
            HARBOR_PAYLOAD,
            RegistryEvent(
                "harbor.example.com", "library/myapp", "v1.0.0", "sha256:abc123", "harbor"
            ),
        ),
        (
            "acr",
            ACR_PAYLOAD,
            RegistryEvent("mojrodevops.azurecr.io", "hello-world", "test-v1", ACR_DIGEST, "acr"),
        ),
        (
            "aliyun-acr",
            ALIYUN_PAYLOAD,
            RegistryEvent(
                "registry.cn-hangzhou.aliyuncs.com",
                "namespace/repoTest",
                "latest",
                ALIYUN_DIGEST,
                "aliyun-acr",
            ),
        ),
        (
            "cloudevents",
            ECR_CLOUDEVENT,
            RegistryEvent(
                "123456789012.dkr.ecr.us-east-1.amazonaws.com",
                "my-repo",
                "v1.0.0",
                ECR_DIGEST,
                "cloudevents",
            ),
        ),
        (
            "generic",
            GENERIC_PAYLOAD,
            RegistryEvent(
                "registry.example.com", "team/api", "2.4.1", "sha256:0123abcd", "generic"
            ),
        ),
    ],
)
def test_each_type_turns_an_authentic_payload_into_an_event(
    type_name: str, payload: dict[str, Any], expected: RegistryEvent
) -> None:
    request = authentic(type_name, payload)
    assert PARSERS.handle(request, ALL_SECRETS, require_secret=True) == expected


@pytest.mark.parametrize("type_name", sorted(ALL_SECRETS))
def test_each_type_rejects_a_wrong_secret_without_echoing_it(type_name: str) -> None:
    secrets = {**ALL_SECRETS, type_name: "the-configured-one"}
    payload = {
        "docker.io": DOCKER_HUB_PAYLOAD,
        "ghcr.io": GHCR_PAYLOAD,
        "quay.io": QUAY_PAYLOAD,
        "harbor": HARBOR_PAYLOAD,
        "acr": ACR_PAYLOAD,
        "aliyun-acr": ALIYUN_PAYLOAD,
        "cloudevents": ECR_CLOUDEVENT,
        "generic": GENERIC_PAYLOAD,
    }[type_name]
    request = authentic(type_name, payload)  # carries ALL_SECRETS[type_name], not the configured
    error = rejected(PARSERS.handle, request, secrets, True)
    assert (error.status, error.reason) == (400, "bad-signature")
    assert error.message in ("invalid webhook secret", "invalid webhook signature")
    assert "the-configured-one" not in str(error) and ALL_SECRETS[type_name] not in repr(error)
    assert ALL_SECRETS[type_name] not in repr(request)


# --------------------------------------------------------------------------- dispatcher (17a)


def test_registration_follows_the_require_secret_rules() -> None:
    assert PARSERS.registered({}, require_secret=False) == ALL_SEVEN
    assert PARSERS.registered(ALL_SECRETS, require_secret=False) == tuple(sorted(ALL_SECRETS))
    assert PARSERS.registered({}, require_secret=True) == ()
    assert PARSERS.registered({"docker.io": "a", "harbor": "b"}, require_secret=True) == (
        "docker.io",
        "harbor",
    )
    assert PARSERS.registered({"ghcr.io": "a", "quay.io": ""}, require_secret=True) == ("ghcr.io",)
    assert PARSERS.registered(ALL_SECRETS, require_secret=True) == tuple(sorted(ALL_SECRETS))
    assert "generic" in PARSERS.types


def test_unknown_secret_names_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'dockerhub'"):
        PARSERS.registered({"dockerhub": "x"}, require_secret=True)


def test_secret_key_and_env_var_names_cover_every_type() -> None:
    assert set(SECRET_KEYS) == set(PARSERS.types) == set(SECRET_ENV_VARS)
    assert SECRET_KEYS["docker.io"] == "webhook.docker-secret"
    assert SECRET_ENV_VARS["aliyun-acr"] == "ALIYUN_ACR_WEBHOOK_SECRET"


def test_no_registered_handlers_is_an_error() -> None:
    error = rejected(
        PARSERS.handle, post(DOCKER_HUB_PAYLOAD, query={"type": "docker.io"}), {}, True
    )
    assert error.status == 400 and error.reason == "no-handlers"
    assert error.message == (
        "no webhook handlers are registered; configure at least one *-webhook-secret "
        "or set --webhook-require-secret=false"
    )


def test_missing_and_unknown_types_list_the_supported_ones() -> None:
    missing = rejected(PARSERS.handle, post(DOCKER_HUB_PAYLOAD), {}, False)
    assert missing.message == (
        "missing registry type parameter. Supported types: " + ", ".join(ALL_SEVEN)
    )
    assert (missing.status, missing.reason) == (400, "unsupported-type")
    unknown = rejected(PARSERS.handle, post({}, query={"type": "unsupported.io"}), {}, False)
    assert unknown.message == (
        "invalid registry type: unsupported.io. Supported types: " + ", ".join(ALL_SEVEN)
    )
    assert (unknown.status, unknown.reason) == (400, "unsupported-type")


def test_a_known_type_without_a_secret_is_not_served_when_secrets_are_required() -> None:
    request = post(DOCKER_HUB_PAYLOAD, query={"type": "docker.io"})
    error = rejected(PARSERS.handle, request, {"ghcr.io": "x"}, True)
    assert error.message == "invalid registry type: docker.io. Supported types: ghcr.io"


def test_generic_is_never_served_without_its_secret() -> None:
    request = post(GENERIC_PAYLOAD, query={"type": "generic"})
    error = rejected(PARSERS.handle, request, {}, False)
    assert error.reason == "unsupported-type"
    assert error.message == (
        "invalid registry type: generic. Supported types: " + ", ".join(ALL_SEVEN)
    )


def test_unauthenticated_types_work_when_secrets_are_not_required() -> None:
    request = post(DOCKER_HUB_PAYLOAD, query={"type": "docker.io"})
    event = PARSERS.handle(request, {}, require_secret=False)
    assert (event.repository, event.tag) == ("myuser/myapp", "v1.0.0")


def test_type_from_header_and_query_precedence() -> None:
    both = post({}, query={"type": "docker.io"}, headers={"x-registry-type": "ghcr.io"})
    assert detect_type(both) == "docker.io"
    assert detect_type(post({}, headers={"X-Registry-Type": "ghcr.io"})) == "ghcr.io"
    assert detect_type(post({}, query={"type": "docker.io"})) == "docker.io"
    assert detect_type(post({})) == ""
    payload = with_changes(DOCKER_HUB_PAYLOAD, "push_data.tag", "v2.0.0")
    event = PARSERS.handle(post(payload, headers={"X-Registry-Type": "docker.io"}), {}, False)
    assert (event.repository, event.tag) == ("myuser/myapp", "v2.0.0")


def test_an_oversized_body_is_refused_with_413() -> None:
    big = post(None, query={"type": "docker.io"}, raw=b" " * (1024 * 1024 + 1))
    error = rejected(PARSERS.handle, big, {}, False)
    assert (error.status, error.reason) == (413, "too-large")
    assert "request body too large" in error.message
    padded = body_of(DOCKER_HUB_PAYLOAD).ljust(1024 * 1024)
    assert PARSERS.handle(post(None, query={"type": "docker.io"}, raw=padded), {}, False).tag
    small = post(DOCKER_HUB_PAYLOAD, query={"type": "docker.io"})
    assert rejected(PARSERS.handle, small, {}, False, 10).status == 413


def test_for_type_returns_the_parser_or_refuses() -> None:
    assert isinstance(PARSERS.for_type("harbor"), HarborParser)
    assert PARSERS.for_type("generic").type_name == "generic"
    error = rejected(PARSERS.for_type, "nexus")
    assert error.message.startswith("invalid registry type: nexus. Supported types: acr, ")


def test_invalid_payload_for_a_known_type_is_an_error() -> None:
    error = rejected(
        PARSERS.handle, post({"invalid": "payload"}, query={"type": "docker.io"}), {}, False
    )
    assert (error.status, error.message) == (400, "repository name not found in webhook payload")
