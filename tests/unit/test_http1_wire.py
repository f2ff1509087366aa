"""HTTP/1.1 message framing (RFC 9112) as the transport reads and writes it."""

from __future__ import annotations

import pytest

from argocd_image_updater.http1.wire import (
    Framing,
    ProtocolError,
    encode_request_head,
    parse_chunk_size,
    parse_response_head,
    parse_trailers,
    response_framing,
)


def framing(head: bytes, method: bytes = b"GET") -> Framing:
    return response_framing(method, parse_response_head(head))


def test_request_head_is_the_request_line_and_fields():
    head = encode_request_head(b"GET", b"/v2/a/tags/list?n=1", [(b"Host", b"r.test")])
    assert head == b"GET /v2/a/tags/list?n=1 HTTP/1.1\r\nHost: r.test\r\n\r\n"


@pytest.mark.parametrize(
    ("target", "headers"),
    [(b"/a b", []), (b"/a", [(b"X", b"1\r\nInjected: yes")]), (b"/a", [(b"X\n", b"1")])],
)
def test_request_head_refuses_line_breaks_and_spaces(target, headers):
    with pytest.raises(ProtocolError):
        encode_request_head(b"GET", target, headers)


def test_response_head_fields_and_folded_lines():
    head = parse_response_head(
        b'HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm="x",\r\n'
        b'  service="y"\r\nX-Empty:\r\n\r\n'
    )
    assert (head.http_version, head.status, head.reason) == (b"HTTP/1.1", 401, b"Unauthorized")
    assert head.headers == [
        (b"WWW-Authenticate", b'Bearer realm="x", service="y"'),
        (b"X-Empty", b""),
    ]
    assert parse_response_head(b"HTTP/1.1 200\r\n\r\n").reason == b""


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", Framing(5, False, True)),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n", Framing(5, False, True)),
        (
            b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, Close\r\nContent-Length: 5\r\n\r\n",
            Framing(5, False, False),
        ),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\n", Framing(5, False, False)),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n", Framing(None, True, True)),
        # Both framings: chunked wins and the connection is never reused.
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
            Framing(None, True, False),
        ),
        (b"HTTP/1.1 200 OK\r\n\r\n", Framing(None, False, False)),
        (b"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", Framing(0, False, True)),
        # Bare LF line ends, as h11 reads them.
        (b"HTTP/1.1 200 OK\nContent-Length: 2\n\n", Framing(2, False, True)),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\n\r\n", Framing(2, False, True)),
        (b"HTTP/1.1 304 Not Modified\r\n\r\n", Framing(0, False, True)),
    ],
)
def test_body_framing(head, expected):
    assert framing(head) == expected


def test_a_head_response_has_no_body_whatever_it_announces():
    assert framing(b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", b"HEAD") == Framing(
        0, False, True
    )


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/2 200 OK\r\n\r\n",
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nNo Colon\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n folded first\r\n\r\n",
        b"\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
        b"HTTP/1.1 099 Too Low\r\n\r\n",
        b"HTTP/1.1 1000 Too Long\r\n\r\n",
        b"HTTP/1.1  200 OK\r\n\r\n",
        b"HTTP/1.12 200 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\x0bb\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX : a\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        # Checked whatever the status: a 204 or 1xx with a bad framing field is still bad.
        b"HTTP/1.1 204 No Content\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\nTransfer-Encoding: gzip\r\n\r\n",
    ],
)
def test_invalid_response_heads(head):
    with pytest.raises(ProtocolError):
        parse_response_head(head)


def test_an_http2_status_line_names_the_version():
    with pytest.raises(ProtocolError, match="unsupported HTTP version"):
        parse_response_head(b"HTTP/2.0 200 OK\r\n\r\n")


def test_fields_normalised_as_h11_does():
    head = parse_response_head(
        b"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\ncontent-length: 5\r\n"
        b"Transfer-Encoding: CHUNKED\r\nX: \x01ctl\x7f \t\r\n\r\n"
    )
    assert head.headers == [
        (b"Content-Length", b"5"),
        (b"Transfer-Encoding", b"chunked"),
        (b"X", b"\x01ctl\x7f"),
    ]


@pytest.mark.parametrize(
    "value", [b"1, 2", b"x", b"-1", b"1.0", b"+1", b"1_0", b"\xd9\xa1", b"9" * 21, b"9" * 5000]
)
def test_invalid_content_lengths(value):
    with pytest.raises(ProtocolError):
        framing(b"HTTP/1.1 200 OK\r\nContent-Length: " + value + b"\r\n\r\n")


def test_differing_content_length_fields_are_refused_equal_ones_kept_once():
    with pytest.raises(ProtocolError, match="conflicting"):
        framing(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
    assert framing(b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\nContent-Length: 20\r\n\r\n") == (
        Framing(20, False, True)
    )
    assert framing(b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 20 + b"\r\n\r\n").length == (
        10**20 - 1
    )


def test_trailers_are_checked_as_fields():
    assert parse_trailers(b"\r\n") == []
    assert parse_trailers(b"\n") == []
    assert parse_trailers(b"X-Sum: 1\nY: 2\r\n\r\n") == [(b"X-Sum", b"1"), (b"Y", b"2")]
    for bad in (b"no colon\r\n\r\n", b"X: a\x00\r\n\r\n", b"Content-Length: x\r\n\r\n"):
        with pytest.raises(ProtocolError):
            parse_trailers(bad)


def test_chunk_sizes():
    assert parse_chunk_size(b"1A") == 26
    assert parse_chunk_size(b"0;ext=1") == 0
    assert parse_chunk_size(b"5 \t") == parse_chunk_size(b"5;a b\rc ") == 5
    assert parse_chunk_size(b"0" * 19 + b"1") == 1
    assert parse_chunk_size(b"7fffffffffff") == 0x7FFFFFFFFFFF
    for bad in (b"", b"g", b"-1", b"1" * 21, b" 5", b"5 ;x", b"5;a\nb", b"0x5"):
        with pytest.raises(ProtocolError):
            parse_chunk_size(bad)
