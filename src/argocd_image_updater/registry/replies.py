"""What a registry answers, read: the finished exchange, its error body, the error it means, and
the checks on the names a request is made for (the distribution reference grammar)."""

from __future__ import annotations

import json
import re
from itertools import repeat
from typing import Any, Final

from argocd_image_updater.http1 import Answer
from argocd_image_updater.model.retry import RETRY_STATUSES
from argocd_image_updater.registry.errors import (
    InvalidReference,
    ManifestNotFound,
    RegistryConfigError,
    RegistryError,
    RegistryProtocolError,
    RegistryUnavailable,
    RepositoryNotFound,
)
from argocd_image_updater.registry.media import is_digest

# The distribution reference grammar for repository paths and tags.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_REPOSITORY = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
AUTH_CODES: Final = frozenset({"UNAUTHORIZED", "DENIED"})


Reply = Answer
"""A finished exchange with a registry: status, header fields, the body read whole."""


def error_codes(reply: Reply) -> list[tuple[str, str]]:
    """``(code, message)`` pairs of a registry error body; empty when there is none."""
    try:
        data: Any = json.loads(reply.body)
    except ValueError:
        return []
    errors = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(errors, list):
        return []
    return [
        (str(e.get("code", "")), str(e.get("message", ""))) for e in errors if isinstance(e, dict)
    ]


def error_detail(reply: Reply) -> str:
    """The error body's codes and messages on one line."""
    codes = error_codes(reply)
    return "; ".join(f"{c}: {m}" if m else c for c, m in codes)


def proxy_refused(registry: str, repository: str) -> RegistryConfigError:
    """The error for a proxy that asks for credentials (HTTP 407, never retried)."""
    return RegistryConfigError(
        f"registry {registry}, repository '{repository}': the HTTP proxy refused the request "
        "(HTTP 407 Proxy Authentication Required); give the proxy's credentials in its URL "
        "(HTTPS_PROXY/HTTP_PROXY=http://user:password@host:port)",
        registry=registry,
        repository=repository,
    )


def raise_for(
    reply: Reply,
    registry: str,
    repository: str,
    attempts: int,
    reference: str = "",
    what: str = "manifest",
) -> None:
    """Raise the error a non-2xx ``reply`` means (after ``attempts`` tries)."""
    status = reply.status
    if 200 <= status < 300:
        return
    codes = {code for code, _ in error_codes(reply)}
    if status == 404:
        if "NAME_UNKNOWN" in codes or not reference:
            raise RepositoryNotFound(registry=registry, repository=repository)
        raise ManifestNotFound(
            registry=registry, repository=repository, reference=reference, what=what
        )
    if status == 407:
        raise proxy_refused(registry, repository)
    where = f"registry {registry}, repository '{repository}'"
    if status in RETRY_STATUSES:
        raise RegistryUnavailable(
            f"{where}: HTTP {status} after {attempts} attempts; the registry is "
            "overloaded or down: try again later, or lower 'limit' for it in registries.conf",
            registry=registry,
            repository=repository,
        )
    detail = error_detail(reply)
    raise RegistryError(
        f"{where}: unexpected HTTP {status} for {reply.method} {reply.path}"
        + (f" ({detail})" if detail else ""),
        registry=registry,
        repository=repository,
    )


def protocol_error(registry: str, repository: str, problem: str) -> RegistryProtocolError:
    """The error for invalid data from the registry (or a proxy in front of it)."""
    return RegistryProtocolError(
        f"registry {registry}, repository '{repository}': {problem}; the registry or "
        "a proxy in front of it sent invalid data, try again or check the registry",
        registry=registry,
        repository=repository,
    )


def parse_tag_page(reply: Reply, registry: str, repository: str, page: int) -> list[str]:
    """The tags of one page of ``/v2/<repository>/tags/list``."""
    try:
        data = json.loads(reply.body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise protocol_error(
            registry, repository, f"tag list page {page} is not valid JSON ({exc})"
        ) from None
    tags = data.get("tags") if isinstance(data, dict) else None
    if isinstance(data, dict) and tags is None and "tags" in data:
        return []  # a repository without tags answers "tags": null
    if not isinstance(tags, list) or not all(map(isinstance, tags, repeat(str))):
        raise protocol_error(
            registry, repository, f"tag list page {page} has no 'tags' string list"
        )
    return tags


def check_repository(registry: str, repository: str) -> None:
    if not _REPOSITORY.match(repository):
        raise InvalidReference(
            f"repository name '{repository}' is not valid (lower-case letters, digits and "
            "separators '.', '_', '-', '/'); fix the image name",
            registry=registry,
            repository=repository,
        )


def check_reference(registry: str, reference: str) -> None:
    if not (is_digest(reference) or _TAG.match(reference)):
        raise InvalidReference(
            f"reference '{reference}' is neither a tag nor a sha256 digest; fix the tag",
            registry=registry,
        )


def check_digest(registry: str, repository: str, digest: str, what: str) -> None:
    if not is_digest(digest):
        raise InvalidReference(
            f"{what} '{digest}' is not sha256:<64 hex digits>",
            registry=registry,
            repository=repository,
        )
