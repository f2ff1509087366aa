"""Registry webhook payload parsing, secret/signature checks and dispatching."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

import pytest

from argocd_image_updater.webhook import (
    SECRET_ENV_VARS,
    SECRET_KEYS,
    Headers,
    RegistryEvent,
    WebhookParsers,
    WebhookRejected,
    WebhookRequest,
    detect_type,
    normalise_registry,
    repository_key,
    sign_generic,
)
from argocd_image_updater.webhook.signatures import verify_prefixed_signature
from argocd_image_updater.webhook.types.acr import AcrParser
from argocd_image_updater.webhook.types.aliyun_acr import AliyunAcrParser
from argocd_image_updater.webhook.types.cloudevents import (
    CloudEventsParser,
    ecr_registry,
    registry_from_source,
)
from argocd_image_updater.webhook.types.docker import DockerHubParser
from argocd_image_updater.webhook.types.generic import GenericParser
from argocd_image_updater.webhook.types.ghcr import GhcrParser
from argocd_image_updater.webhook.types.harbor import HarborParser
from argocd_image_updater.webhook.types.quay import QuayParser, registry_from_docker_url

NOW = 1_700_000_000
SECRET = "s3cr3t-webhook-value"
ALL_SEVEN = ("acr", "aliyun-acr", "cloudevents", "docker.io", "ghcr.io", "harbor", "quay.io")

# --------------------------------------------------------------------------- realistic payloads

DOCKER_HUB_PAYLOAD: dict[str, Any] = {
    "callback_url": "https://registry.hub.docker.com/u/myuser/myapp/hook/2141b5bi5i5b02bec211i4eeih0242eg11000a/",
    "push_data": {"pushed_at": 1417566161, "pusher": "myuser", "tag": "v1.0.0"},
    "repository": {
        "comment_count": 0,
        "date_created": 1417494799,
        "description": "",
        "is_official": False,
        "is_private": True,
        "is_trusted": True,
        "name": "myapp",
        "namespace": "myuser",
        "owner": "myuser",
        "repo_name": "myuser/myapp",
        "repo_url": "https://registry.hub.docker.com/u/myuser/myapp/",
        "star_count": 0,
        "status": "Active",
    },
}

GHCR_PAYLOAD: dict[str, Any] = {
    "action": "published",
    "package": {
        "id": 1234567,
        "name": "MyApp",
        "namespace": "MyUser",
        "description": "",
        "ecosystem": "CONTAINER",
        "package_type": "CONTAINER",
        "html_url": "https://github.com/users/MyUser/packages/container/package/MyApp",
        "created_at": "2024-05-01T10:00:00Z",
        "updated_at": "2024-05-02T10:00:00Z",
        "owner": {"login": "MyUser", "id": 42, "type": "User", "site_admin": False},
        "package_version": {
            "id": 7654321,
            "version": "sha256:1a2b3c4d",
            "name": "sha256:1a2b3c4d",
            "description": "",
            "summary": "",
            "html_url": "https://github.com/users/MyUser/packages/container/MyApp/7654321",
            "metadata": [],
            "container_metadata": {
                "tag": {"name": "v1.0.0", "digest": "sha256:1a2b3c4d"},
                "labels": {"description": "", "source": "", "revision": ""},
                "manifest": {"digest": "sha256:1a2b3c4d", "media_type": "application/json"},
            },
            "package_files": [],
            "installation_command": "docker pull ghcr.io/myuser/myapp:v1.0.0",
            "package_url": "ghcr.io/myuser/myapp:v1.0.0",
        },
        "registry": {
            "about_url": "https://docs.github.com/packages",
            "name": "GitHub CR",
            "type": "docker",
            "url": "https://ghcr.io/MyUser",
            "vendor": "GitHub Inc",
        },
    },
    "sender": {"login": "MyUser", "id": 42},
}

QUAY_PAYLOAD: dict[str, Any] = {
    "name": "repository",
    "repository": "mynamespace/repository",
    "namespace": "mynamespace",
    "docker_url": "quay.io/mynamespace/repository",
    "homepage": "https://quay.io/repository/mynamespace/repository",
    "updated_tags": ["latest"],
}

HARBOR_PAYLOAD: dict[str, Any] = {
    "type": "PUSH_ARTIFACT",
    "occur_at": 1680501893,
    "operator": "admin",
    "event_data": {
        "resources": [
            {
                "digest": "sha256:abc123",
                "tag": "v1.0.0",
                "resource_url": "https://harbor.example.com/library/myapp:v1.0.0",
            }
        ],
        "repository": {
            "date_created": 1680501893,
            "name": "myapp",
            "namespace": "library",
            "repo_full_name": "library/myapp",
            "repo_type": "public",
        },
    },
}

ACR_DIGEST = "sha256:c7665fa3ea8e6f4c9e1b5bc0f3c2a8d3f3d9b5f0dd2a1c7e7f6a6e5c4b3a5c0a"
ACR_PAYLOAD: dict[str, Any] = {
    "id": "cb8c3971-9adc-488b-bdd8-43cbb4974ff5",
    "timestamp": "2024-11-17T16:52:01.343145347Z",
    "action": "push",
    "target": {
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "size": 524,
        "digest": ACR_DIGEST,
        "length": 524,
        "repository": "hello-world",
        "tag": "test-v1",
    },
    "request": {
        "id": "3cbb6949-7549-4fa1-86cd-a6d5451dffc7",
        "host": "mojrodevops.azurecr.io",
        "method": "PUT",
        "useragent": "docker/27.0.3 go/go1.21.11 os/linux arch/amd64",
    },
}

ALIYUN_DIGEST = "sha256:457f4aa83fc9a6663ab9d1b0a6e2dce25a12a943ed5bf2c1747c58d48bbb4917"
ALIYUN_PAYLOAD: dict[str, Any] = {
    "push_data": {"digest": ALIYUN_DIGEST, "pushed_at": "2016-11-29 12:25:46", "tag": "latest"},
    "repository": {
        "date_created": "2016-10-28 21:31:42",
        "name": "repoTest",
        "namespace": "namespace",
        "region": "cn-hangzhou",
        "repo_authentication_type": "NO_CERTIFIED",
        "repo_full_name": "namespace/repoTest",
        "repo_origin_type": "NO_CERTIFIED",
        "repo_type": "PUBLIC",
    },
}

ECR_DIGEST = "sha256:abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
ECR_CLOUDEVENT: dict[str, Any] = {
    "specversion": "1.0",
    "id": "6f1a2c3d-0000-4000-8000-000000000001",
    "source": "urn:aws:ecr:us-east-1:123456789012:repository/my-repo",
    "type": "com.amazon.ecr.image.push",
    "subject": "my-repo:v1.0.0",
    "time": "2024-05-01T10:00:00Z",
    "datacontenttype": "application/json",
    "data": {
        "repositoryName": "my-repo",
        "imageDigest": ECR_DIGEST,
        "imageTag": "v1.0.0",
        "registryId": "123456789012",
        "result": "SUCCESS",
    },
}

GENERIC_PAYLOAD: dict[str, Any] = {
    "registry": "registry.example.com",
    "repository": "team/api",
    "tag": "2.4.1",
    "digest": "sha256:0123abcd",
}


def body_of(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def post(
    payload: Any,
    *,
    query: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    method: str = "POST",
    raw: bytes | None = None,
) -> WebhookRequest:
    return WebhookRequest(
        method=method,
        query=dict(query or {}),
        headers={"Content-Type": "application/json", **(headers or {})},
        body=raw if raw is not None else body_of(payload),
        remote="10.0.0.7:53412",
    )


def github_signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def generic_request(
    payload: Any = GENERIC_PAYLOAD,
    *,
    secret: str = SECRET,
    timestamp: int = NOW,
    headers: Mapping[str, str] | None = None,
) -> WebhookRequest:
    body = body_of(payload)
    signed = {
        "X-Timestamp": str(timestamp),
        "X-Signature-256": sign_generic(secret, timestamp, body),
    }
    return post(payload, headers={**signed, **(headers or {})}, raw=body)


def rejected(call: Any, *args: Any) -> WebhookRejected:
    with pytest.raises(WebhookRejected) as info:
        call(*args)
    return info.value


def with_changes(payload: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``payload`` with the dotted ``path`` set (or removed for ``...``)."""
    result = copy.deepcopy(payload)
    *parents, last = path.split(".")
    node = result
    for part in parents:
        node = node[part]
    if value is ...:
        node.pop(last, None)
    else:
        node[last] = value
    return result


PARSERS = WebhookParsers(clock=lambda: float(NOW))
ALL_SECRETS = {name: f"{SECRET}-{name}" for name in PARSERS.types}

# --------------------------------------------------------------------------- one valid call per type


def authentic(type_name: str, payload: Any, **extra: str) -> WebhookRequest:
    """A request for ``type_name`` carrying ``ALL_SECRETS[type_name]`` the way that type expects."""
    secret = ALL_SECRETS[type_name]
    body = body_of(payload)
    query = {"type": type_name, **extra}
    headers: dict[str, str] = {}
    if type_name in ("docker.io", "quay.io", "aliyun-acr", "cloudevents"):
        query["secret"] = secret
    elif type_name in ("harbor", "acr"):
        headers["Authorization"] = secret
    elif type_name == "ghcr.io":
        headers["X-GitHub-Event"] = "package"
        headers["X-Hub-Signature-256"] = github_signature(secret, body)
    elif type_name == "generic":
        headers["X-Timestamp"] = str(NOW)
        headers["X-Signature-256"] = sign_generic(secret, NOW, body)
    return post(payload, query=query, headers=headers, raw=body)


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


# --------------------------------------------------------------------------- Aliyun ACR (17g)

ALIYUN = AliyunAcrParser()


def test_aliyun_validation() -> None:
    ALIYUN.validate(post({}, query={"secret": SECRET}), SECRET)
    ALIYUN.validate(post({}), None)
    assert rejected(ALIYUN.validate, post({}, method="GET"), SECRET).reason == "bad-method"
    assert rejected(ALIYUN.validate, post({}), SECRET).message == "missing webhook secret"
    wrong = rejected(ALIYUN.validate, post({}, query={"secret": "nope"}), SECRET)
    assert wrong.message == "invalid webhook secret"


def test_aliyun_registry_priority() -> None:
    from_query = ALIYUN.parse(post(ALIYUN_PAYLOAD, query={"registry_url": "query.cr.com"}))
    assert from_query.registry == "query.cr.com"
    beijing = with_changes(ALIYUN_PAYLOAD, "repository.region", "cn-beijing")
    assert ALIYUN.parse(post(beijing)).registry == "registry.cn-beijing.aliyuncs.com"
    no_region = with_changes(ALIYUN_PAYLOAD, "repository.region", ...)
    assert ALIYUN.parse(post(no_region)).registry == ""


def test_aliyun_repository_from_namespace_and_name() -> None:
    payload = with_changes(ALIYUN_PAYLOAD, "repository.repo_full_name", "")
    assert ALIYUN.parse(post(payload)).repository == "namespace/repoTest"


def test_aliyun_parse_errors() -> None:
    no_tag = with_changes(ALIYUN_PAYLOAD, "push_data.tag", ...)
    assert rejected(ALIYUN.parse, post(no_tag)).message == "tag not found in webhook payload"
    assert rejected(ALIYUN.parse, post(None, raw=b"[1,")).reason == "malformed-json"


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
