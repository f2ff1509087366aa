"""The HTTP/1.1 client against hostile peers on a real socket: each breach of the protocol or of
a limit is an ``httpx.RemoteProtocolError`` (or the deadline's error), the connection is closed
by the client (the peer sees it end) and never reused, and nothing is read whole that should
not be."""

from __future__ import annotations

import asyncio
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from cli_run import run_cli

from argocd_image_updater.http1 import DeadlineExceeded, async_client, fetch
from argocd_image_updater.http1.reading import MAX_INTERIM, TRAILER_LIMIT
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.retry import RetryPolicy
from argocd_image_updater.registry.client import RegistryClient
from argocd_image_updater.registry.errors import RegistryUnavailable

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
WAIT = 60.0
"""The most any wait below may take on a busy machine (they end much sooner)."""


class HostilePeer:
    """A TCP server on 127.0.0.1 that reads each request head and runs ``script`` on the
    connection; it records how many connections it saw, the bytes ``script`` sent, and each
    connection's end as the client closed it (EOF or reset)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.sent = 0
        self.closed = 0
        self._closed = asyncio.Condition()
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> HostilePeer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self._writers:
            writer.close()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=WAIT)

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def send(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(data)
        await writer.drain()
        self.sent += len(data)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                await self.script(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed the connection
        finally:
            writer.close()
            async with self._closed:
                self.closed += 1
                self._closed.notify_all()

    async def wait_closed(self, count: int = 1) -> None:
        """Until the client has closed ``count`` connections."""
        async with asyncio.timeout(WAIT), self._closed:
            await self._closed.wait_for(lambda: self.closed >= count)


def answer(data: bytes) -> Script:
    """A script that answers every request with ``data`` and keeps the connection open."""

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(data)
        await writer.drain()

    return script


async def until_closed(reader: asyncio.StreamReader) -> None:
    """Read (and drop) what the client sends until it closes the connection."""
    while await reader.read(65536):
        pass
    raise ConnectionResetError


def answers(*data: bytes) -> Script:
    """A script that answers the requests with ``data`` in turn."""
    pending = list(data)

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(pending.pop(0))
        await writer.drain()

    return script


def answer_then_wait(data: bytes) -> Script:
    """A script that answers once and then holds the connection until the client closes it."""

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(data)
        await writer.drain()
        await until_closed(reader)

    return script


CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
ENDLESS_HEAD = b"HTTP/1.1 200 OK\r\n"
"""Stands for a head whose header lines never end (:func:`endless_head`)."""
HOSTILE_HEADS = [
    pytest.param(
        b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n",
        "invalid Content-Length",
        id="5000-digit-content-length",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
        "conflicting Content-Length",
        id="differing-content-lengths",
    ),
    pytest.param(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
        "101 Switching Protocols",
        id="unsolicited-101",
    ),
    pytest.param(
        b"HTTP/1.1 103 Early Hints\r\n\r\n" * (MAX_INTERIM + 1) + b"HTTP/1.1 200 OK\r\n\r\n",
        "more than 10 interim",
        id="too-many-interim",
    ),
    pytest.param(b"HTTP/1.1 099 Low\r\n\r\n", "invalid status code", id="status-below-100"),
    pytest.param(b"HTTP/1.1 1000 High\r\n\r\n", "invalid status line", id="status-4-digits"),
    pytest.param(b"HTTP/1.1 20 Short\r\n\r\n", "invalid status line", id="status-2-digits"),
    pytest.param(b"HTTP/2.0 200 OK\r\n\r\n", "unsupported HTTP version", id="http2-line"),
    pytest.param(b"HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n", "invalid header line", id="nul-value"),
    pytest.param(b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", "invalid header line", id="cr-value"),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "unsupported Transfer-Encoding",
        id="unknown-coding",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        "unsupported Transfer-Encoding",
        id="doubled-chunked",
    ),
    pytest.param(
        CHUNKED.replace(b"\r\n\r\n", b"\r\nTransfer-Encoding: chunked\r\n\r\n"),
        "more than one Transfer-Encoding",
        id="two-coding-fields",
    ),
    pytest.param(ENDLESS_HEAD, "response head is longer", id="endless-head"),
    pytest.param(
        CHUNKED + b"3\r\nabc\r\n0\r\nBad Trailer\r\n\r\n", "trailer section", id="bad-trailer"
    ),
    pytest.param(CHUNKED + b"5\r\nabcdeXY", "a chunk without its CRLF", id="chunk-footer"),
]


def endless_head() -> Script:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\n")
        while True:
            writer.write(b"X-Filler: " + b"a" * 1000 + b"\r\n")
            await writer.drain()

    return script


@pytest.mark.parametrize("path", ["fetch", "httpx"])
@pytest.mark.parametrize(("data", "message"), HOSTILE_HEADS)
async def test_hostile_answers_are_protocol_errors_and_close_the_connection(
    data: bytes, message: str, path: str
) -> None:
    script = endless_head() if data == ENDLESS_HEAD else answer_then_wait(data)
    async with HostilePeer(script) as peer, async_client(timeout=30.0) as client:
        with pytest.raises(httpx.RemoteProtocolError, match=message):
            if path == "fetch":
                await fetch(client, "GET", f"{peer.url}/v2/")
            else:
                await client.get(f"{peer.url}/v2/")
        await peer.wait_closed()  # the client closed the socket: no leak
        peer.script = answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        assert (await fetch(client, "GET", f"{peer.url}/v2/")).body == b"ok"
    assert peer.connections == 2  # the hostile connection was never pooled


async def test_a_chunk_claiming_terabytes_is_read_in_pieces_up_to_the_limit() -> None:
    limit = 1024 * 1024
    block = b"x" * 65536

    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await peer.send(writer, CHUNKED + b"7fffffffffff\r\n")
        while peer.sent < 64 * 1024 * 1024:
            await peer.send(writer, block)
        await until_closed(reader)

    tracemalloc.start()
    try:
        async with HostilePeer(flood) as peer, async_client(timeout=30.0) as client:
            answer = await fetch(client, "GET", f"{peer.url}/v2/r/tags/list", limit=limit)
            _, peak = tracemalloc.get_traced_memory()
            await peer.wait_closed()
    finally:
        tracemalloc.stop()
    assert (len(answer.body), answer.truncated) == (limit, True)
    assert peak < 4 * limit  # the body kept and joined once, a few pieces: never the claim
    assert peer.sent < 32 * 1024 * 1024  # the client stopped reading at its limit


async def test_endless_trailers_end_at_the_trailer_limit() -> None:
    async def trailers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await peer.send(writer, CHUNKED + b"3\r\nabc\r\n0\r\n")
        while True:  # until the client closes the connection
            await peer.send(writer, b"X-Trailer: " + b"t" * 100 + b"\r\n")

    async with HostilePeer(trailers) as peer, async_client(timeout=30.0) as client:
        with pytest.raises(httpx.RemoteProtocolError, match="trailer section is longer"):
            await fetch(client, "GET", f"{peer.url}/v2/r/tags/list")
        await peer.wait_closed()
    assert peer.sent < TRAILER_LIMIT + 8 * 1024 * 1024  # what socket buffers hold, no more


async def test_bare_lf_heads_and_equal_content_lengths_are_accepted_and_reused() -> None:
    script = answers(
        b"HTTP/1.1 200 OK\nContent-Length: 2\nContent-Length: 2\nX-Folded: a\n  b\n\nhi",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nX-Sum: 1\n\n",
    )
    async with HostilePeer(script) as peer, async_client(timeout=30.0) as client:
        first = await fetch(client, "GET", f"{peer.url}/a")
        second = await fetch(client, "GET", f"{peer.url}/b")
    assert (first.body, first.header("x-folded"), first.header("content-length")) == (
        b"hi",
        "a b",
        "2",
    )
    assert second.body == b"hi"
    assert peer.connections == 1


def trickle(data: bytes, every: float = 0.2) -> Script:
    """A script that sends ``data`` one byte at a time, one every ``every`` seconds (the read
    timeout never fires), then holds the connection."""

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for byte in data:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(every)
        await until_closed(reader)

    return script


TAGS = b'{"name": "team/app", "tags": ["1.0.0", "1.1.0"]}'
TRICKLED = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(TAGS), TAGS)


async def test_a_trickling_peer_fails_at_the_deadline() -> None:
    async with HostilePeer(trickle(TRICKLED)) as peer, async_client(timeout=30.0) as client:
        async with asyncio.timeout(WAIT):
            with pytest.raises(DeadlineExceeded, match="deadline of 1s"):
                await fetch(client, "GET", f"{peer.url}/v2/team/app/tags/list", deadline=1.0)
            with pytest.raises(DeadlineExceeded):
                # through httpx's pipeline (redirects followed) as well
                await fetch(client, "GET", f"{peer.url}/v2/", deadline=1.0, follow_redirects=True)
        await peer.wait_closed(2)


async def test_a_trickling_registry_fails_the_listing_naming_registry_and_deadline() -> None:
    async with HostilePeer(trickle(TRICKLED)) as peer:
        host = peer.url.removeprefix("http://")
        endpoint = RegistryEndpoint(prefix=host, name="Slow", api_url=peer.url, timeout=1.0)
        retry = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02)
        async with RegistryClient(endpoint, retry=retry) as client, asyncio.timeout(WAIT):
            with pytest.raises(RegistryUnavailable) as caught:
                await client.list_tags("team/app")
        await peer.wait_closed()
    message = str(caught.value)
    assert f"registry {host} did not answer the tag list request of repository 'team/app'" in (
        message
    )
    assert "within its deadline of 1s" in message and "'timeout'" in message
    assert caught.value.registry == host
    assert peer.connections == 1  # not retried


async def test_registries_conf_timeout_ends_the_test_command(tmp_path: Path) -> None:
    async with HostilePeer(trickle(TRICKLED)) as peer:
        host = peer.url.removeprefix("http://")
        conf = tmp_path / "registries.conf"
        conf.write_text(
            f"registries:\n- name: Slow\n  prefix: {host}\n  api_url: {peer.url}\n  timeout: 1s\n"
        )
        result = await asyncio.to_thread(
            run_cli, "test", f"{host}/team/app", "--registries-conf-path", str(conf)
        )
    assert result.returncode != 0
    assert f"registry {host} did not answer the tag list request" in result.output
    assert "within its deadline of 1s" in result.output
