"""The /healthz, /readyz and /metrics server answers probes and scrapers over real sockets, and
refuses what is not a GET of one of its paths."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from argocd_image_updater.observe.health import Health
from argocd_image_updater.observe.server import Servers, health_app, metrics_app


@pytest.fixture
async def served() -> AsyncIterator[tuple[Servers, Health]]:
    servers, health = Servers(), Health(stall_after=3600)
    await servers.start("metrics", metrics_app(), "127.0.0.1:0")
    await servers.start("health", health_app(health), "127.0.0.1:0")
    await servers.start("disabled", metrics_app(), "0")
    try:
        yield servers, health
    finally:
        await servers.close()


async def test_probes_and_metrics(served: tuple[Servers, Health]) -> None:
    servers, health = served
    assert set(servers.ports) == {"metrics", "health"}
    health_url = f"http://127.0.0.1:{servers.ports['health']}"
    async with httpx.AsyncClient() as client:
        ready = await client.get(f"{health_url}/readyz")
        assert (ready.status_code, ready.text) == (503, "waiting for the first update cycle")
        health.cycle_finished()
        ready = await client.get(f"{health_url}/readyz?verbose")
        assert (ready.status_code, ready.text) == (200, "ok")
        assert ready.headers["content-type"] == "text/plain; charset=utf-8"
        alive = await client.get(f"{health_url}/healthz")
        assert (alive.status_code, alive.text) == (200, "ok")
        health.last_cycle_end -= 7200
        stalled = await client.get(f"{health_url}/healthz")
        assert stalled.status_code == 503 and stalled.text.startswith("no update cycle finished")
        scraped = await client.get(f"http://127.0.0.1:{servers.ports['metrics']}/metrics")
        assert scraped.status_code == 200
        assert scraped.headers["content-type"].startswith("text/plain; version=")
        assert "argocd_image_updater_k8s_api_requests_total" in scraped.text
        head = await client.head(f"http://127.0.0.1:{servers.ports['metrics']}/metrics")
        assert head.status_code == 200 and head.content == b""
        assert int(head.headers["content-length"]) > 0
        # Each server serves only its own paths, and only GET.
        assert (await client.get(f"{health_url}/metrics")).status_code == 404
        assert (await client.post(f"{health_url}/healthz", content=b"x")).status_code == 405


async def test_garbage_is_a_400_and_a_silent_client_is_dropped(
    served: tuple[Servers, Health],
) -> None:
    servers, _ = served
    reader, writer = await asyncio.open_connection("127.0.0.1", servers.ports["health"])
    writer.write(b"NONSENSE\r\n\r\n")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 30)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    writer.close()
    # A client that connects and goes away mid-request does not disturb the server.
    _, writer = await asyncio.open_connection("127.0.0.1", servers.ports["health"])
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    writer.close()
    async with httpx.AsyncClient() as client:
        response = await client.get(f"http://127.0.0.1:{servers.ports['health']}/healthz")
    assert response.status_code == 200
