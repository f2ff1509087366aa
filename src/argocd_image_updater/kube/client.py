"""A small async client of the Kubernetes API for what the product needs, over httpx.

Why not a client library: the controller makes a dozen kinds of REST calls on JSON objects it
handles as plain dicts anyway. ``kubernetes_asyncio`` (generated models, aiohttp underneath)
cost 0.7 s of CPU to import and about 48 MB of resident memory; ``lightkube`` is light but runs
on ``httpx2``, a second HTTP stack beside the httpx every other client of the product uses
(``benchmarks/kube_client.py``, figures in ``benchmarks/RESULTS.md``). Connection settings and
credentials are :mod:`argocd_image_updater.kube.config` and :mod:`argocd_image_updater.kube.auth`.

Every call is counted in the ``k8s_api_requests``/``k8s_api_errors`` metrics and API errors are
turned into :class:`KubeError` with the status code and the server's message. Throttled and
failed requests are sent again as :mod:`argocd_image_updater.kube.retry` says (each resend
counted in ``k8s_api_retries``); a credential or client certificate that can change is renewed
after a 401, and a changed client certificate gets new connections.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final
from urllib.parse import quote

import httpx

from argocd_image_updater import __version__, http1
from argocd_image_updater.http1 import ProxyConfigError, async_client
from argocd_image_updater.kube.auth import KubeAuthError
from argocd_image_updater.kube.config import (
    ClusterAccess,
    KubeConfigError,
    from_kubeconfig,
    in_cluster,
    kubeconfig_paths,
)
from argocd_image_updater.kube.errors import KubeError
from argocd_image_updater.kube.retry import RetryPolicy, Safety, retrying, safety
from argocd_image_updater.kube.watch_stream import WATCH_LINE_LIMIT, event_lines, parse_event
from argocd_image_updater.model.resources import APPLICATIONS, IMAGE_UPDATERS
from argocd_image_updater.observe import metrics
from argocd_image_updater.observe.log import get_logger

log = get_logger("kube")

Kind = tuple[str, str, str]
"""(API group, version, plural); the core group is ``""``."""

SECRETS: Final[Kind] = ("", "v1", "secrets")
CONFIGMAPS: Final[Kind] = ("", "v1", "configmaps")
EVENTS: Final[Kind] = ("", "v1", "events")
LEASES: Final[Kind] = ("coordination.k8s.io", "v1", "leases")

REQUEST_TIMEOUT: Final = 30.0
JSON_PATCH: Final = "application/json-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
LIST_PAGE_SIZE: Final = 500
"""Objects per page of :meth:`KubeClient.list_pages` (client-go's pager's default)."""


def resource_path(kind: Kind, namespace: str | None, name: str = "", subresource: str = "") -> str:
    """The API path of a collection (no ``name``), an object, or an object's subresource."""
    group, version, plural = kind
    path = f"/apis/{group}/{version}" if group else f"/api/{version}"
    if namespace is not None:
        path += f"/namespaces/{quote(namespace, safe='')}"
    path += f"/{plural}"
    if name:
        path += f"/{quote(name, safe='')}"
    if subresource:
        path += f"/{subresource}"
    return path


def _status_error(status: int, body: bytes, phrase: str) -> KubeError:
    """A :class:`KubeError` from a failed response (a ``Status`` object, or anything else)."""
    message, reason = phrase, ""
    try:
        doc = json.loads(body or b"{}")
        if isinstance(doc, dict):
            message = str(doc.get("message") or message)
            reason = str(doc.get("reason") or "")
    except ValueError:
        pass
    return KubeError(status, f"Kubernetes API: {message} (HTTP {status})", reason)


def _unreachable(exc: Exception) -> KubeError:
    return KubeError(0, f"Kubernetes API unreachable: {str(exc) or type(exc).__name__}")


def _answer_status(answer: http1.Answer) -> tuple[int, str]:
    return answer.status, answer.header("Retry-After")


def _response_status(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.headers.get("Retry-After", "")


async def _close(response: httpx.Response) -> None:
    await response.aclose()


def _decode(data: Mapping[str, str] | None) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in (data or {}).items()}


class KubeClient:
    """Async access to the Kubernetes API; create with :meth:`connect`."""

    def __init__(
        self,
        access: ClusterAccess,
        namespace: str | None = None,
        timeout: float = REQUEST_TIMEOUT,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.namespace = namespace or access.namespace
        self.server = access.server
        self.retry = retry or RetryPolicy()
        self.watch_line_limit = WATCH_LINE_LIMIT
        self._sni = access.tls_server_name or ""
        self._auth = access.auth
        self._tls = access.tls
        self._context = access.verify
        self._proxy = access.proxy or None
        self._timeout = timeout
        names = [name.lower() for name, _ in access.impersonation]
        # Repeated fields (several Impersonate-Group) go through httpx's request pipeline:
        # the direct path of http1.fetch keeps one field per name of the client's defaults.
        self._direct = len(set(names)) == len(names)
        self._headers = httpx.Headers(
            [
                ("Accept", "application/json"),
                ("User-Agent", f"argocd-image-updater/{__version__}"),
                *access.impersonation,
            ]
        )
        self._http = self._new_http(access.verify)

    def _new_http(self, context: ssl.SSLContext) -> httpx.AsyncClient:
        try:
            return async_client(
                ssl_context=context,
                proxy=self._proxy,
                proxy_origin="the kubeconfig's proxy-url",
                base_url=self.server,
                timeout=httpx.Timeout(self._timeout),
                headers=self._headers,
            )
        except ProxyConfigError as err:
            raise KubeError(0, f"cannot configure the Kubernetes client: {err}") from None

    @classmethod
    async def connect(cls, kubeconfig: str = "", context: str | None = None) -> KubeClient:
        """Connect with ``kubeconfig`` (one file or a list joined like ``$KUBECONFIG``), else
        in-cluster config, else ``$KUBECONFIG``/~/.kube/config. ``$POD_NAMESPACE`` overrides the
        namespace of the context or the service account."""
        try:
            if not kubeconfig and os.environ.get("KUBERNETES_SERVICE_HOST"):
                access = in_cluster()
            else:
                access = await from_kubeconfig(kubeconfig_paths(kubeconfig), context)
        except (KubeConfigError, KubeAuthError) as err:
            raise KubeError(
                0,
                f"cannot configure the Kubernetes client: {err}; pass --kubeconfig, set KUBECONFIG, "
                "or run inside a cluster",
            ) from None
        return cls(access, os.environ.get("POD_NAMESPACE") or access.namespace)

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        """One API request: counted in the metrics, sent again as :mod:`.retry` says, its
        answer's JSON returned, its failure a :class:`KubeError` (the API's message and reason,
        or the connection problem)."""
        metrics.K8S_API_REQUESTS.inc()
        content = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": content_type} if content is not None else {}

        async def attempt() -> http1.Answer:
            answer = await self._send(method, path, params, content, headers)
            if answer.status == 401 and self._renewable:
                answer = await self._send(method, path, params, content, headers, refresh=True)
            return answer

        try:
            answer = await retrying(
                self.retry, f"{method} {path}", safety(method, body), attempt, _answer_status
            )
        except (httpx.HTTPError, OSError) as exc:
            metrics.K8S_API_ERRORS.inc()
            raise _unreachable(exc) from None
        except KubeAuthError as exc:
            metrics.K8S_API_ERRORS.inc()
            raise KubeError(0, f"cannot authenticate to the Kubernetes API: {exc}") from None
        if answer.status >= 400:
            metrics.K8S_API_ERRORS.inc()
            raise _status_error(answer.status, answer.body, answer.reason)
        try:
            return answer.json()
        except ValueError:
            metrics.K8S_API_ERRORS.inc()
            raise KubeError(
                answer.status, f"Kubernetes API: {method} {path} answered no JSON"
            ) from None

    async def _send(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        content: bytes | None,
        headers: dict[str, str],
        refresh: bool = False,
    ) -> http1.Answer:
        """One exchange with the credential's Authorization header, on the connections of the
        current client certificate (both renewed first when ``refresh``)."""
        if value := await self._authorization(refresh):
            headers = {**headers, "Authorization": value}
        http = await self._connection(refresh)
        if self._direct:
            return await http1.fetch(
                http,
                method,
                path,
                headers=headers,
                params=params,
                content=content,
                sni_hostname=self._sni,
            )
        extensions = {"sni_hostname": self._sni} if self._sni else None
        response = await http.request(
            method, path, params=params, content=content, headers=headers, extensions=extensions
        )
        return http1.Answer(
            status=response.status_code,
            raw_headers=response.headers.raw,
            body=response.content,
            method=method,
            url=response.url,
            reason=response.reason_phrase,
        )

    async def _authorization(self, refresh: bool = False) -> str:
        """The credential's Authorization value (fetched again when ``refresh``), or ""."""
        return await self._auth.authorization(refresh=refresh) if self._auth is not None else ""

    async def _connection(self, refresh: bool = False) -> httpx.AsyncClient:
        """The HTTP client with the current client certificate: a new one (new connections)
        when it changed. The last one is closed: what it is sending finishes, and its
        connections are not used again."""
        if self._tls is None:
            return self._http
        # A plugin giving both the token and the certificate was run again for the token.
        source: object = self._tls.source
        context = await self._tls.context(refresh and source is not self._auth)
        if context is not self._context:
            old, self._http, self._context = self._http, self._new_http(context), context
            await old.aclose()
        return self._http

    @property
    def _renewable(self) -> bool:
        """Whether a 401 is worth renewing the credential or certificate for and sending the
        request once more: a token file, an exec plugin, OIDC, a client certificate file."""
        return (self._auth is not None and self._auth.refreshable) or self._tls is not None

    # --- objects -------------------------------------------------------------------------------
    async def list_objects(
        self, kind: Kind, namespace: str | None, label_selector: str = "", field_selector: str = ""
    ) -> tuple[list[dict[str, Any]], str]:
        """List objects; ``namespace`` None lists cluster-wide. Returns (items, resourceVersion)."""
        params = {"labelSelector": label_selector} if label_selector else {}
        if field_selector:
            params["fieldSelector"] = field_selector
        result = await self.request("GET", resource_path(kind, namespace), params=params or None)
        items = [dict(item) for item in result.get("items") or []]
        return items, str((result.get("metadata") or {}).get("resourceVersion", ""))

    async def list_pages(
        self,
        kind: Kind,
        namespace: str | None,
        *,
        limit: int = LIST_PAGE_SIZE,
        label_selector: str = "",
    ) -> AsyncIterator[list[dict[str, Any]]]:
        """List objects ``limit`` at a time (the API's ``limit`` and ``continue``), so that a
        caller can reduce each page before the next one is read. The pages are read back to
        back, well within the time the API keeps a continue token (a failure, 410 included,
        is a :class:`KubeError` like any other)."""
        path = resource_path(kind, namespace)
        token = ""
        while True:
            params = {"limit": str(limit)}
            if label_selector:
                params["labelSelector"] = label_selector
            if token:
                params["continue"] = token
            result = await self.request("GET", path, params=params)
            token = str((result.get("metadata") or {}).get("continue") or "")
            page: list[dict[str, Any]] = result.get("items") or []
            del result
            yield page
            del page  # the caller has read it: not kept while the next page is read
            if not token:
                return

    async def get_object(self, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
        return dict(await self.request("GET", resource_path(kind, namespace, name)))

    async def create_object(
        self, kind: Kind, namespace: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        return dict(await self.request("POST", resource_path(kind, namespace), body=dict(body)))

    async def replace_object(
        self, kind: Kind, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """PUT the whole object; a ``metadata.resourceVersion`` in ``body`` guards it (409)."""
        path = resource_path(kind, namespace, name)
        return dict(await self.request("PUT", path, body=dict(body)))

    async def delete_unchanged(self, kind: Kind, namespace: str, name: str, version: str) -> None:
        """DELETE the object unless it changed since resourceVersion ``version`` (409 then)."""
        body = {"preconditions": {"resourceVersion": version}}
        await self.request("DELETE", resource_path(kind, namespace, name), body=body)

    async def json_patch(
        self, kind: Kind, namespace: str, name: str, ops: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """An RFC 6902 patch; a ``replace`` of ``/metadata/resourceVersion`` guards it (409)."""
        path = resource_path(kind, namespace, name)
        return dict(
            await self.request(
                "PATCH", path, body=[dict(op) for op in ops], content_type=JSON_PATCH
            )
        )

    async def merge_patch_status(
        self, kind: Kind, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A merge patch of the ``status`` subresource."""
        path = resource_path(kind, namespace, name, "status")
        return dict(await self.request("PATCH", path, body=dict(body), content_type=MERGE_PATCH))

    async def watch_objects(
        self,
        kind: Kind,
        namespace: str | None,
        resource_version: str = "",
        timeout_seconds: int = 300,
        field_selector: str = "",
        label_selector: str = "",
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Yield (event type, object) from ``resource_version`` on, until the server ends the
        watch (after ``timeout_seconds``); ``field_selector`` (``metadata.name=x``) and
        ``label_selector`` narrow it. Bookmarks are asked for and yielded as ``BOOKMARK``
        (an object with only ``metadata.resourceVersion``: resume from it); so is, with a
        ``resource_version``, the moment the server accepted the watch (at that version). An ``ERROR`` event
        is raised as a :class:`KubeError` with its code: 410 when ``resource_version`` is too
        old, so list (or watch from "") again; so is an event longer than
        :attr:`watch_line_limit`. :func:`argocd_image_updater.kube.watch.follow` does all that.
        """
        params = {
            "watch": "true",
            "timeoutSeconds": str(timeout_seconds),
            "allowWatchBookmarks": "true",
        }
        if resource_version:
            params["resourceVersion"] = resource_version
        if field_selector:
            params["fieldSelector"] = field_selector
        if label_selector:
            params["labelSelector"] = label_selector
        path = resource_path(kind, namespace)
        # The server ends the watch; a read that waits much longer than that is a dead connection.
        timeout = httpx.Timeout(REQUEST_TIMEOUT, read=timeout_seconds + 60.0)
        metrics.K8S_API_REQUESTS.inc()

        async def open_stream(refresh: bool = False) -> httpx.Response:
            value = await self._authorization(refresh)
            http = await self._connection(refresh)
            # Not compressed: the line limit then bounds what is held of an event.
            request = http.build_request(
                "GET", path, params=params, timeout=timeout, headers={"Accept-Encoding": "identity"}
            )
            if value:
                request.headers["Authorization"] = value
            if self._sni:
                request.extensions["sni_hostname"] = self._sni
            return await http.send(request, stream=True)

        async def attempt() -> httpx.Response:
            response = await open_stream()
            if response.status_code == 401 and self._renewable:
                await response.aclose()
                response = await open_stream(refresh=True)
            return response

        try:
            response = await retrying(
                self.retry, f"watch {path}", Safety.ANY, attempt, _response_status, _close
            )
            try:
                if response.status_code >= 400:
                    await response.aread()
                    raise _status_error(
                        response.status_code, response.content, response.reason_phrase
                    )
                if response.headers.get("Content-Encoding", "identity").lower() != "identity":
                    raise KubeError(
                        0, "Kubernetes API: a compressed watch, which was not asked for"
                    )
                if resource_version:  # accepted: the watch works (its supervisor is told)
                    yield "BOOKMARK", {"metadata": {"resourceVersion": resource_version}}
                async for line in event_lines(response.aiter_raw(), self.watch_line_limit):
                    if line.strip():
                        yield parse_event(line)
            finally:
                await response.aclose()
        except KubeError:
            metrics.K8S_API_ERRORS.inc()
            raise
        except (httpx.HTTPError, OSError) as exc:
            metrics.K8S_API_ERRORS.inc()
            raise _unreachable(exc) from None
        except KubeAuthError as exc:
            metrics.K8S_API_ERRORS.inc()
            raise KubeError(0, f"cannot authenticate to the Kubernetes API: {exc}") from None

    # --- core ----------------------------------------------------------------------------------
    async def read_secret(self, namespace: str, name: str) -> dict[str, bytes]:
        secret = await self.get_object(SECRETS, namespace, name)
        return _decode(secret.get("data"))

    async def list_secrets(self, namespace: str, label_selector: str = "") -> list[dict[str, Any]]:
        """Secrets as plain dicts with ``data`` decoded to bytes."""
        items, _ = await self.list_objects(SECRETS, namespace, label_selector)
        return [
            {
                "name": (item.get("metadata") or {}).get("name", ""),
                "labels": dict((item.get("metadata") or {}).get("labels") or {}),
                "data": _decode(item.get("data")),
            }
            for item in items
        ]

    async def read_configmap(self, namespace: str, name: str) -> dict[str, str]:
        cm = await self.get_object(CONFIGMAPS, namespace, name)
        return dict(cm.get("data") or {})

    async def get_configmap(self, namespace: str, name: str) -> dict[str, Any]:
        """The whole ConfigMap as a plain dict (``metadata.resourceVersion`` included)."""
        return await self.get_object(CONFIGMAPS, namespace, name)

    async def create_configmap(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return await self.create_object(CONFIGMAPS, namespace, body)

    async def replace_configmap(
        self, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Replace a ConfigMap; a ``metadata.resourceVersion`` in ``body`` makes it conditional
        (409 when the stored one differs)."""
        return await self.replace_object(CONFIGMAPS, namespace, name, body)

    async def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        await self.create_object(EVENTS, namespace, body)


__all__ = [
    "APPLICATIONS",
    "CONFIGMAPS",
    "EVENTS",
    "IMAGE_UPDATERS",
    "LEASES",
    "SECRETS",
    "KubeClient",
    "KubeError",
    "resource_path",
]
