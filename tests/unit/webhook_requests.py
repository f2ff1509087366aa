"""Webhook requests for the webhook tests: realistic payloads of every type and requests that carry
the secret the way each type expects."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

import pytest

from argocd_image_updater.webhook import (
    WebhookParsers,
    WebhookRejected,
    WebhookRequest,
    sign_generic,
)

NOW = 1_700_000_000
SECRET = "s3cr3t-webhook-value"

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
