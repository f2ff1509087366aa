"""What the benchmark scripts share: scratch space, the machine line, child-process events,
profiles and registry storage for a fleet of repositories."""

from __future__ import annotations

import cProfile
import io
import json
import os
import platform
import pstats
import shutil
import signal
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any

SHM_MIN_INODES = 400_000
"""Free inodes ``/dev/shm`` must have left over what a script says it needs (another
benchmark may be filling it)."""
SHM_MIN_BYTES = 2 * 2**30
INODES_PER_TAG = 20
"""Files and directories of one tag in the registry storage of ``write_fleet_storage`` (an upper
bound: 17 to 19 in distribution's layout)."""
INODES_PER_NAMED_TAG = 4
"""The same for ``write_tag_name_storage`` (an upper bound: 3)."""


def _shm_has_room(shm: Path, inodes: int) -> bool:
    try:
        stats = os.statvfs(shm)
    except OSError:
        return False
    return (
        stats.f_favail >= SHM_MIN_INODES + inodes
        and stats.f_bavail * stats.f_frsize >= SHM_MIN_BYTES
    )


def scratch_dir(prefix: str, inodes: int = 0) -> Path:
    """A new temporary directory, on ``/dev/shm`` when writable (about 2.7× faster storage) and
    not short of inodes (``inodes``: about what the script will create) or space, else the
    default temporary directory (disk)."""
    shm = Path("/dev/shm")
    usable = shm.is_dir() and os.access(shm, os.W_OK) and _shm_has_room(shm, inodes)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=str(shm) if usable else None))


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


def write_tag_name_storage(
    root: Path, repos: list[str], tags: int, tag: Callable[[int], str]
) -> None:
    """Registry storage with ``tags`` tags in each repository, all of one image: for scenarios
    that read tag names only (semver), at a sixth of the files of ``write_fleet_storage``, so
    that 10,000 Applications' registry fits ``/dev/shm``. Each tag is a real, pullable tag."""
    from argocd_image_updater_testing.push import write_registry_storage

    digest = write_registry_storage(root, {repos[0]: [(tag(0), datetime(2024, 1, 1, tzinfo=UTC))]})[
        repos[0]
    ][tag(0)]
    v2 = root / "docker" / "registry" / "v2" / "repositories"
    first = v2 / repos[0]
    for repo in repos:
        repo_dir = v2 / repo
        if repo != repos[0]:
            shutil.copytree(first / "_layers", repo_dir / "_layers")
            shutil.copytree(
                first / "_manifests" / "revisions", repo_dir / "_manifests" / "revisions"
            )
        tags_dir = repo_dir / "_manifests" / "tags"
        for t in range(tags):
            current = tags_dir / tag(t) / "current"
            current.mkdir(parents=True, exist_ok=True)
            (current / "link").write_text(digest)


class CpuSampler:
    """A statistical CPU profile with little overhead (cProfile doubles a cycle's time and
    inflates what makes many small calls): every ``interval`` seconds of the process's CPU time
    (``ITIMER_PROF``), the running stack is sampled. Each sample is charged to the component of
    its innermost frame that belongs to an installed package or to a subpackage of the product
    (the standard library is charged to its caller: ``json`` decoding for the Kubernetes client
    counts as the Kubernetes client's)."""

    def __init__(self, interval: float = 0.001) -> None:
        self.interval = interval
        self.samples = 0
        self.components: Counter[str] = Counter()
        self.own: Counter[str] = Counter()
        self.inclusive: Counter[str] = Counter()

    def start(self) -> None:
        signal.signal(signal.SIGPROF, self._sample)
        signal.setitimer(signal.ITIMER_PROF, self.interval, self.interval)

    def stop(self) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)

    def _sample(self, signum: int, frame: FrameType | None) -> None:
        self.samples += 1
        component, seen, first = "", set(), True
        while frame is not None:
            code = frame.f_code
            name = f"{Path(code.co_filename).name}:{code.co_firstlineno}({code.co_name})"
            if first:
                self.own[name] += 1
                first = False
            if name not in seen:
                seen.add(name)
                self.inclusive[name] += 1
            if not component:
                component = _component(code.co_filename)
            frame = frame.f_back
        self.components[component or "other"] += 1

    def text(self, top: int) -> str:
        total = max(self.samples, 1)
        lines = [f"{self.samples} samples of {self.interval * 1e3:g} ms CPU", "", "by component:"]
        lines += [f"  {n / total:6.1%}  {name}" for name, n in self.components.most_common()]
        for title, counter in (("own", self.own), ("inclusive", self.inclusive)):
            lines += ["", f"by function, {title}:"]
            lines += [f"  {n / total:6.1%}  {name}" for name, n in counter.most_common(top)]
        return "\n".join(lines)


def _component(filename: str) -> str:
    parts = Path(filename).parts
    if "site-packages" in parts:
        rest = parts[parts.index("site-packages") + 1 :]
        return rest[0].removesuffix(".py") if rest else ""
    if "argocd_image_updater" in parts:
        rest = parts[parts.index("argocd_image_updater") + 1 :]
        return "product: " + (rest[0].removesuffix(".py") if len(rest) > 1 else "(top)")
    return ""
