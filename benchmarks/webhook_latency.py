"""Push → webhook → write-back latency at fleet scale, and the registry requests per event.

Scenario (defaults): 500 Argo CD Applications (Kustomize), 100 repositories × 20 tags, five
Applications per repository (``<service>-<n>``, like five environments of a service), each
running the newest tag (in ``status.summary.images`` and ``spec.source.kustomize.images``).
Configuration (``--config``): ``cr`` (default), one ImageUpdater per service with
``namePattern: <service>-*`` and one image (semver, no constraint); ``legacy``, the v0.x
``image-list`` annotation on every Application and no CR.

Parts are the product's own: the real registry (``docker-registry``; the initial tags written
to its storage directly, the new tags pushed through its API) behind the counting proxy, the
Kubernetes API fake (in a thread), and the controller with its webhook server exactly as
``run --enable-webhook --disable-tls`` builds them (``build_controller``, ``start_webhook``), in a
child process so that the fakes' and the measurement's CPU is not on its event loop. The
controller runs one cycle at startup, as ``run`` does (it must write nothing); no periodic cycle
runs while the events are measured. The ``generic`` webhook type is used, signed with its secret.
The per-source request limit (60 a minute by default) is turned off: all events come from one
address, faster than a registry would send them.

Each event: push a new (semver-greater) tag to one repository, then POST the webhook and poll the
Kubernetes fake's store until every Application of that repository holds the new tag. Latency is
from the start of the POST to that moment; the poll interval (``--poll``) bounds its resolution.
Events go to the repositories in turn, so two events of one run hit the same repository only when
there are more events than repositories.

Two runs of ``--events`` events each:

1. back-to-back: the next push starts as soon as the previous event's Applications are patched;
2. spaced: ``--spacing`` seconds of quiet after each event, longer than the dispatcher's
   coalescing window, so every event is handled on its own and its requests are attributed to it.

Per event, the registry requests (as the proxy counts them) must be exactly one repository scan:
one ``tags/list`` for semver, nothing else. The benchmark fails (exit status 1) when an event is
not written within ``--timeout``, an event costs other than one tag list, or any Application ends
with another image than expected.

Run: ``.venv/bin/python benchmarks/webhook_latency.py [--apps N] [--repos N] [--events N]
[--tags N] [--config cr|legacy] [--poll S] [--spacing S] [--profile N]``
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import math
import shutil
import statistics
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from common import emit, machine, profile_text, scratch_dir, write_fleet_storage

NS = "argocd"
START = datetime(2024, 1, 1, tzinfo=UTC)
IMAGE_LIST = "argocd-image-updater.argoproj.io/image-list"
SECRET = "benchmark-generic-webhook-secret"

# The product is imported inside functions: the controller process loads only what the
# controller loads (no fakes).


# --- scenario -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    apps: int
    repos: int
    tags: int
    events: int
    config: str

    def repo(self, index: int) -> str:
        return f"bench/{self.service(index)}"

    def service(self, index: int) -> str:
        return f"svc{index:0{len(str(max(self.repos - 1, 0)))}d}"

    def app_repo(self, app: int) -> int:
        return app % self.repos

    def app_name(self, app: int) -> str:
        return f"{self.service(self.app_repo(app))}-{app // self.repos}"

    def apps_of(self, repo: int) -> list[str]:
        return [self.app_name(a) for a in range(repo, self.apps, self.repos)]

    def used_repos(self) -> int:
        return min(self.apps, self.repos)


def tag(minor: int) -> str:
    return f"1.{minor}.0"


def check_scenario(s: Scenario) -> None:
    if s.apps < 1 or s.repos < 1 or s.events < 1:
        raise SystemExit("--apps, --repos and --events must be at least 1")
    if s.tags < 1:
        raise SystemExit("--tags must be at least 1")


def seed_kube(store: Any, s: Scenario, host: str) -> None:
    from argocd_image_updater_testing import objects

    for app in range(s.apps):
        image = f"{host}/{s.repo(s.app_repo(app))}"
        running = f"{image}:{tag(s.tags - 1)}"
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
        for r in range(s.used_repos()):
            ref = {
                "namePattern": f"{s.service(r)}-*",
                "images": [{"alias": "app", "imageName": f"{host}/{s.repo(r)}"}],
            }
            store.put(objects.image_updater(s.service(r), NS, {"applicationRefs": [ref]}))


def kustomize_images(store: Any, name: str) -> list[str]:
    obj = store.get("applications", NS, name)
    return list(obj["spec"]["source"].get("kustomize", {}).get("images", []))


# --- the controller (child process) -------------------------------------------------------------


def webhook_stats() -> dict[str, float]:
    """The webhook metrics of this process (accepted, coalesced, handler calls and their time)."""
    from argocd_image_updater.observe.metrics import REGISTRY

    def sample(name: str, labels: dict[str, str] | None = None) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    events = "argocd_image_updater_webhook_events_total"
    handling = "argocd_image_updater_webhook_event_handling_seconds"
    return {
        "accepted": sample(events, {"type": "generic", "result": "accepted"}),
        "coalesced": sample(events, {"type": "generic", "result": "coalesced"}),
        "rejected": sample(events, {"type": "generic", "result": "rejected"}),
        "calls": sample(handling + "_count"),
        "handling_seconds": sample(handling + "_sum"),
    }


async def child_main(kubeconfig: str, conf: str, log_stream: TextIO, top: int) -> None:
    from argocd_image_updater.cli.run_cmd import build_controller, close_resource, start_webhook
    from argocd_image_updater.config.settings import resolve
    from argocd_image_updater.observe import log as logging_setup

    logging_setup.setup("info", "text", stream=log_stream)  # as ``run`` does, to a file
    settings = resolve(
        "run",
        {
            "kubeconfig": kubeconfig,
            "registries_conf_path": conf,
            "enable_webhook": True,
            "disable_tls": True,
            "webhook_ratelimit_per_source": 0,
        },
        env={"GENERIC_WEBHOOK_SECRET": SECRET},
    )
    controller, closers = await build_controller(settings)
    try:
        began = time.perf_counter()
        result = await controller.cycle()
        startup = time.perf_counter() - began
        _, port = await start_webhook(settings, controller, 0, closers)
        emit(
            {
                "event": "ready",
                "port": port,
                "startup_cycle": startup,
                "written": sum(1 for a in result.apps if a.written),
                "errors": result.errors,
                "scans": result.scans,
            }
        )
        profiler: cProfile.Profile | None = None
        while True:
            command = (await asyncio.to_thread(sys.stdin.readline)).strip()
            if command == "stats":
                emit({"event": "stats", **webhook_stats()})
            elif command == "profile":
                profiler = cProfile.Profile()
                profiler.enable()
                emit({"event": "profiling"})
            elif command == "unprofile":
                text = ""
                if profiler is not None:
                    profiler.disable()
                    text = profile_text(profiler, top)
                    profiler = None
                emit({"event": "profile", "text": text})
            else:
                return
    finally:
        for closer in reversed(closers):
            await close_resource(closer)


class Child:
    """The controller process, driven over its stdin and stdout (one JSON line per answer)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await self.process.stdout.readline()
        if not line:
            await self.process.wait()
            raise SystemExit(
                f"the controller process ended (exit status {self.process.returncode})"
            )
        event: dict[str, Any] = json.loads(line)
        return event

    async def ask(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(command.encode() + b"\n")
        await self.process.stdin.drain()
        return await self.receive()

    async def quit(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"quit\n")
        await self.process.stdin.drain()
        self.process.stdin.close()
        if await self.process.wait() != 0:
            raise SystemExit(
                f"the controller process failed (exit status {self.process.returncode})"
            )


# --- the measurement (parent process) -----------------------------------------------------------


@dataclass
class Event:
    repo: str
    tag: str
    latency: float
    answered: float
    """Seconds until the POST was answered."""
    registry: Counter[str] = field(default_factory=Counter)
    kube: Counter[str] = field(default_factory=Counter)


@dataclass
class Run:
    name: str
    spacing: float
    events: list[Event] = field(default_factory=list)
    stats: dict[str, float] = field(default_factory=dict)
    poll_checks: int = 0
    poll_seconds: float = 0.0
    profile: str = ""
    problems: list[str] = field(default_factory=list)


@dataclass
class Bench:
    s: Scenario
    host: str
    port: int
    kube: Any
    proxy: Any
    pusher: Any
    client: Any
    poll: float
    timeout: float
    newest: dict[int, int]
    """Repository index → minor version of its newest tag."""
    pushes: int = 0

    def sign(self, body: bytes) -> dict[str, str]:
        from argocd_image_updater.webhook.signatures import sign_generic

        stamp = int(time.time())
        return {
            "Content-Type": "application/json",
            "X-Timestamp": str(stamp),
            "X-Signature-256": sign_generic(SECRET, stamp, body),
        }

    def snapshot(self) -> tuple[Counter[str], Counter[str]]:
        kube: Counter[str] = Counter()
        for (verb, resource), n in list(self.kube.requests.items()):
            kube[f"{verb} {resource}"] += n
        return Counter(self.proxy.counts), kube

    async def event(self, run: Run) -> Event:
        index = self.pushes % self.s.used_repos()
        self.pushes += 1
        self.newest[index] += 1
        repo, new = self.s.repo(index), tag(self.newest[index])
        await self.pusher.push_image(repo, new, created=START + timedelta(days=3650 + self.pushes))
        want = [f"{self.host}/{repo}:{new}"]
        body = json.dumps({"registry": self.host, "repository": repo, "tag": new}).encode()
        headers = self.sign(body)
        url = f"http://127.0.0.1:{self.port}/webhook?type=generic"
        began = time.perf_counter()
        response = await self.client.post(url, content=body, headers=headers)
        answered = time.perf_counter() - began
        if response.status_code != 200:
            raise SystemExit(f"the webhook answered {response.status_code}: {response.text}")
        remaining = self.s.apps_of(index)
        deadline = began + self.timeout
        while True:
            checked = time.perf_counter()
            remaining = [n for n in remaining if kustomize_images(self.kube.store, n) != want]
            now = time.perf_counter()
            run.poll_checks += 1
            run.poll_seconds += now - checked
            if not remaining:
                break
            if now > deadline:
                raise SystemExit(
                    f"{repo}:{new} was not written to {remaining} within {self.timeout} s"
                )
            await asyncio.sleep(self.poll)
        return Event(repo, new, now - began, answered)

    def expected(self) -> dict[str, list[str]]:
        result = {}
        for app in range(self.s.apps):
            r = self.s.app_repo(app)
            result[self.s.app_name(app)] = [f"{self.host}/{self.s.repo(r)}:{tag(self.newest[r])}"]
        return result


async def settle(child: Child, accepted: float, deadline: float) -> dict[str, float]:
    """The child's webhook stats once every accepted event's handler call has ended (or at
    ``deadline``, monotonic seconds)."""
    while True:
        stats = await child.ask("stats")
        if stats["calls"] + stats["coalesced"] >= accepted or time.monotonic() > deadline:
            return stats
        await asyncio.sleep(0.05)


def delta(after: Counter[str], before: Counter[str]) -> Counter[str]:
    result = Counter(after)
    result.subtract(before)
    return +result


async def measure(bench: Bench, child: Child, run: Run, profile: bool) -> None:
    before = await child.ask("stats")
    if profile:
        await child.ask("profile")
    snapshots = []
    for _ in range(bench.s.events):
        snapshots.append(bench.snapshot())
        run.events.append(await bench.event(run))
        if run.spacing:
            await asyncio.sleep(run.spacing)
    accepted = before["accepted"] + before["coalesced"] + bench.s.events
    after = await settle(child, accepted, time.monotonic() + bench.timeout)
    snapshots.append(bench.snapshot())
    if profile:
        run.profile = (await child.ask("unprofile"))["text"]
    for number, event in enumerate(run.events):
        event.registry = delta(snapshots[number + 1][0], snapshots[number][0])
        event.kube = delta(snapshots[number + 1][1], snapshots[number][1])
    run.stats = {k: after[k] - before.get(k, 0.0) for k in after if k != "event"}
    check_run(bench, run)


def check_run(bench: Bench, run: Run) -> None:
    per_repo = {bench.s.repo(r): len(bench.s.apps_of(r)) for r in range(bench.s.used_repos())}
    for number, event in enumerate(run.events, 1):
        others = sum(n for kind, n in event.registry.items() if kind != "tags")
        if event.registry["tags"] != 1 or others:
            run.problems.append(
                f"event {number} ({event.repo}:{event.tag}): registry requests "
                f"{dict(event.registry)}, expected one tag list"
            )
        patches = sum(n for key, n in event.kube.items() if key.startswith("patch "))
        if patches != per_repo[event.repo]:
            run.problems.append(
                f"event {number} ({event.repo}): {patches} patches, expected {per_repo[event.repo]}"
            )
    if run.stats.get("rejected"):
        run.problems.append(f"{run.stats['rejected']:.0f} webhook calls rejected")
    expected = bench.expected()
    wrong = [n for n in expected if kustomize_images(bench.kube.store, n) != expected[n]]
    if wrong:
        run.problems.append(
            f"{len(wrong)} Applications hold the wrong images, e.g. {wrong[0]}: "
            f"{kustomize_images(bench.kube.store, wrong[0])} instead of {expected[wrong[0]]}"
        )


async def run_all(
    s: Scenario, root: Path, registry_url: str, args: argparse.Namespace, setup: dict[str, Any]
) -> list[Run]:
    import httpx

    from argocd_image_updater_testing.faulty_proxy import FaultyProxy
    from argocd_image_updater_testing.kube import KubeApiServer
    from argocd_image_updater_testing.push import ImagePusher

    async with FaultyProxy(registry_url) as proxy:
        began = time.perf_counter()
        kube = KubeApiServer(namespaces=(NS,))
        seed_kube(kube.store, s, proxy.host)
        setup["seed"] = time.perf_counter() - began
        kube.start_in_thread()
        try:
            conf = root / "registries.conf"
            conf.write_text(
                f"registries:\n- name: bench\n  prefix: {proxy.host}\n  api_url: {proxy.url}\n"
            )
            kubeconfig = kube.write_kubeconfig(root / "kubeconfig", namespace=NS)
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                __file__,
                "--child",
                str(kubeconfig),
                str(conf),
                str(root / "controller.log"),
                str(args.profile),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
            child = Child(process)
            try:
                ready = await child.receive()
                setup["ready"] = ready
                if ready["written"] or ready["errors"]:
                    raise SystemExit(f"the startup cycle was not clean: {ready}")
                runs = [Run("back-to-back", 0.0), Run("spaced", args.spacing)]
                async with (
                    ImagePusher(registry_url) as pusher,
                    httpx.AsyncClient(timeout=30) as client,
                ):
                    bench = Bench(
                        s,
                        proxy.host,
                        int(ready["port"]),
                        kube,
                        proxy,
                        pusher,
                        client,
                        args.poll,
                        args.timeout,
                        {r: s.tags - 1 for r in range(s.used_repos())},
                    )
                    for number, run in enumerate(runs):
                        await measure(bench, child, run, profile=bool(args.profile) and number == 0)
                await child.quit()
            finally:
                if process.returncode is None:
                    process.kill()
                    await process.wait()
            return runs
        finally:
            kube.stop()


# --- report -------------------------------------------------------------------------------------


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def render(runs: list[Run], s: Scenario, setup: Mapping[str, Any], poll: float) -> str:
    from argocd_image_updater.cli.run_cmd import WEBHOOK_COALESCE_WINDOW

    ready = setup["ready"]
    per_repo = s.apps // s.repos if s.apps >= s.repos else 1
    lines = [
        f"Machine: {machine()}.",
        f"{s.apps} Applications ({s.config} configuration), {s.repos} repositories × {s.tags} "
        f"tags (about {per_repo} Applications per repository), {s.events} events per run; "
        "controller in its own process.",
        f"Setup: registry storage {setup['storage']:.1f} s, Kubernetes fake seeded "
        f"{setup['seed']:.1f} s, startup cycle {ready['startup_cycle']:.2f} s "
        f"({ready['scans']} scans, nothing written).",
        "",
        "| run | events | p50 ms | p95 ms | max ms | mean ms | POST answered p50 ms | "
        "handler mean ms | registry requests / event | events ≠ 1 tags/list | "
        "k8s requests / event | handler calls / coalesced |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|",
    ]
    for run in runs:
        latencies = [e.latency * 1000 for e in run.events]
        answered = [e.answered * 1000 for e in run.events]
        registry: Counter[str] = Counter()
        kube: Counter[str] = Counter()
        for e in run.events:
            registry.update(e.registry)
            kube.update(e.kube)
        n = len(run.events)
        reg = ", ".join(f"{k} {v / n:.2f}" for k, v in sorted(registry.items())) or "0"
        k8s = ", ".join(f"{k} {v / n:.2f}" for k, v in sorted(kube.items())) or "0"
        off = sum(1 for e in run.events if e.registry["tags"] != 1 or len(e.registry) != 1)
        calls = run.stats.get("calls", 0.0)
        handler = run.stats.get("handling_seconds", 0.0) / calls * 1000 if calls else 0.0
        label = run.name if not run.spacing else f"{run.name} ({run.spacing:g} s apart)"
        lines.append(
            f"| {label} | {n} | {statistics.median(latencies):.0f} | "
            f"{percentile(latencies, 0.95):.0f} | {max(latencies):.0f} | "
            f"{statistics.fmean(latencies):.0f} | {statistics.median(answered):.1f} | "
            f"{handler:.0f} | {reg} | {off} | {k8s} | {calls:.0f} / "
            f"{run.stats.get('coalesced', 0.0):.0f} |"
        )
    checks = sum(r.poll_checks for r in runs)
    check_ms = sum(r.poll_seconds for r in runs) / checks * 1000 if checks else 0.0
    lines += [
        "",
        f"Latency: from the start of the POST until every Application of the repository holds "
        f"the new tag in the fake's store, polled every {poll * 1000:g} ms (one check took "
        f"{check_ms:.2f} ms on average), so each figure is late by at most about "
        f"{poll * 1000 + check_ms:.1f} ms. Handler mean: the dispatcher's "
        "`webhook_event_handling_seconds` (receipt of the event to the end of its handler "
        f"call), which includes the {WEBHOOK_COALESCE_WINDOW * 1000:.0f} ms coalescing window. "
        "Requests per event: what the proxy and the Kubernetes fake counted between one POST and "
        "the next (the push goes to the registry directly and is not counted). Minimum: one "
        "tags/list per event.",
    ]
    return "\n".join(lines)


def parent_main(args: argparse.Namespace) -> int:
    from argocd_image_updater_testing.registry import RegistryServer

    s = Scenario(args.apps, args.repos, args.tags, args.events, args.config)
    check_scenario(s)
    root = scratch_dir("webhook-bench-")
    setup: dict[str, Any] = {}
    try:
        began = time.perf_counter()
        write_fleet_storage(
            root / "storage", [s.repo(r) for r in range(s.repos)], s.tags, tag, START
        )
        setup["storage"] = time.perf_counter() - began
        with RegistryServer(storage=root / "storage") as registry:
            runs = asyncio.run(run_all(s, root, registry.url, args, setup))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(render(runs, s, setup, args.poll))
    for run in runs:
        if run.profile:
            print(
                f"\ncProfile of the controller process during the {run.name} run (its latencies "
                f"above include the profiler's overhead):\n```\n{run.profile.strip()}\n```"
            )
    failed = [(run.name, problem) for run in runs for problem in run.problems]
    for name, problem in failed:
        print(f"FAILED ({name} run): {problem}", file=sys.stderr)
    return 1 if failed else 0


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kubeconfig, conf, log_path, top = sys.argv[2:6]
        with open(log_path, "w") as log_stream:
            asyncio.run(child_main(kubeconfig, conf, log_stream, int(top)))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=500)
    parser.add_argument("--repos", type=int, default=100)
    parser.add_argument("--events", type=int, default=50, help="events per run (two runs)")
    parser.add_argument("--tags", type=int, default=20, help="initial tags per repository")
    parser.add_argument("--config", choices=("cr", "legacy"), default="cr")
    parser.add_argument(
        "--poll", type=float, default=0.002, metavar="S", help="store poll interval (seconds)"
    )
    parser.add_argument(
        "--spacing",
        type=float,
        default=0.5,
        metavar="S",
        help="quiet seconds after each event of the spaced run",
    )
    parser.add_argument(
        "--timeout", type=float, default=30.0, metavar="S", help="per event, to be written"
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="print the N most expensive functions (cProfile) of the back-to-back run",
    )
    sys.exit(parent_main(parser.parse_args()))


if __name__ == "__main__":
    main()
