"""A registry that answers ``tags/list`` the way a broken or hostile one would, byte by byte.

It writes raw bytes on a socket (no HTTP library would send these answers). The repository name
chooses the misbehaviour; ``/v2/`` answers ``200 {}`` so that a client gets as far as the tag list:

* ``huge-chunk``: chunked, the first chunk claims ``7fffffffffff`` bytes, then ``stream_bytes``
  bytes follow (the peer closes after them);
* ``endless-trailers``: a chunked body with a valid last chunk, then trailer lines without end;
* ``long-length``: a ``Content-Length`` of 5,000 digits;
* ``switch``: an unsolicited ``101 Switching Protocols``;
* ``trickle``: a valid head, then the body one byte every ``trickle_interval`` seconds;
* ``interim``: ``100 Continue`` heads without end;
* anything else: ``404``.

It counts connections and how many are still open, so a test can tell that a client closed
what it gave up on. Start it with ``async with`` in a test's loop or :meth:`start_in_thread`.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

from argocd_image_updater_testing.in_thread import InThread

BEHAVIOURS: Final = (
    "huge-chunk",
    "endless-trailers",
    "long-length",
    "switch",
    "trickle",
    "interim",
)

_TAGS_BODY: Final = b'{"name":"x","tags":["1.0.0","2.0.0"]}'


class HostileRegistry(InThread):
    def __init__(self, *, stream_bytes: int = 64 * 2**20, trickle_interval: float = 0.2) -> None:
        self.stream_bytes = stream_bytes
        self.trickle_interval = trickle_interval
        self.connections = 0
        self.open_connections = 0
        self.requests: list[str] = []
        """The request target of every request, in order."""
        self._server: asyncio.Server | None = None
        self._port = 0
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError("the HostileRegistry is not running")
        return self._port

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    async def start(self) -> HostileRegistry:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self._port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        self.open_connections += 1
        try:
            while await self._exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            # Closing the double: end quietly (asyncio's stream callback would log a cancelled
            # handler task as an error).
            pass
        finally:
            self.open_connections -= 1
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False: the connection is done."""
        head = await reader.readuntil(b"\r\n\r\n")
        target = head.split(b" ", 2)[1].decode("latin-1")
        self.requests.append(target)
        path = target.split("?", 1)[0]
        if path in ("/v2", "/v2/"):
            writer.write(_answer(200, b"{}"))
            await writer.drain()
            return True
        behaviour = _behaviour(path)
        if behaviour is None:
            writer.write(_answer(404, b'{"errors":[{"code":"NAME_UNKNOWN"}]}'))
            await writer.drain()
            return True
        await getattr(self, "_" + behaviour.replace("-", "_"))(writer)
        await reader.read()  # until the client gives up and closes
        return False

    async def _huge_chunk(self, writer: asyncio.StreamWriter) -> None:
        writer.write(_head(200, b"Transfer-Encoding: chunked\r\n") + b"7fffffffffff\r\n")
        block = b"a" * 65536
        sent = 0
        while sent < self.stream_bytes:
            writer.write(block)
            await writer.drain()
            sent += len(block)

    async def _endless_trailers(self, writer: asyncio.StreamWriter) -> None:
        body = b"%x\r\n%s\r\n0\r\n" % (len(_TAGS_BODY), _TAGS_BODY)
        writer.write(_head(200, b"Transfer-Encoding: chunked\r\n") + body)
        lines = b"".join(b"X-Trailer-%d: %s\r\n" % (i, b"t" * 64) for i in range(100))
        while True:
            writer.write(lines)
            await writer.drain()
            await asyncio.sleep(0.001)

    async def _long_length(self, writer: asyncio.StreamWriter) -> None:
        writer.write(_head(200, b"Content-Length: " + b"9" * 5000 + b"\r\n") + _TAGS_BODY)
        await writer.drain()

    async def _switch(self, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n"
        )
        await writer.drain()

    async def _trickle(self, writer: asyncio.StreamWriter) -> None:
        writer.write(_head(200, b"Content-Length: %d\r\n" % len(_TAGS_BODY)))
        for i in range(len(_TAGS_BODY)):
            writer.write(_TAGS_BODY[i : i + 1])
            await writer.drain()
            await asyncio.sleep(self.trickle_interval)

    async def _interim(self, writer: asyncio.StreamWriter) -> None:
        while True:
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await writer.drain()
            await asyncio.sleep(0.001)


def _behaviour(path: str) -> str | None:
    if not path.startswith("/v2/") or not path.endswith("/tags/list"):
        return None
    repository = path[len("/v2/") : -len("/tags/list")]
    name = repository.rsplit("/", 1)[-1]
    return name if name in BEHAVIOURS else None


def _head(status: int, fields: bytes) -> bytes:
    reason = {200: b"OK", 404: b"Not Found"}.get(status, b"X")
    return b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n%s\r\n" % (status, reason, fields)


def _answer(status: int, body: bytes) -> bytes:
    return _head(status, b"Content-Length: %d\r\n" % len(body)) + body
