"""Loads of the system trust store (and CA files) made while building registry clients.

Builds the scanner's clients for four plain-http registries (two of them ``insecure``) and two
https registries, without sending a request, ``--rounds`` times in new processes, and counts the
calls that load certificates (``set_default_verify_paths``, ``load_verify_locations``) and their
time. A trust store loaded for a client that never speaks TLS is wasted.

    .venv/bin/python benchmarks/tls_loads.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from common import machine

_CHILD = """
import asyncio, ssl, time
counts = [0, 0.0]
for name in ("set_default_verify_paths", "load_verify_locations"):
    orig = getattr(ssl.SSLContext, name)
    def wrap(self, *a, _orig=orig, **k):
        started = time.perf_counter()
        try:
            return _orig(self, *a, **k)
        finally:
            counts[0] += 1
            counts[1] += time.perf_counter() - started
    setattr(ssl.SSLContext, name, wrap)
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.registry.scanner import Scanner
async def main():
    async with Scanner() as scanner:
        for i in range(4):
            scanner.client(RegistryEndpoint(prefix=f"r{i}.local", name=f"r{i}",
                api_url=f"http://r{i}.local:5000", insecure=i % 2 == 1))
        scanner.client(RegistryEndpoint(prefix="docker.io", name="hub",
            api_url="https://registry-1.docker.io"))
        scanner.client(RegistryEndpoint(prefix="ghcr.io", name="ghcr", api_url="https://ghcr.io"))
asyncio.run(main())
print(counts[0], counts[1])
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    loads, seconds = [], []
    for _ in range(options.rounds):
        out = subprocess.run(
            [sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True
        ).stdout.split()
        loads.append(int(out[0]))
        seconds.append(float(out[1]))
    print(f"Machine: {machine()}; {options.rounds} rounds\n")
    print("| clients built | certificate loads | load time min / median s |")
    print("|---|---:|---:|")
    print(
        f"| 4 plain-http + 2 https registries, no request | {max(loads)} | "
        f"{min(seconds):.3f} / {statistics.median(seconds):.3f} |"
    )


if __name__ == "__main__":
    main()
