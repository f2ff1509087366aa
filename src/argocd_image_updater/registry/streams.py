# ruff: noqa: ASYNC109 (the interface is httpcore's, with its timeout parameters)
"""Registry connections that answer httpcore's "is this idle connection readable?" cheaply.

Before each request, httpcore asks every idle connection of the pool whether its socket is
readable (a dropped keep-alive connection is). Its AnyIO streams answer by building a mapping of
every socket attribute, with a ``getpeername`` system call, for each question: with a pool of a
dozen connections to a registry that is a dozen such mappings per tag list, about 6% of the
CPU of a controller cycle. These streams look the socket up once and poll it directly; reads,
writes, TLS and timeouts stay AnyIO's.
"""

from __future__ import annotations

import select
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore

_SocketOption = Any  # httpcore's SOCKET_OPTION union


def _readable(sock: socket.socket | None) -> bool:
    """As httpcore's check: a socket that is gone counts as readable (its next read ends)."""
    if sock is None or sock.fileno() < 0:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket: socket.socket | None = inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return _readable(self._socket)
        if info == "socket":
            return self._socket
        return self._inner.get_extra_info(info)


class Backend(httpcore.AsyncNetworkBackend):
    """Wraps httpcore's backend; its streams are :class:`_Stream`."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self.inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[_SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self.inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _Stream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[_SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return _Stream(await self.inner.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


def install(transport: object) -> bool:
    """Use :class:`Backend` in an ``httpx.AsyncHTTPTransport``'s connection pool; False when the
    transport is not built as expected (another httpx or httpcore version): then it is left
    alone and works as before, only without the saving (a test checks it is installed)."""
    pool = getattr(transport, "_pool", None)
    inner = getattr(pool, "_network_backend", None)
    if not isinstance(inner, httpcore.AsyncNetworkBackend) or isinstance(inner, Backend):
        return False
    pool._network_backend = Backend(inner)  # type: ignore[union-attr]
    return True
