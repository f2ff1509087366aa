"""Registry webhook payload parsers and the dispatcher that picks one per request (pure).

Supported types: ``acr``, ``aliyun-acr``, ``cloudevents``, ``docker.io``, ``ghcr.io``, ``harbor``,
``quay.io`` (the original's seven, with its checks, field rules and error texts) and ``generic``,
a JSON ``{"registry", "repository", "tag", "digest"}`` notification signed with HMAC-SHA256:
header ``X-Signature-256: sha256=<hex>`` over ``"<X-Timestamp>.<raw body>"``, the timestamp being
unix seconds no more than five minutes away from the receiver's clock.

Payloads are decoded like the original decodes them into Go structs: unknown fields are ignored,
field names match case-insensitively, ``null`` leaves a field empty, and a value of the wrong JSON
type makes the whole payload invalid (``failed to parse webhook payload: …``).

Secrets are passed per type name (``{"docker.io": "…", "generic": "…"}``); empty means none.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Final, Protocol, TypeAlias, cast

from argocd_image_updater.webhook.events import (
    Reason,
    RegistryEvent,
    WebhookRejected,
    WebhookRequest,
)
from argocd_image_updater.webhook.signatures import (
    GENERIC_TIMESTAMP_TOLERANCE,
    generic_signing_input,
    parse_timestamp,
    secrets_equal,
    timestamp_fresh,
    verify_prefixed_signature,
)

MAX_BODY_BYTES: Final = 1 << 20
"""Largest accepted request body (1 MiB), like the original."""

DOCKER_HUB_TYPE: Final = "docker.io"
GHCR_TYPE: Final = "ghcr.io"
QUAY_TYPE: Final = "quay.io"
HARBOR_TYPE: Final = "harbor"
ACR_TYPE: Final = "acr"
ALIYUN_ACR_TYPE: Final = "aliyun-acr"
CLOUDEVENTS_TYPE: Final = "cloudevents"
GENERIC_TYPE: Final = "generic"

SECRET_KEYS: Final[Mapping[str, str]] = {
    DOCKER_HUB_TYPE: "webhook.docker-secret",
    GHCR_TYPE: "webhook.ghcr-secret",
    QUAY_TYPE: "webhook.quay-secret",
    HARBOR_TYPE: "webhook.harbor-secret",
    ALIYUN_ACR_TYPE: "webhook.aliyun-acr-secret",
    ACR_TYPE: "webhook.acr-secret",
    CLOUDEVENTS_TYPE: "webhook.cloudevents-secret",
    GENERIC_TYPE: "webhook.generic-secret",
}
"""Key of each type's secret in the ``argocd-image-updater-secret`` Secret."""

SECRET_ENV_VARS: Final[Mapping[str, str]] = {
    DOCKER_HUB_TYPE: "DOCKER_WEBHOOK_SECRET",
    GHCR_TYPE: "GHCR_WEBHOOK_SECRET",
    QUAY_TYPE: "QUAY_WEBHOOK_SECRET",
    HARBOR_TYPE: "HARBOR_WEBHOOK_SECRET",
    ALIYUN_ACR_TYPE: "ALIYUN_ACR_WEBHOOK_SECRET",
    ACR_TYPE: "ACR_WEBHOOK_SECRET",
    CLOUDEVENTS_TYPE: "CLOUDEVENTS_WEBHOOK_SECRET",
    GENERIC_TYPE: "GENERIC_WEBHOOK_SECRET",
}
"""Environment variable carrying each type's secret."""

NO_HANDLERS_MESSAGE: Final = (
    "no webhook handlers are registered; configure at least one *-webhook-secret "
    "or set --webhook-require-secret=false"
)


def _reject(message: str, reason: Reason, status: int = 400) -> WebhookRejected:
    return WebhookRejected(message, reason=reason, status=status)


# --------------------------------------------------------------------------- payload decoding

_STR: Final = "string"
_INT: Final = "int"
_MAP: Final = "map"
_STRS: Final = "strings"

_Spec: TypeAlias = "str | Mapping[str, _Spec] | list[Mapping[str, _Spec]]"
_Schema: TypeAlias = Mapping[str, _Spec]


class _Object:
    """A JSON object as its key/value pairs in document order (duplicates kept)."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[str, object]]) -> None:
        self.pairs = pairs


def _reject_constant(name: str) -> object:
    raise ValueError(f"invalid JSON number {name}")


def _json_kind(value: object) -> str:
    if isinstance(value, _Object):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    return "number"


def _type_error(value: object, path: str, wanted: str) -> WebhookRejected:
    return _reject(
        f"failed to parse webhook payload: cannot unmarshal {_json_kind(value)} "
        f"into field {path} of type {wanted}",
        Reason.MALFORMED_JSON,
    )


def _plain(value: object) -> object:
    """A decoded JSON value with objects turned into dicts (the last duplicate key wins)."""
    if isinstance(value, _Object):
        return {key: _plain(item) for key, item in value.pairs}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _field_for(schema: _Schema, key: str) -> str | None:
    if key in schema:
        return key
    folded = key.lower()
    for name in schema:
        if name.lower() == folded:
            return name
    return None


def _conform_struct(
    obj: _Object, schema: _Schema, path: str, into: dict[str, object]
) -> dict[str, object]:
    for key, value in obj.pairs:
        name = _field_for(schema, key)
        if name is None:
            continue
        where = f"{path}.{name}" if path else name
        into[name] = _conform(value, schema[name], where, into.get(name))
    return into


def _zero(spec: _Spec) -> object:
    if isinstance(spec, str):
        return {_STR: "", _INT: 0, _MAP: {}, _STRS: []}[spec]
    if isinstance(spec, list):
        return []
    return {name: _zero(sub) for name, sub in spec.items()}


def _conform(value: object, spec: _Spec, path: str, current: object) -> object:
    """``value`` decoded into ``spec`` the way Go's encoding/json fills a struct field."""
    if value is None:  # null clears maps and slices, leaves everything else untouched
        if isinstance(spec, list) or spec in (_MAP, _STRS):
            return _zero(spec)
        return current if current is not None else _zero(spec)
    if spec == _STR:
        if not isinstance(value, str):
            raise _type_error(value, path, "string")
        return value
    if spec == _INT:
        if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value < 2**63:
            raise _type_error(value, path, "int64")
        return value
    if spec == _MAP:
        if not isinstance(value, _Object):
            raise _type_error(value, path, "map[string]interface {}")
        merged = dict(current) if isinstance(current, dict) else {}
        merged.update(cast("dict[str, object]", _plain(value)))
        return merged
    if spec == _STRS:
        if not isinstance(value, list):
            raise _type_error(value, path, "[]string")
        return [cast(str, _conform(item, _STR, path, "")) for item in value]
    if isinstance(spec, list):
        if not isinstance(value, list):
            raise _type_error(value, path, "[]struct")
        return [_conform(item, spec[0], path, None) for item in value]
    assert not isinstance(spec, str)
    if not isinstance(value, _Object):
        raise _type_error(value, path, "struct")
    into = dict(cast("dict[str, object]", current)) if isinstance(current, dict) else None
    return _conform_struct(value, spec, path, into or cast("dict[str, object]", _zero(spec)))


@dataclass(frozen=True, slots=True)
class _Doc:
    """A decoded payload (or part of one) with typed accessors."""

    data: Mapping[str, object]

    def _get(self, path: str) -> object:
        value: object = self.data
        for part in path.split("."):
            value = cast("Mapping[str, object]", value)[part]
        return value

    def text(self, path: str) -> str:
        return cast(str, self._get(path))

    def strings(self, path: str) -> list[str]:
        return cast("list[str]", self._get(path))

    def mapping(self, path: str) -> Mapping[str, object]:
        return cast("Mapping[str, object]", self._get(path))

    def docs(self, path: str) -> list[_Doc]:
        return [
            _Doc(cast("Mapping[str, object]", item)) for item in cast(list[object], self._get(path))
        ]


def _decode_payload(body: bytes, schema: _Schema) -> _Doc:
    """Decode ``body`` into ``schema`` like Go's ``json.Unmarshal`` into a struct."""
    try:
        value = json.loads(
            body.decode("utf-8", errors="replace"),
            object_pairs_hook=_Object,
            parse_constant=_reject_constant,
        )
    except (ValueError, RecursionError) as exc:
        raise _reject(f"failed to parse webhook payload: {exc}", Reason.MALFORMED_JSON) from None
    if value is None:
        value = _Object([])
    if not isinstance(value, _Object):
        raise _reject(
            f"failed to parse webhook payload: cannot unmarshal {_json_kind(value)} "
            "into the payload object",
            Reason.MALFORMED_JSON,
        )
    zero = cast("dict[str, object]", _zero(schema))
    return _Doc(_conform_struct(value, schema, "", zero))


# --------------------------------------------------------------------------- shared checks


def _require_post(request: WebhookRequest) -> None:
    if request.method != "POST":
        raise _reject(f"invalid HTTP method: {request.method}", Reason.BAD_METHOD)


def _require_content_type(request: WebhookRequest, *accepted: str) -> None:
    content_type = request.header("Content-Type")
    lowered = content_type.lower()
    if not any(kind in lowered for kind in accepted):
        raise _reject(f"invalid content type: {content_type}", Reason.BAD_CONTENT_TYPE)


def _check_shared_secret(given: str, secret: str, missing: str = "missing webhook secret") -> None:
    if not given:
        raise _reject(missing, Reason.MISSING_SECRET)
    if not secrets_equal(given, secret):
        raise _reject("invalid webhook secret", Reason.BAD_SIGNATURE)


def _check_query_secret(request: WebhookRequest, secret: str | None) -> None:
    if secret:
        _check_shared_secret(request.param("secret"), secret)


def _check_authorization(request: WebhookRequest, secret: str | None) -> None:
    if secret:
        _check_shared_secret(
            request.header("Authorization"),
            secret,
            missing="missing Authorization header when secret is configured",
        )


def _namespaced(full_name: str, namespace: str, name: str) -> str:
    """``full_name``, else ``namespace/name`` when both are set, else ``name``."""
    if full_name:
        return full_name
    if namespace and name:
        return f"{namespace}/{name}"
    return name


def _missing(what: str, where: str = "webhook payload") -> WebhookRejected:
    return _reject(f"{what} not found in {where}", Reason.MISSING_FIELD)


_PORT = re.compile(r"[0-9]*")
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def _url_host(url: str) -> str | None:
    """The ``host[:port]`` of an absolute URL, or ``None`` when it does not parse as one."""
    if _CONTROL_CHARS.search(url):
        return None
    rest = url.split("://", 1)[1]
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    host = authority.rpartition("@")[2]
    if " " in host:
        return None
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            return None
        port = host[end + 1 :]
        if port and (not port.startswith(":") or not _PORT.fullmatch(port[1:])):
            return None
        return host
    if ":" in host and not _PORT.fullmatch(host.rpartition(":")[2]):
        return None
    return host


def _with_scheme(url: str) -> str:
    return url if url.startswith(("http://", "https://")) else f"https://{url}"


def _first_dotted_segment(url: str) -> str | None:
    head = url.split("/", 1)[0]
    return head if "." in head else None


def registry_from_docker_url(docker_url: str) -> str:
    """The registry host of a Quay ``docker_url`` (``quay.io`` when none can be found)."""
    host = _url_host(_with_scheme(docker_url))
    if host:
        return host
    return _first_dotted_segment(docker_url) or "quay.io"


def registry_from_resource_url(resource_url: str) -> str:
    """The registry host of a Harbor ``resource_url`` (``harbor`` when it cannot be parsed)."""
    host = _url_host(_with_scheme(resource_url))
    if host is not None:
        return host
    return _first_dotted_segment(resource_url) or "harbor"


def ecr_registry(source: str, data: Mapping[str, object]) -> str:
    """``<account>.dkr.ecr.<region>.amazonaws.com`` from an ECR ``urn:``/``arn:`` source.

    ``data.registryId`` wins over the account in the source; ``""`` for other sources.
    """
    if not source.startswith(("urn:aws:ecr:", "arn:aws:ecr:")):
        return ""
    parts = source.split(":")
    if len(parts) < 5:
        return ""
    region, account = parts[3], parts[4]
    registry_id = data.get("registryId")
    if isinstance(registry_id, str) and registry_id:
        account = registry_id
    return f"{account}.dkr.ecr.{region}.amazonaws.com"


def registry_from_source(source: str) -> str:
    """The registry host named by a CloudEvents ``source`` (URL host or a dotted first segment)."""
    if source.startswith(("http://", "https://")):
        return source.split("/")[2]
    return _first_dotted_segment(source) or ""


# --------------------------------------------------------------------------- parsers

_DOCKER_HUB_SCHEMA: Final[_Schema] = {
    "repository": {"name": _STR, "namespace": _STR, "repo_name": _STR},
    "push_data": {"tag": _STR},
}


_GHCR_SCHEMA: Final[_Schema] = {
    "action": _STR,
    "package": {
        "name": _STR,
        "package_type": _STR,
        "owner": {"login": _STR},
        "registry": {"url": _STR},
        "package_version": {
            "version": _STR,
            "name": _STR,
            "container_metadata": {"tag": {"name": _STR}},
        },
    },
}


_QUAY_SCHEMA: Final[_Schema] = {
    "name": _STR,
    "repository": _STR,
    "namespace": _STR,
    "docker_url": _STR,
    "homepage": _STR,
    "updated_tags": _STRS,
}


_HARBOR_SCHEMA: Final[_Schema] = {
    "type": _STR,
    "occur_at": _INT,
    "operator": _STR,
    "event_data": {
        "resources": [{"digest": _STR, "tag": _STR, "resource_url": _STR}],
        "repository": {
            "date_created": _INT,
            "name": _STR,
            "namespace": _STR,
            "repo_full_name": _STR,
            "repo_type": _STR,
        },
        "custom_attributes": _MAP,
    },
}


_ACR_SCHEMA: Final[_Schema] = {
    "action": _STR,
    "target": {
        "mediaType": _STR,
        "size": _INT,
        "digest": _STR,
        "length": _INT,
        "repository": _STR,
        "tag": _STR,
    },
    "request": {"id": _STR, "host": _STR, "method": _STR},
}


_ALIYUN_ACR_SCHEMA: Final[_Schema] = {
    "push_data": {"digest": _STR, "pushed_at": _STR, "tag": _STR},
    "repository": {
        "date_created": _STR,
        "name": _STR,
        "namespace": _STR,
        "region": _STR,
        "repo_authentication_type": _STR,
        "repo_full_name": _STR,
        "repo_origin_type": _STR,
        "repo_type": _STR,
    },
}


_CLOUDEVENTS_SCHEMA: Final[_Schema] = {
    "specversion": _STR,
    "type": _STR,
    "source": _STR,
    "subject": _STR,
    "id": _STR,
    "time": _STR,
    "datacontenttype": _STR,
    "data": _MAP,
}


_GENERIC_SCHEMA: Final[_Schema] = {
    "registry": _STR,
    "repository": _STR,
    "tag": _STR,
    "digest": _STR,
}


class WebhookParser(Protocol):
    """Checks and decodes one registry's webhook notifications."""

    @property
    def type_name(self) -> str: ...

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        """Raise :class:`WebhookRejected` unless the request is an authentic notification."""
        ...

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        """The pushed image, or :class:`WebhookRejected` when the payload is unusable."""
        ...


def _repository_and_push_tag(doc: _Doc, full_name: str) -> tuple[str, str]:
    """Docker Hub-style payloads (also Aliyun ACR): the repository from ``full_name`` or
    ``repository.namespace``/``repository.name``, the tag from ``push_data.tag``; both needed."""
    repository = _namespaced(
        doc.text(full_name), doc.text("repository.namespace"), doc.text("repository.name")
    )
    if not repository:
        raise _missing("repository name")
    tag = doc.text("push_data.tag")
    if not tag:
        raise _missing("tag")
    return repository, tag


class DockerHubParser:
    """Docker Hub: optional secret in the ``secret`` query parameter."""

    __slots__ = ()
    type_name: ClassVar[str] = DOCKER_HUB_TYPE

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        _require_post(request)
        _check_query_secret(request, secret)

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = _decode_payload(request.body, _DOCKER_HUB_SCHEMA)
        repository, tag = _repository_and_push_tag(doc, "repository.repo_name")
        return RegistryEvent("docker.io", repository, tag, source_type=self.type_name)


class GhcrParser:
    """GitHub Container Registry: ``package`` events signed in ``X-Hub-Signature-256``."""

    __slots__ = ()
    type_name: ClassVar[str] = GHCR_TYPE

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        _require_post(request)
        event = request.header("X-GitHub-Event")
        if not event:
            raise _reject("missing X-GitHub-Event header", Reason.WRONG_EVENT)
        if event != "package":
            raise _reject(f"unsupported event type: {event}", Reason.WRONG_EVENT)
        if secret:
            signature = request.header("X-Hub-Signature-256")
            if not signature:
                raise _reject("missing webhook signature", Reason.MISSING_SECRET)
            if not verify_prefixed_signature(signature, secret, request.body):
                raise _reject("invalid webhook signature", Reason.BAD_SIGNATURE)

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = _decode_payload(request.body, _GHCR_SCHEMA)
        action = doc.text("action")
        if action != "published":
            raise _reject(f"ignoring action: {action}", Reason.WRONG_EVENT)
        package_type = doc.text("package.package_type")
        if package_type.lower() != "container":
            raise _reject(f"unsupported package type: {package_type}", Reason.WRONG_EVENT)
        name = doc.text("package.name")
        if not name:
            raise _missing("package name")
        owner = doc.text("package.owner.login")
        if not owner:
            raise _missing("package owner")
        tag = (
            doc.text("package.package_version.container_metadata.tag.name")
            or doc.text("package.package_version.name")
            or doc.text("package.package_version.version")
        )
        if not tag:
            raise _missing("tag")
        repository = f"{owner}/{name}".lower()
        return RegistryEvent("ghcr.io", repository, tag, source_type=self.type_name)


class QuayParser:
    """Quay: optional secret in the ``secret`` query parameter; the first updated tag is used."""

    __slots__ = ()
    type_name: ClassVar[str] = QUAY_TYPE

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        _require_post(request)
        _check_query_secret(request, secret)

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = _decode_payload(request.body, _QUAY_SCHEMA)
        tags = doc.strings("updated_tags")
        if not tags:
            raise _reject("no tags in the payload", Reason.MISSING_FIELD)
        docker_url = doc.text("docker_url")
        registry = registry_from_docker_url(docker_url) if docker_url else "quay.io"
        return RegistryEvent(registry, doc.text("repository"), tags[0], source_type=self.type_name)


class HarborParser:
    """Harbor: JSON content type, the secret is the whole ``Authorization`` header."""

    __slots__ = ()
    type_name: ClassVar[str] = HARBOR_TYPE

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        _require_post(request)
        _require_content_type(request, "application/json")
        _check_authorization(request, secret)

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = _decode_payload(request.body, _HARBOR_SCHEMA)
        event_type = doc.text("type")
        if event_type != "PUSH_ARTIFACT":
            raise _reject(f"unsupported event type: {event_type}", Reason.WRONG_EVENT)
        resources = doc.docs("event_data.resources")
        if not resources:
            raise _reject("no resources found in webhook payload", Reason.MISSING_FIELD)
        resource = resources[0]
        tag = resource.text("tag")
        if not tag:
            raise _missing("tag")
        repository = _namespaced(
            doc.text("event_data.repository.repo_full_name"),
            doc.text("event_data.repository.namespace"),
            doc.text("event_data.repository.name"),
        )
        if not repository:
            raise _missing("repository name")
        resource_url = resource.text("resource_url")
        registry = registry_from_resource_url(resource_url) if resource_url else "harbor"
        return RegistryEvent(
            registry, repository, tag, resource.text("digest"), source_type=self.type_name
        )


class AcrParser:
    """Azure Container Registry: JSON content type, the secret is the ``Authorization`` header.

    A digest-only push yields an event with an empty tag, like the original.
    """

    __slots__ = ()
    type_name: ClassVar[str] = ACR_TYPE

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        _require_post(request)
        _require_content_type(request, "application/json")
        _check_authorization(request, secret)

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = _decode_payload(request.body, _ACR_SCHEMA)
        action = doc.text("action")
        if action != "push":
            raise _reject(f"ignoring action: {action}", Reason.WRONG_EVENT)
        repository = doc.text("target.repository")
        if not repository:
            raise _missing("repository name")
        return RegistryEvent(
            doc.text("request.host"),
            repository,
            doc.text("target.tag"),
            doc.text("target.digest"),
            source_type=self.type_name,
        )


class AliyunAcrParser:
    """Alibaba Cloud ACR: optional secret in the ``secret`` query parameter.

    The registry comes from the ``registry_url`` query parameter (needed for Enterprise Edition
    instances), else ``registry.<region>.aliyuncs.com``, else stays empty like the original.
    """

    __slots__ = ()
    type_name: ClassVar[str] = ALIYUN_ACR_TYPE

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        _require_post(request)
        _check_query_secret(request, secret)

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = _decode_payload(request.body, _ALIYUN_ACR_SCHEMA)
        repository, tag = _repository_and_push_tag(doc, "repository.repo_full_name")
        registry = request.param("registry_url")
        region = doc.text("repository.region")
        if not registry and region:
            registry = f"registry.{region}.aliyuncs.com"
        return RegistryEvent(
            registry, repository, tag, doc.text("push_data.digest"), source_type=self.type_name
        )


def _data_text(data: Mapping[str, object], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


class CloudEventsParser:
    """CloudEvents v1.0 in structured mode (AWS ECR via EventBridge, or any container event).

    The secret may come in the ``secret`` query parameter or the ``X-Webhook-Secret`` header.
    """

    __slots__ = ()
    type_name: ClassVar[str] = CLOUDEVENTS_TYPE

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        _require_post(request)
        _require_content_type(request, "application/json", "application/cloudevents+json")
        if secret:
            given = request.param("secret") or request.header("X-Webhook-Secret")
            _check_shared_secret(given, secret)

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = _decode_payload(request.body, _CLOUDEVENTS_SCHEMA)
        if not doc.text("specversion"):
            raise _reject("missing CloudEvents specversion", Reason.MISSING_FIELD)
        event_type = doc.text("type")
        if not event_type:
            raise _reject("missing CloudEvents type", Reason.MISSING_FIELD)
        data = doc.mapping("data")
        repository, tag, digest = "", "", ""
        subject_repo, colon, subject_tag = doc.text("subject").partition(":")
        if colon:
            repository, tag = subject_repo, subject_tag
        if event_type.startswith("com.amazon.ecr."):
            repository = _data_text(data, "repositoryName") or repository
            tag = _data_text(data, "imageTag") or tag
            digest = _data_text(data, "imageDigest") or ""
            registry = ecr_registry(doc.text("source"), data)
        elif "container" in event_type or "image" in event_type:
            repository = (
                _data_text(data, "repositoryName") or _data_text(data, "repository") or repository
            )
            tag = _data_text(data, "imageTag") or _data_text(data, "tag") or tag
            found = _data_text(data, "imageDigest")
            digest = found if found is not None else (_data_text(data, "digest") or "")
            registry_url = _data_text(data, "registryUrl")
            if registry_url is None:
                registry_url = _data_text(data, "registry")
            if registry_url is None:
                registry_url = registry_from_source(doc.text("source"))
            registry = registry_url
        else:
            raise _reject(f"unsupported CloudEvents type: {event_type}", Reason.WRONG_EVENT)
        where = "CloudEvents payload"
        if not repository:
            raise _missing("repository name", where)
        if not tag:
            raise _missing("tag", where)
        if not registry:
            raise _missing("registry URL", where)
        return RegistryEvent(registry, repository, tag, digest, source_type=self.type_name)


@dataclass(frozen=True, slots=True)
class GenericParser:
    """Our own signed notification for registries or pipelines without a dedicated type.

    Headers: ``X-Timestamp: <unix seconds>`` and ``X-Signature-256: sha256=<hex>``, the hex being
    HMAC-SHA256 (keyed with the secret) of ``"<X-Timestamp>.<raw body>"``. A timestamp more than
    five minutes away from ``clock()`` is refused, so a captured notification cannot be replayed
    later. Body: ``{"registry", "repository", "tag", "digest"}``; all but ``digest`` required.
    """

    clock: Callable[[], float] = time.time
    tolerance: float = GENERIC_TIMESTAMP_TOLERANCE
    type_name: ClassVar[str] = GENERIC_TYPE

    def validate(self, request: WebhookRequest, secret: str | None) -> None:
        _require_post(request)
        if not secret:
            return
        signature = request.header("X-Signature-256")
        if not signature:
            raise _reject("missing webhook signature", Reason.MISSING_SECRET)
        stamp_text = request.header("X-Timestamp")
        if not stamp_text:
            raise _reject("missing X-Timestamp header", Reason.BAD_TIMESTAMP)
        stamp = parse_timestamp(stamp_text)
        if stamp is None:
            raise _reject("invalid X-Timestamp header: expected unix seconds", Reason.BAD_TIMESTAMP)
        signed = generic_signing_input(stamp_text, request.body)
        if not verify_prefixed_signature(signature, secret, signed):
            raise _reject("invalid webhook signature", Reason.BAD_SIGNATURE)
        if not timestamp_fresh(stamp, self.clock(), self.tolerance):
            raise _reject(
                f"webhook timestamp is more than {self.tolerance:g} seconds away from "
                "the current time",
                Reason.BAD_TIMESTAMP,
            )

    def parse(self, request: WebhookRequest) -> RegistryEvent:
        doc = _decode_payload(request.body, _GENERIC_SCHEMA)
        registry = doc.text("registry")
        if not registry:
            raise _missing("registry")
        repository = doc.text("repository")
        if not repository:
            raise _missing("repository name")
        tag = doc.text("tag")
        if not tag:
            raise _missing("tag")
        return RegistryEvent(
            registry, repository, tag, doc.text("digest"), source_type=self.type_name
        )


# --------------------------------------------------------------------------- dispatcher


def detect_type(request: WebhookRequest) -> str:
    """The requested webhook type: query ``type`` first, else header ``X-Registry-Type``."""
    return request.param("type") or request.header("X-Registry-Type")


class WebhookParsers:
    """All webhook types, the registration rules and request dispatching.

    Registration follows the original: with ``require_secret`` only types with a configured
    secret accept calls; without it the original's seven types all accept calls (those without a
    secret unauthenticated). ``generic`` is only ever registered with a secret, as its whole
    purpose is signed delivery.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        parsers: Iterable[WebhookParser] = (
            DockerHubParser(),
            GhcrParser(),
            QuayParser(),
            HarborParser(),
            AcrParser(),
            AliyunAcrParser(),
            CloudEventsParser(),
            GenericParser(clock=clock),
        )
        self._parsers: dict[str, WebhookParser] = {p.type_name: p for p in parsers}

    @property
    def types(self) -> tuple[str, ...]:
        """Every known type name, sorted."""
        return tuple(sorted(self._parsers))

    def for_type(self, type_name: str) -> WebhookParser:
        """The parser for ``type_name``; :class:`WebhookRejected` for an unknown type."""
        parser = self._parsers.get(type_name)
        if parser is None:
            raise _reject(
                f"invalid registry type: {type_name}. Supported types: {', '.join(self.types)}",
                Reason.UNSUPPORTED_TYPE,
            )
        return parser

    def _check_secret_names(self, secrets: Mapping[str, str]) -> None:
        unknown = sorted(name for name in secrets if name not in self._parsers)
        if unknown:
            raise ValueError(
                f"webhook secrets: unknown webhook type(s) {', '.join(map(repr, unknown))}; "
                f"known types: {', '.join(self.types)}"
            )

    def registered(self, secrets: Mapping[str, str], require_secret: bool) -> tuple[str, ...]:
        """The type names that accept calls, sorted. ``secrets`` is keyed by type name."""
        self._check_secret_names(secrets)
        return tuple(
            name
            for name in self.types
            if secrets.get(name) or (not require_secret and name != GENERIC_TYPE)
        )

    def handle(
        self,
        request: WebhookRequest,
        secrets: Mapping[str, str],
        require_secret: bool,
        max_body: int = MAX_BODY_BYTES,
    ) -> RegistryEvent:
        """Check and decode one call; :class:`WebhookRejected` carries the answer otherwise."""
        if len(request.body) > max_body:
            raise _reject("request body too large", Reason.TOO_LARGE, status=413)
        registered = self.registered(secrets, require_secret)
        if not registered:
            raise _reject(NO_HANDLERS_MESSAGE, Reason.NO_HANDLERS)
        type_name = detect_type(request)
        supported = ", ".join(registered)
        if not type_name:
            raise _reject(
                f"missing registry type parameter. Supported types: {supported}",
                Reason.UNSUPPORTED_TYPE,
            )
        if type_name not in registered:
            raise _reject(
                f"invalid registry type: {type_name}. Supported types: {supported}",
                Reason.UNSUPPORTED_TYPE,
            )
        parser = self._parsers[type_name]
        parser.validate(request, secrets.get(type_name) or None)
        return parser.parse(request)
