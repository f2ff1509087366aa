"""Start-up time of the commands that need no cluster, and which heavy libraries they load.

``test IMAGE`` runs against a 1-tag repository of a real registry (plain HTTP on loopback).

Each command runs in a new Python process as the console script runs it, ``--rounds`` times;
the table shows the minimum and the median wall time and CPU time (user + system of the
process: on a shared machine CPU time moves less than wall time), and which heavy libraries
were imported (read from ``python -X importtime``, in one extra run).

Bytecode: the product's image compiles every module at build time, so by default the commands
run with compiled bytecode (written once, by an untimed warm-up run, into a scratch
``PYTHONPYCACHEPREFIX``, whatever ``PYTHONDONTWRITEBYTECODE`` says). ``--no-bytecode`` times
them compiling every module they import at each start instead (a checkout run with
``PYTHONDONTWRITEBYTECODE=1``).

``--instructions`` adds one run of each command under valgrind's callgrind and reports the
instructions it executed (millions): unlike times, the count hardly moves with the machine's
other load, so two trees measured on a busy machine still compare (``valgrind`` must be
installed; each such run takes some 20 s).

    .venv/bin/python benchmarks/startup.py [--rounds N] [--no-bytecode] [--instructions]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
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

HEAVY = (
    "kubernetes_asyncio",
    "aiohttp",
    "httpx",
    "pydantic",
    "ruamel",
    "cryptography",
    "httpcore",
    "prometheus_client",
)


def commands(local_dir: Path, image: str) -> list[tuple[str, list[str]]]:
    return [
        ("test IMAGE (1-tag repository)", ["test", image, "--loglevel", "error"]),
        ("--help", ["--help"]),
        ("version", ["version"]),
        ("test --help", ["test", "--help"]),
        ("run --help", ["run", "--help"]),
        ("hold --help", ["hold", "--help"]),
        ("release --help", ["release", "--help"]),
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


VALGRIND = ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null")

# What the console script (`argocd-image-updater`) runs.
ENTRY = "import sys; from argocd_image_updater.cli.console import main; sys.exit(main())"


def child_env(pycache: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPYCACHEPREFIX", None)
    if pycache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def run_once(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        capture_output=True,
        check=False,
        timeout=120,
        env=env,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {result.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def heavy_imports(args: list[str], env: dict[str, str]) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", ENTRY, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=env,
    )
    found = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in result.stderr.splitlines()}
    return [name for name in HEAVY if name in found]


def instructions(args: list[str], env: dict[str, str]) -> str:
    """Millions of instructions one run executes (callgrind's ``Collected`` count)."""
    result = subprocess.run(
        [*VALGRIND, sys.executable, "-c", ENTRY, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        env=env,
    )
    for line in result.stderr.splitlines():
        if "Collected :" in line:
            return f"{int(line.rsplit(':', 1)[1]) / 1e6:.1f}"
    raise SystemExit(f"valgrind failed: {result.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="compile every imported module at each start (no bytecode cache)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count the instructions of one run of each command (valgrind)",
    )
    options = parser.parse_args()
    local_dir = scratch_dir("startup-bench-")
    pycache = None if options.no_bytecode else local_dir / "pycache"
    env = child_env(pycache)
    registry = RegistryServer().start()
    try:
        image = f"{registry.host}/bench/one"
        asyncio.run(_push_one(registry.url, "bench/one"))
        rows = []
        for label, args in commands(local_dir, image):
            if pycache is not None:
                run_once(args, env)  # writes the bytecode, untimed
            runs = [run_once(args, env) for _ in range(options.rounds)]
            walls, cpus = [w for w, _ in runs], [c for _, c in runs]
            heavy = ", ".join(heavy_imports(args, env)) or "none"
            count = instructions(args, env) if options.instructions else ""
            rows.append((label, walls, cpus, count, heavy))
    finally:
        registry.stop()
        shutil.rmtree(local_dir, ignore_errors=True)
    bytecode = "no bytecode cache" if pycache is None else "compiled bytecode"
    print(f"Machine: {machine()}; {options.rounds} rounds per command, {bytecode}\n")
    counted = "| instructions (M) " if options.instructions else ""
    print(
        f"| command | wall min / median ms | CPU min / median ms {counted}"
        f"| of {', '.join(HEAVY)} imported |"
    )
    print("|---|---:|---:|" + ("---:|" if options.instructions else "") + "---|")
    for label, walls, cpus, count, heavy in rows:
        print(
            f"| `{label}` | {min(walls) * 1e3:.0f} / {statistics.median(walls) * 1e3:.0f} | "
            f"{min(cpus) * 1e3:.0f} / {statistics.median(cpus) * 1e3:.0f} | "
            + (f"{count} | " if options.instructions else "")
            + f"{heavy} |"
        )


if __name__ == "__main__":
    main()
