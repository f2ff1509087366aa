"""Credentials of Helm repositories from Argo CD's repository Secrets of type ``helm``.

Argo CD keeps a Helm repository's settings in a Secret labelled
``argocd.argoproj.io/secret-type: repository`` (or ``repo-creds`` for a credential template
covering every repository below a URL prefix) with ``type: helm``, ``url``, ``username``,
``password``, and optionally ``insecure: "true"`` and ``tlsClientCertData``. A repository Secret
whose URL equals the repository's (trailing ``/`` ignored) wins; otherwise the template with the
longest covering prefix. The passwords are registered for masking before they are used. A
custom CA for the repository's host comes from Argo CD's ``argocd-tls-certs-cm`` (key = host
name), as for git repositories.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final, Protocol

from argocd_image_updater.model.repo_url import host_of
from argocd_image_updater.observe.log import register_secret
from argocd_image_updater.registry.helmindex import HelmIndexError, HelmRepoAuth

SECRET_TYPE_LABEL: Final = "argocd.argoproj.io/secret-type"
TLS_CERTS_CM: Final = "argocd-tls-certs-cm"


class SecretLister(Protocol):
    """Lists Secrets as ``{"name", "labels", "data"}`` (data decoded), like the Kubernetes
    client and local mode's Secrets directory."""

    async def list_secrets(
        self, namespace: str, label_selector: str = ""
    ) -> list[dict[str, Any]]: ...

    async def read_configmap(self, namespace: str, name: str) -> dict[str, str]: ...


def _text(data: Mapping[str, bytes], key: str) -> str:
    return data.get(key, b"").decode().strip()


def _same(a: str, b: str) -> bool:
    return a.strip().rstrip("/").lower() == b.strip().rstrip("/").lower()


def _covers(prefix: str, url: str) -> bool:
    return url.strip().lower().startswith(prefix.strip().lower())


def _auth(data: Mapping[str, bytes]) -> HelmRepoAuth:
    password = data.get("password", b"").decode()
    if password:
        register_secret(password)
    return HelmRepoAuth(
        username=_text(data, "username"),
        password=password,
        insecure=_text(data, "insecure").lower() == "true",
    )


class HelmRepoSecrets:
    """A :class:`~argocd_image_updater.registry.helmindex.HelmRepoCredentials` reading the
    Argo CD namespace's repository Secrets (listed on each lookup: rotated passwords apply at
    the next cycle)."""

    def __init__(self, secrets: SecretLister | None, namespace: str) -> None:
        self._secrets = secrets
        self._namespace = namespace

    async def for_repository(self, url: str) -> HelmRepoAuth | None:
        auth = await self._from_secrets(url)
        ca = await self._ca(url)
        if ca:
            return replace(auth or HelmRepoAuth(), ca_pem=ca)
        return auth

    async def _ca(self, url: str) -> str:
        if self._secrets is None or not url.lower().startswith("https://"):
            return ""
        try:
            certs = await self._secrets.read_configmap(self._namespace, TLS_CERTS_CM)
        except Exception as err:  # the Kubernetes API's or the directory's KubeError
            if getattr(err, "is_not_found", False):
                return ""
            raise HelmIndexError(
                f"cannot read ConfigMap {self._namespace}/{TLS_CERTS_CM} for Helm repository "
                f"{url}: {err}"
            ) from None
        return certs.get(host_of(url), "")

    async def _from_secrets(self, url: str) -> HelmRepoAuth | None:
        if self._secrets is None:
            return None
        try:
            secrets = await self._secrets.list_secrets(self._namespace, SECRET_TYPE_LABEL)
        except Exception as err:  # the Kubernetes API or a directory: report, do not guess
            raise HelmIndexError(
                f"cannot list Argo CD repository Secrets in {self._namespace} for Helm "
                f"repository {url}: {err}"
            ) from None
        best: tuple[int, Mapping[str, bytes]] | None = None
        for secret in secrets:
            data: Mapping[str, bytes] = secret.get("data") or {}
            if _text(data, "type").lower() != "helm":
                continue
            kind = (secret.get("labels") or {}).get(SECRET_TYPE_LABEL, "")
            candidate = _text(data, "url")
            if not candidate:
                continue
            if kind == "repository" and _same(candidate, url):
                return _auth(data)
            longer = best is None or len(candidate) > best[0]
            if kind == "repo-creds" and _covers(candidate, url) and longer:
                best = (len(candidate), data)
        return _auth(best[1]) if best is not None else None
