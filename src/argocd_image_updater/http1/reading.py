"""Reading an HTTP/1.1 response from an asyncio stream: the head (interim responses skipped),
then the body by its framing, in pieces, the trailer section checked and dropped.

Every limit here holds against a hostile peer, whatever it announces: a head is at most
:data:`HEAD_LIMIT` bytes, a trailer section :data:`TRAILER_LIMIT`, at most :data:`MAX_INTERIM`
interim (1xx) responses come before the final one, and a body is read in pieces of at most
:data:`PIECE` bytes, so a reader that stops at its limit never holds more than that and one
piece (a chunk claiming ``7fffffffffff`` bytes is read like any other). Every failure is an
httpx exception: :class:`httpx.RemoteProtocolError` for what is not valid HTTP/1.1 (the
connection is then never reused), :class:`httpx.ReadTimeout` and :class:`httpx.ReadError`.
The overall deadline of a request is :func:`argocd_image_updater.http1.fetch`'s.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable
from typing import Final

import httpx

from argocd_image_updater.http1.wire import (
    Framing,
    ProtocolError,
    ResponseHead,
    parse_chunk_size,
    parse_response_head,
    parse_trailers,
    response_framing,
)

HEAD_LIMIT: Final = 64 * 1024
"""The longest response head (status line and header fields), and the longest line of a body
(a chunk-size line)."""
TRAILER_LIMIT: Final = 16 * 1024
"""The longest trailer section of a chunked body."""
MAX_INTERIM: Final = 10
"""The most interim (1xx) responses accepted before the final one."""
PIECE: Final = 64 * 1024
"""The most bytes of a body read at once, whatever its framing announces."""
_READ_AT_MOST: Final = 1024 * 1024
"""What one read of a body asks for (it returns what arrived, at most about two stream
buffers of :data:`HEAD_LIMIT` each)."""
_BLANK_LINE: Final = re.compile(rb"\n\r?\n")


class Stale(Exception):
    """A reused connection was closed by the server before it answered."""


async def read_response(
    reader: asyncio.StreamReader,
    method: bytes,
    read_timeout: float | None,
    request: httpx.Request | None,
    reused: bool = False,
) -> tuple[ResponseHead, Framing]:
    """The final response's head and framing, interim responses read and dropped. ``reused``:
    a connection closed before any byte raises :class:`Stale` (the request may be sent again)."""
    for interim in range(MAX_INTERIM + 1):
        data = await _section(
            reader, HEAD_LIMIT, "response head", read_timeout, request, reused and interim == 0
        )
        try:
            head = parse_response_head(data)
            if head.status >= 200:
                return head, response_framing(method, head)
        except ProtocolError as exc:
            raise httpx.RemoteProtocolError(str(exc), request=request) from None
    raise httpx.RemoteProtocolError(
        f"more than {MAX_INTERIM} interim (1xx) responses before the final one", request=request
    )


async def _section(
    reader: asyncio.StreamReader,
    limit: int,
    what: str,
    read_timeout: float | None,
    request: httpx.Request | None,
    stale: bool,
) -> bytes:
    """The lines up to and including the first empty one (CRLF or bare LF line ends), at most
    ``limit`` bytes: a response head or a trailer section. ``read_timeout`` bounds the wait for
    the whole section (one timer: a timer per line cost a fifth of a cold cycle's reading)."""
    buffer = getattr(reader, "_buffer", None)
    if buffer:  # mostly it all arrived: one read, which cannot wait
        end = _section_end(buffer)
        if 0 < end <= limit:
            return await reader.readexactly(end)
    parts: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(read_timeout):
            while True:
                # Every part is a whole line: the section ends at the first empty line.
                if parts and buffer and 0 < (end := _section_end(buffer)) <= limit - size:
                    parts.append(await reader.readexactly(end))
                    return b"".join(parts)
                line = await _line(reader, what, request, stale and not parts, bool(parts))
                size += len(line)
                if size > limit:
                    raise httpx.RemoteProtocolError(
                        f"the {what} is longer than {limit} bytes", request=request
                    )
                parts.append(line)
                if line == b"\r\n" or line == b"\n":
                    return b"".join(parts)
    except TimeoutError:
        raise httpx.ReadTimeout(f"timed out reading the {what}", request=request) from None
    except asyncio.LimitOverrunError:
        raise httpx.RemoteProtocolError(
            f"the {what} is longer than {limit} bytes", request=request
        ) from None


def _section_end(buffer: bytes | bytearray) -> int:
    """The length of a section that ``buffer`` holds whole (it starts at a line's start), or 0."""
    end = 1 if buffer[:1] == b"\n" else 2 if buffer[:2] == b"\r\n" else 0
    if not end and (found := _BLANK_LINE.search(buffer)) is not None:
        end = found.end()
    return end


async def _line(
    reader: asyncio.StreamReader,
    what: str,
    request: httpx.Request | None,
    stale: bool,
    begun: bool,
) -> bytes:
    """One line of a section; ``stale``: a reused connection closed before any byte raises
    :class:`Stale`; ``begun``: part of the section was read already."""
    try:
        return await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as exc:
        if begun or exc.partial:
            raise httpx.RemoteProtocolError(
                f"Server disconnected in the middle of the {what}.", request=request
            ) from None
        if stale:
            raise Stale from None
        raise httpx.RemoteProtocolError(
            "Server disconnected without sending a response."
            if what == "response head"
            else f"Server disconnected before the {what}.",
            request=request,
        ) from None
    except OSError as exc:
        if stale:
            raise Stale from exc
        raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc


async def body_pieces(
    reader: asyncio.StreamReader,
    framing: Framing,
    read_timeout: float | None,
    request: httpx.Request | None,
) -> AsyncIterator[bytes]:
    """The body of a response with ``framing``, in pieces of at most :data:`PIECE` bytes (a
    length-delimited body of at most that size in one)."""
    if framing.chunked:
        while True:
            line = await step(reader.readuntil(b"\r\n"), read_timeout, request)
            try:
                size = parse_chunk_size(line[:-2])
            except ProtocolError as exc:
                raise httpx.RemoteProtocolError(str(exc), request=request) from None
            if size == 0:
                trailers = await _section(
                    reader, TRAILER_LIMIT, "trailer section", read_timeout, request, False
                )
                try:
                    parse_trailers(trailers)  # checked, not used
                except ProtocolError as exc:
                    raise httpx.RemoteProtocolError(
                        f"trailer section: {exc}", request=request
                    ) from None
                return
            while size:
                data = await step(reader.read(min(size, PIECE)), read_timeout, request)
                if not data:
                    raise _incomplete(request)
                size -= len(data)
                yield data
            if await step(reader.readexactly(2), read_timeout, request) != b"\r\n":
                raise httpx.RemoteProtocolError("a chunk without its CRLF", request=request)
    elif framing.length is not None:
        remaining = framing.length
        if remaining <= PIECE:
            if remaining:  # mostly the body arrived with the head: then no wait to time
                yield await step(
                    reader.readexactly(remaining), read_timeout, request, waits(reader, remaining)
                )
            return
        while remaining:
            data = await step(reader.read(min(remaining, _READ_AT_MOST)), read_timeout, request)
            if not data:
                raise _incomplete(request)
            remaining -= len(data)
            yield data
    else:
        while data := await step(reader.read(_READ_AT_MOST), read_timeout, request):
            yield data


def _incomplete(request: httpx.Request | None) -> httpx.RemoteProtocolError:
    return httpx.RemoteProtocolError(
        "peer closed connection without sending complete message body", request=request
    )


async def step(
    read: Awaitable[bytes],
    read_timeout: float | None,
    request: httpx.Request | None,
    timed: bool = True,
) -> bytes:
    """One read of a body under the read timeout (not ``timed``: a read of bytes already
    buffered, which cannot wait), its errors as httpx's."""
    try:
        if not timed:
            return await read
        async with asyncio.timeout(read_timeout):
            return await read
    except TimeoutError:
        raise httpx.ReadTimeout("timed out reading the response body", request=request) from None
    except asyncio.IncompleteReadError:
        raise _incomplete(request) from None
    except asyncio.LimitOverrunError:
        raise httpx.RemoteProtocolError(
            f"a chunk-size line longer than {HEAD_LIMIT} bytes", request=request
        ) from None
    except OSError as exc:
        raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc


def waits(reader: asyncio.StreamReader, length: int) -> bool:
    """Whether reading ``length`` bytes from ``reader`` may wait (they are not all buffered
    yet). asyncio's reader has no public count of its buffered bytes: without its buffer
    attribute, every read is taken to wait (and is timed)."""
    return len(getattr(reader, "_buffer", b"")) < length
