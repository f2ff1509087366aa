"""A :class:`~argocd_image_updater.config.secrets.SecretReader` backed by the Kubernetes API."""

from __future__ import annotations

from collections.abc import Mapping

from argocd_image_updater.config.secrets import SecretError, SecretNotFound
from argocd_image_updater.kube.client import KubeClient, KubeError


class KubeSecretReader:
    """Reads Secrets through the API. ``allowed_namespaces`` (if given) fences tenants in:
    a reference to a Secret in any other namespace is refused before any request is made."""

    def __init__(self, kube: KubeClient, allowed_namespaces: frozenset[str] | None = None) -> None:
        self._kube = kube
        self._allowed = allowed_namespaces

    def restricted_to(self, *namespaces: str) -> KubeSecretReader:
        return KubeSecretReader(self._kube, frozenset(namespaces))

    async def read(self, namespace: str, name: str) -> Mapping[str, bytes]:
        if self._allowed is not None and namespace not in self._allowed:
            raise SecretError(
                f"secret '{namespace}/{name}' is outside the allowed namespace(s) "
                f"{', '.join(sorted(self._allowed))}: reference a Secret in the same namespace"
            )
        try:
            return await self._kube.read_secret(namespace, name)
        except KubeError as err:
            if err.is_not_found:
                raise SecretNotFound(namespace, name) from None
            raise SecretError(f"cannot read secret '{namespace}/{name}': {err}") from None
