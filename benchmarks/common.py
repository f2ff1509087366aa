"""What the benchmark scripts share: scratch space, the machine line, child-process events,
profiles and registry storage for a fleet of repositories."""

from __future__ import annotations

import cProfile
import io
import json
import os
import platform
import pstats
import sys
import tempfile
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any


def scratch_dir(prefix: str) -> Path:
    """A new temporary directory, on ``/dev/shm`` when writable (about 2.7× faster storage)."""
    shm = Path("/dev/shm")
    base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def machine() -> str:
    """CPUs, CPU model, Python, OS and date: the line to keep next to a table."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    return (
        f"{cpus} CPUs ({model}), Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}, {date}"
    )


def emit(event: Mapping[str, Any]) -> None:
    """One JSON line from a benchmark's child process to its parent."""
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def profile_text(profiler: cProfile.Profile, top: int) -> str:
    """The ``top`` functions by cumulative and by own time."""
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


def write_fleet_storage(
    root: Path, repos: list[str], tags: int, tag: Callable[[int], str], start: datetime
) -> None:
    """Registry storage with ``tags`` tags in each repository; distinct build times everywhere,
    so every tag is its own image (digest)."""
    from argocd_image_updater_testing.push import write_registry_storage

    layout = {
        repo: [(tag(t), start + timedelta(days=r, minutes=t)) for t in range(tags)]
        for r, repo in enumerate(repos)
    }
    write_registry_storage(root, layout)
