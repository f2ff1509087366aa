"""HTTP endpoints for operators: ``/metrics`` (Prometheus), ``/healthz`` and ``/readyz``.

``/readyz`` answers 200 only once the first cycle has filled the caches; ``/healthz`` turns 503
when the watchdog sees no cycle finish within ``stall_after`` (a stuck controller gets restarted
by its liveness probe instead of silently doing nothing).

The server is a few lines over ``asyncio.start_server`` rather than an HTTP framework: three
GET endpoints for probes and scrapers need no more, and aiohttp would add about 11 MB of
resident memory and 0.3 s of CPU to every controller that serves probes (the default).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Final

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from argocd_image_updater.observe.health import Health
from argocd_image_updater.observe.metrics import REGISTRY

TEXT: Final = "text/plain; charset=utf-8"
READ_TIMEOUT: Final = 10.0
MAX_HEADER_LINES: Final = 100
MAX_LINE: Final = 8192


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes
    content_type: str = TEXT


Handler = Callable[[], Awaitable[Reply]]
App = Mapping[str, Handler]
"""Paths (without the query) and their GET handlers."""


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``:8081``, ``0.0.0.0:8081`` or ``8081``; ``0`` or empty disables; ``:0`` picks a free port."""
    address = address.strip()
    if address in ("", "0"):
        return None
    host, _, port = address.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"invalid bind address '{address}': use [host]:port or 0") from None
    if not 0 <= number < 65536:
        raise ValueError(f"invalid bind address '{address}': port out of range")
    return (host.strip("[]") or "0.0.0.0"), number  # noqa: S104 - probes must be reachable


def metrics_app() -> App:
    async def metrics() -> Reply:
        return Reply(200, generate_latest(REGISTRY), CONTENT_TYPE_LATEST)

    return {"/metrics": metrics}


def health_app(health: Health) -> App:
    async def healthz() -> Reply:
        ok, message = health.healthy()
        return Reply(200 if ok else 503, message.encode())

    async def readyz() -> Reply:
        if health.ready:
            return Reply(200, b"ok")
        return Reply(503, b"waiting for the first update cycle")

    return {"/healthz": healthz, "/readyz": readyz}


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str]:
    """The method and path of one request; its headers are read and dropped (no body is
    accepted: every endpoint is a GET)."""
    line = await reader.readline()
    if len(line) > MAX_LINE or not line.endswith(b"\n"):
        raise ValueError("bad request line")
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise ValueError("bad request line")
    for _ in range(MAX_HEADER_LINES):
        header = await reader.readline()
        if header in (b"\r\n", b"\n"):
            return parts[0], parts[1].split("?", 1)[0]
        if not header.endswith(b"\n") or len(header) > MAX_LINE:
            raise ValueError("bad header")
    raise ValueError("too many headers")


def _response(reply: Reply, head_only: bool) -> bytes:
    phrase = HTTPStatus(reply.status).phrase
    head = (
        f"HTTP/1.1 {reply.status} {phrase}\r\n"
        f"Content-Type: {reply.content_type}\r\n"
        f"Content-Length: {len(reply.body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("latin-1")
    return head if head_only else head + reply.body


def _serve(app: App) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                async with asyncio.timeout(READ_TIMEOUT):
                    method, path = await _read_request(reader)
            except (ValueError, TimeoutError, asyncio.LimitOverrunError):
                writer.write(_response(Reply(400, b"bad request"), False))
            else:
                handler = app.get(path)
                if handler is None:
                    reply = Reply(404, b"404: Not Found")
                elif method not in ("GET", "HEAD"):
                    reply = Reply(405, b"405: Method Not Allowed")
                else:
                    reply = await handler()
                writer.write(_response(reply, method == "HEAD"))
            await writer.drain()
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError):
            pass  # the client went away
        finally:
            writer.close()
            with contextlib.suppress(OSError, ssl.SSLError):
                await writer.wait_closed()

    return serve


class Servers:
    """Starts the metrics and health servers on their addresses; stop with :meth:`close`."""

    def __init__(self) -> None:
        self._servers: list[asyncio.Server] = []
        self.ports: dict[str, int] = {}

    async def start(
        self,
        name: str,
        app: App,
        address: str,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        bind = parse_bind_address(address)
        if bind is None:
            return
        server = await asyncio.start_server(
            _serve(app), bind[0], bind[1], ssl=ssl_context, limit=MAX_LINE * 2
        )
        self._servers.append(server)
        sockets = server.sockets or ()
        self.ports[name] = sockets[0].getsockname()[1] if sockets else bind[1]

    async def close(self) -> None:
        for server in reversed(self._servers):
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()
        self._servers.clear()
