"""The HTTP/1.1 transport against a scripted peer on a real socket: reuse, framing, errors,
timeouts, TLS, bodies, streaming and the pool limit."""

from __future__ import annotations

import asyncio
import gzip
import ssl
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
import trustme

from argocd_image_updater.http1 import AsyncHTTP1Transport, async_client, fetch
from argocd_image_updater.kits.tlstrust import LazyTrustContext, client_context

Reply = Callable[["Exchange"], Awaitable[bytes | None]]


class Exchange:
    """One request as the peer read it."""

    def __init__(self, conn: int, method: str, target: str, headers: dict[str, str], body: bytes):
        self.conn = conn
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body


class Peer:
    """A TCP server that reads HTTP/1.1 requests and answers each with the bytes ``reply``
    returns (None: close the connection without answering)."""

    def __init__(
        self,
        reply: Reply | None = None,
        context: ssl.SSLContext | None = None,
        raw: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]] | None = None,
    ) -> None:
        self.reply = reply
        self.context = context
        self.raw = raw
        self.exchanges: list[Exchange] = []
        self.connections = 0
        self.server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> Peer:
        self.server = await asyncio.start_server(
            self.raw or self._serve, "127.0.0.1", 0, ssl=self.context
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self._writers:
            writer.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"{'https' if self.context else 'http'}://127.0.0.1:{port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        conn = self.connections
        self._writers.append(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                line, *fields = head[:-4].decode("latin-1").split("\r\n")
                method, target, _ = line.split(" ")
                headers = {}
                for field in fields:
                    name, _, value = field.partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = b""
                if "content-length" in headers:
                    body = await reader.readexactly(int(headers["content-length"]))
                elif headers.get("transfer-encoding") == "chunked":
                    while size := int((await reader.readuntil(b"\r\n"))[:-2], 16):
                        body += (await reader.readexactly(size + 2))[:-2]
                    await reader.readuntil(b"\r\n")
                exchange = Exchange(conn, method, target, headers, body)
                self.exchanges.append(exchange)
                assert self.reply is not None
                answer = await self.reply(exchange)
                if answer is None:
                    return
                writer.write(answer)
                await writer.drain()
        finally:
            writer.close()


def ok(body: bytes = b"hello", *extra: str) -> bytes:
    head = ["HTTP/1.1 200 OK", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def always(answer: bytes) -> bytes:
    return answer


@pytest.fixture
def client_for() -> Callable[..., httpx.AsyncClient]:
    def make(**options: object) -> httpx.AsyncClient:
        limits = options.pop("limits", None) or httpx.Limits(
            max_connections=10, max_keepalive_connections=5
        )
        context = options.pop("ssl_context", None)
        transport = AsyncHTTP1Transport(ssl_context=context, limits=limits)  # type: ignore[arg-type]
        return httpx.AsyncClient(transport=transport, **options)  # type: ignore[arg-type]

    return make


async def test_keep_alive_reuses_one_connection(client_for):
    async with Peer(lambda ex: always(ok(ex.target.encode()))) as peer, client_for() as client:
        first = await client.get(f"{peer.url}/a")
        second = await client.get(f"{peer.url}/b?x=1")
        host = peer.url.removeprefix("http://")
    assert (first.status_code, first.content, first.reason_phrase) == (200, b"/a", "OK")
    assert second.content == b"/b?x=1"
    assert first.http_version == "HTTP/1.1"
    assert peer.connections == 1
    assert [ex.conn for ex in peer.exchanges] == [1, 1]
    assert peer.exchanges[0].headers["host"] == host


async def test_connection_close_is_honoured(client_for):
    async with Peer(lambda ex: always(ok(b"x", "Connection: close"))) as peer, client_for() as c:
        for _ in range(3):
            assert (await c.get(peer.url)).content == b"x"
    assert peer.connections == 3


async def test_chunked_body_with_extensions_and_trailers(client_for):
    answer = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: x\r\n\r\n"
    )
    async with Peer(lambda ex: always(answer)) as peer, client_for() as client:
        first = await client.get(peer.url)
        second = await client.get(peer.url)
    assert first.content == second.content == b"hello world"
    assert peer.connections == 1


def answer_and_close(answer: bytes) -> Callable[..., Awaitable[None]]:
    """A raw peer that reads one request head, writes ``answer`` and closes."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer)
        await writer.drain()
        writer.close()

    return serve


async def test_body_delimited_by_the_close_of_the_connection(client_for):
    answer = b"HTTP/1.0 200 OK\r\n\r\nall of it"
    async with Peer(raw=answer_and_close(answer)) as peer, client_for() as client:
        first = await client.get(peer.url)
        second = await client.get(peer.url)
    assert first.content == second.content == b"all of it"


async def test_a_reused_connection_closed_by_the_server_is_retried_for_get(client_for):
    answered: list[int] = []

    async def reply(ex: Exchange) -> bytes | None:
        # The first connection answers once, then closes on its next request unanswered.
        if ex.conn == 1 and answered.count(1) == 1:
            return None
        answered.append(ex.conn)
        return ok(b"fine")

    async with Peer(reply) as peer, client_for() as client:
        assert (await client.get(peer.url)).content == b"fine"
        assert (await client.get(peer.url)).content == b"fine"
    assert answered == [1, 2]


async def test_a_reused_connection_closed_by_the_server_fails_a_post(client_for):
    async def reply(ex: Exchange) -> bytes | None:
        return ok(b"fine") if ex.method == "GET" else None

    async with Peer(reply) as peer, client_for() as client:
        await client.get(peer.url)
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await client.post(peer.url, content=b"once only")
    assert [ex.method for ex in peer.exchanges] == ["GET", "POST"]


async def test_read_timeout_and_the_connection_is_not_reused(client_for):
    release = asyncio.Event()

    async def reply(ex: Exchange) -> bytes | None:
        if ex.target == "/slow":
            await release.wait()
        return ok(b"late" if ex.target == "/slow" else b"quick")

    async with Peer(reply) as peer, client_for(timeout=httpx.Timeout(5.0, read=0.2)) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.get(f"{peer.url}/slow")
        release.set()
        assert (await client.get(f"{peer.url}/fast")).content == b"quick"
    assert peer.connections == 2


async def test_a_body_that_stalls_after_the_head_times_out(client_for):
    """The read timeout covers the body too when it did not arrive with the head."""
    release = asyncio.Event()

    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n012")
        await writer.drain()
        await release.wait()
        writer.close()

    timeout = httpx.Timeout(5.0, read=0.2)
    async with Peer(raw=stall) as peer:
        async with client_for(timeout=timeout) as client:
            with pytest.raises(httpx.ReadTimeout, match="reading the response body"):
                await client.get(peer.url)
        async with async_client(timeout=timeout) as client:
            with pytest.raises(httpx.ReadTimeout, match="reading the response body"):
                await fetch(client, "GET", peer.url)
        release.set()


async def test_connect_refused_is_a_connect_error(client_for):
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    async with client_for() as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{port}/")


async def test_tls_verified_and_untrusted_certificate_refused(client_for):
    authority = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1", "registry.test").configure_cert(server_context)
    trusting = ssl.create_default_context()
    authority.configure_trust(trusting)
    async with Peer(lambda ex: always(ok(b"secret")), server_context) as peer:
        async with client_for(ssl_context=trusting) as client:
            assert (await client.get(peer.url)).content == b"secret"
            # The TLS server name can differ from the host connected to.
            named = await client.get(peer.url, extensions={"sni_hostname": "registry.test"})
            assert named.content == b"secret"
        async with client_for(ssl_context=ssl.create_default_context()) as client:
            with pytest.raises(httpx.ConnectError) as caught:
                await client.get(peer.url)
    assert isinstance(caught.value.__cause__, ssl.SSLCertVerificationError)


async def test_request_bodies_with_length_and_chunked(client_for):
    async def parts() -> AsyncIterator[bytes]:
        for part in (b"one ", b"", b"two ", b"three" * 20000):
            yield part

    async with Peer(lambda ex: always(ok(ex.body[:20]))) as peer, client_for() as client:
        sized = await client.patch(peer.url, json={"a": 1})
        streamed = await client.post(peer.url, content=parts())
    assert sized.content == b'{"a":1}'
    assert streamed.content == b"one two threethreeth"
    assert peer.exchanges[0].headers["content-length"] == "7"
    assert peer.exchanges[1].headers["transfer-encoding"] == "chunked"
    assert peer.exchanges[1].body == b"one two " + b"three" * 20000
    assert peer.connections == 1


async def test_head_204_304_and_interim_responses_carry_no_body(client_for):
    answers = {
        "/head": b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n",
        "/204": b"HTTP/1.1 204 No Content\r\n\r\n",
        "/304": b"HTTP/1.1 304 Not Modified\r\nETag: x\r\n\r\n",
        "/100": b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"after interim"),
    }

    async def reply(ex: Exchange) -> bytes | None:
        return answers[ex.target]

    async with Peer(reply) as peer, client_for() as client:
        head = await client.head(f"{peer.url}/head")
        no_content = await client.get(f"{peer.url}/204")
        not_modified = await client.get(f"{peer.url}/304")
        interim = await client.get(f"{peer.url}/100")
    assert (head.status_code, head.headers["content-length"], head.content) == (200, "1234", b"")
    assert (no_content.status_code, no_content.content) == (204, b"")
    assert (not_modified.status_code, not_modified.content) == (304, b"")
    assert (interim.status_code, interim.content) == (200, b"after interim")
    assert peer.connections == 1


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"HTTP/1.1 2OO OK\r\n\r\n", "invalid status line"),
        (b"HTTP/1.1 200 OK\r\nbad header\r\n\r\n", "invalid header line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy", "conflicting"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "invalid Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "invalid chunk size"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "complete message body"),
        (b"SSH-2.0-OpenSSH\r\n\r\n", "invalid status line"),
    ],
)
async def test_invalid_responses_are_protocol_errors(client_for, answer, message):
    async with Peer(raw=answer_and_close(answer)) as peer, client_for() as client:
        with pytest.raises(httpx.RemoteProtocolError, match=message):
            await client.get(peer.url)


async def test_streamed_response_arrives_as_it_is_sent(client_for):
    second_line = asyncio.Event()

    async def stream_lines(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nfirst\n\r\n")
        await writer.drain()
        await second_line.wait()
        writer.write(b"7\r\nsecond\n\r\n0\r\n\r\n")
        await writer.drain()
        writer.close()

    async with Peer(raw=stream_lines) as peer:
        lines = []
        async with client_for() as client, client.stream("GET", peer.url) as response:
            async for line in response.aiter_lines():
                lines.append(line)
                second_line.set()  # sent only once the first line was read
    assert lines == ["first", "second"]


async def test_pool_limit_queues_and_times_out(client_for):
    arrived, release = asyncio.Event(), asyncio.Event()

    async def reply(ex: Exchange) -> bytes | None:
        if ex.target == "/held":
            arrived.set()
            await release.wait()
        return ok(ex.target.encode())

    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    timeout = httpx.Timeout(30.0, pool=0.2)
    async with Peer(reply) as peer, client_for(limits=limits, timeout=timeout) as client:
        held = asyncio.create_task(client.get(f"{peer.url}/held"))
        await asyncio.wait_for(arrived.wait(), 60)
        with pytest.raises(httpx.PoolTimeout):
            await client.get(f"{peer.url}/queued")
        queued = asyncio.create_task(client.get(f"{peer.url}/queued", timeout=30.0))
        release.set()
        assert (await held).content == b"/held"
        assert (await queued).content == b"/queued"
    assert peer.connections == 1


def test_a_proxy_leaves_the_client_to_httpx(monkeypatch):
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(async_client()._transport, AsyncHTTP1Transport)
    assert not isinstance(async_client(proxy="http://proxy:3128")._transport, AsyncHTTP1Transport)
    monkeypatch.setenv("https_proxy", "http://proxy:3128")
    assert not isinstance(async_client()._transport, AsyncHTTP1Transport)


async def test_fetch_of_a_direct_client_and_with_redirects():
    async def reply(ex: Exchange) -> bytes | None:
        if ex.target == "/moved":
            return (
                b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /here\r\nContent-Length: 0\r\n\r\n"
            )
        return ok(f"{ex.target} {ex.headers.get('user-agent')} {ex.headers.get('accept')}".encode())

    async with Peer(reply) as peer, async_client(headers={"User-Agent": "ua"}) as client:
        url = httpx.URL(f"{peer.url}/moved")
        answer = await fetch(client, "GET", url, headers={"Accept": "a/b"})
        assert (answer.status, answer.header("location"), answer.url) == (307, "/here", url)
        answer = await fetch(client, "GET", url, headers={"Accept": "a/b"}, follow_redirects=True)
    assert (answer.status, answer.body, answer.path) == (200, b"/here ua a/b", "/here")
    assert peer.connections == 1


async def test_fetch_sends_the_request_httpx_would():
    """Host first, the client's fields under the call's, the base URL's path, the query and the
    body with its length; the same request through httpx's pipeline for comparison."""

    async def reply(ex: Exchange) -> bytes | None:
        return ok(b"{}")

    async with Peer(reply) as peer:
        host = peer.url.split("://")[1]
        options = {"base_url": f"{peer.url}/prefix", "headers": {"Accept": "x/y", "X-A": "1"}}
        async with async_client(**options) as client:  # type: ignore[arg-type]
            answer = await fetch(
                client,
                "PATCH",
                "/apis/a b/x",
                headers={"accept": "application/json", "Content-Type": "c/d"},
                params={"labelSelector": "app in (a,b)", "continue": "e/f+="},
                content=b'{"k": 1}',
            )
            assert answer.status == 200 and answer.json() == {}
            await client.patch(
                "/apis/a b/x",
                headers={"accept": "application/json", "Content-Type": "c/d"},
                params={"labelSelector": "app in (a,b)", "continue": "e/f+="},
                content=b'{"k": 1}',
            )
    ours, theirs = peer.exchanges
    assert (
        ours.target
        == theirs.target
        == ("/prefix/apis/a%20b/x?labelSelector=app+in+%28a%2Cb%29&continue=e%2Ff%2B%3D")
    )
    assert ours.method == "PATCH" and ours.body == theirs.body == b'{"k": 1}'
    assert ours.headers == theirs.headers
    assert ours.headers["host"] == host
    assert (ours.headers["accept"], ours.headers["x-a"]) == ("application/json", "1")
    assert ours.headers["content-length"] == "8"
    assert ours.headers["accept-encoding"] == "gzip, deflate"


async def test_fetch_limit_cuts_the_body_and_drops_the_connection():
    async def reply(ex: Exchange) -> bytes | None:
        if ex.target == "/chunked":
            return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n"
        return ok(b"0123456789")

    async with Peer(reply) as peer, async_client() as client:
        answer = await fetch(client, "GET", f"{peer.url}/a", limit=4)
        assert (answer.body, answer.truncated) == (b"0123", True)
        answer = await fetch(client, "GET", f"{peer.url}/a", limit=10)
        assert (answer.body, answer.truncated) == (b"0123456789", False)
        answer = await fetch(client, "GET", f"{peer.url}/chunked", limit=4)
        assert (answer.body, answer.truncated) == (b"abcd", True)
        answer = await fetch(client, "GET", f"{peer.url}/a")
    assert peer.connections == 3  # a cut body leaves its connection unread: never reused


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
async def test_fetch_decodes_gzip_and_deflate_within_the_limit(coding):
    text = b'{"tags": ["1.0"]}' * 100
    packed = gzip.compress(text) if coding == "gzip" else zlib.compress(text)

    async def reply(ex: Exchange) -> bytes | None:
        return ok(packed, f"Content-Encoding: {coding}")

    async with Peer(reply) as peer, async_client() as client:
        answer = await fetch(client, "GET", f"{peer.url}/t")
        assert (answer.body, answer.truncated) == (text, False)
        answer = await fetch(client, "GET", f"{peer.url}/t", limit=100)
        assert (answer.body, answer.truncated) == (text[:100], True)


async def test_fetch_answer_header_lookups_and_links():
    async def reply(ex: Exchange) -> bytes | None:
        return ok(
            b"",
            "WWW-Authenticate: Bearer realm=a",
            "www-authenticate: Basic realm=b",
            'Link: </v2/r/tags/list?last=b&n=2>; rel="next"',
        )

    async with Peer(reply) as peer, async_client() as client:
        answer = await fetch(client, "GET", f"{peer.url}/t")
    assert answer.header_list("Www-Authenticate") == ["Bearer realm=a", "Basic realm=b"]
    assert answer.header("www-authenticate") == "Bearer realm=a, Basic realm=b"
    assert answer.header("absent") == ""
    assert answer.links["next"]["url"] == "/v2/r/tags/list?last=b&n=2"
    assert answer.headers.get("content-length") == "0"


async def test_loopback_plain_http_is_found_without_loading_the_trust_store(client_for):
    received: list[bytes] = []

    async def plain_server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # What an HTTP server does with a TLS ClientHello: a 400 in plain HTTP.
        received.append(await reader.read(4096))
        writer.write(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    context = LazyTrustContext()
    async with Peer(raw=plain_server) as peer, client_for(ssl_context=context) as client:
        with pytest.raises(httpx.ConnectError) as caught:
            await client.get(peer.url.replace("http://", "https://"))
    assert isinstance(caught.value.__cause__, ssl.SSLError)
    assert "WRONG_VERSION_NUMBER" in str(caught.value.__cause__)
    assert len(received) == 1 and received[0][:1] == b"\x16"  # one TLS handshake record only
    assert not context.trust_loaded


async def test_loopback_tls_server_is_verified_with_the_full_context(client_for):
    authority = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    ca_pem = authority.cert_pem.bytes().decode()
    trusting = client_context(ca_data=ca_pem)
    async with Peer(lambda ex: always(ok(b"tls")), server_context) as peer:
        async with client_for(ssl_context=trusting) as client:
            assert (await client.get(peer.url)).content == b"tls"
        assert trusting.trust_loaded
        untrusting = LazyTrustContext()
        async with client_for(ssl_context=untrusting) as client:
            with pytest.raises(httpx.ConnectError) as caught:
                await client.get(peer.url)
    assert isinstance(caught.value.__cause__, ssl.SSLCertVerificationError)
    assert len(peer.exchanges) == 1


async def test_the_registry_client_reuses_a_connection_idle_between_two_cycles():
    """A registry connection idle for a minute (as between two cycles) is reused; one idle
    longer than the registry client keeps them is let go and a new one made."""
    from argocd_image_updater.http1.transport import KEEPALIVE_SECONDS
    from argocd_image_updater.model.registry import RegistryEndpoint
    from argocd_image_updater.registry.transport import http_client

    def idle_for(client: httpx.AsyncClient, seconds: float) -> None:
        transport = client._transport
        assert isinstance(transport, AsyncHTTP1Transport)
        for connections in transport._idle.values():
            for conn in connections:
                conn.idle_since -= seconds

    async with Peer(lambda ex: always(ok())) as peer:
        endpoint = RegistryEndpoint("registry.example", "", peer.url)
        client = http_client(endpoint)
        try:
            await client.get(f"{peer.url}/v2/")
            idle_for(client, 60)
            await client.get(f"{peer.url}/v2/")
            assert peer.connections == 1
            idle_for(client, KEEPALIVE_SECONDS)
            await client.get(f"{peer.url}/v2/")
            assert peer.connections == 2
        finally:
            await client.aclose()
