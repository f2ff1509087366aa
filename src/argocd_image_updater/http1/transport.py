"""An httpx transport speaking HTTP/1.1 over asyncio streams, with a keep-alive pool.

Written here because the transport httpx ships (httpcore on AnyIO, with h11) spends about
2.6 ms of CPU per small request on the reference machine — connection-pool bookkeeping, AnyIO
cancel scopes, locks and stream attributes, h11's state machine — against about 0.7 ms for the
same exchange over asyncio streams. A controller cycle sends hundreds of small requests (tag
lists, status patches), and that overhead was over half of a steady cycle's CPU. The other
maintained transport for httpx (httpx-aiohttp) brings aiohttp's client, which costs more to
import than the whole ``test`` command may take. httpx keeps everything above the wire: URLs,
headers, auth flows, redirects, content decoding, timeouts' configuration.

Scope: plain and TLS connections, keep-alive reuse with an idle limit and expiry, request bodies
of any length (chunked when httpx asks for it), responses delimited by length, by chunks or by
the close of the connection, streamed to the caller within the limits of :mod:`.reading` (a
response that breaks one closes its connection). Proxies are not spoken here: see
:func:`argocd_image_updater.http1.async_client`, which leaves proxied clients to httpx's own
transport.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import Any, Final

import httpx

from argocd_image_updater.http1.reading import (
    HEAD_LIMIT,
    Stale,
    body_pieces,
    read_response,
    step,
    waits,
)
from argocd_image_updater.http1.wire import (
    Framing,
    ProtocolError,
    ResponseHead,
    encode_request_head,
)

KEEPALIVE_SECONDS: Final = 90.0
"""How long an idle connection is kept for the next request to its host, as in Go's default
transport (the original's): a cycle that follows the last within that time reuses its
connections to the registries, Helm repositories and the Argo CD API instead of connecting
(and, over TLS, shaking hands) again. httpx's 5 seconds let every registry connection go
between two cycles even at a 5-second interval: a dozen connections made again each cycle,
about a tenth of a steady cycle's CPU for one of three replicas in ``benchmarks/sharding.py``.
A connection the server closed meanwhile is not reused (its close was seen), and a request
that may be sent twice (GET, HEAD, OPTIONS) on one it closes just then is sent again on a new
one."""
DEFAULT_LIMITS: Final = httpx.Limits(
    max_connections=100, max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_SECONDS
)
_PORTS: Final = {b"http": 80, b"https": 443}
_WHOLE_BODY: Final = 1024 * 1024
"""Bodies of a known length up to this size are read in one piece."""
_SEND_BATCH: Final = 64 * 1024
_RETRY_METHODS: Final = frozenset({b"GET", b"HEAD", b"OPTIONS"})

ConnectionKey = tuple[bytes, str, int, str]
"""scheme, host, port, TLS server name: requests with equal keys share connections."""


class _Connection:
    __slots__ = ("idle_since", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def reusable(self, now: float, expiry: float | None) -> bool:
        """Open, quiet and not idle for too long. Bytes that arrived while idle (a server's
        "408 Request Timeout" before it closes) make a connection unusable, as in httpcore."""
        if self.writer.is_closing() or self.reader.at_eof():
            return False
        if getattr(self.reader, "_buffer", None):
            return False
        return expiry is None or now - self.idle_since < expiry

    def close(self) -> None:
        self.writer.close()


class AsyncHTTP1Transport(httpx.AsyncBaseTransport):
    """HTTP/1.1 for ``http://`` and ``https://`` URLs; ``ssl_context`` verifies TLS (a default
    verifying context is built at the first TLS connection when none is given). The request
    extension ``sni_hostname`` sets the TLS server name, as with httpx's own transport."""

    def __init__(
        self, *, ssl_context: ssl.SSLContext | None = None, limits: httpx.Limits = DEFAULT_LIMITS
    ) -> None:
        self._ssl = ssl_context
        self._max_idle = limits.max_keepalive_connections
        self._expiry = limits.keepalive_expiry
        self._slots = asyncio.Semaphore(limits.max_connections) if limits.max_connections else None
        self._idle: dict[ConnectionKey, list[_Connection]] = {}
        self._idle_count = 0
        self._last_sweep = 0.0
        self._closed = False

    # --- the exchange -------------------------------------------------------------------------
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts: dict[str, float | None] = request.extensions.get("timeout") or {}
        key = self._key(request)
        method = request.method.encode("ascii")
        try:
            out = encode_request_head(method, request.url.raw_path, request.headers.raw)
        except ProtocolError as exc:
            raise httpx.LocalProtocolError(str(exc), request=request) from None
        try:
            body: bytes | None = request.content
        except httpx.RequestNotRead:  # a streamed body
            body = None
        conn, head, framing = await self._open(key, method, out, body, request, timeouts)
        return httpx.Response(
            head.status,
            headers=head.headers,
            stream=_Body(self, key, conn, framing, request, timeouts.get("read")),
            extensions={"http_version": head.http_version, "reason_phrase": head.reason},
        )

    async def fetch(
        self,
        key: ConnectionKey,
        method: bytes,
        head_out: bytes,
        body: bytes,
        timeouts: Mapping[str, float | None],
        limit: int,
    ) -> tuple[ResponseHead, bytes, bool]:
        """One exchange with the whole answer read: the response head, the body (at most
        ``limit`` bytes) and whether it was longer (its connection is then closed unread).
        ``head_out`` is the encoded request head (:func:`.wire.encode_request_head`)."""
        conn, head, framing = await self._open(key, method, head_out, body, None, timeouts)
        reader = _Body(self, key, conn, framing, None, timeouts.get("read"))
        try:
            length = framing.length
            if length is not None and length <= limit and length <= _WHOLE_BODY:
                # Most answers: a known length, read at once (no iteration over the body).
                return head, await reader.whole(), False
            body, truncated = await read_within(reader, limit)
        finally:
            await reader.aclose()
        return head, body, truncated

    async def _open(
        self,
        key: ConnectionKey,
        method: bytes,
        out: bytes,
        body: bytes | None,
        request: httpx.Request | None,
        timeouts: Mapping[str, float | None],
    ) -> tuple[_Connection, ResponseHead, Framing]:
        """A connection with the request sent and the response head read (a slot of the pool
        taken: the body's reader gives it back). ``body`` None streams ``request``'s."""
        await self._acquire(request, timeouts.get("pool"))
        try:
            for attempt in range(2):
                conn, reused = await self._connection(key, request, timeouts.get("connect"))
                try:
                    head, framing = await self._exchange(
                        conn, method, out, body, request, timeouts, reused
                    )
                except Stale:
                    conn.close()
                    if attempt == 0 and method in _RETRY_METHODS:
                        continue
                    raise httpx.RemoteProtocolError(
                        "Server disconnected without sending a response.", request=request
                    ) from None
                except BaseException:
                    conn.close()
                    raise
                break
        except BaseException:
            self._release()
            raise
        return conn, head, framing

    async def _exchange(
        self,
        conn: _Connection,
        method: bytes,
        out: bytes,
        body: bytes | None,
        request: httpx.Request | None,
        timeouts: Mapping[str, float | None],
        reused: bool,
    ) -> tuple[ResponseHead, Framing]:
        try:
            if body is None:
                assert request is not None
                async with asyncio.timeout(timeouts.get("write")):
                    await _send(conn.writer, out, request)
            else:  # in memory, as most are: one write, and a wait only if the socket is full
                conn.writer.write(out + body if body else out)
                if conn.writer.transport.get_write_buffer_size():
                    async with asyncio.timeout(timeouts.get("write")):
                        await conn.writer.drain()
        except TimeoutError:
            raise httpx.WriteTimeout("timed out sending the request", request=request) from None
        except OSError as exc:
            if reused:
                raise Stale from exc
            raise httpx.WriteError(str(exc) or type(exc).__name__, request=request) from exc
        return await read_response(conn.reader, method, timeouts.get("read"), request, reused)

    # --- the pool -----------------------------------------------------------------------------
    def _key(self, request: httpx.Request) -> ConnectionKey:
        url = request.url
        scheme = url.raw_scheme
        if scheme not in _PORTS:
            raise httpx.UnsupportedProtocol(
                f"the URL scheme {scheme.decode(errors='replace')!r} is not supported",
                request=request,
            )
        host = url.raw_host.decode("ascii")
        if not host:
            raise httpx.UnsupportedProtocol("the URL has no host", request=request)
        sni = str(request.extensions.get("sni_hostname") or "")
        return scheme, host, url.port or _PORTS[scheme], sni

    async def _acquire(self, request: httpx.Request | None, wait: float | None) -> None:
        if self._closed:
            raise RuntimeError("the HTTP transport is closed")
        if self._slots is None:
            return
        if not self._slots.locked():
            await self._slots.acquire()  # a free slot is taken at once: no wait to time
            return
        try:
            async with asyncio.timeout(wait):
                await self._slots.acquire()
        except TimeoutError:
            raise httpx.PoolTimeout(
                "timed out waiting for a free connection", request=request
            ) from None

    def _release(self) -> None:
        if self._slots is not None:
            self._slots.release()

    async def _connection(
        self, key: ConnectionKey, request: httpx.Request | None, connect_within: float | None
    ) -> tuple[_Connection, bool]:
        idle = self._idle.get(key)
        if idle:
            now = asyncio.get_running_loop().time()
            while idle:
                conn = idle.pop()
                self._idle_count -= 1
                if conn.reusable(now, self._expiry):
                    return conn, True
                conn.close()
        scheme, host, port, sni = key
        context = None
        if scheme == b"https":
            context = self._ssl
            if context is None:
                context = self._ssl = ssl.create_default_context()
        try:
            async with asyncio.timeout(connect_within):
                if context is not None and _worth_a_probe(context, host):
                    await _probe_without_trust(host, port, sni or host)
                reader, writer = await asyncio.open_connection(
                    host,
                    port,
                    ssl=context,
                    server_hostname=(sni or host) if context is not None else None,
                    limit=HEAD_LIMIT,
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(
                f"timed out connecting to {host}:{port}", request=request
            ) from None
        except OSError as exc:  # ssl.SSLError included: the cause is kept for callers
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        return _Connection(reader, writer), False

    def _put_back(self, key: ConnectionKey, conn: _Connection) -> None:
        if self._closed or (self._max_idle is not None and self._idle_count >= self._max_idle):
            conn.close()
            return
        now = asyncio.get_running_loop().time()
        conn.idle_since = now
        self._idle.setdefault(key, []).append(conn)
        self._idle_count += 1
        if self._expiry is not None and now - self._last_sweep > self._expiry:
            self._last_sweep = now
            self._sweep(now)

    def _sweep(self, now: float) -> None:
        """Close idle connections past their expiry (those of hosts no longer asked)."""
        for key, idle in list(self._idle.items()):
            keep = [conn for conn in idle if conn.reusable(now, self._expiry)]
            for conn in idle:
                if conn not in keep:
                    conn.close()
            self._idle_count -= len(idle) - len(keep)
            if keep:
                self._idle[key] = keep
            else:
                del self._idle[key]

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
        self._idle_count = 0


async def read_within(chunks: AsyncIterable[bytes], limit: int) -> tuple[bytes, bool]:
    """The bytes of ``chunks`` up to ``limit``, and whether there were more (the rest is not
    read)."""
    kept: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            kept.append(chunk[: len(chunk) - (size - limit)])
            return b"".join(kept), True
        kept.append(chunk)
    return kept[0] if len(kept) == 1 else b"".join(kept), False


_LOOPBACK_NAMES: Final = frozenset({"localhost", "::1"})


def _worth_a_probe(context: ssl.SSLContext, host: str) -> bool:
    """A loopback host, and a verifying context whose system trust store is not loaded yet
    (:class:`~argocd_image_updater.kits.tlstrust.LazyTrustContext`)."""
    if getattr(context, "trust_loaded", True) or context.verify_mode == ssl.CERT_NONE:
        return False
    return host in _LOOPBACK_NAMES or host.startswith("127.")


async def _probe_without_trust(host: str, port: int, server_name: str) -> None:
    """Try the TLS handshake with a context that trusts nothing before loading the system trust
    store (tens of milliseconds) for a loopback server. A local registry usually speaks plain
    HTTP: the handshake then fails with the same error as with the full context, and the store
    is never needed. A TLS server fails the probe's certificate check and the caller connects
    again with its own context. No request is ever sent on the probe's connection."""
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        _, writer = await asyncio.open_connection(
            host, port, ssl=probe, server_hostname=server_name
        )
    except ssl.SSLCertVerificationError:
        return  # a TLS server: verify it with the full context
    writer.close()  # cannot happen without trusted certificates; the full context decides


async def _send(writer: asyncio.StreamWriter, head: bytes, request: httpx.Request) -> None:
    """Write the head and a streamed body (chunk-coded when the request says so) in few
    writes."""
    chunked = any(
        name.lower() == b"transfer-encoding" and b"chunked" in value.lower()
        for name, value in request.headers.raw
    )
    pending = [head]
    size = len(head)
    stream: Any = request.stream
    async for chunk in stream:
        if not chunk:
            continue
        if chunked:
            pending += (b"%x\r\n" % len(chunk), chunk, b"\r\n")
        else:
            pending.append(chunk)
        size += len(chunk)
        if size >= _SEND_BATCH:
            writer.write(b"".join(pending))
            pending, size = [], 0
            await writer.drain()
    if chunked:
        pending.append(b"0\r\n\r\n")
    writer.write(b"".join(pending))
    await writer.drain()


class _Body(httpx.AsyncByteStream):
    """A response body read from its connection as the caller iterates; closing it hands the
    connection back to the pool when the body was read to its end and the server keeps it."""

    def __init__(
        self,
        transport: AsyncHTTP1Transport,
        key: ConnectionKey,
        conn: _Connection,
        framing: Framing,
        request: httpx.Request | None,
        timeout: float | None,
    ) -> None:
        self._transport = transport
        self._key = key
        self._conn = conn
        self._framing = framing
        self._request = request
        self._timeout = timeout
        self._done = framing.length == 0
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._done:
            return
        reader = self._conn.reader
        async for piece in body_pieces(reader, self._framing, self._timeout, self._request):
            yield piece
        self._done = True

    async def whole(self) -> bytes:
        """The body of a known length up to :data:`_WHOLE_BODY`, read at once (what
        iterating would yield, joined)."""
        length = self._framing.length
        assert length is not None and not self._framing.chunked
        if not self._done:
            reader = self._conn.reader
            data = await step(
                reader.readexactly(length), self._timeout, self._request, waits(reader, length)
            )
            self._done = True
            return data
        return b""

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._done and self._framing.keep_alive:
            self._transport._put_back(self._key, self._conn)
        else:
            self._conn.close()
        self._transport._release()
