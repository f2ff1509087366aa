"""Registry clients notice a keep-alive connection the registry closed, as httpcore alone does."""

from __future__ import annotations

import asyncio

from argocd_image_updater.registry.streams import Backend
from argocd_image_updater.registry.transport import http_client

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}"


async def test_registry_clients_use_the_cheap_readability_check(endpoint_for) -> None:
    async with http_client(endpoint_for("http://127.0.0.1:1")) as http:
        assert isinstance(http._transport._pool._network_backend, Backend)  # type: ignore[attr-defined]


async def test_a_connection_the_server_closed_is_not_reused(endpoint_for) -> None:
    connections = 0

    async def answer_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await reader.readuntil(b"\r\n\r\n")
        writer.write(RESPONSE)  # keep-alive by default, then closed without a word
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(answer_once, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with http_client(endpoint_for(f"http://127.0.0.1:{port}")) as http:
            first = await http.get(f"http://127.0.0.1:{port}/v2/")
            pool = http._transport._pool  # type: ignore[attr-defined]
            deadline = asyncio.get_running_loop().time() + 10
            # the close reaches the client socket, which becomes readable (EOF): the pool drops
            # the connection (if it is not dropped yet, it must count as expired)
            while not all(c.has_expired() for c in pool.connections):
                assert asyncio.get_running_loop().time() < deadline, "the close never arrived"
                await asyncio.sleep(0.01)
            second = await http.get(f"http://127.0.0.1:{port}/v2/")
    finally:
        server.close()
        await server.wait_closed()
    assert (first.status_code, second.status_code) == (200, 200)
    assert connections == 2


async def test_an_open_connection_is_reused(endpoint_for) -> None:
    connections = 0

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                writer.write(RESPONSE)
                await writer.drain()
        except asyncio.IncompleteReadError:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with http_client(endpoint_for(f"http://127.0.0.1:{port}")) as http:
            for _ in range(3):
                assert (await http.get(f"http://127.0.0.1:{port}/v2/")).status_code == 200
    finally:
        server.close()
        await server.wait_closed()
    assert connections == 1
