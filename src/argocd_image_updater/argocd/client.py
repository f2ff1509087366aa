"""Argo CD REST API client for ``applications_api: argocd``.

The original used Argo CD's gRPC API; argocd-server serves the same service over its REST gateway
(``/api/v1/...``), which needs no generated stubs. ``argocd.grpc_web`` is accepted and ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from argocd_image_updater.http1 import async_client, fetch
from argocd_image_updater.kits.tlstrust import client_context
from argocd_image_updater.observe import metrics
from argocd_image_updater.observe.log import get_logger, register_secret

log = get_logger("argocd")


class ArgoCDError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status

    @property
    def is_conflict(self) -> bool:
        # grpc-gateway maps FailedPrecondition/Aborted/AlreadyExists to 400/409.
        return self.status == 409


class ArgoCDClient:
    def __init__(
        self,
        server: str,
        token: str,
        *,
        insecure: bool = False,
        plaintext: bool = False,
        timeout: float = 30.0,
    ) -> None:
        if not server:
            raise ValueError(
                "applications_api is argocd but no Argo CD server address is set: "
                "use --argocd-server-addr or ARGOCD_SERVER"
            )
        if not token:
            raise ValueError(
                "applications_api is argocd but no API token is set: set ARGOCD_TOKEN or the "
                "key argocd.token of the argocd-image-updater-secret Secret"
            )
        register_secret(token)
        scheme = "http" if plaintext else "https"
        base = server if "://" in server else f"{scheme}://{server}"
        self.server = server
        self._http = async_client(
            ssl_context=client_context(insecure=insecure),
            base_url=base.rstrip("/"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )

    async def close(self) -> None:
        await self._http.aclose()

    async def _request(
        self, method: str, path: str, params: Mapping[str, str] | None = None, body: Any = None
    ) -> Any:
        metrics.ARGOCD_API_REQUESTS.labels(self.server).inc()
        content = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if content is not None else None
        try:
            answer = await fetch(
                self._http, method, path, params=params, content=content, headers=headers
            )
        except httpx.HTTPError as err:
            metrics.ARGOCD_API_ERRORS.labels(self.server).inc()
            raise ArgoCDError(0, f"Argo CD API {self.server} unreachable: {err}") from None
        if answer.status >= 400:
            metrics.ARGOCD_API_ERRORS.labels(self.server).inc()
            text = answer.body.decode("utf-8", "replace")
            try:
                message = answer.json().get("message") or text
            except (ValueError, AttributeError):
                message = text
            raise ArgoCDError(
                answer.status,
                f"Argo CD API {method} {path}: {message} (HTTP {answer.status})",
            )
        return answer.json()

    async def list_applications(
        self, selector: str = "", app_namespace: str = ""
    ) -> list[dict[str, Any]]:
        params = {k: v for k, v in (("selector", selector), ("appNamespace", app_namespace)) if v}
        data = await self._request("GET", "/api/v1/applications", params=params)
        return [dict(item) for item in (data.get("items") or [])]

    async def get_application(self, name: str, app_namespace: str = "") -> dict[str, Any]:
        params = {"appNamespace": app_namespace} if app_namespace else {}
        return dict(await self._request("GET", f"/api/v1/applications/{name}", params=params))

    async def patch_application(
        self, name: str, app_namespace: str, ops: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """Apply a JSON patch to the Application (only the given operations are sent)."""
        body = {
            "name": name,
            "appNamespace": app_namespace,
            "patch": json.dumps(list(ops)),
            "patchType": "json",
        }
        return dict(await self._request("PATCH", f"/api/v1/applications/{name}", body=body))
