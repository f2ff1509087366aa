"""What digest pinning (``pinDigest``) costs a cycle: registry requests and CPU.

A real registry (distribution's storage written directly) behind a counting proxy, ``--repos``
repositories × ``--tags`` tags, ``--apps`` Applications spread evenly over the repositories
(several Applications per repository, as environments of one service). Each round runs the
cycle's registry stages as the controller does — the scans (one per repository), the pinning
step and the plans of every Application — for ``semver`` without and with ``pinDigest``, each
in a fresh scan round.

Minimum: one tag list per repository; with pinning also one manifest ``HEAD`` per repository
(every Application of a repository chooses the same tag), none per Application or per tag.
CPU is the process time of the stages (scan, pin, plan of every Application), measured straight
against the registry (its own process; the counting proxy would add its CPU to ours). The
machine is shared: compare ratios of the same round.

Run: ``.venv/bin/python benchmarks/pin_cost.py [--repos N] [--tags N] [--apps N] [--rounds N]``
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.controller.credentials import CredentialsCache
from argocd_image_updater.controller.pins import pin_digests
from argocd_image_updater.controller.scan import run_scans
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.update_config import AppUpdateConfig, ImageSpec, UpdateSettings
from argocd_image_updater.plan.decide import plan_app
from argocd_image_updater.plan.jobs import AppJobs, plan_scans
from argocd_image_updater.registry.scanner import Scanner
from argocd_image_updater_testing.faulty_proxy import FaultyProxy
from argocd_image_updater_testing.push import write_registry_storage
from argocd_image_updater_testing.registry import RegistryServer
from common import machine, scratch_dir

START = datetime(2024, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Measured:
    tags: int
    heads: int
    gets: int
    updated: int


def apps_for(host: str, repos: list[str], count: int, pin: bool) -> list[AppJobs]:
    registries = RegistryConfig(
        [RegistryEndpoint(prefix=host, name="bench", api_url=f"http://{host}")]
    )
    out = []
    for i in range(count):
        image = f"{host}/{repos[i % len(repos)]}"
        app = Application.from_object(
            {
                "metadata": {"name": f"app{i:04d}", "namespace": "argocd"},
                "spec": {
                    "source": {
                        "repoURL": "https://example.com/deploy",
                        "path": f"apps/{i}",
                        "kustomize": {"images": [f"{image}:1.0.0"]},
                    }
                },
                "status": {"sourceType": "Kustomize", "summary": {"images": [f"{image}:1.0.0"]}},
            }
        )
        spec = ImageSpec("web", image, UpdateSettings(pin_digest=pin))
        out.append(plan_scans(AppUpdateConfig(app, (spec,)), registries.endpoint_for))
    return out


async def one_cycle(scanner: Scanner, apps: list[AppJobs]) -> tuple[float, int]:
    """The CPU seconds of the cycle's registry stages and plans, and the images updated."""
    credentials = CredentialsCache(None, cloud_auto=False)
    cpu = time.process_time()
    scan_round = scanner.new_round()
    pairs = [(jobs, "argocd") for jobs in apps]
    results = await run_scans(pairs, scanner, credentials, scan_round=scan_round)
    await pin_digests(pairs, results, scanner, credentials.for_job, scan_round)
    updated = sum(plan_app(jobs, results).updated for jobs in apps)
    return time.process_time() - cpu, updated


async def measure(
    storage: Path, repos: list[str], apps: int, rounds: int
) -> tuple[list[Measured], list[tuple[float, float]]]:
    """Requests of one cycle each way (through the counting proxy), then ``rounds`` pairs of
    CPU times straight to the registry (the proxy runs in this process: its CPU would count)."""
    counted: list[Measured] = []
    cpu: list[tuple[float, float]] = []
    async with RegistryServer(storage=storage) as registry:
        async with FaultyProxy(registry.url) as proxy, Scanner() as scanner:
            for pin in (False, True):
                jobs = apps_for(proxy.host, repos, apps, pin)
                proxy.reset()
                _, updated = await one_cycle(scanner, jobs)
                c = proxy.counts
                counted.append(Measured(c["tags"], c["manifest_head"], c["manifest"], updated))
        host = registry.url.split("://", 1)[1]
        async with Scanner() as scanner:
            plain, pinned = apps_for(host, repos, apps, False), apps_for(host, repos, apps, True)
            await one_cycle(scanner, pinned)  # warm the connections and code paths
            for _ in range(rounds):
                unpinned_cpu, _ = await one_cycle(scanner, plain)
                pinned_cpu, _ = await one_cycle(scanner, pinned)
                cpu.append((unpinned_cpu, pinned_cpu))
    return counted, cpu


def _spread(values: list[float]) -> str:
    return f"{min(values) * 1000:.0f} / {statistics.median(values) * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", type=int, default=50)
    parser.add_argument("--tags", type=int, default=100)
    parser.add_argument("--apps", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    root = scratch_dir("pin-cost-")
    try:
        repos = [f"bench/svc{i:03d}" for i in range(args.repos)]
        layout = {
            repo: [(f"1.{t}.0", START + timedelta(days=r, minutes=t)) for t in range(args.tags)]
            for r, repo in enumerate(repos)
        }
        write_registry_storage(root / "storage", layout)
        counted, cpu = asyncio.run(measure(root / "storage", repos, args.apps, args.rounds))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(machine())
    print(
        f"\n{args.repos} repositories × {args.tags} tags, {args.apps} Applications "
        f"(semver, all stale), {args.rounds} rounds\n"
    )
    print(
        "| cycle | tag lists | manifest HEAD | manifest GET | minimum | updated | CPU min / median |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, index, minimum in (
        ("semver", 0, args.repos),
        ("semver + pinDigest", 1, 2 * args.repos),
    ):
        m = counted[index]
        print(
            f"| {label} | {m.tags} | {m.heads} | {m.gets} | {minimum} | {m.updated} "
            f"| {_spread([r[index] for r in cpu])} |"
        )
    ratios = ", ".join(f"{p / u:.2f}" for u, p in cpu)
    print(f"\nCPU ratio pinned / unpinned per round (same round): {ratios}")


if __name__ == "__main__":
    main()
