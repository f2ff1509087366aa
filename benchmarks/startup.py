"""Start-up time of the commands that need no cluster, and which heavy libraries they load.

``test IMAGE`` runs against a 1-tag repository of a real registry (plain HTTP on loopback).

Each command runs in a new Python process (as a user runs it), ``--rounds`` times; the table shows
the minimum and the median wall time, and whether ``kubernetes_asyncio`` or ``aiohttp`` were
imported (read from ``python -X importtime``, in one extra run).

    .venv/bin/python benchmarks/startup.py [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer
from common import machine, scratch_dir

HEAVY = ("kubernetes_asyncio", "aiohttp", "httpx", "pydantic", "ruamel")


def commands(local_dir: Path, image: str) -> list[tuple[str, list[str]]]:
    return [
        ("test IMAGE (1-tag repository)", ["test", image, "--loglevel", "error"]),
        ("--help", ["--help"]),
        ("version", ["version"]),
        ("test --help", ["test", "--help"]),
        ("run --help", ["run", "--help"]),
        (
            "run --once, local mode (empty directory)",
            [
                "run",
                "--once",
                "--applications-api",
                "local",
                "--local-path",
                str(local_dir),
                "--registries-conf-path",
                str(local_dir / "none.conf"),
                "--loglevel",
                "error",
            ],
        ),
    ]


async def _push_one(url: str, repository: str) -> None:
    async with ImagePusher(url) as pusher:
        await pusher.push_image(repository, "1.0.0", created=datetime(2026, 1, 1, tzinfo=UTC))


def run_once(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "argocd_image_updater", *args],
        capture_output=True,
        check=False,
        timeout=120,
    )
    return time.perf_counter() - started


def heavy_imports(args: list[str]) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "argocd_image_updater", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    found = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in result.stderr.splitlines()}
    return [name for name in HEAVY if name in found]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    local_dir = scratch_dir("startup-bench-")
    registry = RegistryServer().start()
    try:
        image = f"{registry.host}/bench/one"
        asyncio.run(_push_one(registry.url, "bench/one"))
        rows = []
        for label, args in commands(local_dir, image):
            times = [run_once(args) for _ in range(options.rounds)]
            heavy = ", ".join(heavy_imports(args)) or "none"
            rows.append((label, min(times), statistics.median(times), heavy))
    finally:
        registry.stop()
        shutil.rmtree(local_dir, ignore_errors=True)
    print(f"Machine: {machine()}; {options.rounds} rounds per command\n")
    print(f"| command | min s | median s | of {', '.join(HEAVY)} imported |")
    print("|---|---:|---:|---|")
    for label, best, median, heavy in rows:
        print(f"| `{label}` | {best:.2f} | {median:.2f} | {heavy} |")


if __name__ == "__main__":
    main()
