"""The part every registry front of the sandbox shares: an aiohttp server in the caller's event
loop on a free loopback port, and the forwarding of a request to ``upstream``.

A front subclasses :class:`RegistryFront` and implements ``_handle``; it forwards what it does
not answer itself with :meth:`RegistryFront._upstream`.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping
from typing import Self

import aiohttp
from aiohttp import web

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)


class RegistryFront:
    """Serves ``_handle`` for every path; use ``async with`` (or :meth:`start`/:meth:`stop`)."""

    def __init__(
        self,
        upstream: str,
        *,
        upstream_ssl: ssl.SSLContext | bool = True,
        client_max_size: int = 1024**2,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self._upstream_ssl = upstream_ssl
        self._client_max_size = client_max_size
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._port = 0

    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError(f"the {type(self).__name__} is not running: use 'async with'")
        return self._port

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    async def start(self) -> Self:
        app = web.Application(client_max_size=self._client_max_size)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._session = aiohttp.ClientSession(
            auto_decompress=False, timeout=aiohttp.ClientTimeout(total=60)
        )
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None
        self._port = 0

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raise NotImplementedError

    async def _upstream(
        self,
        request: web.Request,
        query: Mapping[str, str] | None = None,
        body: bytes | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """Forward ``request`` (its query unless ``query`` is given, its body unless ``body``
        is) keeping the client's ``Host`` header, so the registry's ``Location`` headers point
        back at the front; the answer's status, end-to-end headers and body."""
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        params = dict(request.query) if query is None else dict(query)
        if body is None and request.can_read_body:
            body = await request.read()
        async with self._session.request(
            request.method,
            self.upstream + request.path,
            params=params or None,
            headers=headers,
            data=body or None,
            allow_redirects=False,
            ssl=self._upstream_ssl,
        ) as response:
            answer = await response.read()
            out = {k: v for k, v in response.headers.items() if k.lower() not in _HOP_BY_HOP}
            return response.status, out, answer
