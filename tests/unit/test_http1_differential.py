"""The response reader against h11 (the parser of httpx's own transport): the same generated
byte streams, the same verdict.

Streams are made of interim and final heads with random fields (framing fields right and
wrong, folded lines, control bytes, bare LF line ends), a body framed by length, by chunks
(sizes, extensions, footers, trailers right and wrong) or by the close of the connection, and
then garbage: a byte inserted, replaced or dropped, or the stream cut short. Both readers must
accept with the same status, reason, header fields and body, or both refuse. We may refuse
where h11 accepts only for what ``http1.wire`` and ``http1.reading`` document as stricter
(:data:`STRICTER`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import h11
import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from argocd_image_updater.http1.reading import HEAD_LIMIT, MAX_INTERIM, body_pieces, read_response

STRICTER = ("unsupported HTTP version", f"more than {MAX_INTERIM} interim")
"""Our documented refusals of what h11 accepts: an HTTP version other than 1.x, more interim
responses than :data:`MAX_INTERIM`."""

Verdict = tuple[object, ...]


async def ours(stream: bytes, method: bytes) -> Verdict:
    reader = asyncio.StreamReader(limit=HEAD_LIMIT)
    reader.feed_data(stream)
    reader.feed_eof()
    try:
        head, framing = await read_response(reader, method, None, None)
        body = b"".join([piece async for piece in body_pieces(reader, framing, None, None)])
    except httpx.RemoteProtocolError as exc:
        return ("reject", str(exc))
    return ("accept", head.status, head.reason, head.headers, body)


def theirs(stream: bytes, method: bytes) -> Verdict:
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=HEAD_LIMIT)
    conn.send(h11.Request(method=method, target="/", headers=[("Host", "r.test")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(stream)
    conn.receive_data(b"")
    final: h11.Response | None = None
    body = b""
    try:
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Response):
                final = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert final is not None
                headers = list(final.headers.raw_items())
                return ("accept", final.status_code, final.reason, headers, body)
            elif not isinstance(event, h11.InformationalResponse):
                return ("reject", f"h11 event {event!r}")
    except h11.RemoteProtocolError as exc:
        return ("reject", str(exc))


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as runner:
        yield runner


# --- streams ------------------------------------------------------------------------------------
# Each part is mostly right and sometimes wrong (about one draw in eight), so that a stream is
# accepted often enough for the bodies and fields to be compared.
ODD_BYTES = [b"a", b"Z", b"0", b" ", b"\t", b",", b":", b";", b"\x00", b"\r", b"\n", b"\x0b"]
ODD_BYTES += [b"\x0c", b"\x01", b"\x7f", b"\x80", b"\xff", b"\xd9\xa1"]


def mostly(good: list[bytes], bad: list[bytes]) -> st.SearchStrategy[bytes]:
    return st.sampled_from(good * (7 * max(1, len(bad)) // len(good) + 1) + bad)


def rarely(
    odd: st.SearchStrategy[bytes], usual: st.SearchStrategy[bytes]
) -> st.SearchStrategy[bytes]:
    """``odd`` one draw in eight, else ``usual`` (hypothesis favours the ends of a range: the
    draw compares against a value inside it)."""
    return st.integers(0, 7).flatmap(lambda n: odd if n == 3 else usual)


def one_in(draw: st.DrawFn, n: int) -> bool:
    return draw(st.integers(0, n - 1)) == n // 2


EOL = mostly([b"\r\n", b"\r\n", b"\n"], [b"\r", b"\r\r\n", b"\n\r"])
odd_text = st.lists(st.sampled_from(ODD_BYTES), min_size=1, max_size=5).map(b"".join)
values = rarely(odd_text, mostly([b"", b"x", b"a b", b"gzip", b"close", b"v, w"], [b" v "]))
versions = mostly([b"HTTP/1.1", b"HTTP/1.1", b"HTTP/1.0"], [b"HTTP/2.0", b"HTTP/1.12", b"HTTP/1"])
reasons = rarely(
    odd_text.map(b" ".__add__), mostly([b" OK", b"", b" Not Found", b" "], [b"  Two  Spaces "])
)
lengths_text = mostly(
    [b"5", b"0", b"5, 5", b"00005"],
    [b"5,6", b"x", b"-1", b"+5", b" 5", b"9" * 21, b"1_0", b"\xd9\xa1", b""],
)
codings = mostly(
    [b"chunked", b"Chunked"], [b"gzip", b"gzip, chunked", b"chunked, chunked", b"identity", b""]
)
names = mostly(
    [b"X-A", b"x-b", b"Connection", b"ETag"], [b"Bad Name", b"", b"X\x00", b"Content-Length "]
)
spaces = mostly([b" ", b"", b"  ", b"\t"], [b"\x0b"])


@st.composite
def field(draw: st.DrawFn, name: bytes | None = None, value: bytes | None = None) -> bytes:
    if name is None:
        name = draw(names)
    if value is None:
        value = draw(values) if one_in(draw, 4) else b"v"
    line = name + b":" + draw(spaces) + value + draw(spaces)
    if one_in(draw, 10):  # an obs-fold continuation line
        line += draw(EOL) + draw(st.sampled_from([b" ", b"\t", b"  "])) + draw(values)
    return line


@st.composite
def head(draw: st.DrawFn, status: bytes, framing_fields: list[bytes]) -> bytes:
    lines = [draw(versions) + b" " + status + draw(reasons)]
    fields = framing_fields + draw(st.lists(field(), max_size=2))
    lines += draw(st.permutations(fields)) if fields else []
    if one_in(draw, 20):
        lines.insert(1, b" folded first")
    eol = draw(EOL)
    return b"".join(line + eol for line in lines) + draw(EOL)


@st.composite
def chunked_body(draw: st.DrawFn) -> bytes:
    out = b""
    for data in draw(st.lists(st.binary(min_size=1, max_size=12), max_size=3)):
        size = len(data) + draw(mostly([b"0"], [b"1", b"-1"]).map(int))
        form = draw(mostly([b"%x", b"%X", b"000%x", b"%x;ext=1", b"%x \t"], [b" %x", b"%x ;e"]))
        footer = draw(mostly([b"\r\n"], [b"\n", b"", b"\r\r\n"]))
        out += form % max(size, 0) + b"\r\n" + data + footer
    last = draw(mostly([b"0", b"000", b"0;last", b"0 "], [b"0x0", b""]))
    trailers = draw(st.lists(field(), max_size=2))
    if one_in(draw, 8):
        trailers.append(draw(field(b"Content-Length", draw(lengths_text))))
    eol = draw(EOL)
    return out + last + b"\r\n" + b"".join(t + eol for t in trailers) + draw(EOL)


@st.composite
def response(draw: st.DrawFn) -> bytes:
    stream = b""
    for _ in range(draw(st.sampled_from([0] * 8 + [1, 2, MAX_INTERIM, MAX_INTERIM + 1]))):
        status = draw(mostly([b"100", b"102", b"103", b"199"], [b"101"]))
        stream += draw(head(status, draw(st.lists(field(), max_size=1))))
    status = draw(
        rarely(
            st.integers(100, 999).map(lambda n: b"%d" % n),
            mostly(
                [b"200", b"204", b"304", b"404", b"299", b"999"],
                [b"099", b"000", b"1000", b"20", b"2OO", b"100"],
            ),
        )
    )
    mode = draw(st.sampled_from(["length", "chunked", "close"]))
    body = draw(st.binary(max_size=20))
    framing: list[bytes] = []
    if mode == "chunked":
        framing.append(draw(field(b"Transfer-Encoding", draw(codings))))
        if one_in(draw, 8):
            framing.append(draw(field(b"Transfer-Encoding", b"chunked")))
        if one_in(draw, 8):
            framing.append(draw(field(b"Content-Length", b"%d" % len(body))))
        body = draw(chunked_body())
    elif mode == "length":
        length = draw(mostly([b"%d" % len(body)], [b"%d" % (len(body) + 1)]))
        framing.append(draw(field(b"Content-Length", length)))
        if one_in(draw, 8):
            framing.append(draw(field(b"content-length", draw(lengths_text))))
    return stream + draw(head(status, framing)) + body


@st.composite
def mangled(draw: st.DrawFn) -> bytes:
    stream = draw(response())
    how = draw(st.sampled_from(["none"] * 6 + ["insert", "replace", "drop", "cut"]))
    if how == "none" or not stream:
        return stream
    at = draw(st.integers(0, len(stream) - 1))
    byte = draw(st.sampled_from(ODD_BYTES))
    if how == "insert":
        return stream[:at] + byte + stream[at:]
    if how == "replace":
        return stream[:at] + byte + stream[at + 1 :]
    if how == "drop":
        return stream[:at] + stream[at + 1 :]
    return stream[:at]


# --- the property -------------------------------------------------------------------------------
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(stream=mangled(), method=st.sampled_from([b"GET", b"GET", b"GET", b"HEAD"]))
@example(stream=b"HTTP/1.1 200 OK\nContent-Length: 2\n\nhi", method=b"GET")
@example(stream=b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\nX", method=b"GET")
@example(
    stream=b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a\rb\r\nhello\r\n0\r\n\r\n",
    method=b"GET",
)
@example(stream=b"HTTP/1.1 101 Switching Protocols\r\n\r\n", method=b"GET")
@example(stream=b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", method=b"GET")
@example(stream=b"HTTP/1.1 204 No Content\r\nContent-Length: x\r\n\r\n", method=b"GET")
@example(stream=b"HTTP/1.1 200 OK\r\nX: a\r\n  \r\n\r\n", method=b"GET")
def test_same_verdict_as_h11(runner: asyncio.Runner, stream: bytes, method: bytes) -> None:
    mine = runner.run(ours(stream, method))
    reference = theirs(stream, method)
    if mine[0] == "reject" and reference[0] == "accept":
        assert any(reason in str(mine[1]) for reason in STRICTER), (mine, reference)
        return
    if mine[0] == "accept" and reference[0] == "accept":
        assert mine == reference
        return
    assert mine[0] == reference[0], (mine, reference)


def test_the_generator_reaches_both_verdicts_and_every_framing() -> None:
    """The streams above are not all refused (or all accepted): a guard on the generator, on a
    fixed sequence of examples."""
    seen: set[tuple[object, bool]] = set()

    @settings(max_examples=100, deadline=None, database=None, derandomize=True)
    @given(stream=response())
    def collect(stream: bytes) -> None:
        verdict = theirs(stream, b"GET")
        fields = verdict[3] if verdict[0] == "accept" else []
        assert isinstance(fields, list)
        seen.add((verdict[0], any(name.lower() == b"transfer-encoding" for name, _ in fields)))

    collect()
    assert {("accept", True), ("accept", False), ("reject", False)} <= seen
