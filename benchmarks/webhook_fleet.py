"""Push → webhook → write-back latency at three sharded replicas (``run --sharding``): a webhook
call to any replica must reach the owners of the affected ImageUpdaters.

Scenario (defaults): 300 Argo CD Applications (Kustomize), 60 repositories × 20 tags, five
Applications per repository (``<service>-<n>``), each running the newest tag, as in
``webhook_latency.py``; ``--updaters-per-repo K`` ImageUpdaters per repository (default 1: one
per service, ``namePattern: <service>-*``; with K > 1 each takes some of the service's
Applications, so that one event concerns ImageUpdaters on several replicas).

Parts are the product's own: the real registry behind the counting proxy, the Kubernetes API
fake (in a thread of this process), and ``--replicas`` controller processes (default 3), each
built as ``run --sharding --enable-webhook --disable-tls`` builds it (``build_controller``,
``start_election``, ``start_webhook``, the loop ``Controller.run`` with a one-hour interval, so
that no periodic cycle runs while the events are measured). Lease timings: 6 s / 4 s / 1 s.
The benchmark waits until every replica is a settled member that sees all of them, follows the
events ConfigMap and has run its first cycle with the full member list (2 s of quiet after).

Each event: push a new tag to one repository, then POST the ``generic`` webhook to one replica
(in turn), and poll the fake's store until every Application of that repository holds the new
tag. Latency is from the start of the POST to that moment. Events are classed by where the
call landed: ``owner`` (the receiving replica owns every ImageUpdater of the repository),
``forwarded`` (it owns none: the event had to pass through the events ConfigMap), ``mixed``.
``--runs`` runs (default 3) of ``--events`` events (default 50), ``--spacing`` seconds apart.

Checks (the benchmark fails, exit status 1): every event written within ``--timeout``; per
event, the registry's ``tags/list`` count equals the number of replicas owning the repository's
ImageUpdaters (each lists it once), nothing else is requested; no replica ran a cycle during the
measurement (the events did the work); every Application ends with the expected image.

Run: ``.venv/bin/python benchmarks/webhook_fleet.py [--replicas N] [--apps N] [--repos N]
[--events N] [--runs N] [--updaters-per-repo K] [--spacing S] [--poll S]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

from common import emit, machine, scratch_dir, write_fleet_storage
from webhook_latency import (
    NS,
    SECRET,
    START,
    Child,
    Scenario,
    check_scenario,
    delta,
    kustomize_images,
    percentile,
    tag,
)

LEASE = {
    "leader_election_lease_duration": timedelta(seconds=6),
    "leader_election_renew_deadline": timedelta(seconds=4),
    "leader_election_retry_period": timedelta(seconds=1),
}


# --- scenario -----------------------------------------------------------------------------------


def updaters(s: Scenario, per_repo: int) -> dict[int, list[tuple[str, list[str]]]]:
    """Repository index → its ImageUpdaters: (name, the Application name patterns it takes)."""
    result: dict[int, list[tuple[str, list[str]]]] = {}
    for r in range(s.used_repos()):
        if per_repo <= 1:
            result[r] = [(s.service(r), [f"{s.service(r)}-*"])]
            continue
        apps = s.apps_of(r)
        groups = [apps[g::per_repo] for g in range(min(per_repo, len(apps)))]
        result[r] = [(f"{s.service(r)}-u{g}", group) for g, group in enumerate(groups)]
    return result


def seed_kube(store: Any, s: Scenario, host: str, per_repo: int) -> dict[int, list[str]]:
    """The fleet; returns repository index → the shard keys of its ImageUpdaters."""
    from argocd_image_updater_testing import objects

    for app in range(s.apps):
        running = f"{host}/{s.repo(s.app_repo(app))}:{tag(s.tags - 1)}"
        store.put(
            objects.application(s.app_name(app), NS, images=[running], kustomize_images=[running])
        )
    keys: dict[int, list[str]] = {}
    for r, found in updaters(s, per_repo).items():
        image = {"alias": "app", "imageName": f"{host}/{s.repo(r)}"}
        keys[r] = []
        for name, patterns in found:
            refs = [{"namePattern": p, "images": [image]} for p in patterns]
            store.put(objects.image_updater(name, NS, {"applicationRefs": refs}))
            keys[r].append(f"{NS}/{name}")
    return keys


# --- a replica (child process) ------------------------------------------------------------------


def replica_stats(controller: Any) -> dict[str, Any]:
    from argocd_image_updater.observe.metrics import REGISTRY

    def sample(name: str, labels: dict[str, str] | None = None) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    forwarded = "argocd_image_updater_webhook_events_forwarded_total"
    handling = "argocd_image_updater_webhook_event_handling_seconds"
    return {
        "cycles": controller.cycles,
        "sent": sample(forwarded, {"direction": "sent"}),
        "received": sample(forwarded, {"direction": "received"}),
        "calls": sample(handling + "_count"),
        "handling_seconds": sample(handling + "_sum"),
        "view": sorted(controller.shards.view),
    }


async def child_main(kubeconfig: str, conf: str, name: str, members: int, log: TextIO) -> None:
    from argocd_image_updater.cli.run_cmd import (
        build_controller,
        close_resource,
        start_election,
        start_webhook,
    )
    from argocd_image_updater.config.settings import resolve
    from argocd_image_updater.observe import log as logging_setup

    logging_setup.setup("info", "text", stream=log)
    os.environ["POD_NAME"] = name
    settings = resolve(
        "run",
        {
            "kubeconfig": kubeconfig,
            "registries_conf_path": conf,
            "sharding": True,
            "enable_webhook": True,
            "disable_tls": True,
            "webhook_ratelimit_per_source": 0,
            "interval": timedelta(hours=1),
            **LEASE,
        },
        env={"GENERIC_WEBHOOK_SECRET": SECRET},
    )
    controller, closers = await build_controller(settings)
    stop = asyncio.Event()
    tasks = []
    try:
        elector = start_election(settings, controller, stop)
        assert elector is not None and controller.shards is not None
        _, port = await start_webhook(settings, controller, 0, closers)
        tasks = [elector, asyncio.create_task(controller.run(stop=stop))]
        shards, fleet = controller.shards, controller.fleet
        assert fleet is not None

        def ready() -> bool:
            return (
                shards.settled()
                and len(shards.view) == members
                and fleet.following
                and controller.cycles >= 1
                and not shards.claimed
            )

        while not ready():  # noqa: ASYNC110 - conditions of several objects, no event to wait on
            await asyncio.sleep(0.05)
        emit({"event": "ready", "port": port, **replica_stats(controller)})
        while True:
            command = (await asyncio.to_thread(sys.stdin.readline)).strip()
            if command == "stats":
                emit({"event": "stats", **replica_stats(controller)})
            else:
                return
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        for closer in reversed(closers):
            await close_resource(closer)


# --- the measurement (parent process) -----------------------------------------------------------


@dataclass
class Event:
    repo: str
    receiver: int
    kind: str
    """``owner``, ``forwarded`` or ``mixed``."""
    owners: int
    latency: float
    registry: Counter[str] = field(default_factory=Counter)


@dataclass
class Bench:
    s: Scenario
    host: str
    ports: list[int]
    members: list[str]
    keys: dict[int, list[str]]
    kube: Any
    proxy: Any
    pusher: Any
    client: Any
    poll: float
    timeout: float
    newest: dict[int, int]
    pushes: int = 0
    problems: list[str] = field(default_factory=list)

    def owners(self, repo: int) -> set[int]:
        from argocd_image_updater.controller.shards import owner

        return {self.members.index(owner(key, self.members) or "") for key in self.keys[repo]}

    async def event(self) -> Event:
        from argocd_image_updater.webhook.signatures import sign_generic

        index = self.pushes % self.s.used_repos()
        receiver = self.pushes % len(self.ports)
        self.pushes += 1
        self.newest[index] += 1
        repo, new = self.s.repo(index), tag(self.newest[index])
        await self.pusher.push_image(repo, new, created=START + timedelta(days=3650 + self.pushes))
        want = [f"{self.host}/{repo}:{new}"]
        body = json.dumps({"registry": self.host, "repository": repo, "tag": new}).encode()
        stamp = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "X-Timestamp": str(stamp),
            "X-Signature-256": sign_generic(SECRET, stamp, body),
        }
        before = Counter(self.proxy.counts)
        url = f"http://127.0.0.1:{self.ports[receiver]}/webhook?type=generic"
        began = time.perf_counter()
        response = await self.client.post(url, content=body, headers=headers)
        if response.status_code != 200:
            raise SystemExit(f"the webhook answered {response.status_code}: {response.text}")
        remaining = self.s.apps_of(index)
        deadline = began + self.timeout
        while True:
            remaining = [n for n in remaining if kustomize_images(self.kube.store, n) != want]
            now = time.perf_counter()
            if not remaining:
                break
            if now > deadline:
                raise SystemExit(f"{repo}:{new} was not written to {remaining} in {self.timeout} s")
            await asyncio.sleep(self.poll)
        owners = self.owners(index)
        kind = "owner" if owners == {receiver} else "mixed" if receiver in owners else "forwarded"
        return Event(repo, receiver, kind, len(owners), now - began, before)


async def ask_all(children: list[Child], command: str) -> list[dict[str, Any]]:
    return list(await asyncio.gather(*(child.ask(command) for child in children)))


async def measure(bench: Bench, children: list[Child], spacing: float) -> list[Event]:
    events = []
    for _ in range(bench.s.events):
        event = await bench.event()
        events.append(event)
        await asyncio.sleep(spacing)  # the other owners finish; their requests count here
        event.registry = delta(Counter(bench.proxy.counts), event.registry)
        others = sum(n for kind, n in event.registry.items() if kind != "tags")
        if event.registry["tags"] != event.owners or others:
            bench.problems.append(
                f"{event.repo} (to replica {event.receiver}, {event.owners} owner(s)): registry "
                f"requests {dict(event.registry)}, expected {event.owners} tag list(s)"
            )
    return events


async def run_all(
    s: Scenario, root: Path, registry_url: str, args: argparse.Namespace, setup: dict[str, Any]
) -> list[list[Event]]:
    import httpx

    from argocd_image_updater_testing.faulty_proxy import FaultyProxy
    from argocd_image_updater_testing.kube import KubeApiServer
    from argocd_image_updater_testing.push import ImagePusher

    members = [f"replica-{n}" for n in range(args.replicas)]
    async with FaultyProxy(registry_url) as proxy:
        kube = KubeApiServer(namespaces=(NS,))
        keys = seed_kube(kube.store, s, proxy.host, args.updaters_per_repo)
        kube.start_in_thread()
        processes = []
        try:
            conf = root / "registries.conf"
            conf.write_text(
                f"registries:\n- name: bench\n  prefix: {proxy.host}\n  api_url: {proxy.url}\n"
            )
            kubeconfig = kube.write_kubeconfig(root / "kubeconfig", namespace=NS)
            for name in members:
                processes.append(
                    await asyncio.create_subprocess_exec(
                        sys.executable,
                        __file__,
                        "--child",
                        str(kubeconfig),
                        str(conf),
                        name,
                        str(args.replicas),
                        str(root / f"{name}.log"),
                        stdin=asyncio.subprocess.PIPE,
                        stdout=asyncio.subprocess.PIPE,
                    )
                )
            children = [Child(p) for p in processes]
            began = time.perf_counter()
            ready = list(await asyncio.gather(*(child.receive() for child in children)))
            setup["settle"] = time.perf_counter() - began
            await asyncio.sleep(2.0)  # the cycles the last member list change started end
            quiet = await ask_all(children, "stats")
            runs = []
            async with (
                ImagePusher(registry_url) as pusher,
                httpx.AsyncClient(timeout=30) as client,
            ):
                bench = Bench(
                    s,
                    proxy.host,
                    [int(r["port"]) for r in ready],
                    members,
                    keys,
                    kube,
                    proxy,
                    pusher,
                    client,
                    args.poll,
                    args.timeout,
                    {r: s.tags - 1 for r in range(s.used_repos())},
                )
                for _ in range(args.runs):
                    runs.append(await measure(bench, children, args.spacing))
            after = await ask_all(children, "stats")
            setup["after"] = after
            for name, one, other in zip(members, quiet, after, strict=True):
                if other["cycles"] != one["cycles"]:
                    bench.problems.append(f"{name} ran a cycle during the measurement")
            expected = {}
            for a in range(s.apps):
                r = s.app_repo(a)
                expected[s.app_name(a)] = [f"{proxy.host}/{s.repo(r)}:{tag(bench.newest[r])}"]
            wrong = [n for n in expected if kustomize_images(kube.store, n) != expected[n]]
            if wrong:
                bench.problems.append(f"{len(wrong)} Applications hold the wrong images")
            setup["problems"] = bench.problems
            for child in children:
                await child.quit()
            return runs
        finally:
            for process in processes:
                if process.returncode is None:
                    process.kill()
                    await process.wait()
            kube.stop()


# --- report -------------------------------------------------------------------------------------


def row(label: str, events: list[Event]) -> str:
    if not events:
        return f"| {label} | 0 | – | – | – | – |"
    ms = [e.latency * 1000 for e in events]
    return (
        f"| {label} | {len(ms)} | {statistics.median(ms):.0f} | {percentile(ms, 0.95):.0f} | "
        f"{max(ms):.0f} | {statistics.fmean(e.owners for e in events):.2f} |"
    )


def render(
    runs: list[list[Event]], s: Scenario, args: argparse.Namespace, setup: dict[str, Any]
) -> str:
    lines = [
        f"Machine: {machine()}.",
        f"{args.replicas} sharded replicas (each its own process), {s.apps} Applications, "
        f"{s.repos} repositories × {s.tags} tags, {args.updaters_per_repo} ImageUpdater(s) per "
        f"repository; {len(runs)} runs of {s.events} events, {args.spacing:g} s apart, each "
        f"POSTed to the replicas in turn. Settling: {setup['settle']:.1f} s.",
        "",
        "| run / events | events | p50 ms | p95 ms | max ms | owners / event |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for number, events in enumerate(runs, 1):
        lines.append(row(f"run {number}: all", events))
        for kind in ("owner", "mixed", "forwarded"):
            chosen = [e for e in events if e.kind == kind]
            if chosen:
                lines.append(row(f"run {number}: {kind}", chosen))
    every = [e for events in runs for e in events]
    lines.append(row("all runs", every))
    lines.append(row("all runs: forwarded", [e for e in every if e.kind == "forwarded"]))
    after = setup["after"]
    sent = sum(r["sent"] for r in after)
    received = sum(r["received"] for r in after)
    lines += [
        "",
        f"Latency: from the start of the POST until every Application of the repository holds "
        f"the new tag (polled every {args.poll * 1000:g} ms). `owner`: the receiving replica "
        "owns all of the repository's ImageUpdaters; `forwarded`: none (the event passes "
        "through the ConfigMap `argocd-image-updater-events` to their owners); `mixed`: some. "
        f"Events passed on: {sent:.0f} sent, {received:.0f} received (each received by every "
        "other replica). Registry: each event cost exactly one tags/list per owning replica.",
    ]
    return "\n".join(lines)


def parent_main(args: argparse.Namespace) -> int:
    from argocd_image_updater_testing.registry import RegistryServer

    s = Scenario(args.apps, args.repos, args.tags, args.events, "cr")
    check_scenario(s)
    root = scratch_dir("webhook-fleet-bench-")
    setup: dict[str, Any] = {}
    try:
        write_fleet_storage(
            root / "storage", [s.repo(r) for r in range(s.repos)], s.tags, tag, START
        )
        with RegistryServer(storage=root / "storage") as registry:
            runs = asyncio.run(run_all(s, root, registry.url, args, setup))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(render(runs, s, args, setup))
    for problem in setup.get("problems", []):
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if setup.get("problems") else 0


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kubeconfig, conf, name, members, log_path = sys.argv[2:7]
        with open(log_path, "w") as log_stream:
            asyncio.run(child_main(kubeconfig, conf, name, int(members), log_stream))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--apps", type=int, default=300)
    parser.add_argument("--repos", type=int, default=60)
    parser.add_argument("--tags", type=int, default=20, help="initial tags per repository")
    parser.add_argument("--events", type=int, default=50, help="events per run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--updaters-per-repo", type=int, default=1)
    parser.add_argument("--poll", type=float, default=0.002, metavar="S")
    parser.add_argument(
        "--spacing", type=float, default=0.3, metavar="S", help="seconds after each event"
    )
    parser.add_argument("--timeout", type=float, default=30.0, metavar="S")
    sys.exit(parent_main(parser.parse_args()))


if __name__ == "__main__":
    main()
