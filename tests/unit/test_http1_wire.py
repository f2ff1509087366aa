"""HTTP/1.1 message framing (RFC 9112) as the transport reads and writes it."""

from __future__ import annotations

import pytest

from argocd_image_updater.http1.wire import (
    Framing,
    ProtocolError,
    encode_request_head,
    parse_chunk_size,
    parse_response_head,
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
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", Framing(None, True, True)),
        # Both framings: chunked wins and the connection is never reused.
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
            Framing(None, True, False),
        ),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", Framing(None, False, False)),
        (b"HTTP/1.1 200 OK\r\n\r\n", Framing(None, False, False)),
        (b"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", Framing(0, False, True)),
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
    ],
)
def test_invalid_response_heads(head):
    with pytest.raises(ProtocolError):
        parse_response_head(head)


@pytest.mark.parametrize("value", [b"1, 2", b"x", b"-1", b"1.0"])
def test_invalid_content_lengths(value):
    with pytest.raises(ProtocolError):
        framing(b"HTTP/1.1 200 OK\r\nContent-Length: " + value + b"\r\n\r\n")


def test_chunk_sizes():
    assert parse_chunk_size(b"1A") == 26
    assert parse_chunk_size(b"0;ext=1") == 0
    for bad in (b"", b"g", b"-1", b"1" * 17):
        with pytest.raises(ProtocolError):
            parse_chunk_size(bad)
