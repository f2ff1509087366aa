"""A forward HTTP proxy, as ``HTTP_PROXY``/``HTTPS_PROXY`` or a kubeconfig's ``proxy-url`` name
one, that records what it was asked.

* absolute-form requests (``GET http://host:port/path HTTP/1.1``) are sent on to the origin in
  origin-form (``GET /path``), without the hop-by-hop fields, and the answer is relayed as it
  comes; the connection to the client closes after each answer (``Connection: close``);
* ``CONNECT host:port`` opens a tunnel: ``200`` and then bytes both ways, so TLS stays between
  the client and the origin;
* with ``credentials``, a request without the right ``Proxy-Authorization: Basic`` gets ``407``
  with ``Proxy-Authenticate``.

Runs in the caller's event loop (``async with ForwardProxy() as proxy:``) or in a thread of its
own for synchronous callers (:meth:`ForwardProxy.start_in_thread` / :meth:`ForwardProxy.stop`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import threading
from dataclasses import dataclass
from typing import Final, Self
from urllib.parse import quote, urlsplit

from argocd_image_updater_testing.in_thread import InThread

_HEAD_LIMIT: Final = 64 * 1024
_HOP_BY_HOP: Final = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"upgrade",
    }
)


@dataclass(frozen=True, slots=True)
class ProxiedRequest:
    """One request the proxy was asked: ``method``, the ``target`` as sent (an absolute URL, or
    ``host:port`` for ``CONNECT``), the ``Proxy-Authorization`` value (None when absent) and the
    status the proxy answered itself (407, 502, …) or 0 when it forwarded or tunnelled."""

    method: str
    target: str
    proxy_authorization: str | None
    refused: int = 0

    @property
    def authorized(self) -> bool:
        return self.proxy_authorization is not None


class _Refused(Exception):
    def __init__(self, status: int, reason: str, headers: tuple[tuple[str, str], ...] = ()):
        super().__init__(f"{status} {reason}")
        self.status, self.reason, self.headers = status, reason, headers


class ForwardProxy(InThread):
    """``credentials`` ``(user, password)``: require them as ``Proxy-Authorization: Basic``."""

    def __init__(self, *, credentials: tuple[str, str] | None = None) -> None:
        self.credentials = credentials
        self.host, self.port = "127.0.0.1", 0
        self.requests: list[ProxiedRequest] = []
        """Every request, in the order their heads arrived."""
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[None]] = set()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """The proxy's URL (without credentials)."""
        return f"http://{self.host}:{self.port}"

    def url_with_credentials(self, user: str, password: str) -> str:
        return f"http://{quote(user, safe='')}:{quote(password, safe='')}@{self.host}:{self.port}"

    def seen(self) -> list[ProxiedRequest]:
        """A copy of :attr:`requests` (safe to read while the proxy serves from a thread)."""
        with self._lock:
            return list(self.requests)

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    # -- life cycle --

    async def start(self) -> Self:
        self._server = await asyncio.start_server(self._serve, self.host, 0, limit=_HEAD_LIMIT)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        if self._handlers:
            await asyncio.wait(list(self._handlers), timeout=10)
        await server.wait_closed()

    # -- serving --

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self._writers.add(writer)
        try:
            await self._one(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._handlers.discard(task)
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line, *lines = head[:-4].split(b"\r\n")
        parts = line.split(b" ")
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
            await _answer(writer, 400, "Bad Request")
            return
        method, target = parts[0].decode("ascii"), parts[1].decode("ascii")
        fields: list[tuple[bytes, bytes]] = []
        for raw in lines:
            name, _, value = raw.partition(b":")
            fields.append((name.strip(), value.strip()))
        authorization = next(
            (v.decode("latin-1") for n, v in fields if n.lower() == b"proxy-authorization"), None
        )
        try:
            self._authorize(authorization)
            if method == "CONNECT":
                origin_reader, origin_writer = await self._open(target)
            else:
                origin_reader, origin_writer = await self._forward(method, target, fields, reader)
        except _Refused as refused:
            self._record(ProxiedRequest(method, target, authorization, refused.status))
            await _answer(writer, refused.status, refused.reason, refused.headers)
            return
        self._record(ProxiedRequest(method, target, authorization))
        self._writers.add(origin_writer)
        try:
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
                await asyncio.gather(_pipe(origin_reader, writer), _pipe(reader, origin_writer))
            else:
                await _relay_answer(origin_reader, writer)
        finally:
            self._writers.discard(origin_writer)
            origin_writer.close()

    def _record(self, request: ProxiedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _authorize(self, authorization: str | None) -> None:
        if self.credentials is None:
            return
        token = base64.b64encode(":".join(self.credentials).encode()).decode("ascii")
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "basic" or given.strip() != token:
            raise _Refused(
                407,
                "Proxy Authentication Required",
                (("Proxy-Authenticate", 'Basic realm="proxy"'),),
            )

    async def _open(self, authority: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        host, _, port = authority.rpartition(":")
        if not host or not port.isdigit():
            raise _Refused(400, "Bad Request")
        try:
            return await asyncio.open_connection(host.strip("[]"), int(port))
        except OSError:
            raise _Refused(502, "Bad Gateway") from None

    async def _forward(
        self,
        method: str,
        target: str,
        fields: list[tuple[bytes, bytes]],
        reader: asyncio.StreamReader,
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        url = urlsplit(target)
        if url.scheme != "http" or not url.hostname:
            raise _Refused(400, "Bad Request")  # origin-form, or https:// without CONNECT
        if any(n.lower() == b"transfer-encoding" for n, _ in fields):
            raise _Refused(501, "Not Implemented")  # chunked request bodies are not relayed
        length = next((v for n, v in fields if n.lower() == b"content-length"), b"0")
        if not length.isdigit():
            raise _Refused(400, "Bad Request")
        body = await reader.readexactly(int(length))
        origin_reader, origin_writer = await self._open(f"{url.hostname}:{url.port or 80}")
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        out = [f"{method} {path} HTTP/1.1".encode("ascii")]
        out += [n + b": " + v for n, v in fields if n.lower() not in _HOP_BY_HOP]
        out.append(b"Connection: close")
        origin_writer.write(b"\r\n".join(out) + b"\r\n\r\n" + body)
        await origin_writer.drain()
        return origin_reader, origin_writer


async def _relay_answer(origin: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The origin's answer (it closes after it: the request said ``Connection: close``) with
    ``Connection: close`` for the client, then the body as it comes."""
    head = await origin.readuntil(b"\r\n\r\n")
    line, *lines = head[:-4].split(b"\r\n")
    kept = [raw for raw in lines if raw.partition(b":")[0].strip().lower() not in _HOP_BY_HOP]
    writer.write(b"\r\n".join([line, *kept, b"Connection: close"]) + b"\r\n\r\n")
    await _pipe(origin, writer)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until ``reader`` ends, then half-close ``writer`` (or close it if it cannot)."""
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    if writer.can_write_eof():
        with contextlib.suppress(ConnectionError, OSError):
            writer.write_eof()
    else:
        writer.close()


async def _answer(
    writer: asyncio.StreamWriter,
    status: int,
    reason: str,
    headers: tuple[tuple[str, str], ...] = (),
) -> None:
    body = f"{status} {reason}\n".encode()
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{n}: {v}" for n, v in headers)]
    lines += ["Content-Type: text/plain", f"Content-Length: {len(body)}", "Connection: close"]
    writer.write("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + body)
    with contextlib.suppress(ConnectionError, OSError):
        await writer.drain()
