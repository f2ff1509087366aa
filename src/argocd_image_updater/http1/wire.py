"""HTTP/1.1 messages on the wire (RFC 9112): a request head out, a response head in, and how
the response body is framed. Pure functions over bytes; reading them from a connection is in
:mod:`.reading`.

What a response may hold is what h11 (the parser of httpx's own transport) accepts, checked by
a differential test (``tests/unit/test_http1_differential.py``): heads with CRLF or bare LF line
ends, folded header lines, field values without NUL, CR, LF, VT or FF, a ``Content-Length`` of
at most 20 digits (several only when they agree), ``Transfer-Encoding: chunked`` and no other
coding, no ``101`` without an upgrade asked for (this client never asks). Stricter than h11, on
purpose: an HTTP version other than ``HTTP/1.x`` is refused (see :mod:`.reading` for the size
and count limits).
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

Headers = list[tuple[bytes, bytes]]

NO_BODY_STATUS: Final = frozenset({204, 304})
CONTENT_LENGTH_MAX_DIGITS: Final = 20
"""As h11: up to 10^20 - 1 bytes, and never a number Python refuses to convert."""

_LINE_BREAK: Final = re.compile(rb"[\r\n]")
_STATUS_LINE: Final = re.compile(rb"(HTTP/1\.[0-9]) ([0-9]{3})(?: ([^\x00\n\r\x0b\x0c]*))?")
"""h11's status line, its version narrowed to 1.x; the reason may be absent."""
_FIELD: Final = re.compile(
    rb"([-!#$%&'*+.^_`|~0-9a-zA-Z]+):[ \t]*"
    rb"((?:[^\x00\t\n\x0b\x0c\r ]+(?:[ \t]+[^\x00\t\n\x0b\x0c\r ]+)*)?)[ \t]*"
)
"""A header field (RFC 9110 section 5): a token, a colon, the value without NUL, CR, LF, VT or
FF (as h11's ``field-value``), optional whitespace around it."""
_FOLD: Final = re.compile(rb"[ \t]+")
_DIGITS: Final = re.compile(rb"[0-9]+")
_CHUNK_LINE: Final = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;[^\n]*)?[ \t]*")
"""A chunk-size line without its CRLF, as h11 reads it: 1 to 20 hex digits, any extension
(ignored), trailing whitespace."""


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


def _lines(data: bytes) -> list[bytes]:
    """The lines of a head or trailer section ending with its empty line: split at LF, one CR
    before it dropped (h11's reading)."""
    lines = [line[:-1] if line.endswith(b"\r") else line for line in data.split(b"\n")]
    if len(lines) < 2 or lines[-1] or lines[-2]:
        raise ProtocolError("a head without its empty line")
    del lines[-2:]
    return lines


def parse_response_head(data: bytes) -> ResponseHead:
    """A response head, ``data`` ending with the empty line (CRLF or bare LF line ends). Any
    status from 100 to 999 but 101 (this client never asks for an upgrade)."""
    lines = _lines(data)
    if not lines or not lines[0]:
        raise ProtocolError("no status line before the empty line")
    match = _STATUS_LINE.fullmatch(lines[0])
    if match is None:
        shown = lines[0][:80]
        if shown.startswith(b"HTTP/") and not shown.startswith(b"HTTP/1."):
            raise ProtocolError(f"unsupported HTTP version in the status line {shown!r}")
        raise ProtocolError(f"invalid status line {shown!r}")
    version, code, reason = match.groups()
    status = int(code)
    if status < 100:
        raise ProtocolError(f"invalid status code {status:03d}")
    if status == 101:
        raise ProtocolError("a 101 Switching Protocols answer to a request that asked for none")
    return ResponseHead(version, status, reason or b"", parse_fields(lines[1:]))


def parse_trailers(data: bytes) -> Headers:
    """The trailer section of a chunked body (``data`` ending with its empty line), checked as
    header fields are."""
    return parse_fields(_lines(data))


def parse_fields(lines: list[bytes]) -> Headers:
    """Header field lines: folded lines joined (RFC 9112 section 5.2, as h11 does), each field
    checked, ``Content-Length`` and ``Transfer-Encoding`` checked and normalised as h11 does
    (one ``Content-Length``, its value a number; ``Transfer-Encoding`` once, ``chunked``)."""
    joined: list[bytes] = []
    for line in lines:
        fold = _FOLD.match(line)
        if fold is None:
            joined.append(line)
        elif not joined:
            raise ProtocolError("a folded header line without a header before it")
        else:
            joined[-1] += b" " + line[fold.end() :]
    headers: Headers = []
    length: bytes | None = None
    coded = False
    for line in joined:
        match = _FIELD.fullmatch(line)
        if match is None:
            raise ProtocolError(f"invalid header line {line[:80]!r}")
        name, value = match.groups()
        lowered = name.lower()
        if lowered == b"content-length":
            values = {part.strip() for part in value.split(b",")}
            if len(values) != 1:
                raise ProtocolError("conflicting Content-Length values")
            (value,) = values
            if len(value) > CONTENT_LENGTH_MAX_DIGITS or not _DIGITS.fullmatch(value):
                raise ProtocolError(f"invalid Content-Length {value[:40]!r}")
            if length is not None:
                if length != value:
                    raise ProtocolError("conflicting Content-Length values")
                continue  # the same length again: kept once
            length = value
        elif lowered == b"transfer-encoding":
            if coded:
                raise ProtocolError("more than one Transfer-Encoding field")
            value = value.lower()
            if value != b"chunked":
                raise ProtocolError(
                    f"unsupported Transfer-Encoding {value[:40]!r} (only chunked is read)"
                )
            coded = True
        headers.append((name, value))
    return headers


def response_framing(method: bytes, head: ResponseHead) -> Framing:
    """How the body of ``head`` (the answer to ``method``, from :func:`parse_response_head`)
    is delimited (RFC 9112 section 6.3)."""
    connection = b""
    chunked = False
    length: int | None = None
    for name, value in head.headers:
        lowered = name.lower()
        if lowered == b"connection":
            connection += b"," + value.lower()
        elif lowered == b"transfer-encoding":
            chunked = True
        elif lowered == b"content-length":
            length = int(value)
    keep_alive = head.http_version == b"HTTP/1.1" and b"close" not in _tokens(connection)
    if method == b"HEAD" or head.status in NO_BODY_STATUS or head.status < 200:
        return Framing(0, False, keep_alive)
    if chunked:
        # With a Content-Length as well the message may be an attack: never reuse it.
        return Framing(None, True, keep_alive and length is None)
    if length is not None:
        return Framing(length, False, keep_alive)
    return Framing(None, False, False)


def _tokens(value: bytes) -> list[bytes]:
    return [token.strip() for token in value.split(b",") if token.strip()]


def parse_chunk_size(line: bytes) -> int:
    """The size in a chunk-size line without its CRLF (extensions ignored)."""
    match = _CHUNK_LINE.fullmatch(line)
    if match is None:
        raise ProtocolError(f"invalid chunk size line {line[:40]!r}")
    return int(match[1], 16)
