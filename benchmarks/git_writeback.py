"""Git write-back at scale: 100 Applications in one Git repository, all updated in one cycle.

Scenario (defaults): one Git repository served over smart HTTP on 127.0.0.1 (``git
http-backend`` behind :class:`GitHttpServer`, Basic auth), with one directory per Application
(``apps/appNNN/kustomization.yaml`` and ``deployment.yaml``). ``--apps`` Argo CD Applications
(Kustomize) point at their directory; one ImageUpdater (``namePattern: app*``, one image, semver,
``writeBackConfig.method: git``, ``writeBackTarget: kustomization``) manages them all. The image
is in the real registry (``docker-registry``, images pushed through its API). The controller
reads the repository credentials from an Argo CD repository Secret (``username``, ``password``,
``insecure: "true"`` for plain http), so git authenticates through ``GIT_ASKPASS`` as in
production. The controller is built by ``build_controller`` exactly as ``run`` builds it and runs
in this process; the registry is its own process, the Kubernetes API fake runs in a thread, the
git server in threads (each request is one ``git http-backend`` process).

Rows (every row pushes the same edits: each Application's ``newTag`` moves one release):

* **floor**: what the git CLI needs at least: one fetch (``git clone --depth=1 --single-branch
  --no-tags``), the edits of every file (Python string replace), one ``git commit -a``, one
  ``git push``; authenticated with a ``GIT_ASKPASS`` script like the controller;
* **serial, one clone per app**: what the original does: for each Application a fresh shallow
  clone, its one file edited, a commit and a push, one Application after the other;
* **controller, cold**: the first cycle of a new controller (no clone cached, a newer tag for
  every Application);
* **controller, warm**: the next cycle with one more tag; the remote did not move since our own
  push, so the cached clone (left at that push) is used as it is: no fetch, one push with a lease
  on the commit it builds on;
* **controller, warm, remote moved**: one more tag after someone else pushed a commit, the first
  time: the clone, left at our own push, pushes first with a lease on that commit, is refused,
  fetches the new commit and makes the edits again;
* **controller, warm, remote moved again**: one more tag after someone else pushed again: a branch
  found moved at its last use is fetched first (one fetch, no refused push).

How the write-back is timed: nothing of the product is wrapped. Each controller cycle is timed
around ``controller.cycle()``, and right before it a second controller, identical but for
``--dry-run`` (its own scanner, so with the same cold or invalidated tag caches), runs a cycle on
the same Applications: it lists, scans and plans the same updates and writes nothing. The
write-back is the difference (``wall s`` of the controller rows); the whole cycle and the dry-run
cycle are in their own columns. A dry run is the better reference than an argocd-method fleet: an
argocd-method cycle would patch 100 Applications, which costs something the git method never
does. As a cross-check, ``git s`` is the sum of the git processes' durations from the product's
own ``argocd_image_updater_git_operation_duration_seconds`` histogram (the writer runs one
repository's git processes one after the other).

The controllers run with ``--disable-kube-events`` unless ``--kube-events`` is given: the Event
per written Application belongs to the report stage and is the same for every write-back method,
and the Kubernetes API fake that stores it runs in this process, so its CPU would count as the
write-back's.

Counts are taken on the server: ``commits`` is the growth of ``git rev-list --count main`` of the
bare repository, ``pushes`` the pushes that reached its ``pre-receive`` hook,
``receive-pack``/``upload-pack`` the authenticated HTTP requests by service (a push is a GET of
``info/refs`` and a POST) and ``401`` the requests answered with an authentication challenge
(git sends credentials only after one). ``git procs`` counts git processes (ours from
``argocd_image_updater_git_operations_total``).

Rounds (``--rounds``, default 5) interleave the floor and the controller: each round is a
fresh repository and new controllers, and runs floor, cold, floor, warm, floor, remote moved,
floor, remote moved again, floor (every floor on its own fresh repository, the same files). Each cycle's ratio is taken
against the mean of the two floors measured right before and right after it, so a change of the
machine's load between rounds moves both sides of a ratio; the table gives the minimum and the
median of these per-round ratios, for wall time and for CPU time (this process and its ended
children: the controller, the in-process fakes, the git server and every git process of both
sides, so the floor's CPU includes the server's too). Other columns are medians over the rounds
(counts are the same every round). The serial baseline runs once. The targets are a cold
write-back at most 1.5× the floor and a warm one at most 1.2×.

The benchmark checks its results and exits with status 1 when they are wrong: every cycle must
update every Application without errors in exactly one commit and one push, and afterwards every
file must hold the new tag (and nothing else may change).

``--distinct-files`` gives every kustomization its own text (a ``namePrefix:`` line naming the
Application), as in a real repository; by default the files are identical, so a parse of one
file serves them all.

``--profile N`` prints the N most expensive functions (cProfile) of each controller cycle of the
first round (the profiled cycles' times then include the profiler's overhead); ``--log FILE``
keeps the controller's info log.

Run: ``.venv/bin/python benchmarks/git_writeback.py [--apps N] [--rounds N] [--no-serial]
[--distinct-files] [--kube-events] [--profile N] [--log FILE]``
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import shutil
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from common import machine, profile_text, scratch_dir

NS = "argocd"
USER = "image-updater"
TOKEN = "bench-git-t0ken-7f3a"
IMAGE_REPO = "bench/web"
START = datetime(2026, 1, 1, tzinfo=UTC)
TAGS = ("1.0.0", "1.0.1", "1.0.2", "1.0.3", "1.0.4")
"""Running, newest at the cold cycle, newest at the warm cycle, newest after the remote moved,
newest after it moved again."""

LABELS = ("cold", "warm", "warm, remote moved", "warm, remote moved again")

ASKPASS = """#!/bin/sh
# Answers git's credential prompts from the environment.
case "$1" in
  Username*) printf '%s\\n' "$BENCH_GIT_USER" ;;
  *) printf '%s\\n' "$BENCH_GIT_PASSWORD" ;;
esac
"""


# --- the repository -----------------------------------------------------------------------------


def app_name(i: int, apps: int) -> str:
    return f"app{i:0{max(3, len(str(apps - 1)))}d}"


def app_dir(i: int, apps: int) -> str:
    return f"apps/{app_name(i, apps)}"


def kustomization(image: str, tag: str, prefix: str = "") -> str:
    """The kustomization of one Application; ``prefix`` (``--distinct-files``) makes each file
    its own text (``namePrefix:``), as in a real repository."""
    return (
        "apiVersion: kustomize.config.k8s.io/v1beta1\n"
        "kind: Kustomization\n"
        + (f"namePrefix: {prefix}-\n" if prefix else "")
        + "# Managed by the image updater: only newTag changes.\n"
        "resources:\n"
        "- deployment.yaml\n"
        "images:\n"
        f"- name: {image}\n"
        f"  newTag: {tag}\n"
    )


def deployment(name: str, image: str) -> str:
    return (
        "apiVersion: apps/v1\n"
        "kind: Deployment\n"
        f"metadata:\n  name: {name}\n"
        "spec:\n"
        "  replicas: 2\n"
        f"  selector:\n    matchLabels:\n      app: {name}\n"
        "  template:\n"
        f"    metadata:\n      labels:\n        app: {name}\n"
        "    spec:\n"
        "      containers:\n"
        f"      - name: web\n        image: {image}\n"
        "        ports:\n        - containerPort: 8080\n"
    )


def prefix_of(i: int, apps: int, distinct: bool) -> str:
    return app_name(i, apps) if distinct else ""


def repo_files(apps: int, image: str, distinct: bool = False) -> dict[str, str]:
    files = {"README.md": "# Deployments\n"}
    for i in range(apps):
        text = kustomization(image, TAGS[0], prefix_of(i, apps, distinct))
        files[f"{app_dir(i, apps)}/kustomization.yaml"] = text
        files[f"{app_dir(i, apps)}/deployment.yaml"] = deployment(app_name(i, apps), image)
    return files


# --- server-side counts -------------------------------------------------------------------------


@dataclass(frozen=True)
class ServerCounts:
    commits: int
    pushes: int
    receive_pack: int
    upload_pack: int
    unauthorized: int

    def __sub__(self, other: ServerCounts) -> ServerCounts:
        return ServerCounts(
            self.commits - other.commits,
            self.pushes - other.pushes,
            self.receive_pack - other.receive_pack,
            self.upload_pack - other.upload_pack,
            self.unauthorized - other.unauthorized,
        )


def server_counts(server: Any, bare: Path, home: Path) -> ServerCounts:
    from argocd_image_updater_testing.git_servers import git, push_attempts

    commits = int(git("--git-dir", str(bare), "rev-list", "--count", "main", home=home).strip())
    return ServerCounts(
        commits,
        push_attempts(bare),
        server.requests["receive-pack"],
        server.requests["upload-pack"],
        server.auth_failures,
    )


def check_tags(
    bare: Path, apps: int, image: str, tag: str, home: Path, distinct: bool = False
) -> list[str]:
    """Problems with the files of ``bare``'s main branch: every kustomization must hold ``tag``
    and be otherwise unchanged; the deployments must be untouched."""
    from argocd_image_updater_testing.git_servers import show

    problems = []
    for i in range(apps):
        path = f"{app_dir(i, apps)}/kustomization.yaml"
        text = show(bare, "main", path, home=home)
        if text != kustomization(image, tag, prefix_of(i, apps, distinct)):
            problems.append(f"{path} at main of {bare.name} is {text!r}, expected newTag {tag}")
        dep = f"{app_dir(i, apps)}/deployment.yaml"
        if show(bare, "main", dep, home=home) != deployment(app_name(i, apps), image):
            problems.append(f"{dep} at main of {bare.name} changed")
    return problems[:5]


# --- measurements -------------------------------------------------------------------------------


def cpu_now() -> float:
    """CPU seconds of this process (the controller, the in-process fakes and the git server's
    threads) and of its ended children (the git processes of both sides of every request)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@dataclass
class Measure:
    wall: float
    counts: ServerCounts
    git_procs: int
    cpu: float | None = None
    cycle: float | None = None
    dry: float | None = None
    git_seconds: float | None = None
    git_ops: Counter[str] = field(default_factory=Counter)
    git_op_seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class Env:
    server: Any
    root: Path
    home: Path
    askpass: Path
    apps: int
    image: str
    distinct: bool = False
    problems: list[str] = field(default_factory=list)
    profiles: dict[str, str] = field(default_factory=dict)

    def cli_env(self) -> dict[str, str]:
        return {
            "GIT_ASKPASS": str(self.askpass),
            "BENCH_GIT_USER": USER,
            "BENCH_GIT_PASSWORD": TOKEN,
        }

    def new_repo(self, name: str, image: str) -> tuple[Path, str]:
        from argocd_image_updater_testing.git_servers import bare_repo

        files = repo_files(self.apps, image, self.distinct)
        bare = bare_repo(self.root / "srv" / "org" / f"{name}.git", files=files)
        return bare, self.server.url_for(f"org/{name}.git")


def bump(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(f"newTag: {old}", f"newTag: {new}"), encoding="utf-8")


def shallow_clone(env: Env, url: str, dest: Path) -> None:
    from argocd_image_updater_testing.git_servers import git

    git(
        "clone", "-q", "--depth=1", "--single-branch", "--no-tags", "--branch", "main", url,
        str(dest), home=env.home, env=env.cli_env(),
    )  # fmt: skip


def floor(env: Env, name: str) -> Measure:
    """One fetch, every edit, one commit, one push, with the git CLI."""
    from argocd_image_updater_testing.git_servers import git

    bare, url = env.new_repo(name, env.image)
    before = server_counts(env.server, bare, env.home)
    work = env.root / "work" / name
    cpu_began = cpu_now()
    began = time.perf_counter()
    shallow_clone(env, url, work)
    for i in range(env.apps):
        bump(work / app_dir(i, env.apps) / "kustomization.yaml", TAGS[0], TAGS[1])
    git("commit", "-q", "-a", "-m", f"Update {env.apps} applications", cwd=work, home=env.home)
    git("push", "-q", "origin", "HEAD:refs/heads/main", cwd=work, home=env.home, env=env.cli_env())
    wall = time.perf_counter() - began
    cpu = cpu_now() - cpu_began
    shutil.rmtree(work, ignore_errors=True)
    counts = server_counts(env.server, bare, env.home) - before
    env.problems += check_tags(bare, env.apps, env.image, TAGS[1], env.home, env.distinct)
    return Measure(wall, counts, git_procs=3, cpu=cpu)


def serial(env: Env) -> Measure:
    """For each Application: a fresh shallow clone, its one file edited, commit, push."""
    from argocd_image_updater_testing.git_servers import git

    bare, url = env.new_repo("serial", env.image)
    before = server_counts(env.server, bare, env.home)
    began = time.perf_counter()
    for i in range(env.apps):
        work = env.root / "work" / f"serial-{i}"
        shallow_clone(env, url, work)
        bump(work / app_dir(i, env.apps) / "kustomization.yaml", TAGS[0], TAGS[1])
        message = f"Update {app_name(i, env.apps)}"
        git("commit", "-q", "-a", "-m", message, cwd=work, home=env.home)
        git(
            "push", "-q", "origin", "HEAD:refs/heads/main",
            cwd=work, home=env.home, env=env.cli_env(),
        )  # fmt: skip
        shutil.rmtree(work, ignore_errors=True)
    wall = time.perf_counter() - began
    counts = server_counts(env.server, bare, env.home) - before
    env.problems += check_tags(bare, env.apps, env.image, TAGS[1], env.home, env.distinct)
    return Measure(wall, counts, git_procs=3 * env.apps)


def git_metrics() -> tuple[Counter[str], dict[str, float]]:
    """Git processes and their seconds by subcommand, from the product's metrics."""
    from argocd_image_updater.writeback.git.process import (
        GIT_OPERATION_DURATION,
        GIT_OPERATIONS,
    )

    ops: Counter[str] = Counter()
    for metric in GIT_OPERATIONS.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total"):
                ops[sample.labels["operation"]] += int(sample.value)
    seconds: dict[str, float] = {}
    for metric in GIT_OPERATION_DURATION.collect():
        for sample in metric.samples:
            if sample.name.endswith("_sum"):
                seconds[sample.labels["operation"]] = sample.value
    return ops, seconds


async def build(
    kubeconfig: Path, conf: Path, cache: Path, root: Path, dry_run: bool, events: bool
) -> tuple[Any, list[Any]]:
    from argocd_image_updater.cli.run_cmd import build_controller
    from argocd_image_updater.config.settings import resolve

    settings = resolve(
        "run",
        {
            "kubeconfig": str(kubeconfig),
            "registries_conf_path": str(conf),
            "git_cache_dir": str(cache),
            "git_commit_message_path": str(root / "no-commit-template"),
            "dry_run": dry_run,
            "disable_kube_events": not events,
        },
        env={},
    )
    controller, closers = await build_controller(settings)
    return controller, closers


def seed_fleet(kube: Any, env: Env, url: str, image: str, tag_prefix: str) -> list[tuple[str, str]]:
    """The Applications, the ImageUpdater and the repository Secret of one round; returns the
    (resource, name) pairs to delete after the round."""
    from argocd_image_updater_testing import objects

    made: list[tuple[str, str]] = []
    running = f"{image}:{TAGS[0]}"
    for i in range(env.apps):
        name = f"{tag_prefix}-{app_name(i, env.apps)}"
        kube.store.put(
            objects.application(
                name,
                NS,
                images=[running],
                repo_url=url,
                path=app_dir(i, env.apps),
                target_revision="main",
            )
        )
        made.append(("applications", name))
    spec = {
        "writeBackConfig": {"method": "git", "gitConfig": {"writeBackTarget": "kustomization"}},
        "applicationRefs": [
            {
                "namePattern": f"{tag_prefix}-app*",
                "images": [{"alias": "web", "imageName": image}],
            }
        ],
    }
    kube.store.put(objects.image_updater(f"{tag_prefix}-fleet", NS, spec))
    made.append(("imageupdaters", f"{tag_prefix}-fleet"))
    kube.store.put(
        objects.secret(
            f"{tag_prefix}-repo",
            NS,
            {"url": url, "username": USER, "password": TOKEN, "insecure": "true"},
            labels={"argocd.argoproj.io/secret-type": "repository"},
        )
    )
    made.append(("secrets", f"{tag_prefix}-repo"))
    return made


async def timed_cycle(controller: Any) -> tuple[float, float, Any]:
    """Wall and CPU seconds of one cycle, and its result."""
    cpu_began = cpu_now()
    began = time.perf_counter()
    result = await controller.cycle()
    return time.perf_counter() - began, cpu_now() - cpu_began, result


def check_cycle(env: Env, label: str, result: Any, dry: bool) -> None:
    errors = [a.error for a in result.apps if a.error]
    if errors or result.errors:
        env.problems.append(f"{label}: {result.errors} errors, e.g. {errors[:1]}")
    if len(result.apps) != env.apps:
        env.problems.append(f"{label}: {len(result.apps)} Applications, expected {env.apps}")
    written = sum(1 for a in result.apps if a.written)
    if written != (0 if dry else env.apps):
        env.problems.append(f"{label}: {written} Applications written")


async def controller_round(
    env: Env,
    kube: Any,
    registry_url: str,
    conf: Path,
    kubeconfig: Path,
    number: int,
    profile: int,
    events: bool,
    floors: list[Measure],
) -> dict[str, Measure]:
    """Cold, warm and warm-after-the-remote-moved cycles of a new controller, each after a
    dry-run cycle of a second, dry-run controller; a floor (appended to ``floors``) before each
    cycle and one after the last."""
    from argocd_image_updater.cli.run_cmd import close_resource
    from argocd_image_updater_testing.git_servers import push_files
    from argocd_image_updater_testing.push import ImagePusher

    prefix = f"r{number}"
    host = registry_url.split("://", 1)[1]
    repository = f"{IMAGE_REPO}-{prefix}"  # a fresh image repository per round
    image = f"{host}/{repository}"
    bare, url = env.new_repo(f"deploy-{prefix}", image)
    made = seed_fleet(kube, env, url, image, prefix)
    real, real_closers = await build(
        kubeconfig, conf, env.root / f"cache-{prefix}", env.root, False, events
    )
    dry, dry_closers = await build(
        kubeconfig, conf, env.root / f"dry-{prefix}", env.root, True, events
    )
    results: dict[str, Measure] = {}
    try:
        async with ImagePusher(registry_url) as pusher:
            for day, tag in enumerate(TAGS[:2]):
                await pusher.push_image(repository, tag, created=START + timedelta(days=day))
            for step, tag in enumerate(TAGS[1:], 1):
                if step >= 3:
                    # Someone else pushes a commit: the cached clone has to fetch it.
                    readme = f"# Deployments\n\nOwned by the platform ({step}).\n"
                    push_files(bare, {"README.md": readme}, home=env.home,
                               message="Docs from elsewhere")  # fmt: skip
                if step > 1:
                    # A newer tag: the next cycle lists the tags again and sees it.
                    await pusher.push_image(repository, tag, created=START + timedelta(days=step))
                label = LABELS[step - 1]
                # The floor right before each cycle (and one after the last): every cycle's
                # ratio is taken against the two floors around it, measured moments apart.
                floors.append(await asyncio.to_thread(floor, env, f"floor-{prefix}-{step}"))
                dry_wall, dry_cpu, dry_result = await timed_cycle(dry)
                check_cycle(env, f"round {number} {label} (dry run)", dry_result, dry=True)
                before = server_counts(env.server, bare, env.home)
                ops_before, seconds_before = git_metrics()
                profiler = cProfile.Profile() if profile and number == 0 else None
                if profiler is not None:
                    profiler.enable()
                wall, cpu, result = await timed_cycle(real)
                if profiler is not None:
                    profiler.disable()
                    env.profiles[label] = profile_text(profiler, profile)
                ops_after, seconds_after = git_metrics()
                counts = server_counts(env.server, bare, env.home) - before
                check_cycle(env, f"round {number} {label}", result, dry=False)
                if counts.commits != 1 or counts.pushes != 1:
                    env.problems.append(
                        f"round {number} {label}: {counts.commits} commits, {counts.pushes} pushes"
                    )
                env.problems += check_tags(bare, env.apps, image, tag, env.home, env.distinct)
                ops = ops_after - ops_before
                op_seconds = {op: seconds_after[op] - seconds_before.get(op, 0.0) for op in ops}
                results[label] = Measure(
                    wall - dry_wall,
                    counts,
                    git_procs=sum(ops.values()),
                    cpu=cpu - dry_cpu,
                    cycle=wall,
                    dry=dry_wall,
                    git_seconds=sum(op_seconds.values()),
                    git_ops=ops,
                    git_op_seconds=op_seconds,
                )
            floors.append(await asyncio.to_thread(floor, env, f"floor-{prefix}-end"))
    finally:
        for closer in [*reversed(real_closers), *reversed(dry_closers)]:
            await close_resource(closer)
        for resource, name in made:
            kube.store.delete(resource, NS, name)
    return results


async def run_all(env: Env, registry_url: str, args: argparse.Namespace) -> dict[str, Any]:
    from argocd_image_updater_testing.kube import KubeApiServer

    conf = env.root / "registries.conf"
    host = registry_url.split("://", 1)[1]
    conf.write_text(f"registries:\n- name: bench\n  prefix: {host}\n  api_url: {registry_url}\n")
    kube = KubeApiServer(namespaces=(NS,))
    kube.start_in_thread()
    try:
        kubeconfig = kube.write_kubeconfig(env.root / "kubeconfig", namespace=NS)
        floors: list[list[Measure]] = []
        rounds: list[dict[str, Measure]] = []
        for number in range(args.rounds):
            around: list[Measure] = []
            rounds.append(
                await controller_round(
                    env,
                    kube,
                    registry_url,
                    conf,
                    kubeconfig,
                    number,
                    args.profile,
                    args.events,
                    around,
                )
            )
            floors.append(around)
        base = await asyncio.to_thread(serial, env) if args.serial else None
    finally:
        kube.stop()
    return {
        "floors": floors,
        "rounds": rounds,
        "serial": base,
        "events": args.events,
        "distinct": args.distinct,
    }


# --- report -------------------------------------------------------------------------------------


def git_version() -> str:
    import subprocess

    return subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()


def median_measure(measures: Sequence[Measure]) -> Measure:
    def med(get: Callable[[Measure], float | None]) -> float | None:
        values = [v for v in map(get, measures) if v is not None]
        return statistics.median(values) if values else None

    first = measures[0]
    return Measure(
        wall=statistics.median(m.wall for m in measures),
        counts=first.counts,
        git_procs=first.git_procs,
        cpu=med(lambda m: m.cpu),
        cycle=med(lambda m: m.cycle),
        dry=med(lambda m: m.dry),
        git_seconds=med(lambda m: m.git_seconds),
        git_ops=first.git_ops,
        git_op_seconds={
            op: statistics.median(m.git_op_seconds.get(op, 0.0) for m in measures)
            for op in first.git_op_seconds
        },
    )


def seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def round_ratios(data: Mapping[str, Any], label: str, step: int) -> tuple[list[float], list[float]]:
    """The wall and CPU ratios of ``label``'s cycle to the floors measured right before and
    right after it in the same round (their mean), one per round."""
    walls: list[float] = []
    cpus: list[float] = []
    for floors, cycles in zip(data["floors"], data["rounds"], strict=True):
        before, after = floors[step], floors[step + 1]
        m = cycles[label]
        walls.append(m.wall / ((before.wall + after.wall) / 2))
        if m.cpu is not None and before.cpu and after.cpu:
            cpus.append(m.cpu / ((before.cpu + after.cpu) / 2))
    return walls, cpus


def min_median(values: Sequence[float]) -> str:
    if not values:
        return "—"
    return f"{min(values):.2f} / {statistics.median(values):.2f}×"


def render(data: Mapping[str, Any], apps: int, rounds: int) -> str:
    all_floors = [f for floors in data["floors"] for f in floors]
    floor_m = median_measure(all_floors)
    labels = list(data["rounds"][0])
    lines = [
        f"Machine: {machine()}; {git_version()}; load average {load()}.",
        f"{apps} Applications in one repository over smart HTTP (Basic auth), all updated per "
        f"cycle; {rounds} round(s), each a new repository and new controllers, with a floor "
        "measured right before each controller cycle and one after the last (floor, cold, "
        "floor, warm, floor, remote moved, floor, moved again, floor); Kubernetes Events "
        f"{'on' if data['events'] else 'off (--disable-kube-events)'}; "
        f"{'each file its own text (--distinct-files)' if data['distinct'] else 'identical files'}.",
        "",
        "| scenario | wall s (median) | wall s (min) | CPU s (median) | wall ratio min / median "
        "| CPU ratio min / median | commits | pushes | git procs | git s | receive-pack "
        "| upload-pack | 401 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| floor: git CLI, clone --depth 1 + edit + commit + push (×{len(all_floors)}) | "
        f"{floor_m.wall:.3f} | {min(m.wall for m in all_floors):.3f} | {seconds(floor_m.cpu)} "
        f"| 1.00× | 1.00× | {floor_m.counts.commits} | {floor_m.counts.pushes} | 3 | — | "
        f"{floor_m.counts.receive_pack} | {floor_m.counts.upload_pack} | "
        f"{floor_m.counts.unauthorized} |",
    ]
    if data["serial"] is not None:
        m = data["serial"]
        lines.append(
            f"| serial, one clone-commit-push per app (×{apps}, 1 run) | {m.wall:.3f} | — | — | "
            f"{m.wall / floor_m.wall:.2f}× (to the median floor) | — | {m.counts.commits} | "
            f"{m.counts.pushes} | {m.git_procs} | — | {m.counts.receive_pack} | "
            f"{m.counts.upload_pack} | {m.counts.unauthorized} |"
        )
    for step, label in enumerate(labels):
        measures = [r[label] for r in data["rounds"]]
        m = median_measure(measures)
        walls, cpus = round_ratios(data, label, step)
        c = m.counts
        lines.append(
            f"| controller write-back, {label} | {m.wall:.3f} | "
            f"{min(x.wall for x in measures):.3f} | {seconds(m.cpu)} | {min_median(walls)} | "
            f"{min_median(cpus)} | {c.commits} | {c.pushes} | {m.git_procs} | "
            f"{seconds(m.git_seconds)} | {c.receive_pack} | {c.upload_pack} | {c.unauthorized} |"
        )
    lines += [
        "",
        "Controller rows: the cycle minus the dry-run cycle measured just before it (same "
        "Applications, same scans, nothing written), wall and CPU. CPU: this process (the "
        "controller, the in-process fakes, the git server's threads) and its children (every git "
        "process, client and server side), so the floor's CPU includes the server's too. Ratios: "
        "each round's cycle against the mean of the two floors measured right before and after "
        "it; min and median over the rounds. git s: time inside git processes from the product's "
        "histogram. receive-pack/upload-pack: authenticated HTTP requests by service; 401: "
        "authentication challenges.",
        "",
        "Per-round wall ratios (round order):",
        "",
    ]
    for step, label in enumerate(labels):
        walls, cpus = round_ratios(data, label, step)
        lines.append(
            f"- {label}: wall "
            + ", ".join(f"{x:.2f}" for x in walls)
            + "; CPU "
            + ", ".join(f"{x:.2f}" for x in cpus)
        )
    lines += [
        "",
        "Git processes of the controller's write-back by subcommand (count, median time), and "
        "the write-back time spent outside them (rendering the files, the event loop):",
        "",
    ]
    for label in labels:
        m = median_measure([r[label] for r in data["rounds"]])
        spent = m.git_op_seconds
        text = ", ".join(
            f"{op} ×{n} {spent.get(op, 0.0) * 1000:.0f} ms"
            for op, n in sorted(m.git_ops.items(), key=lambda kv: -spent.get(kv[0], 0.0))
        )
        other = m.wall - (m.git_seconds or 0.0)
        lines.append(f"- {label}: {text}; outside git processes {other * 1000:.0f} ms")
    if data["serial"] is not None:
        cold = median_measure([r["cold"] for r in data["rounds"]])
        lines += [
            "",
            f"Serial / controller cold: {data['serial'].wall / cold.wall:.1f}× "
            f"({data['serial'].wall:.2f} s against {cold.wall:.2f} s).",
        ]
    return "\n".join(lines)


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=100, help="Applications in the repository")
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="rounds of the controller cycles, each bracketed by floors",
    )
    parser.add_argument(
        "--no-serial",
        dest="serial",
        action="store_false",
        help="skip the serial clone-commit-push baseline",
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="print the N most expensive functions (cProfile) of each controller cycle of round 1",
    )
    parser.add_argument(
        "--kube-events",
        dest="events",
        action="store_true",
        help="let the controllers create Kubernetes Events (one per Application written; "
        "default: --disable-kube-events, to measure the git write-back alone)",
    )
    parser.add_argument(
        "--distinct-files",
        dest="distinct",
        action="store_true",
        help="give every kustomization its own text (a namePrefix line), as in a real "
        "repository; by default the 100 files are identical",
    )
    parser.add_argument(
        "--log", metavar="FILE", default="", help="the controller's info log (default: discarded)"
    )
    args = parser.parse_args()
    if args.apps < 1 or args.rounds < 1:
        raise SystemExit("--apps and --rounds must be at least 1")
    sys.exit(run(args))


def run(args: argparse.Namespace) -> int:
    from argocd_image_updater.observe import log as logging_setup
    from argocd_image_updater_testing.git_servers import GitHttpServer
    from argocd_image_updater_testing.registry import RegistryServer

    root = scratch_dir("git-writeback-bench-")
    log_stream: TextIO = open(args.log or os.devnull, "w")  # noqa: SIM115
    try:
        logging_setup.setup("info", "text", stream=log_stream)  # as ``run`` logs, to a file
        home = root / "home"
        home.mkdir()
        askpass = root / "askpass.sh"
        askpass.write_text(ASKPASS)
        askpass.chmod(0o700)
        (root / "srv" / "org").mkdir(parents=True)
        with (
            RegistryServer(storage=root / "registry") as registry,
            GitHttpServer(root / "srv", users={USER: TOKEN}) as server,
        ):
            host = registry.url.split("://", 1)[1]
            env = Env(server, root, home, askpass, args.apps, f"{host}/{IMAGE_REPO}", args.distinct)
            data = asyncio.run(run_all(env, registry.url, args))
    finally:
        log_stream.close()
        shutil.rmtree(root, ignore_errors=True)
    print(render(data, args.apps, args.rounds))
    for label, text in env.profiles.items():
        print(
            f"\ncProfile of the controller's {label} cycle, round 1 (its wall time above "
            f"includes the profiler's overhead):\n```\n{text.strip()}\n```"
        )
    for problem in env.problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if env.problems else 0


if __name__ == "__main__":
    main()
