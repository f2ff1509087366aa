"""CPU time per registry request of the HTTP clients the product could use.

Lists one repository's tags from the real registry (plain HTTP on loopback), ``--requests``
times in a row and ``--requests`` times 20 at a time, with each client in a new process:

- ``asyncio streams`` — the floor: the request written and the answer read by hand over one
  keep-alive connection, no HTTP library;
- ``httpx on httpcore`` — httpx with the transport it ships (httpcore on AnyIO, h11), as the
  product used it before;
- ``httpx on http1`` — httpx with the product's HTTP/1.1 transport (``client.stream``);
- ``http1.fetch`` — what the registry and Kubernetes clients send: the request head written by
  the product and handed straight to the transport, the answer read whole.

Each figure is the best and the median of ``--rounds`` processes (CPU time of the client
process divided by the requests), and the ratio to the floor from the same round.

    .venv/bin/python benchmarks/http_client.py [--requests N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys

from argocd_image_updater_testing.registry import RegistryServer
from common import machine

_CHILD = """
import asyncio, json, sys, time
kind, url, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
import httpx

async def floor(path, host, port):
    reader, writer = await asyncio.open_connection(host, port)
    lock = asyncio.Lock()
    async def get():
        async with lock:
            writer.write(f"GET {path} HTTP/1.1\\r\\nHost: {host}:{port}\\r\\n\\r\\n".encode())
            head = await reader.readuntil(b"\\r\\n\\r\\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\\r\\n")
                          if line.lower().startswith(b"content-length:"))
            json.loads(await reader.readexactly(length))
    return get, writer.close

async def main():
    parsed = httpx.URL(url)
    if kind == "floor":
        get, close = await floor(parsed.raw_path.decode(), parsed.host, parsed.port)
    else:
        if kind == "httpcore":
            client = httpx.AsyncClient()
        else:
            from argocd_image_updater.http1 import async_client, fetch
            client = async_client()
        async def get():
            if kind == "direct":
                json.loads((await fetch(client, "GET", url)).body)
            else:
                async with client.stream("GET", parsed) as response:
                    json.loads(await response.aread())
        close = None
    await get()  # connect and warm up
    began = time.process_time()
    for _ in range(count):
        await get()
    serial = time.process_time() - began
    began = time.process_time()
    for _ in range(count // 20):
        await asyncio.gather(*(get() for _ in range(20)))
    concurrent = time.process_time() - began
    print(json.dumps([serial / count, concurrent / (count // 20 * 20)]))

asyncio.run(main())
"""

CLIENTS = (
    ("floor", "asyncio streams (floor)"),
    ("httpcore", "httpx on httpcore"),
    ("http1", "httpx on http1"),
    ("direct", "http1.fetch"),
)


async def _push(url: str) -> None:
    from datetime import UTC, datetime

    from argocd_image_updater_testing.push import ImagePusher

    async with ImagePusher(url) as pusher:
        await pusher.push_image("bench/tags", "1.0.0", created=datetime(2026, 1, 1, tzinfo=UTC))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    registry = RegistryServer().start()
    try:
        asyncio.run(_push(registry.url))
        url = f"{registry.url}/v2/bench/tags/tags/list"
        figures: dict[str, list[list[float]]] = {kind: [] for kind, _ in CLIENTS}
        for _ in range(options.rounds):
            for kind, _ in CLIENTS:  # interleaved: every round measures each client once
                out = subprocess.run(
                    [sys.executable, "-c", _CHILD, kind, url, str(options.requests)],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                figures[kind].append(json.loads(out))
    finally:
        registry.stop()
    print(f"Machine: {machine()}; {options.rounds} rounds of {options.requests} requests\n")
    print(
        "| client | serial: CPU ms per request, min / median | to the floor | "
        "20 at a time: CPU ms per request, min / median | to the floor |"
    )
    print("|---|---:|---:|---:|---:|")
    for kind, label in CLIENTS:
        cells = []
        for column in (0, 1):
            values = [round_[column] * 1e3 for round_ in figures[kind]]
            ratios = [
                mine[column] / floor[column]
                for mine, floor in zip(figures[kind], figures["floor"], strict=True)
            ]
            cells.append(f"{min(values):.2f} / {statistics.median(values):.2f}")
            cells.append(f"{min(ratios):.1f}–{max(ratios):.1f}×")
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
