"""Local mode at fleet scale: ``run --once --applications-api local`` on an app-of-apps checkout.

Scenario (defaults): a Git work tree with ``--apps`` Application manifests (``apps/<name>.yaml``,
Kustomize, the running tag in ``spec.source.kustomize.images``, write-back method ``argocd``)
and one ImageUpdater per service (``namePattern: <service>-*``); ``--repos`` repositories ×
``--tags`` tags in the real registry (``docker-registry``, storage written directly);
``--new-fraction`` of the Applications run the previous release. The controller is built by
``build_controller`` exactly as ``run`` builds it and runs in this process.

Rows, each on a fresh checkout and a new controller (so with cold registry caches):

* **dry run**: list the manifests, work out the live images, scan, plan; write nothing;
* **cold**: the same, then edit every stale Application's manifest and commit once;
* **warm**: the next cycle of the same controller: nothing left to write.

``write s`` is the cold cycle minus the dry run of the same round. Counts: ``files`` changed in
the work tree by the cycle, ``commits`` added to it. The benchmark exits with status 1 when a
result is wrong (a stale app not updated, anything else changed, not exactly one commit).

Run: ``.venv/bin/python benchmarks/local_mode.py [--apps N] [--repos N] [--tags N] [--rounds N]``
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.config.settings import resolve
from argocd_image_updater_testing.git_servers import git
from argocd_image_updater_testing.registry import RegistryServer
from common import scratch_dir, write_fleet_storage

START = datetime(2026, 1, 1, tzinfo=UTC)


def manifest(name: str, image: str, tag: str) -> str:
    return (
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\n"
        f"metadata:\n  name: {name}\n"
        "spec:\n  project: default\n  source:\n"
        "    repoURL: https://git.example.com/deploy.git\n"
        f"    path: envs/{name}\n"
        "    kustomize:\n      images:\n"
        f"      - {image}:{tag}  # set by argocd-image-updater\n"
        "  destination:\n    server: https://kubernetes.default.svc\n"
        f"    namespace: {name}\n"
    )


def updater(service: str, image: str) -> str:
    return (
        "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\n"
        f"metadata:\n  name: {service}\n"
        f"spec:\n  applicationRefs:\n  - namePattern: '{service}-*'\n"
        f"    images:\n    - alias: web\n      imageName: {image}\n"
    )


class Fleet:
    def __init__(self, args: argparse.Namespace, host: str) -> None:
        self.args = args
        self.host = host
        width = len(str(max(args.repos - 1, 0)))
        self.services = [f"svc{r:0{width}d}" for r in range(args.repos)]
        count = round(args.apps * args.new_fraction)
        self.stale = frozenset(random.Random(7).sample(range(args.apps), count))

    def app(self, index: int) -> tuple[str, str]:
        service = self.services[index % self.args.repos]
        return f"{service}-{index // self.args.repos}", f"{self.host}/bench/{service}"

    def tag(self, index: int) -> str:
        return f"1.{index}.0"

    def checkout(self, root: Path, home: Path) -> Path:
        apps = root / "apps"
        apps.mkdir(parents=True)
        latest, previous = self.tag(self.args.tags - 1), self.tag(self.args.tags - 2)
        for i in range(self.args.apps):
            name, image = self.app(i)
            tag = previous if i in self.stale else latest
            (apps / f"{name}.yaml").write_text(manifest(name, image, tag))
        for service in self.services:
            (apps / f"{service}-updater.yaml").write_text(
                updater(service, f"{self.host}/bench/{service}")
            )
        git("init", "-q", "--initial-branch=main", cwd=root, home=home)
        git("add", "-A", cwd=root, home=home)
        git("commit", "-q", "-m", "fleet", cwd=root, home=home)
        return root


async def cycles(root: Path, conf: Path, dry_run: bool, count: int) -> list[float]:
    settings = resolve(
        "run",
        {
            "applications_api": "local",
            "local_path": str(root / "apps"),
            "registries_conf_path": str(conf),
            "git_cache_dir": str(root.parent / "clones"),
            "git_commit_message_path": str(root / "none"),
            "dry_run": dry_run,
            "once": True,
        },
        env={},
    )
    controller, closers = await build_controller(settings)
    times = []
    try:
        for _ in range(count):
            started = time.perf_counter()
            result = await controller.cycle()
            times.append(time.perf_counter() - started)
            if result.errors:
                raise SystemExit(f"cycle had {result.errors} errors")
    finally:
        for closer in reversed(closers):
            await close_resource(closer)
    return times


def commits(root: Path, home: Path) -> int:
    return int(git("rev-list", "--count", "HEAD", cwd=root, home=home))


def changed_files(root: Path, home: Path) -> list[str]:
    return git("diff", "--name-only", "HEAD~1", "HEAD", cwd=root, home=home).split()


def run_round(fleet: Fleet, conf: Path, tmp: Path) -> dict[str, Any]:
    home = tmp / "home"
    home.mkdir()
    dry_root = fleet.checkout(tmp / "dry", home)
    (dry,) = asyncio.run(cycles(dry_root, conf, True, 1))
    if commits(dry_root, home) != 1 or git("status", "--porcelain", cwd=dry_root, home=home):
        raise SystemExit("the dry run changed the checkout")
    root = fleet.checkout(tmp / "wet", home)
    cold, warm = asyncio.run(cycles(root, conf, False, 2))
    expected = sorted(f"apps/{fleet.app(i)[0]}.yaml" for i in fleet.stale)
    files = changed_files(root, home)
    if commits(root, home) != 2 or sorted(files) != expected:
        raise SystemExit(f"wrong result: {commits(root, home) - 1} commits, {len(files)} files")
    latest = fleet.tag(fleet.args.tags - 1)
    for rel in files:
        if f":{latest}  # set by argocd-image-updater" not in (root / rel).read_text():
            raise SystemExit(f"{rel} does not hold {latest}")
    return {"dry": dry, "cold": cold, "warm": warm, "files": len(files), "commits": 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=500)
    parser.add_argument("--repos", type=int, default=100)
    parser.add_argument("--tags", type=int, default=20)
    parser.add_argument("--new-fraction", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    rows = []
    tmp = scratch_dir("bench-local-")
    try:
        storage = tmp / "storage"
        fleet = Fleet(args, "")  # the registry's address is known once it runs
        repos = [f"bench/{service}" for service in fleet.services]
        write_fleet_storage(storage, repos, args.tags, fleet.tag, START)
        with RegistryServer(storage=storage) as registry:
            conf = tmp / "registries.conf"
            conf.write_text(
                f"registries:\n- name: b\n  prefix: {registry.host}\n  api_url: {registry.url}\n"
            )
            fleet.host = registry.host
            for n in range(args.rounds):
                round_dir = tmp / f"round{n}"
                round_dir.mkdir()
                rows.append(run_round(fleet, conf, round_dir))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(r[k] for r in rows) for k in ("dry", "cold", "warm")}
    print(
        f"{args.apps} Applications, {args.repos} repositories × {args.tags} tags, "
        f"{len(fleet.stale)} stale; median of {args.rounds} rounds\n"
    )
    print("| cycle | wall s | write s | files changed | commits |")
    print("|---|---|---|---|---|")
    print(f"| dry run | {med['dry']:.2f} | – | 0 | 0 |")
    print(
        f"| cold | {med['cold']:.2f} | {med['cold'] - med['dry']:.2f} | "
        f"{rows[0]['files']} | {rows[0]['commits']} |"
    )
    print(f"| warm | {med['warm']:.2f} | – | 0 | 0 |")


if __name__ == "__main__":
    try:
        main()
    except subprocess.CalledProcessError as err:
        sys.exit(f"git failed: {err.stderr}")
