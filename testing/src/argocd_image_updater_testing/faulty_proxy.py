"""A reverse proxy in front of a registry that misbehaves on request, and counts what passes.

What real registries do and distribution 2.8 does not, or faults to provoke:

* paginate ``tags/list`` (``n`` per page, ``Link: </v2/<repo>/tags/list?n=…&last=…>; rel="next"``),
  as GHCR, Docker Hub, ECR and Harbor do;
* answer the first matching requests with a status (429 + ``Retry-After``, 5xx);
* cut a body short (valid HTTP, broken JSON), drop the connection mid-body, or replace the body;
* drop a page's ``Link`` header: the page looks complete, the list is silently cut short;
* count requests by kind: ``ping``, ``tags``, ``manifest``, ``blob``, ``token`` — GETs under the
  kind, other methods as ``<kind>_<method>`` (``manifest_head``).

Runs in the caller's event loop: ``async with FaultyProxy(upstream) as proxy:``.
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlencode

from aiohttp import web

from argocd_image_updater_testing.forwarding import RegistryFront

FaultAction = Literal["status", "truncate", "drop", "corrupt", "unlink"]

_TAGS = re.compile(r"^/v2/(.+)/tags/list$")
_MANIFEST = re.compile(r"^/v2/(.+)/manifests/[^/]+$")
_BLOB = re.compile(r"^/v2/(.+)/blobs/")


def request_kind(path: str) -> str:
    if path in ("/v2", "/v2/"):
        return "ping"
    if _TAGS.match(path):
        return "tags"
    if _MANIFEST.match(path):
        return "manifest"
    if _BLOB.match(path):
        return "blob"
    if path.rstrip("/").endswith("/token"):
        return "token"
    return "other"


def count_key(kind: str, method: str) -> str:
    return kind if method == "GET" else f"{kind}_{method.lower()}"


@dataclass(slots=True)
class Fault:
    """Applies ``action`` to ``times`` requests of ``kind`` (None = any), after letting ``after``
    matching requests through. ``method`` None matches any method."""

    action: FaultAction
    kind: str | None = None
    times: int = 1
    after: int = 0
    method: str | None = None
    status: int = 503
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    seen: int = 0
    applied: int = 0

    def take(self, kind: str, method: str) -> bool:
        if (self.kind is not None and kind != self.kind) or (
            self.method is not None and method != self.method
        ):
            return False
        self.seen += 1
        if self.seen <= self.after or self.applied >= self.times:
            return False
        self.applied += 1
        return True


class FaultyProxy(RegistryFront):
    """Forwards everything to ``upstream`` (keeping the client's ``Host`` header, so the
    registry's ``Location`` headers point back at the proxy)."""

    def __init__(self, upstream: str, *, upstream_ssl: ssl.SSLContext | bool = True) -> None:
        super().__init__(upstream, upstream_ssl=upstream_ssl)
        self.counts: Counter[str] = Counter()
        self.log: list[tuple[str, str, int]] = []
        """``(method, path, status)`` of every request, in order."""
        self.faults: list[Fault] = []
        self.page_size = 0
        self.absolute_links = False
        self.latency = 0.0
        """Seconds every request is held before it is forwarded (simulates a distant registry)."""
        self.in_flight = 0
        self.max_in_flight = 0
        """The most requests that were being handled at the same time."""

    # --- programming ---------------------------------------------------------------------------

    def paginate(self, page_size: int, *, absolute_links: bool = False) -> None:
        """Split ``tags/list`` answers into pages of ``page_size`` sorted tags (0 = off)."""
        self.page_size = page_size
        self.absolute_links = absolute_links

    def fail(
        self,
        status: int,
        *,
        times: int = 1,
        kind: str | None = None,
        after: int = 0,
        retry_after: str | None = None,
        body: bytes = b"",
        method: str | None = None,
    ) -> Fault:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return self._add(Fault("status", kind, times, after, method, status, headers, body))

    def truncate(self, *, kind: str | None = "tags", times: int = 1, after: int = 0) -> Fault:
        """Send only the first half of the body (with a matching ``Content-Length``)."""
        return self._add(Fault("truncate", kind, times, after))

    def drop(self, *, kind: str | None = "tags", times: int = 1, after: int = 0) -> Fault:
        """Announce the full body, send half of it, then close the connection."""
        return self._add(Fault("drop", kind, times, after))

    def unlink(self, *, times: int = 1, after: int = 0) -> Fault:
        """Remove the ``Link`` header of a paginated ``tags/list`` page: a valid answer that
        hides the following pages."""
        return self._add(Fault("unlink", "tags", times, after))

    def corrupt(
        self,
        *,
        kind: str | None = "tags",
        times: int = 1,
        after: int = 0,
        body: bytes = b'{"name": "x", "tags": [oops',
        headers: Mapping[str, str] | None = None,
    ) -> Fault:
        """Replace a successful body with ``body`` (default: malformed JSON) and override
        ``headers`` (e.g. ``Content-Type``)."""
        return self._add(
            Fault("corrupt", kind, times, after, headers=dict(headers or {}), body=body)
        )

    def _add(self, fault: Fault) -> Fault:
        self.faults.append(fault)
        return fault

    def reset(self) -> None:
        """Forget faults, counts and pagination."""
        self.faults.clear()
        self.counts.clear()
        self.log.clear()
        self.page_size = 0
        self.latency = 0.0
        self.max_in_flight = 0

    # --- handling ------------------------------------------------------------------------------

    def _fault_for(self, kind: str, method: str) -> Fault | None:
        for fault in self.faults:
            if fault.take(kind, method):
                return fault
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency > 0:
                await asyncio.sleep(self.latency)
            return await self._serve(request)
        finally:
            self.in_flight -= 1

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        kind = request_kind(request.path)
        self.counts[count_key(kind, request.method)] += 1
        fault = self._fault_for(kind, request.method)
        if fault is not None and fault.action == "status":
            return self._record(
                request, web.Response(status=fault.status, headers=fault.headers, body=fault.body)
            )
        status, headers, body = await self._forward(request, kind)
        if fault is not None and 200 <= status < 300:
            if fault.action == "corrupt":
                body = fault.body
                headers.update(fault.headers)
            elif fault.action == "truncate":
                body = body[: len(body) // 2]
            elif fault.action == "unlink":
                headers.pop("Link", None)
            elif fault.action == "drop":
                return self._record(request, await self._drop(request, status, headers, body))
        return self._record(request, web.Response(status=status, headers=headers, body=body))

    def _record(self, request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
        self.log.append((request.method, request.path, response.status))
        return response

    async def _drop(
        self, request: web.Request, status: int, headers: Mapping[str, str], body: bytes
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=status, headers=headers)
        response.content_length = len(body)
        await response.prepare(request)
        await response.write(body[: len(body) // 2])
        if request.transport is not None:
            request.transport.abort()
        return response

    async def _forward(self, request: web.Request, kind: str) -> tuple[int, dict[str, str], bytes]:
        if kind != "tags" or not self.page_size or request.method != "GET":
            return await self._upstream(request)
        status, headers, body = await self._upstream(request, query={})
        if status != 200:
            return status, headers, body
        data = json.loads(body)
        tags = sorted(data.get("tags") or [])
        size = min(self.page_size, int(request.query.get("n", self.page_size) or self.page_size))
        last = request.query.get("last")
        start = 0
        if last is not None:
            start = next((i for i, t in enumerate(tags) if t > last), len(tags))
        page = tags[start : start + size]
        headers.pop("Link", None)
        if start + size < len(tags):
            query = urlencode({"n": size, "last": page[-1]})
            base = f"http://{request.host}" if self.absolute_links else ""
            headers["Link"] = f'<{base}{request.path}?{query}>; rel="next"'
        return status, headers, json.dumps({"name": data.get("name"), "tags": page}).encode()
