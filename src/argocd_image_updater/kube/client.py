"""A small async Kubernetes client for what the controller needs, on top of kubernetes_asyncio.

Every call is counted in the ``k8s_api_requests``/``k8s_api_errors`` metrics and API errors are
turned into :class:`KubeError` with the status code and the server's message.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio import watch as k8s_watch
from kubernetes_asyncio.client.exceptions import ApiException

from argocd_image_updater.kube.errors import KubeError
from argocd_image_updater.model.resources import APPLICATIONS, IMAGE_UPDATERS
from argocd_image_updater.observe import metrics
from argocd_image_updater.observe.log import get_logger

T = TypeVar("T")
log = get_logger("kube")

SA_NAMESPACE_FILE: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _error(exc: ApiException) -> KubeError:
    message = str(exc.reason or "")
    reason = ""
    try:
        body = json.loads(exc.body or "{}")
        message = body.get("message") or message
        reason = body.get("reason", "")
    except (ValueError, AttributeError):
        pass
    return KubeError(int(exc.status or 0), f"Kubernetes API: {message} (HTTP {exc.status})", reason)


async def call(coro: Awaitable[T]) -> T:
    """Await one Kubernetes API request: counted in the metrics, its failure a
    :class:`KubeError` (the API's message and reason, or the connection problem)."""
    metrics.K8S_API_REQUESTS.inc()
    try:
        return await coro
    except ApiException as exc:
        metrics.K8S_API_ERRORS.inc()
        raise _error(exc) from None
    except OSError as exc:
        metrics.K8S_API_ERRORS.inc()
        raise KubeError(0, f"Kubernetes API unreachable: {exc}") from None


class KubeClient:
    """Async access to the Kubernetes API; create with :meth:`connect`."""

    def __init__(self, api: k8s.ApiClient, namespace: str) -> None:
        self._api = api
        self.namespace = namespace
        # Typed as Any: the generated stubs reject the documented `_content_type` keyword.
        self._custom: Any = k8s.CustomObjectsApi(api)
        self._core: Any = k8s.CoreV1Api(api)

    @classmethod
    async def connect(cls, kubeconfig: str = "", context: str | None = None) -> KubeClient:
        """Connect with ``kubeconfig``, else in-cluster config, else ``$KUBECONFIG``/~/.kube/config.

        Exec credential plugins and OIDC work as in kubectl (kubernetes_asyncio implements them).
        """
        configuration = k8s.Configuration()
        namespace = "default"
        try:
            if not kubeconfig and os.environ.get("KUBERNETES_SERVICE_HOST"):
                k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
                if SA_NAMESPACE_FILE.exists():
                    namespace = SA_NAMESPACE_FILE.read_text().strip() or namespace
            else:
                path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None
                loader = await k8s_config.load_kube_config(
                    config_file=path, context=context, client_configuration=configuration
                )
                ctx = getattr(loader, "current_context", None) or {}
                ctx_ns = (
                    (ctx.get("context") or {}).get("namespace") if isinstance(ctx, dict) else None
                )
                if ctx_ns:
                    namespace = str(ctx_ns)
        except (k8s_config.ConfigException, OSError, TypeError) as err:
            raise KubeError(
                0,
                f"cannot configure the Kubernetes client: {err}; pass --kubeconfig, set KUBECONFIG, "
                "or run inside a cluster",
            ) from None
        namespace = os.environ.get("POD_NAMESPACE") or namespace
        return cls(k8s.ApiClient(configuration), namespace)

    async def close(self) -> None:
        await self._api.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _call(self, coro: Awaitable[T]) -> T:
        return await call(coro)

    # --- custom resources --------------------------------------------------------------------
    async def list_objects(
        self, kind: tuple[str, str, str], namespace: str | None, label_selector: str = ""
    ) -> tuple[list[dict[str, Any]], str]:
        """List objects; ``namespace`` None lists cluster-wide. Returns (items, resourceVersion)."""
        group, version, plural = kind
        if namespace is None:
            result = await self._call(
                self._custom.list_cluster_custom_object(
                    group, version, plural, label_selector=label_selector
                )
            )
        else:
            result = await self._call(
                self._custom.list_namespaced_custom_object(
                    group, version, namespace, plural, label_selector=label_selector
                )
            )
        items = [dict(item) for item in result.get("items", [])]
        return items, str(result.get("metadata", {}).get("resourceVersion", ""))

    async def get_object(
        self, kind: tuple[str, str, str], namespace: str, name: str
    ) -> dict[str, Any]:
        group, version, plural = kind
        result = await self._call(
            self._custom.get_namespaced_custom_object(group, version, namespace, plural, name)
        )
        return dict(result)

    async def json_patch(
        self,
        kind: tuple[str, str, str],
        namespace: str,
        name: str,
        ops: Sequence[Mapping[str, Any]],
    ) -> dict[str, Any]:
        group, version, plural = kind
        result = await self._call(
            self._custom.patch_namespaced_custom_object(
                group,
                version,
                namespace,
                plural,
                name,
                list(ops),
                _content_type="application/json-patch+json",
            )
        )
        return dict(result)

    async def merge_patch_status(
        self, kind: tuple[str, str, str], namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        group, version, plural = kind
        result = await self._call(
            self._custom.patch_namespaced_custom_object_status(
                group,
                version,
                namespace,
                plural,
                name,
                dict(body),
                _content_type="application/merge-patch+json",
            )
        )
        return dict(result)

    async def watch_objects(
        self,
        kind: tuple[str, str, str],
        namespace: str | None,
        resource_version: str = "",
        timeout_seconds: int = 300,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Yield (event type, object) until the server ends the watch."""
        group, version, plural = kind
        metrics.K8S_API_REQUESTS.inc()
        watcher = k8s_watch.Watch()
        if namespace is None:
            func: Any = self._custom.list_cluster_custom_object
            args: tuple[Any, ...] = (group, version, plural)
        else:
            func = self._custom.list_namespaced_custom_object
            args = (group, version, namespace, plural)
        kwargs: dict[str, Any] = {"timeout_seconds": timeout_seconds}
        if resource_version:
            kwargs["resource_version"] = resource_version
        try:
            async with watcher.stream(func, *args, **kwargs) as stream:
                async for event in stream:
                    yield str(event["type"]), dict(event["object"])
        except ApiException as exc:
            metrics.K8S_API_ERRORS.inc()
            raise _error(exc) from None

    # --- core ----------------------------------------------------------------------------------
    async def read_secret(self, namespace: str, name: str) -> dict[str, bytes]:
        secret = await self._call(self._core.read_namespaced_secret(name, namespace))
        return {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}

    async def list_secrets(self, namespace: str, label_selector: str = "") -> list[dict[str, Any]]:
        """Secrets as plain dicts with ``data`` decoded to bytes."""
        result = await self._call(
            self._core.list_namespaced_secret(namespace, label_selector=label_selector)
        )
        return [
            {
                "name": item.metadata.name,
                "labels": dict(item.metadata.labels or {}),
                "data": {k: base64.b64decode(v) for k, v in (item.data or {}).items()},
            }
            for item in result.items
        ]

    async def read_configmap(self, namespace: str, name: str) -> dict[str, str]:
        cm = await self._call(self._core.read_namespaced_config_map(name, namespace))
        return dict(cm.data or {})

    async def get_configmap(self, namespace: str, name: str) -> dict[str, Any]:
        """The whole ConfigMap as a plain dict (``metadata.resourceVersion`` included)."""
        cm = await self._call(self._core.read_namespaced_config_map(name, namespace))
        return dict(self._api.sanitize_for_serialization(cm))

    async def create_configmap(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        cm = await self._call(self._core.create_namespaced_config_map(namespace, dict(body)))
        return dict(self._api.sanitize_for_serialization(cm))

    async def replace_configmap(
        self, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Replace a ConfigMap; a ``metadata.resourceVersion`` in ``body`` makes it conditional
        (409 when the stored one differs)."""
        cm = await self._call(self._core.replace_namespaced_config_map(name, namespace, dict(body)))
        return dict(self._api.sanitize_for_serialization(cm))

    async def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        await self._call(self._core.create_namespaced_event(namespace, dict(body)))


__all__ = ["APPLICATIONS", "IMAGE_UPDATERS", "KubeClient", "KubeError"]
