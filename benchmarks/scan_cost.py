"""Registry requests made by scans, against the minimum needed.

50 repositories × 200 tags (distribution's storage written directly), a real registry behind a
counting proxy. Scenarios: one semver scan of every repository (tag names only), then two
consecutive newest-build scans (manifest and config per tag), then one more after some tags were
moved to new images.

Minimum: one tag list per repository; one manifest and one config blob per digest not seen
before. Tags are mutable, so a later scan must also ask for each tag's current digest (one HEAD
per tag); the table shows that separately.

Run: ``.venv/bin/python benchmarks/scan_cost.py [--repos N] [--tags N]``
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.registry.scanner import Scanner, ScanRequest
from argocd_image_updater_testing.faulty_proxy import FaultyProxy
from argocd_image_updater_testing.push import ImagePusher, write_registry_storage
from argocd_image_updater_testing.registry import RegistryServer
from common import scratch_dir

START = datetime(2024, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Row:
    scenario: str
    counts: Mapping[str, int]
    minimum: int
    heads_needed: int
    seconds: float

    def render(self) -> str:
        c = self.counts
        total = sum(c.values())
        ratio = total / self.minimum
        with_heads = total / (self.minimum + self.heads_needed)
        return (
            f"| {self.scenario} | {c.get('tags', 0)} | {c.get('manifest', 0)} | "
            f"{c.get('manifest_head', 0)} | {c.get('blob', 0)} | {total} | {self.minimum} | "
            f"{ratio:.2f} | {self.heads_needed} | {with_heads:.2f} | {self.seconds:.2f} s |"
        )


async def scan_all(
    scanner: Scanner, endpoint: RegistryEndpoint, repos: list[str], metadata: bool
) -> float:
    start = time.perf_counter()
    await asyncio.gather(
        *(scanner.scan(ScanRequest(endpoint, repo, metadata=metadata)) for repo in repos)
    )
    return time.perf_counter() - start


async def measure(storage: Path, repos: list[str], tag_count: int) -> list[Row]:
    repo_count = len(repos)
    tags_total = repo_count * tag_count
    rows = []
    async with (
        RegistryServer(storage=storage) as registry,
        FaultyProxy(registry.url) as proxy,
        Scanner(tags_ttl=0) as scanner,
    ):
        endpoint = RegistryEndpoint(prefix=proxy.host, name="bench", api_url=proxy.url)
        seconds = await scan_all(scanner, endpoint, repos, metadata=False)
        rows.append(Row("semver scan", dict(proxy.counts), repo_count, 0, seconds))
        for n in (1, 2):
            proxy.reset()
            seconds = await scan_all(scanner, endpoint, repos, metadata=True)
            minimum = repo_count + (2 * tags_total if n == 1 else 0)
            heads = 0 if n == 1 else tags_total
            rows.append(Row(f"newest-build scan {n}", dict(proxy.counts), minimum, heads, seconds))
        moved = repos[:50]
        async with ImagePusher(registry.url) as pusher:
            for i, repo in enumerate(moved):
                await pusher.push_image(repo, "1.0.0", created=START + timedelta(days=-1 - i))
        proxy.reset()
        seconds = await scan_all(scanner, endpoint, repos, metadata=True)
        scenario = f"newest-build after {len(moved)} tags moved"
        minimum = repo_count + 2 * len(moved)
        rows.append(Row(scenario, dict(proxy.counts), minimum, tags_total, seconds))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", type=int, default=50)
    parser.add_argument("--tags", type=int, default=200)
    args = parser.parse_args()
    root = scratch_dir("scan-cost-")
    try:
        repos = [f"bench/app{i:03d}" for i in range(args.repos)]
        # Distinct build times everywhere, so every tag is its own image (digest).
        layout = {
            repo: [(f"1.{t}.0", START + timedelta(days=r, minutes=t)) for t in range(args.tags)]
            for r, repo in enumerate(repos)
        }
        began = time.perf_counter()
        write_registry_storage(root / "storage", layout)
        written = time.perf_counter() - began
        rows = asyncio.run(measure(root / "storage", repos, args.tags))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"{args.repos} repositories × {args.tags} tags = {args.repos * args.tags} tags "
        f"(storage written in {written:.1f} s)\n"
    )
    print(
        "| scenario | tags/list | manifest GET | manifest HEAD | config blob | total | "
        "minimum | ratio | HEAD per known tag | ratio incl. HEAD | wall time |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(row.render())
    print(
        "\nminimum = one tag list per repository + one manifest and one config per new digest."
        "\nA tag seen before needs one HEAD to learn whether it moved (tags are mutable); "
        "'ratio incl. HEAD' counts those as necessary."
    )


if __name__ == "__main__":
    main()
