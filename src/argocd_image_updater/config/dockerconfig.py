"""Credentials from a Docker config JSON (the ``.dockerconfigjson`` field of an image pull secret).

The ``auths`` keys are written in many ways (``https://ghcr.io``, ``ghcr.io``,
``https://index.docker.io/v1/``, ``registry.example.com:5000/v2/``). Each key is reduced to
``host[/path]`` (no scheme, no ``/v1`` or ``/v2`` suffix, lower-case host) and compared with the
endpoint's API URL and registry prefix. Every Docker Hub host name
(:data:`~argocd_image_updater.model.dockerhub.DOCKER_HUB_HOSTS`) names the same registry.

When several keys match, the most specific one wins, deterministically: keys that cover the
registry (the host, or a path that the prefix lies under) beat keys that merely start with the
API URL (the original's rule); among covering keys the longest wins, and a key spelled like the
API URL or prefix beats a Docker Hub alias; remaining ties go to the alphabetically first key.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Final

from argocd_image_updater.model.dockerhub import DOCKER_HUB, is_docker_hub_host
from argocd_image_updater.model.registry import Credentials

_SCHEME_RE: Final = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_API_SUFFIX_RE: Final = re.compile(r"/v[12]$")


class DockerConfigError(ValueError):
    """An image pull secret without usable credentials for the registry (no secret values)."""


def normalize_location(location: str) -> str:
    """``https://Host:5000/v2/`` → ``host:5000``; keeps a repository path if there is one."""
    rest = _SCHEME_RE.sub("", location.strip()).rstrip("/")
    rest = _API_SUFFIX_RE.sub("", rest).rstrip("/")
    host, sep, path = rest.partition("/")
    return host.lower() + sep + path


def canonical_location(location: str) -> str:
    """Like :func:`normalize_location`, with every Docker Hub host spelled ``docker.io``."""
    normalized = normalize_location(location)
    host, sep, path = normalized.partition("/")
    if is_docker_hub_host(host):
        host = DOCKER_HUB
    return host + sep + path


def _rank(key: str, literal: set[str], canonical: set[str]) -> tuple[int, int, int] | None:
    """How well ``key`` names the registry (higher is better), or None if it does not."""
    canon = canonical_location(key)
    if not canon:
        return None
    if any(t == canon or t.startswith(canon + "/") for t in canonical):
        # the key covers the registry (or the prefix's path): the longer, the more specific
        return (2, len(canon), 1 if normalize_location(key) in literal else 0)
    if any(canon.startswith(t + "/") for t in canonical):
        return (1, -len(canon), 0)  # the original's rule: the key starts with the API URL
    return None


def _entry_credentials(key: str, entry: object) -> Credentials | str:
    """The credentials of one ``auths`` entry, or why there are none (never a secret value)."""
    if not isinstance(entry, Mapping):
        return f"auth entry '{key}' is not an object"
    auth = entry.get("auth")
    if isinstance(auth, str) and auth.strip():
        try:
            decoded = base64.b64decode(auth.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return f"the 'auth' of entry '{key}' is not base64 of <username>:<password>"
        username, sep, password = decoded.partition(":")
        if not sep or not username or not password:
            return f"the 'auth' of entry '{key}' is not base64 of <username>:<password>"
        return Credentials(username, password)
    user, pw = entry.get("username"), entry.get("password")
    if isinstance(user, str) and isinstance(pw, str) and user and pw:
        return Credentials(user, pw)
    return f"entry '{key}' has neither 'auth' nor 'username' and 'password'"


def credentials_from_docker_config(data: bytes | str, api_url: str, prefix: str) -> Credentials:
    """Pick the credentials for the registry at ``api_url`` (prefix ``prefix``) from ``data``.

    Raises :class:`DockerConfigError` when the JSON has no ``auths`` object ("no credentials in
    image pull secret") or no entry matches ("no valid auth entry for registry … found").
    """
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = (
            f" (line {exc.lineno}, column {exc.colno})"
            if isinstance(exc, json.JSONDecodeError)
            else ""
        )
        raise DockerConfigError(
            f"image pull secret is not valid Docker config JSON{where}; "
            'expected {"auths": {"<registry>": {"auth": "<base64 of user:pass>"}}}'
        ) from None
    auths = doc.get("auths") if isinstance(doc, Mapping) else None
    if not isinstance(auths, Mapping) or not auths:
        raise DockerConfigError(
            "no credentials in image pull secret: it needs an 'auths' object "
            "(create it with kubectl create secret docker-registry)"
        )
    literal = {normalize_location(api_url)}
    canonical = {canonical_location(api_url)}
    if prefix:
        literal.add(normalize_location(prefix))
        canonical.add(canonical_location(prefix))
    literal.discard("")
    canonical.discard("")
    ranked: list[tuple[tuple[int, int, int], str]] = []
    for key in auths:
        if isinstance(key, str):
            rank = _rank(key, literal, canonical)
            if rank is not None:
                ranked.append((rank, key))
    ranked.sort(key=lambda item: ((-item[0][0], -item[0][1], -item[0][2]), item[1]))
    problems: list[str] = []
    for _, key in ranked:
        result = _entry_credentials(key, auths[key])
        if isinstance(result, Credentials):
            return result
        problems.append(result)
    detail = f" ({'; '.join(problems)})" if problems else ""
    raise DockerConfigError(
        f"no valid auth entry for registry {api_url} found in image pull secret{detail}; "
        f"add an entry keyed by the registry host (for example '{canonical_location(api_url)}')"
    )
