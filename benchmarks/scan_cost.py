"""Registry requests made by scans, against the minimum needed.

50 repositories × 200 tags (distribution's storage written directly), a real registry behind a
counting proxy. Scenarios: one semver scan of every repository (tag names only), a first
newest-build scan (manifest and config per tag), ``--cycles`` steady-state newest-build scans,
then one more after the newest tag of 50 repositories moved to a newer image (which the scan
must notice).

Minimum: one tag list per repository; one manifest and one config blob per digest not seen
before; in a later scan one HEAD per repository for the tag that wins now. Tags are mutable:
asking about every known tag would cost one HEAD per tag per scan (shown separately); the
scanner asks about the newest builds in every scan and about the others in turn, so steady state
stays within 1.1x of the minimum, and a moved candidate tag is noticed in the next scan.

Run: ``.venv/bin/python benchmarks/scan_cost.py [--repos N] [--tags N] [--cycles N]``
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


async def measure(storage: Path, repos: list[str], tag_count: int, cycles: int) -> list[Row]:
    repo_count = len(repos)
    tags_total = repo_count * tag_count
    rows = []
    async with (
        RegistryServer(storage=storage) as registry,
        FaultyProxy(registry.url) as proxy,
        Scanner() as scanner,
    ):
        endpoint = RegistryEndpoint(prefix=proxy.host, name="bench", api_url=proxy.url)
        seconds = await scan_all(scanner, endpoint, repos, metadata=False)
        rows.append(Row("semver scan", dict(proxy.counts), repo_count, 0, seconds))
        proxy.reset()
        seconds = await scan_all(scanner, endpoint, repos, metadata=True)
        first_minimum = repo_count + 2 * tags_total
        rows.append(Row("newest-build scan 1", dict(proxy.counts), first_minimum, 0, seconds))
        # Steady state: nothing moved. The minimum per scan is the tag list and one HEAD of the
        # tag that wins now (without it a moved winner would go unnoticed).
        proxy.reset()
        seconds = 0.0
        for _ in range(cycles):
            seconds += await scan_all(scanner, endpoint, repos, metadata=True)
        scenario = f"newest-build steady state, {cycles} scans"
        minimum = cycles * 2 * repo_count
        rows.append(Row(scenario, dict(proxy.counts), minimum, cycles * tags_total, seconds))
        # The candidate tag (the newest build of each repository) moves to a newer image.
        moved = repos[:50]
        newest = f"1.{tag_count - 1}.0"
        async with ImagePusher(registry.url) as pusher:
            pushed = {
                repo: await pusher.push_image(repo, newest, created=START + timedelta(days=400))
                for repo in moved
            }
        proxy.reset()
        started = time.perf_counter()
        results = await asyncio.gather(
            *(scanner.scan(ScanRequest(endpoint, repo, metadata=True)) for repo in repos)
        )
        seconds = time.perf_counter() - started
        noticed = sum(
            1
            for result in results
            for tag in result.tags
            if tag.name == newest and pushed.get(result.request.repository) == tag.digest
        )
        if noticed != len(moved):
            raise SystemExit(f"only {noticed} of {len(moved)} moved candidate tags were noticed")
        scenario = f"newest-build after {len(moved)} candidate tags moved (all noticed)"
        minimum = 2 * repo_count + 2 * len(moved)
        rows.append(Row(scenario, dict(proxy.counts), minimum, tags_total, seconds))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", type=int, default=50)
    parser.add_argument("--tags", type=int, default=200)
    parser.add_argument("--cycles", type=int, default=10, help="steady-state scans")
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
        rows = asyncio.run(measure(root / "storage", repos, args.tags, args.cycles))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"{args.repos} repositories × {args.tags} tags = {args.repos * args.tags} tags "
        f"(storage written in {written:.1f} s)\n"
    )
    print(
        "| scenario | tags/list | manifest GET | manifest HEAD | config blob | total | "
        "minimum | ratio | HEAD per known tag | ratio to HEAD-every-tag | wall time |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(row.render())
    print(
        "\nminimum = one tag list per repository + one manifest and one config per new digest;"
        " in later scans also one HEAD per repository for the tag that wins now (a moved winner"
        " must be noticed). 'HEAD per known tag' is what asking about every tag would add;"
        " the last ratio compares with that."
    )


if __name__ == "__main__":
    main()
