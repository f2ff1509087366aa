"""HTTP/1.1 messages on the wire (RFC 9112): a request head out, a response head in, and how
the response body is framed. Pure functions over bytes; the connection handling is in
:mod:`.transport`."""

from __future__ import annotations

import re
from typing import Final, NamedTuple

Headers = list[tuple[bytes, bytes]]

NO_BODY_STATUS: Final = frozenset({204, 304})
_TOKEN_BYTES: Final = frozenset(
    b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)
_LINE_BREAK: Final = re.compile(rb"[\r\n]")


class ProtocolError(ValueError):
    """The peer sent something that is not valid HTTP/1.1."""


class ResponseHead(NamedTuple):
    http_version: bytes
    status: int
    reason: bytes
    headers: Headers


class Framing(NamedTuple):
    """How a response body ends: ``length`` bytes (``chunked`` False, ``length`` ≥ 0), chunked
    transfer coding, or the close of the connection (``length`` None, ``chunked`` False); and
    whether the connection can carry another request afterwards."""

    length: int | None
    chunked: bool
    keep_alive: bool


def encode_request_head(method: bytes, target: bytes, headers: Headers) -> bytes:
    """The request line and header fields, ending with the empty line. Raises
    :class:`ProtocolError` for a CR or LF inside a field (request smuggling)."""
    if b" " in target or _LINE_BREAK.search(target):
        raise ProtocolError("the request target holds a space or line break")
    lines = [name + b": " + value for name, value in headers]
    if _LINE_BREAK.search(b"\0".join(lines)):
        raise ProtocolError("a header field holds a line break")
    lines.insert(0, method + b" " + target + b" HTTP/1.1")
    lines.append(b"\r\n")
    return b"\r\n".join(lines)


def parse_response_head(data: bytes) -> ResponseHead:
    """A response head, ``data`` ending with the empty line (CRLF or bare LF line ends)."""
    lines = data.replace(b"\r\n", b"\n").split(b"\n")
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise ProtocolError("empty response head")
    version, _, rest = lines[0].partition(b" ")
    code, _, reason = rest.partition(b" ")
    if not version.startswith(b"HTTP/1.") or len(code) != 3 or not code.isdigit():
        raise ProtocolError(f"invalid status line {lines[0][:80]!r}")
    headers: Headers = []
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t"):
            # obs-fold: a recipient replaces it with a space (RFC 9112 section 5.2).
            if not headers:
                raise ProtocolError("a folded header line without a header before it")
            name, value = headers[-1]
            headers[-1] = (name, value + b" " + line.strip(b" \t"))
            continue
        name, colon, value = line.partition(b":")
        if not colon or not name or not _TOKEN_BYTES.issuperset(name):
            raise ProtocolError(f"invalid header line {line[:80]!r}")
        headers.append((name, value.strip(b" \t")))
    return ResponseHead(version, int(code), reason.strip(), headers)


def response_framing(method: bytes, head: ResponseHead) -> Framing:
    """How the body of ``head`` (the answer to ``method``) is delimited (RFC 9112 section 6.3)."""
    connection = b""
    transfer_encoding = b""
    lengths: list[bytes] = []
    for name, value in head.headers:
        lowered = name.lower()
        if lowered == b"connection":
            connection += b"," + value.lower()
        elif lowered == b"transfer-encoding":
            transfer_encoding += b"," + value.lower()
        elif lowered == b"content-length":
            lengths.append(value)
    keep_alive = head.http_version == b"HTTP/1.1" and b"close" not in _tokens(connection)
    if method == b"HEAD" or head.status in NO_BODY_STATUS or head.status < 200:
        return Framing(0, False, keep_alive)
    if transfer_encoding:
        codings = _tokens(transfer_encoding)
        if codings and codings[-1] == b"chunked":
            # With a Content-Length as well the message may be an attack: never reuse it.
            return Framing(None, True, keep_alive and not lengths)
        return Framing(None, False, False)
    if lengths:
        values = {v.strip() for length in lengths for v in length.split(b",")}
        if len(values) != 1:
            raise ProtocolError("conflicting Content-Length values")
        (value,) = values
        if not value.isdigit():
            raise ProtocolError(f"invalid Content-Length {value[:40]!r}")
        return Framing(int(value), False, keep_alive)
    return Framing(None, False, False)


def _tokens(value: bytes) -> list[bytes]:
    return [token.strip() for token in value.split(b",") if token.strip()]


def parse_chunk_size(line: bytes) -> int:
    """The size in a chunk-size line (extensions ignored)."""
    size = line.split(b";", 1)[0].strip()
    if not size or len(size) > 16 or not all(c in b"0123456789abcdefABCDEF" for c in size):
        raise ProtocolError(f"invalid chunk size {line[:40]!r}")
    return int(size, 16)
