"""A Helm repository that answers ``index.yaml`` with more than the index limit: the read stops
at the limit and the chart's scan fails, naming the index, instead of reading without end."""

from __future__ import annotations

import asyncio

import pytest

from argocd_image_updater.registry.helmindex import MAX_INDEX_BYTES, HelmIndex, HelmIndexError


async def test_an_endless_index_is_refused_at_the_limit() -> None:
    sent = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal sent
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        block = b"# " + b"x" * 65_000 + b"\n"
        try:
            while sent <= 2 * MAX_INDEX_BYTES:
                writer.write(b"%x\r\n%s\r\n" % (len(block), block))
                await writer.drain()
                sent += len(block)
        except ConnectionError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    index = HelmIndex()
    try:
        with pytest.raises(HelmIndexError, match=f"larger than {MAX_INDEX_BYTES} bytes"):
            await index.versions(f"http://127.0.0.1:{port}/charts", "web", None)
    finally:
        await index.aclose()
        server.close()
    assert sent < 2 * MAX_INDEX_BYTES  # the client stopped reading: the peer could not finish
