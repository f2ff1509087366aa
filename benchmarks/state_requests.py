"""The Kubernetes API requests a sharded replica's remembered record costs per cycle
(``controller/shard_state.py``), on the API fake over a socket: one key ConfigMap per
ImageUpdater, one repository ConfigMap per repository its Applications use.

A replica holds ``--keys`` ImageUpdaters of ``--per-key`` Applications; each ImageUpdater's
Applications run one service repository, and every Application a shared base image. A cycle
loads the record twice (the cycle, the change tracking) and saves it. Counted per cycle, after
a first cycle that read and wrote everything: a steady cycle (nothing changed), and a cycle
that records one write; each with loads that read every object (no watched copy) and with the
watched copy of the state ConfigMaps (``state_cache.py``).

Run: ``.venv/bin/python benchmarks/state_requests.py [--keys N] [--per-key N] [--cycles N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.controller.shard_state import ShardedStateStore
from argocd_image_updater.controller.state_cache import StateCache
from argocd_image_updater.kube.client import KubeClient
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.controller_state import repo_key
from argocd_image_updater.model.update_config import AppUpdateConfig, ImageSpec
from argocd_image_updater.pipeline.records import Collected, CRState
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer, KubeStore
from common import machine

NS = "argocd"
HOST = "registry.example.com"
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def share(keys: int, per_key: int) -> Collected:
    collected = Collected(listed={f"{NS}/app-{k}-{n}" for k in range(keys) for n in range(per_key)})
    for k in range(keys):
        cr = CRState(NS, f"updater-{k}", 1, "1")
        collected.crs.append(cr)
        for n in range(per_key):
            view = Application.from_object(objects.application(f"app-{k}-{n}", NS))
            images = (ImageSpec("web", f"{HOST}/team/svc-{k}"), ImageSpec("base", f"{HOST}/base"))
            collected.configs.append((AppUpdateConfig(app=view, images=images), cr))
    return collected


async def cycle(store: ShardedStateStore, collected: Collected, write: str = "") -> None:
    with store.scoped(collected):
        state = await store.load()
        await store.load()
        if write:
            state.record_write(f"{NS}/app-0-0", "web", write, NOW)
        await store.save(state)


async def measure(args: argparse.Namespace, watched: bool, tmp: Path) -> list[str]:
    collected = share(args.keys, args.per_key)
    async with KubeApiServer(KubeStore(namespaces=(NS,))) as api:
        config = api.write_kubeconfig(tmp / f"kubeconfig-{watched}", namespace=NS)
        async with await KubeClient.connect(str(config)) as client:
            seeding = ShardedStateStore(client, NS, RegistryConfig())
            with seeding.scoped(collected):
                state = await seeding.load()
                for k in range(args.keys):
                    state.record_first_seen(repo_key(HOST, f"team/svc-{k}"), ["1.0.0"], NOW)
                    for n in range(args.per_key):
                        state.record_write(f"{NS}/app-{k}-{n}", "web", "1.0.0", NOW)
                state.record_first_seen(repo_key(HOST, "base"), ["1"], NOW)
                await seeding.save(state)
            stop = asyncio.Event()
            cache = StateCache(client, NS) if watched else None
            task = asyncio.create_task(cache.run(stop)) if cache is not None else None
            for _ in range(3000):  # until the watch has listed (at most 30 s)
                if cache is None or cache.synced:
                    break
                await asyncio.sleep(0.01)
            store = ShardedStateStore(client, NS, RegistryConfig(), cache)
            await cycle(store, collected)  # the first: every object read
            rows = []
            for name, write in (("steady", ""), ("one write", "x")):
                before = dict(api.requests)
                started = time.perf_counter()
                for n in range(args.cycles):
                    await cycle(store, collected, f"{write}{n}" if write else "")
                elapsed = (time.perf_counter() - started) / args.cycles
                used = {
                    key: (count - before.get(key, 0)) / args.cycles
                    for key, count in api.requests.items()
                    if count != before.get(key, 0)
                }
                verbs = ", ".join(f"{v} {n:g}" for (v, r), n in sorted(used.items())) or "none"
                rows.append(
                    f"| {'watched copy' if watched else 'read every object'} | {name} | "
                    f"{sum(used.values()):g} | {verbs} | {elapsed * 1000:.0f} |"
                )
            stop.set()
            if task is not None:
                await task
    return rows


async def amain(args: argparse.Namespace) -> None:
    repos = args.keys + 1
    print(machine())
    print(
        f"{args.keys} ImageUpdaters of {args.per_key} Applications held by one replica: "
        f"{args.keys} key ConfigMaps and {repos} repository ConfigMaps; a cycle is two loads "
        f"and a save; {args.cycles} cycles each, requests per cycle\n"
    )
    print("| loads | cycle | requests | by verb | wall ms |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for watched in (False, True):
            for row in await measure(args, watched, Path(tmp)):
                print(row)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--per-key", type=int, default=10)
    parser.add_argument("--cycles", type=int, default=5)
    asyncio.run(amain(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
