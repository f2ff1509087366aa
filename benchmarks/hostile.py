"""Hostile tenants and a hostile registry beside a good tenant: one ``run --once`` each.

The fleet is ``argocd_image_updater_testing.hostile_fleet``: a good Application (a newer tag in a
real registry), and beside it tenants whose configuration is hostile (an ``allowTags`` regular
expression with catastrophic backtracking over a 41-character tag, a template printing a width
of 999,999,999, nested ranges of 10^10 iterations) and images in a registry that misbehaves
(a chunk claiming 128 TiB followed by 64 MiB, endless trailers, a 5,000-digit Content-Length,
an unsolicited ``101``, endless ``100 Continue`` heads, a body trickled a byte every 0.2 s), with
``timeout: 2s`` for that registry in registries.conf. The Kubernetes API fake answers the first
list of Applications with 429 and the first list of ImageUpdaters with 503.

The baseline is the same command on the good tenant alone (the same registries.conf). Each
round runs both in new processes (the command as users run it); the table shows the minimum and
the median of the wall time and of the controller's peak RSS (``ru_maxrss`` of that process),
whether the good Application was updated, and how many hostile images the output names.

    .venv/bin/python benchmarks/hostile.py [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from argocd_image_updater_testing.hostile_fleet import (
    NS,
    TEMPLATES,
    HostileFleet,
    seed_hostile_fleet,
)
from argocd_image_updater_testing.hostile_registry import BEHAVIOURS, HostileRegistry
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.registry import RegistryServer
from common import machine, scratch_dir


@dataclass(frozen=True, slots=True)
class Run:
    wall: float
    rss_mb: float
    exit_code: int
    updated: bool
    reported: int


def run_controller(fleet: HostileFleet) -> tuple[float, float, int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMAGE_UPDATER_")}
    args = [sys.executable, "-m", "argocd_image_updater", "run", "--once"]
    args += ["--kubeconfig", str(fleet.kubeconfig)]
    args += ["--registries-conf-path", str(fleet.registries_conf)]
    started = time.perf_counter()
    with subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True
    ) as proc:
        assert proc.stdout is not None
        output = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    return wall, usage.ru_maxrss / 1024, proc.returncode, output


async def one_round(registry: RegistryServer, root: Path, n: int, hostile_tenants: bool) -> Run:
    kube = KubeApiServer(namespaces=(NS,)).start_in_thread()
    hostile = HostileRegistry().start_in_thread()
    try:
        directory = root / f"{n}-{hostile_tenants}"
        directory.mkdir()
        fleet = await seed_hostile_fleet(
            kube, registry, hostile, directory, prefix=f"r{n}", hostile_tenants=hostile_tenants
        )
        if hostile_tenants:
            kube.fail_next(verb="list", resource="applications", status=429)
            kube.fail_next(verb="list", resource="imageupdaters", status=503)
        wall, rss, code, output = await asyncio.to_thread(run_controller, fleet)
        web = kube.store.get("applications", NS, "web")
        updated = web["spec"]["source"]["kustomize"]["images"] == [f"{fleet.good_image}:1.1.0"]
        reported = sum(
            any(name in line for line in output.splitlines() if "level=error" in line)
            for name in fleet.hostile_apps
        )
        return Run(wall, rss, code, updated, reported)
    finally:
        hostile.stop()
        kube.stop()


def row(label: str, runs: list[Run], tenants: int) -> str:
    walls = [r.wall for r in runs]
    rss = [r.rss_mb for r in runs]
    return (
        f"| {label} | {min(walls):.2f} / {statistics.median(walls):.2f} s "
        f"| {min(rss):.0f} / {statistics.median(rss):.0f} MB "
        f"| {sorted({r.exit_code for r in runs})} "
        f"| {sum(r.updated for r in runs)}/{len(runs)} "
        f"| {min(r.reported for r in runs)}/{tenants} |"
    )


async def main(rounds: int) -> None:
    root = scratch_dir("hostile-bench-")
    baseline: list[Run] = []
    hostile: list[Run] = []
    with RegistryServer() as registry:
        for n in range(rounds):
            baseline.append(await one_round(registry, root, n, hostile_tenants=False))
            hostile.append(await one_round(registry, root, n, hostile_tenants=True))
            print(f"round {n + 1}/{rounds} done", file=sys.stderr)
    tenants = 1 + len(TEMPLATES) + len(BEHAVIOURS)  # redos, the templates, the registry's
    print(f"Machine: {machine()}; {rounds} rounds, min / median\n")
    print("| fleet | wall | peak RSS | exit codes | good app updated | hostile images named |")
    print("|---|---|---|---|---|---|")
    print(row("good tenant alone (baseline)", baseline, 0))
    print(row(f"good tenant beside {tenants} hostile ones", hostile, tenants))
    extra = statistics.median(r.rss_mb for r in hostile) - statistics.median(
        r.rss_mb for r in baseline
    )
    print(f"\nPeak RSS over the baseline (medians): {extra:.0f} MB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args().rounds))
