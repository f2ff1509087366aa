"""One controller cycle at fleet scale: wall time, registry and Kubernetes requests, peak RSS.

Scenario (defaults): 1,000 Argo CD Applications (Kustomize), 200 repositories × 100 tags, each
Application running one image from one repository (five Applications per repository, like five
environments of a service); 10% of the Applications run the previous release and have a newer
tag available, the others already run the newest tag.

Configuration shape (``--config``):

* ``cr`` (default): one ImageUpdater per repository, ``namePattern: <service>-*`` selecting the
  Applications of that service, one image (semver, no constraint) — a CR per service, as teams
  write them; 200 CRs × 1,000 Applications also exercises the selection;
* ``legacy``: the v0.x ``image-list`` annotation on every Application, no CR.

Parts are the product's own: the real registry (``docker-registry``, storage written directly;
every tag is a real tag of one shared image, as semver reads tag names only)
behind a counting proxy, the Kubernetes API fake, and the controller as ``run`` builds it
(``build_controller``), which runs in a child process so that its peak RSS is its own and the
fakes' CPU is not on its event loop. Three cycles:

1. cold: new scanner, nothing cached; exactly the stale Applications must be patched;
2. warm: the next cycle, nothing new in the registry. Tag lists never outlive a cycle, so it
   lists each repository's tags again (metadata stays cached by digest); the ImageUpdaters whose
   Applications the cold cycle updated get their status rewritten (their result changed);
3. steady: one more cycle where nothing changed at all since the last one (no write of any kind).

The benchmark fails (exit status 1) when any cycle updates other Applications than expected.

Run: ``.venv/bin/python benchmarks/cycle.py [--apps N] [--repos N] [--tags N]
[--new-fraction F] [--config cr|legacy] [--profile N | --sample N]``
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import random
import resource
import shutil
import statistics
import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from common import (
    INODES_PER_NAMED_TAG,
    CpuSampler,
    emit,
    profile_text,
    scratch_dir,
    write_tag_name_storage,
)

NS = "argocd"
START = datetime(2024, 1, 1, tzinfo=UTC)
IMAGE_LIST = "argocd-image-updater.argoproj.io/image-list"
CYCLES = ("cold", "warm", "steady")

# The product is imported inside functions: the controller process must load only what the
# controller loads (no fakes), or its peak RSS would not be its own.


# --- scenario -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    apps: int
    repos: int
    tags: int
    new_fraction: float
    config: str

    def repo(self, index: int) -> str:
        return f"bench/{self.service(index)}"

    def service(self, index: int) -> str:
        return f"svc{index:0{len(str(max(self.repos - 1, 0)))}d}"

    def tag(self, index: int) -> str:
        return f"1.{index}.0"

    @property
    def latest(self) -> str:
        return self.tag(self.tags - 1)

    @property
    def previous(self) -> str:
        return self.tag(self.tags - 2)

    def app_repo(self, app: int) -> int:
        return app % self.repos

    def app_name(self, app: int) -> str:
        return f"{self.service(self.app_repo(app))}-{app // self.repos}"

    def stale(self) -> frozenset[int]:
        """The Applications running the previous release (spread over the fleet)."""
        count = round(self.apps * self.new_fraction)
        return frozenset(random.Random(7).sample(range(self.apps), count))

    def used_repos(self) -> int:
        return min(self.apps, self.repos)


def check_scenario(s: Scenario) -> None:
    if s.apps < 1 or s.repos < 1:
        raise SystemExit("--apps and --repos must be at least 1")
    if s.tags < 2:
        raise SystemExit("--tags must be at least 2 (a previous and a newest release)")
    if not 0.0 <= s.new_fraction <= 1.0:
        raise SystemExit("--new-fraction must be between 0 and 1")


def seed_kube(store: Any, s: Scenario, registry_host: str) -> None:
    from argocd_image_updater_testing import objects

    stale = s.stale()
    for app in range(s.apps):
        image = f"{registry_host}/{s.repo(s.app_repo(app))}"
        running = f"{image}:{s.previous if app in stale else s.latest}"
        annotations = {IMAGE_LIST: f"app={image}"} if s.config == "legacy" else None
        store.put(
            objects.application(
                s.app_name(app),
                NS,
                images=[running],
                kustomize_images=[running],
                annotations=annotations,
            )
        )
    if s.config == "cr":
        for r in range(min(s.repos, s.apps)):
            ref = {
                "namePattern": f"{s.service(r)}-*",
                "images": [{"alias": "app", "imageName": f"{registry_host}/{s.repo(r)}"}],
            }
            store.put(objects.image_updater(s.service(r), NS, {"applicationRefs": [ref]}))


def expected_images(s: Scenario, registry_host: str, updated: bool) -> dict[str, list[str]]:
    stale = s.stale()
    result = {}
    for app in range(s.apps):
        image = f"{registry_host}/{s.repo(s.app_repo(app))}"
        tag = s.previous if app in stale and not updated else s.latest
        result[s.app_name(app)] = [f"{image}:{tag}"]
    return result


# --- the controller (child process) -------------------------------------------------------------


def peak_rss_mb() -> float:
    """The peak RSS of this process's own memory (``VmHWM``). Not ``ru_maxrss``: Linux starts a
    child's ``ru_maxrss`` at its parent's RSS when it forks and keeps it across ``exec``, so it
    would report the benchmark's own size (the fakes' objects) until the controller outgrew it."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


async def child_main(
    kubeconfig: str, conf: str, log_stream: TextIO, host: str, repos: list[str], profile: str
) -> None:
    trace_dir = os.environ.get("CYCLE_BENCH_TRACEMALLOC", "")
    if trace_dir:
        import tracemalloc

        tracemalloc.start(int(os.environ.get("CYCLE_BENCH_TRACE_FRAMES", "12")))
    # The entry point's module first, as ``argocd-image-updater run`` loads it (it keeps httpx's
    # own command line, and rich and pygments with it, from being imported).
    import argocd_image_updater.cli.main  # noqa: F401
    from argocd_image_updater.cli.run_cmd import build_controller
    from argocd_image_updater.config.settings import resolve
    from argocd_image_updater.observe import log as logging_setup

    # As ``run`` does, at its default level; the lines go to a file.
    logging_setup.setup("info", "text", stream=log_stream)
    settings = resolve(
        "run", {"kubeconfig": kubeconfig, "registries_conf_path": conf, "once": True}, env={}
    )
    controller, closers = await build_controller(settings)
    # As ``run``'s loop does: the watched copy of Applications and ImageUpdaters, listed before
    # the first cycle (a tree without one lists in every cycle).
    stop = asyncio.Event()
    watched = getattr(controller, "watched", None)
    watching = asyncio.create_task(watched.run(stop)) if watched is not None else None
    while watched is not None and not watched.synced():  # noqa: ASYNC110 - nothing to await
        await asyncio.sleep(0.01)
    gc_time: list[float] = []
    gc_began = [0.0]

    def on_gc(phase: str, info: Mapping[str, Any]) -> None:
        if phase == "start":
            gc_began[0] = time.perf_counter()
        else:
            gc_time.append(time.perf_counter() - gc_began[0])

    gc.callbacks.append(on_gc)
    try:
        emit({"event": "ready", "rss_mb": peak_rss_mb()})
        if trace_dir:
            tracemalloc.take_snapshot().dump(f"{trace_dir}/startup.snap")
        for number in range(len(CYCLES)):
            command = (await asyncio.to_thread(sys.stdin.readline)).strip()
            if command != "go":
                return
            kind, _, top = profile.partition(":")
            profiler = cProfile.Profile() if kind == "cprofile" else None
            sampler = CpuSampler() if kind == "sample" else None
            gc_time.clear()
            if trace_dir:
                tracemalloc.reset_peak()
            began = time.perf_counter()
            cpu_began = time.process_time()
            if profiler is not None:
                profiler.enable()
            if sampler is not None:
                sampler.start()
            result = await controller.cycle()
            if profiler is not None:
                profiler.disable()
            if sampler is not None:
                sampler.stop()
            wall = time.perf_counter() - began
            cpu = time.process_time() - cpu_began
            profile_report = ""
            if profiler is not None:
                profile_report = profile_text(profiler, int(top))
            elif sampler is not None:
                profile_report = sampler.text(int(top))
            event = {
                "event": "cycle",
                "wall": wall,
                "cpu": cpu,
                "gc": sum(gc_time),
                "apps": len(result.apps),
                "images_updated": result.images_updated,
                "written": sorted(a.app.split("/", 1)[1] for a in result.apps if a.written),
                "errors": result.errors,
                "scans": result.scans,
                "rss_mb": peak_rss_mb(),
                "profile": profile_report,
            }
            if trace_dir:
                # What the cycle keeps (its result dropped, as the loop drops it) and its peak.
                del result
                current, peak = tracemalloc.get_traced_memory()
                tracemalloc.take_snapshot().dump(f"{trace_dir}/{CYCLES[number]}.snap")
                event["traced_mb"] = [current / 2**20, peak / 2**20]
                print(
                    f"traced after the {CYCLES[number]} cycle: {current / 2**20:.1f} MB, "
                    f"peak during it {peak / 2**20:.1f} MB",
                    file=sys.stderr,
                )
            emit(event)
    finally:
        stop.set()
        if watching is not None:
            await watching
        for closer in reversed(closers):
            await (closer.aclose() if hasattr(closer, "aclose") else closer.close())


# --- the fakes and the measurement (parent process) ---------------------------------------------


@dataclass
class Measured:
    cycle: str
    wall: float
    cpu: float
    gc: float
    registry: Counter[str]
    kube: Counter[tuple[str, str]]
    updated: int
    rss_mb: float
    profile: str = ""
    problems: list[str] = field(default_factory=list)


def kube_delta(after: Counter[tuple[str, str]], before: Counter[tuple[str, str]]) -> Counter[Any]:
    delta = Counter(after)
    delta.subtract(before)
    return +delta


def app_images(store: Any, s: Scenario) -> dict[str, list[str]]:
    result = {}
    for app in range(s.apps):
        name = s.app_name(app)
        obj = store.get("applications", NS, name)
        result[name] = list(obj["spec"]["source"].get("kustomize", {}).get("images", []))
    return result


def check_cycle(
    event: Mapping[str, Any],
    store: Any,
    s: Scenario,
    host: str,
    *,
    first: bool,
    patches: int,
    status_patches: int | None = None,
) -> list[str]:
    """What is wrong with a cycle; ``status_patches`` is checked to be 0 when given."""
    problems = []
    stale = sorted(s.app_name(a) for a in s.stale())
    want_written = stale if first else []
    if event["errors"]:
        problems.append(f"{event['errors']} errors")
    if event["scans"] != s.used_repos():
        problems.append(f"{event['scans']} scans, expected one per repository ({s.used_repos()})")
    if event["apps"] != s.apps:
        problems.append(f"{event['apps']} Applications processed, expected {s.apps}")
    if event["written"] != want_written:
        extra = sorted(set(event["written"]) - set(want_written))
        missing = sorted(set(want_written) - set(event["written"]))
        problems.append(
            f"{len(event['written'])} Applications written, expected {len(want_written)}: "
            f"{len(extra)} unexpected (e.g. {extra[:3]}), {len(missing)} missing "
            f"(e.g. {missing[:3]})"
        )
    if event["images_updated"] != len(want_written):
        problems.append(f"images_updated {event['images_updated']}, expected {len(want_written)}")
    if patches != len(want_written):
        problems.append(f"{patches} PATCH requests, expected {len(want_written)}")
    if status_patches:
        problems.append(f"{status_patches} status writes in a cycle where nothing changed")
    actual = app_images(store, s)
    expected = expected_images(s, host, updated=True)
    wrong = [name for name in expected if actual[name] != expected[name]]
    if wrong:
        problems.append(
            f"{len(wrong)} Applications hold the wrong images, e.g. {wrong[0]}: "
            f"{actual[wrong[0]]} instead of {expected[wrong[0]]}"
        )
    return problems


async def run_fakes(
    s: Scenario, root: Path, registry_url: str, profile: str, setup: dict[str, float]
) -> list[Measured]:
    from argocd_image_updater_testing.faulty_proxy import FaultyProxy
    from argocd_image_updater_testing.kube import KubeApiServer

    async with FaultyProxy(registry_url) as proxy:
        began = time.perf_counter()
        kube = KubeApiServer(namespaces=(NS,))
        seed_kube(kube.store, s, proxy.host)
        setup["seed"] = time.perf_counter() - began
        if app_images(kube.store, s) != expected_images(s, proxy.host, updated=False):
            raise SystemExit("the Kubernetes fake was not seeded as intended")
        kube.start_in_thread()
        try:
            conf = root / "registries.conf"
            conf.write_text(
                f"registries:\n- name: bench\n  prefix: {proxy.host}\n  api_url: {proxy.url}\n"
            )
            kubeconfig = kube.write_kubeconfig(root / "kubeconfig", namespace=NS)
            repos = sorted({s.repo(s.app_repo(a)) for a in range(s.apps)})
            argv = [str(kubeconfig), str(conf), str(root / "controller.log"), proxy.host]
            argv += [json.dumps(repos), profile]
            return await drive_child(s, kube, proxy, argv)
        finally:
            kube.stop()


async def drive_child(s: Scenario, kube: Any, proxy: Any, argv: list[str]) -> list[Measured]:
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--child",
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None

    async def receive() -> dict[str, Any]:
        assert child.stdout is not None
        line = await child.stdout.readline()
        if not line:
            await child.wait()
            raise SystemExit(f"the controller process ended (exit status {child.returncode})")
        event: dict[str, Any] = json.loads(line)
        return event

    rows: list[Measured] = []
    try:
        ready = await receive()
        rows.append(Measured("startup", 0.0, 0.0, 0.0, Counter(), Counter(), 0, ready["rss_mb"]))
        for number, label in enumerate(CYCLES):
            proxy.reset()
            kube_before = Counter(kube.requests)
            child.stdin.write(b"go\n")
            await child.stdin.drain()
            event = await receive()
            kube_counts = kube_delta(Counter(kube.requests), kube_before)
            patches = kube_counts[("patch", "applications")]
            row = Measured(
                label,
                event["wall"],
                event["cpu"],
                event["gc"],
                Counter(proxy.counts),
                kube_counts,
                len(event["written"]),
                event["rss_mb"],
                event["profile"],
            )
            row.problems = check_cycle(
                event,
                kube.store,
                s,
                proxy.host,
                first=number == 0,
                patches=patches,
                status_patches=(
                    kube_counts[("patch", "imageupdaters/status")] if label == "steady" else None
                ),
            )
            rows.append(row)
        child.stdin.write(b"quit\n")
        await child.stdin.drain()
        child.stdin.close()
        if await child.wait() != 0:
            raise SystemExit(f"the controller process failed (exit status {child.returncode})")
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    return rows


# --- report -------------------------------------------------------------------------------------


def _spread(values: list[float]) -> str:
    """``min / median`` of the rounds (just the value for one round)."""
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{min(values):.2f} / {statistics.median(values):.2f}"


def render(rounds: list[list[Measured]], s: Scenario, setup: Mapping[str, float]) -> str:
    minimum = s.used_repos()
    stale = len(s.stale())
    rows = rounds[0]
    how = "" if len(rounds) == 1 else f" (min / median of {len(rounds)} rounds)"
    lines = [
        f"{s.apps} Applications ({s.config} configuration), {s.repos} repositories × {s.tags} "
        f"tags, {stale} Applications with a newer tag; controller in its own process.",
        f"Setup: registry storage {setup['storage']:.1f} s, Kubernetes fake seeded "
        f"{setup['seed']:.1f} s.",
        "",
        f"| cycle | wall s{how} | controller CPU s{how} | of which GC s | registry requests "
        "(tags / manifest / blob) | minimum | k8s requests | apps updated | peak RSS MB |",
        "|---|---:|---:|---:|---|---:|---|---:|---:|",
    ]
    for index, row in enumerate(rows):
        peaks = [r[index].rss_mb for r in rounds]
        rss = f"{max(peaks):.0f}"
        if len(peaks) > 1:
            rss += f" ({', '.join(f'{p:.0f}' for p in peaks)})"
        if row.cycle == "startup":
            lines.append(f"| after startup | - | - | - | - | - | - | - | {rss} |")
            continue
        wall = _spread([r[index].wall for r in rounds])
        cpu = _spread([r[index].cpu for r in rounds])
        gc_spent = _spread([r[index].gc for r in rounds])
        c = row.registry
        other = sum(c.values()) - c["tags"] - c["manifest"] - c["blob"]
        registry = f"{sum(c.values())} ({c['tags']} / {c['manifest']} / {c['blob']}"
        registry += f", {other} other)" if other else ")"
        kube_total = sum(row.kube.values())
        parts = ", ".join(f"{v} {r} {n}" for (v, r), n in sorted(row.kube.items()))
        kube = f"{kube_total} ({parts})"
        lines.append(
            f"| {row.cycle} | {wall} | {cpu} | {gc_spent} | {registry} | {minimum} | {kube} | "
            f"{row.updated} | {rss} |"
        )
    lines += [
        "",
        f"minimum = one tag list per repository in use ({minimum}; semver needs tag names only) "
        "per cycle: tag lists never serve a later cycle. "
        f"Kubernetes minimum: no list (the watched copy, listed before the first cycle; a "
        f"tree without it lists Applications and ImageUpdaters every cycle), {stale} "
        "Application patches on the cold cycle; besides, an ImageUpdater's status is written "
        "once on its first cycle and afterwards only when it changes (or for the heartbeat), "
        "and each write-back creates an event. Controller CPU is the process time of the "
        "controller process during the cycle, GC the time its garbage collections took. Peak RSS is the controller process's peak "
        "resident memory so far (VmHWM; the highest of the rounds, then each round's).",
    ]
    return "\n".join(lines)


def parent_main(args: argparse.Namespace) -> int:
    from argocd_image_updater_testing.registry import RegistryServer

    s = Scenario(args.apps, args.repos, args.tags, args.new_fraction, args.config)
    check_scenario(s)
    if args.rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    if args.profile:
        profile, profile_name = f"cprofile:{args.profile}", "cProfile"
    elif args.sample:
        profile, profile_name = f"sample:{args.sample}", "CPU sampling profile"
    else:
        profile, profile_name = "none:0", ""
    root = scratch_dir("cycle-bench-", inodes=s.repos * s.tags * INODES_PER_NAMED_TAG)
    setup: dict[str, float] = {}
    rounds: list[list[Measured]] = []
    try:
        began = time.perf_counter()
        write_tag_name_storage(root / "storage", [s.repo(r) for r in range(s.repos)], s.tags, s.tag)
        setup["storage"] = time.perf_counter() - began
        with RegistryServer(storage=root / "storage") as registry:
            for _ in range(args.rounds):
                rounds.append(asyncio.run(run_fakes(s, root, registry.url, profile, setup)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(render(rounds, s, setup))
    for row in rounds[0]:
        if row.profile:
            print(
                f"\n{profile_name} of the {row.cycle} cycle (its times above include the "
                f"profiler's overhead):\n```\n{row.profile.strip()}\n```"
            )
    failed = [(row.cycle, problem) for rows in rounds for row in rows for problem in row.problems]
    for cycle, problem in failed:
        print(f"FAILED ({cycle} cycle): {problem}", file=sys.stderr)
    return 1 if failed else 0


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kubeconfig, conf, log_path, host, repos, profile = sys.argv[2:8]
        with open(log_path, "w") as log_stream:
            asyncio.run(child_main(kubeconfig, conf, log_stream, host, json.loads(repos), profile))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--repos", type=int, default=200)
    parser.add_argument("--tags", type=int, default=100)
    parser.add_argument("--new-fraction", type=float, default=0.1)
    parser.add_argument("--config", choices=("cr", "legacy"), default="cr")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        metavar="N",
        help="run the scenario N times (a new controller each) and report min / median",
    )
    parser.add_argument(
        "--large",
        action="store_true",
        help="the large point: 10,000 Applications over 2,000 repositories (overrides "
        "--apps and --repos)",
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="print the N most expensive functions (cProfile) of each cycle",
    )
    parser.add_argument(
        "--sample",
        type=int,
        default=0,
        metavar="N",
        help="print a statistical CPU profile of each cycle instead (a stack sample every ms "
        "of CPU; little overhead): CPU per component and the N most sampled functions",
    )
    args = parser.parse_args()
    if args.large:
        args.apps, args.repos = 10_000, 2_000
    sys.exit(parent_main(args))


if __name__ == "__main__":
    main()
