"""Replicas sharing a fleet through member Leases (``run --sharding``), as processes.

Scenario (defaults): 1,000 ImageUpdaters, each managing 5 Applications (5,000 Applications), over
500 repositories × 20 tags. Application ``t0042-e3`` is the Application ``e3`` of ImageUpdater
``t0042`` and runs one image of repository ``(5 × 42 + 3) mod 500``: each repository is used by
10 Applications of 10 ImageUpdaters, so every replica of a sharded fleet lists nearly every
repository (``--repos-per-updater 1``: all Applications of an ImageUpdater use one repository,
each used by 2 ImageUpdaters). Every Application starts at its repository's newest tag; the
benchmark adds new tags to a few repositories at set points, so that Applications are written.

Parts: the real registry (``docker-registry``, storage written directly as in ``cycle.py``), the
same API URL for every replica (as in a cluster: a repository listing is shared by the replicas
only when they name it alike), the Kubernetes API fake (one ``KubeApiServer`` front per replica
over one ``KubeStore``, in threads of this process; each front records the writes it served),
and each replica a process of its own: ``argocd-image-updater run`` with its own kubeconfig,
registries.conf and ``POD_NAME``, ``--interval`` 5 s and leader election timings of 4 s / 3 s /
0.5 s (lease / renew deadline / retry period). A replica is started through this script
(``--replica``), which records each cycle's CPU time (``time.process_time`` around
``Controller.cycle``, and around its listing, its registry scans and its pipeline), the shard
keys each cycle holds (``Membership.holding``) and each tag list it makes into a file, then runs
the command line as the console script does.

Each round (a new Kubernetes fake, new processes):

1. **one replica against three**: one replica (``run`` without ``--sharding``, leader election
   as by default) on a copy of the fleet in a namespace of its own, measured first and stopped,
   then three replicas (``--sharding``) on the fleet, so that each configuration has the
   machine to itself, as a replica has its node. Once the replicas warmed up (and the keys are
   split): new tags in ``--new-repos`` repositories, then ``--cycles`` measured cycles of each
   replica: CPU time, tag lists. With ``--together`` the one replica runs at the same time as
   the three (a replica whose cycles fall on the one replica's then competes with it for the
   CPUs for the whole measurement);
2. **kill -9** of one of the three (with new tags in ``--kill-repos`` repositories its keys use,
   at the same moment): how long until the survivors' cycles held (and finished) all of its
   keys, against the lease duration plus one interval; the writes its front served after its
   Lease expired. A new replica (a new pod) takes its place;
3. **SIGSTOP** of one of the three in the cycle that sees new tags in repositories its keys use,
   until the others have processed its keys; then ``SIGCONT``: its cycle must be cancelled and
   nothing written (its fence) from its Lease's expiry until it holds keys again, one lease
   duration after it renewed its Lease;
4. **scale 3 → 5**: two replicas join; which keys moved, and to whom (rendezvous hashing: about
   2/5 of them, all to the new replicas), what was written meanwhile, and how many repositories
   the old replicas listed in their first cycles after (those whose owner changed, not all).

Throughout: keys held by two replicas at once (their cycles' holds overlapping in time; a
stopped process's hold ends when it was stopped) and Applications written by two replicas
within one interval (both must be none); at the end every Application must run its
repository's newest tag.

Run: ``.venv/bin/python benchmarks/sharding.py [--rounds N] [--quick] [--updaters N]
[--apps-per N] [--repos N] [--repos-per-updater N] [--tags N] [--interval S] [--cycles N]
[--together] [--sample N] [--trace DIR]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import itertools
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from common import (
    INODES_PER_NAMED_TAG,
    CpuSampler,
    machine,
    scratch_dir,
    write_tag_name_storage,
)

NS = "argocd"
SOLO_NS = "solo"
"""The namespace of the one-replica fleet: a copy of the fleet, processed by one replica at the
same time as three replicas process the fleet in ``NS`` (so that both see the same machine)."""
HOST = "registry.bench.example"
LEASE, RENEW, RETRY = 4.0, 3.0, 0.5
MEMBER_PREFIX = "argocd-image-updater-member-"
STOP_GRACE = 40.0

# The product and the fakes are imported inside functions: a replica process loads only what
# ``run`` loads.


# --- the fleet ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fleet:
    updaters: int
    apps_per: int
    repos: int
    tags: int
    repos_per: int
    """Repositories an ImageUpdater's Applications use (``apps_per``: one each)."""

    def updater(self, i: int) -> str:
        return f"t{i:04d}"

    def key(self, i: int) -> str:
        return f"{NS}/{self.updater(i)}"

    def app(self, i: int, j: int) -> str:
        return f"{self.updater(i)}-e{j}"

    def repo_of(self, i: int, j: int) -> int:
        return (i * self.repos_per + j % self.repos_per) % self.repos

    def repo(self, r: int) -> str:
        return f"bench/svc{r:03d}"

    def image(self, r: int) -> str:
        return f"{HOST}/{self.repo(r)}"

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(self.key(i) for i in range(self.updaters))

    def apps(self) -> Iterator[tuple[int, int, str]]:
        for i in range(self.updaters):
            for j in range(self.apps_per):
                yield i, self.repo_of(i, j), self.app(i, j)

    def used_repos(self) -> int:
        return len({r for _, r, _ in self.apps()})

    def sharing(self) -> tuple[float, float]:
        """How many Applications, and of how many ImageUpdaters, use a repository (mean)."""
        apps: Counter[int] = Counter()
        updaters: dict[int, set[int]] = defaultdict(set)
        for i, r, _ in self.apps():
            apps[r] += 1
            updaters[r].add(i)
        return statistics.mean(apps.values()), statistics.mean(map(len, updaters.values()))


def tag(index: int) -> str:
    return f"1.{index}.0"


class Registry:
    """The registry's storage, and the newest tag of each repository (tags added by writing
    the tag's link, as ``write_tag_name_storage`` does)."""

    def __init__(self, root: Path, fleet: Fleet) -> None:
        self.root, self.fleet = root, fleet
        write_tag_name_storage(root, [fleet.repo(r) for r in range(fleet.repos)], fleet.tags, tag)
        self.newest = dict.fromkeys(range(fleet.repos), fleet.tags - 1)
        self._digest = self._tags_dir(0).joinpath(tag(0), "current", "link").read_text()

    def _tags_dir(self, r: int) -> Path:
        v2 = self.root / "docker" / "registry" / "v2" / "repositories"
        return v2 / self.fleet.repo(r) / "_manifests" / "tags"

    def push(self, repos: Collection[int]) -> None:
        for r in repos:
            self.newest[r] += 1
            current = self._tags_dir(r) / tag(self.newest[r]) / "current"
            current.mkdir(parents=True)
            (current / "link").write_text(self._digest)

    def running(self, r: int) -> str:
        return f"{self.fleet.image(r)}:{tag(self.newest[r])}"

    def add(self) -> int:
        """A repository more, with the fleet's tags: its number."""
        r = len(self.newest)
        write_tag_name_storage(self.root, [self.fleet.repo(r)], self.fleet.tags, tag)
        self.newest[r] = self.fleet.tags - 1
        return r


def seed(store: Any, fleet: Fleet, registry: Registry, namespace: str) -> None:
    from argocd_image_updater_testing import objects

    for i in range(fleet.updaters):
        refs = [
            {
                "namePattern": fleet.app(i, j),
                "images": [{"alias": "app", "imageName": fleet.image(fleet.repo_of(i, j))}],
            }
            for j in range(fleet.apps_per)
        ]
        store.put(objects.image_updater(fleet.updater(i), namespace, {"applicationRefs": refs}))
    for _, r, name in fleet.apps():
        running = registry.running(r)
        app = objects.application(name, namespace, images=[running], kustomize_images=[running])
        store.put(app)


# --- a replica (its own process) ----------------------------------------------------------------


def write_text(path: str, text: str) -> None:
    Path(path).write_text(text)


TRACED_CYCLES = range(3, 8)
"""The cycles ``--trace`` profiles: after the cold cycle and the first warm one."""


def replica_main(events_path: str, argv: list[str]) -> None:
    """``argocd-image-updater <argv>``, recording each cycle (wall and CPU time, shard keys held)
    as JSON lines in ``events_path``; line-buffered, so a ``kill -9`` loses no finished line."""
    from argocd_image_updater.cli import collector

    collector.pause()  # as the console script does, before anything is imported
    from argocd_image_updater.controller import membership, runner

    out = open(events_path, "a", buffering=1)  # noqa: SIM115 (open while the process runs)

    def record(**event: Any) -> None:
        out.write(json.dumps(event) + "\n")

    current: dict[str, Any] = {}
    stages: dict[str, float] = {}
    cycles = [0]
    profile = os.environ.get("SHARDING_BENCH_SAMPLE", "")
    sampler = CpuSampler() if profile else None
    traced = os.environ.get("SHARDING_BENCH_TRACE", "")
    tracer = cProfile.Profile(time.process_time) if traced else None
    holding = membership.Membership.holding
    cycle = runner.Controller.cycle

    @contextlib.contextmanager
    def recorded(self: Any, keys: Collection[str], *, full: bool = False) -> Iterator[None]:
        if not full:
            with holding(self, keys, full=full):
                yield
            return
        held, began = sorted(keys), time.time()
        current.update(keys=held, hold=began)
        record(e="hold", t=began, keys=held)
        try:
            with holding(self, keys, full=full):
                yield
        finally:
            record(e="release", t=time.time(), start=began)

    async def timed(self: Any) -> Any:
        current.clear()
        stages.clear()
        cycles[0] += 1
        # Not the cold cycle nor the first warm one.
        sampled = sampler if sampler is not None and cycles[0] > 2 else None
        if sampled is not None:
            sampled.start()
        if tracer is not None and cycles[0] in TRACED_CYCLES:
            tracer.enable()
        began, cpu, ok = time.time(), time.process_time(), False
        try:
            result = await cycle(self)
            ok = True
            return result
        finally:
            if tracer is not None and cycles[0] in TRACED_CYCLES:
                tracer.disable()
                tracer.dump_stats(traced)
            if sampled is not None:
                sampled.stop()
                top, _, path = profile.partition(":")
                write_text(path, sampled.text(int(top)))
            record(
                e="cycle",
                start=began,
                end=time.time(),
                cpu=time.process_time() - cpu,
                process_cpu=time.process_time(),
                ok=ok,
                keys=current.get("keys"),
                hold=current.get("hold"),
                stages=stages,
            )

    def staged(module: Any, name: str) -> None:
        """Add the CPU time of ``module.name`` (a coroutine function) to its stage."""
        function = getattr(module, name)

        async def timed_stage(*args: Any, **kwargs: Any) -> Any:
            began = time.process_time()
            try:
                return await function(*args, **kwargs)
            finally:
                stages[name] = stages.get(name, 0.0) + time.process_time() - began

        setattr(module, name, timed_stage)

    from argocd_image_updater.controller import cycle as pipeline
    from argocd_image_updater.registry.client import RegistryClient

    list_tags = RegistryClient.list_tags
    slow = os.environ.get("SHARDING_BENCH_SLOW", "")

    async def listed(self: Any, repository: str, credentials: Any = None) -> list[str]:
        """Record each tag list (a file ``slow`` makes it answer 0.5 s late)."""
        if slow and os.path.exists(slow):  # noqa: ASYNC240 (a stat, off the measured path)
            await asyncio.sleep(0.5)
        began = time.time()
        names = await list_tags(self, repository, credentials)
        record(e="list", t=began, repo=repository)
        return names

    RegistryClient.list_tags = listed  # type: ignore[method-assign]
    staged(runner, "collect")
    staged(runner, "run_cycle")
    staged(pipeline, "scan_repositories")
    membership.Membership.holding = recorded  # type: ignore[method-assign]
    runner.Controller.cycle = timed  # type: ignore[method-assign]
    sys.argv = ["argocd-image-updater", *argv]
    from argocd_image_updater.cli.main import main

    main()


# --- the fakes (this process) -------------------------------------------------------------------


def _front_class() -> Any:
    from argocd_image_updater_testing.kube import KubeApiServer

    class Front(KubeApiServer):
        """One replica's API front: records the writes it served, ``(time, verb, path)``."""

        def __init__(self, store: Any) -> None:
            super().__init__(store, namespaces=())
            self.writes: list[tuple[float, str, str]] = []

        async def _serve(self, request: Any) -> Any:
            response = await super()._serve(request)
            if request.method in ("POST", "PUT", "PATCH", "DELETE"):
                self.writes.append((time.time(), request.method, request.path))
            return response

    return Front


@dataclass
class Hold:
    member: str
    start: float
    keys: frozenset[str]
    end: float | None = None


@dataclass
class Cycle:
    start: float
    end: float
    cpu: float
    process_cpu: float
    """The process's CPU time at the cycle's end (since it started)."""
    ok: bool
    keys: frozenset[str] | None
    hold: float | None
    stages: dict[str, float]

    def parts(self) -> dict[str, float]:
        """The cycle's CPU time by part: listing and selecting, registry scans, the rest of
        the pipeline (plan, write), the rest of the cycle (statuses, state, collection)."""
        collect, pipeline = self.stages.get("collect", 0.0), self.stages.get("run_cycle", 0.0)
        scan = self.stages.get("scan_repositories", 0.0)
        return {
            "collect": collect,
            "scan": scan,
            "plan+write": pipeline - scan,
            "report+state": self.cpu - collect - pipeline,
        }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def spawn(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as stream:
        return subprocess.Popen(argv, stdout=stream, stderr=subprocess.STDOUT, env=env)


@dataclass
class Replica:
    name: str
    sharded: bool
    proc: subprocess.Popen[bytes]
    events: Path
    front: Any
    metrics_port: int
    offset: int = 0
    cycles: list[Cycle] = field(default_factory=list)
    holds: list[Hold] = field(default_factory=list)
    ended: float | None = None
    paused: list[list[float]] = field(default_factory=list)
    """When it was stopped (``SIGSTOP``) and resumed."""
    tag_lists: list[tuple[float, str]] = field(default_factory=list)
    """Each tag list it made: when, of which repository."""

    @property
    def slow(self) -> Path:
        """While this file exists, its tag lists answer 0.5 s late."""
        return self.events.with_name("slow")

    def poll(self) -> None:
        with self.events.open("rb") as stream:
            stream.seek(self.offset)
            data = stream.read()
        complete = data[: data.rfind(b"\n") + 1]
        self.offset += len(complete)
        for line in complete.splitlines():
            event = json.loads(line)
            if event["e"] == "list":
                self.tag_lists.append((event["t"], event["repo"]))
            elif event["e"] == "hold":
                self.holds.append(Hold(self.name, event["t"], frozenset(event["keys"])))
            elif event["e"] == "release":
                for hold in reversed(self.holds):
                    if hold.start == event["start"]:
                        hold.end = event["t"]
                        break
            else:
                keys = event["keys"]
                self.cycles.append(
                    Cycle(
                        event["start"],
                        event["end"],
                        event["cpu"],
                        event.get("process_cpu", 0.0),
                        event["ok"],
                        frozenset(keys) if keys is not None else None,
                        event["hold"],
                        event["stages"],
                    )
                )

    def done_after(self, after: float) -> list[Cycle]:
        """Finished cycles that started after ``after``."""
        return [c for c in self.cycles if c.ok and c.start > after]

    def listed_in(self, cycle: Cycle) -> list[str]:
        """The repositories whose tags it listed during ``cycle``."""
        return [repo for t, repo in self.tag_lists if cycle.start <= t <= cycle.end]

    def latest(self, after: float = 0.0) -> frozenset[str] | None:
        """The keys of the last finished cycle that started after ``after``."""
        done = self.done_after(after)
        return done[-1].keys if done else None

    def metric(self, name: str) -> float:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as answer:
            text = answer.read().decode()
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        return 0.0


class Bench:
    """One round: the fakes, the replicas and what they did."""

    def __init__(
        self, fleet: Fleet, registry: Registry, registry_url: str, root: Path, interval: float
    ) -> None:
        from argocd_image_updater_testing.kube import KubeStore

        self.fleet, self.registry, self.registry_url = fleet, registry, registry_url
        self.root, self.interval = root, interval
        self.sample = 0
        self.trace: Path | None = None
        self.store = KubeStore(namespaces=(NS, SOLO_NS))
        seed(self.store, fleet, registry, NS)
        seed(self.store, fleet, registry, SOLO_NS)
        self.replicas: dict[str, Replica] = {}

    async def start(self, name: str, *, sharded: bool = True) -> Replica:
        front = _front_class()(self.store).start_in_thread()
        directory = self.root / name
        directory.mkdir()
        namespace = NS if sharded else SOLO_NS
        kubeconfig = front.write_kubeconfig(directory / "kubeconfig", namespace=namespace)
        conf = directory / "registries.conf"
        conf.write_text(
            f"registries:\n- name: bench\n  prefix: {HOST}\n  api_url: {self.registry_url}\n"
        )
        port = free_port()
        args = ["run", "--kubeconfig", str(kubeconfig), "--registries-conf-path", str(conf)]
        args += ["--applications-api", "kubernetes", "--interval", f"{self.interval:g}s"]
        args += ["--health-probe-bind-address", "0", "--metrics-bind-address", f"127.0.0.1:{port}"]
        args += ["--leader-election-lease-duration", f"{LEASE:g}s"]
        args += ["--leader-election-renew-deadline", f"{RENEW:g}s"]
        args += ["--leader-election-retry-period", f"{RETRY * 1000:g}ms"]
        args += ["--logformat", "json", "--git-cache-dir", str(directory / "clones")]
        if sharded:
            args.append("--sharding")
        env = {k: v for k, v in os.environ.items() if not k.startswith("IMAGE_UPDATER_")}
        env["POD_NAME"] = name
        env["SHARDING_BENCH_SLOW"] = str(directory / "slow")
        if self.trace is not None:
            env["SHARDING_BENCH_TRACE"] = str(self.trace / f"{name}.prof")
        if self.sample:
            env["SHARDING_BENCH_SAMPLE"] = f"{self.sample}:{directory / 'profile.txt'}"
        events = directory / "events.jsonl"
        events.touch()
        proc = spawn(
            [sys.executable, __file__, "--replica", str(events), "--", *args],
            env,
            directory / "replica.log",
        )
        replica = Replica(name, sharded, proc, events, front, port)
        self.replicas[name] = replica
        return replica

    def profile(self, name: str) -> str:
        path = self.root / name / "profile.txt"
        return path.read_text() if path.exists() else ""

    def poll(self) -> None:
        for replica in self.replicas.values():
            replica.poll()
            if replica.proc.poll() is not None and replica.ended is None:
                raise SystemExit(
                    f"replica {replica.name} ended (exit status {replica.proc.returncode}); "
                    f"see {replica.events.parent / 'replica.log'}"
                )

    async def until(self, condition: Any, what: str, within: float) -> float:
        """Poll every 0.1 s until ``condition()``; the time it held."""
        deadline = time.time() + within
        while True:
            self.poll()
            if condition():
                return time.time()
            if time.time() > deadline:
                raise SystemExit(f"timed out after {within:g} s waiting until {what}")
            await asyncio.sleep(0.1)

    def partitioned(self, names: Sequence[str], after: float) -> bool:
        """Whether the last cycles of ``names`` (started after ``after``) each held keys, and
        together every key exactly once."""
        shares = [self.replicas[n].latest(after) or frozenset() for n in names]
        if any(not share for share in shares):
            return False
        total = sum(len(s) for s in shares)
        return total == len(self.fleet.keys) and frozenset().union(*shares) == self.fleet.keys

    def owners(self, names: Sequence[str], after: float) -> dict[str, str]:
        result = {}
        for name in names:
            for key in self.replicas[name].latest(after) or ():
                result[key] = name
        return result

    async def stop(self, name: str) -> None:
        replica = self.replicas[name]
        replica.proc.send_signal(signal.SIGTERM)
        replica.ended = time.time()
        await asyncio.to_thread(replica.proc.wait, STOP_GRACE)
        replica.poll()

    def pause(self, name: str) -> float:
        replica = self.replicas[name]
        replica.proc.send_signal(signal.SIGSTOP)
        replica.paused.append([time.time(), float("inf")])
        return replica.paused[-1][0]

    def resume(self, name: str) -> float:
        replica = self.replicas[name]
        replica.proc.send_signal(signal.SIGCONT)
        replica.paused[-1][1] = time.time()
        return replica.paused[-1][1]

    def kill(self, name: str) -> float:
        replica = self.replicas[name]
        replica.proc.send_signal(signal.SIGKILL)
        replica.ended = time.time()
        replica.proc.wait()
        replica.poll()
        return replica.ended

    async def close(self) -> None:
        for replica in self.replicas.values():
            if replica.proc.poll() is None:
                replica.proc.send_signal(signal.SIGTERM)
                replica.ended = replica.ended or time.time()
        for replica in self.replicas.values():
            try:
                await asyncio.to_thread(replica.proc.wait, STOP_GRACE)
            except subprocess.TimeoutExpired:
                replica.proc.kill()
                replica.proc.wait()
            replica.front.stop()

    # --- what happened ---------------------------------------------------------------------------

    def all_holds(self) -> list[Hold]:
        holds = []
        for replica in self.replicas.values():
            for hold in replica.holds:
                end = hold.end if hold.end is not None else (replica.ended or time.time())
                # A stopped process does nothing: its cycle ends there (what it did once
                # resumed is checked by its writes, which its fence must refuse).
                end = min([end, *(p for p, _ in replica.paused if hold.start < p < end)])
                holds.append(Hold(hold.member, hold.start, hold.keys, end))
        return holds

    def double_holds(self) -> set[str]:
        """Keys held by two replicas at the same time."""
        holds = sorted(self.all_holds(), key=lambda h: h.start)
        found: set[str] = set()
        for i, one in enumerate(holds):
            for other in holds[i + 1 :]:
                assert one.end is not None
                if other.start >= one.end:
                    break
                if other.member != one.member:
                    found |= one.keys & other.keys
        return found

    def confirmed(self, key: str, *, known: bool = False) -> set[tuple[str, str]]:
        """The images (Application, alias) of ImageUpdater ``key`` whose change its status shows
        confirmed (``shipments`` in state ``Synced``); ``known``: whose change it still follows
        or confirmed (any state but ``Unknown`` and ``NotShipped``: a newer write of the image
        replaces its entry)."""
        obj = self.store.get("imageupdaters", NS, key.split("/", 1)[1])
        entries = (obj.get("status") or {}).get("shipments") or []
        return {
            (e.get("application", ""), e.get("alias", ""))
            for e in entries
            if (
                e.get("state") not in ("Unknown", "NotShipped")
                if known
                else e.get("state") == "Synced"
            )
        }

    def app_writes(self) -> dict[str, list[tuple[float, str]]]:
        """The patches of each Application (``namespace/name``): ``(time, replica)``."""
        writes: dict[str, list[tuple[float, str]]] = defaultdict(list)
        for replica in self.replicas.values():
            for t, method, path in replica.front.writes:
                _, _, rest = path.partition("/namespaces/")
                namespace, _, rest = rest.partition("/applications/")
                if method == "PATCH" and rest and "/" not in rest:
                    writes[f"{namespace}/{rest}"].append((t, replica.name))
        return writes

    def double_writes(self) -> int:
        """Applications written by two replicas within one interval."""
        count = 0
        for writes in self.app_writes().values():
            writes.sort()
            if any(
                b[0] - a[0] < self.interval and a[1] != b[1] for a, b in itertools.pairwise(writes)
            ):
                count += 1
        return count

    def running(self, namespace: str, app: str) -> str:
        obj = self.store.get("applications", namespace, app)
        images: list[str] = obj["spec"]["source"]["kustomize"]["images"]
        return images[0] if len(images) == 1 else repr(images)

    def behind(self, namespace: str = NS) -> int:
        """Applications not running their repository's newest tag."""
        return sum(
            1
            for _, r, name in self.fleet.apps()
            if self.running(namespace, name) != self.registry.running(r)
        )

    def catch_up(self, namespace: str) -> None:
        """Set the Applications of ``namespace`` that are behind to their repository's newest
        tag, as :func:`seed` does: the tags pushed for the one replica's measurement are not the
        three's to write (they would follow twice the changes the one replica follows)."""
        from argocd_image_updater_testing import objects

        for _, r, name in self.fleet.apps():
            newest = self.registry.running(r)
            if self.running(namespace, name) != newest:
                app = objects.application(
                    name, namespace, images=[newest], kustomize_images=[newest]
                )
                self.store.put(app)


# --- the phases ---------------------------------------------------------------------------------


@dataclass
class Share:
    """One replica's measured cycles."""

    cpu: float
    wall: float
    keys: int
    tag_lists: float
    tag_lists_max: int
    repeated: int
    """Repositories it listed more than once within one cycle."""
    cpus: list[float] = field(default_factory=list)
    """Each measured cycle's CPU time."""
    parts: dict[str, float] = field(default_factory=dict)
    """The mean CPU time of each part of a cycle (:meth:`Cycle.parts`)."""
    interval_cpu: float = 0.0
    """The process's CPU time from the end of the cycle before the measured ones to the end
    of the last, per measured cycle: the cycles and all between them (Lease renewals, watch
    events, the collector), against which the cycles' own CPU is the part a cycle does."""

    def __str__(self) -> str:
        each = ", ".join(f"{c:.2f}" for c in self.cpus)
        parts = ", ".join(f"{name} {t:.2f}" for name, t in self.parts.items())
        return f"{self.keys} keys: {self.cpu:.2f} s CPU a cycle ({each}; {parts})"


async def measure(bench: Bench, names: Sequence[str], new_repos: int, cycles: int) -> list[Share]:
    """New tags in ``new_repos`` repositories, then ``cycles`` cycles of each replica."""
    fleet = bench.fleet
    start = min(bench.registry.newest, key=lambda r: bench.registry.newest[r])
    bench.registry.push([(start + k) % fleet.repos for k in range(new_repos)])
    pushed = time.time()
    await bench.until(
        lambda: all(len(bench.replicas[n].done_after(pushed)) >= cycles for n in names),
        f"{cycles} cycles of {', '.join(names)}",
        within=cycles * (bench.interval + 120),
    )
    shares = []
    for name in names:
        replica = bench.replicas[name]
        done = replica.done_after(pushed)[:cycles]
        before = [c for c in replica.cycles if c.ok and c.end <= done[0].start]
        interval_cpu = (
            (done[-1].process_cpu - before[-1].process_cpu) / len(done) if before else 0.0
        )
        lists, repeated = [], 0
        for c in done:
            listed = Counter(replica.listed_in(c))
            lists.append(sum(listed.values()))
            repeated += sum(1 for n in listed.values() if n > 1)
        keys = len(done[-1].keys) if done[-1].keys is not None else len(fleet.keys)
        shares.append(
            Share(
                statistics.mean(c.cpu for c in done),
                statistics.mean(c.end - c.start for c in done),
                keys,
                statistics.mean(lists),
                max(lists),
                repeated,
                [c.cpu for c in done],
                {p: statistics.mean(c.parts()[p] for c in done) for p in done[0].parts()},
                interval_cpu,
            )
        )
    return shares


@dataclass
class Takeover:
    """A replica killed (``kill -9``) or paused (``SIGSTOP`` until the others took its keys,
    then ``SIGCONT``), right after new tags in repositories its keys use."""

    taken: float
    """Seconds from the kill until the others' cycles had begun on every key it held."""
    processed: float
    """… and had finished."""
    written: float
    """… until the last of its Applications with a new tag was written by another replica (all
    of them ran the new tags by then)."""
    lease_left: float
    """Seconds from the kill until its Lease expired."""
    writes_after_expiry: int
    """Writes (other than of its Lease) its API front served after its Lease expired (a paused
    replica: and before it held keys again, one lease duration after it renewed it)."""
    rejoined: float = 0.0
    """A paused replica: seconds from its resumption until it held keys again."""
    cancelled: bool = False
    """A paused replica: whether the cycle it was stopped in ended unfinished once resumed."""


def lease_expiry(bench: Bench, name: str) -> float:
    lease = bench.store.get("leases", NS, MEMBER_PREFIX + name)
    renewed = datetime.fromisoformat(lease["spec"]["renewTime"])
    return renewed.timestamp() + float(lease["spec"]["leaseDurationSeconds"])


async def take_over(
    bench: Bench, victim: str, others: Sequence[str], repos: int, *, pause: bool = False
) -> Takeover:
    fleet = bench.fleet
    replica = bench.replicas[victim]
    replica.poll()
    keys = replica.holds[-1].keys
    own = {fleet.key(i): i for i in range(fleet.updaters)}
    used = sorted({fleet.repo_of(own[k], j) for k in keys for j in range(fleet.apps_per)})
    chosen = used[:: max(1, len(used) // repos)][:repos]
    victim_apps = {
        fleet.app(own[k], j): fleet.repo_of(own[k], j)
        for k in keys
        for j in range(fleet.apps_per)
        if fleet.repo_of(own[k], j) in chosen
    }
    if pause:
        # Its tag lists answered late, so that it is stopped in the cycle that sees the new
        # tags before that cycle writes: its writes are due when it resumes.
        replica.slow.touch()
    bench.registry.push(chosen)
    if pause:
        pushed = time.time()
        await bench.until(lambda: replica.holds[-1].start > pushed, f"a cycle of {victim}", 120)
        keys = replica.holds[-1].keys
        stopped = bench.pause(victim)
    else:
        stopped = bench.kill(victim)

    def others_holds() -> list[Hold]:
        return [h for n in others for h in bench.replicas[n].holds if h.start > stopped]

    def covered(finished: bool) -> float | None:
        held: set[str] = set()
        for hold in sorted(others_holds(), key=lambda h: h.end or h.start):
            if finished and hold.end is None:
                continue
            held |= hold.keys & keys
            if held == keys:
                return (hold.end if finished else hold.start) or 0.0
        return None

    await bench.until(lambda: covered(True) is not None, "the others took over", LEASE + 300)
    taken_times = [min(h.start for h in others_holds() if key in h.keys) for key in keys]

    def current() -> bool:
        return all(
            bench.running(NS, app) == bench.registry.running(r) for app, r in victim_apps.items()
        )

    await bench.until(current, "its Applications ran the new tags", within=120)
    writes = bench.app_writes()
    by_others = [
        t
        for app in victim_apps
        for t, who in writes.get(f"{NS}/{app}", ())
        if t > stopped and who in others
    ]
    last_write = max(by_others, default=stopped)
    expiry = lease_expiry(bench, victim)
    until, rejoined, cancelled = float("inf"), 0.0, False
    if pause:
        replica.slow.unlink()
        resumed = bench.resume(victim)
        back = await bench.until(
            lambda: replica.holds[-1].start > resumed, f"{victim} held keys again", 120
        )
        until, rejoined = replica.holds[-1].start, back - resumed
        cut = [c for c in replica.cycles if c.start < stopped < c.end]
        cancelled = bool(cut) and not cut[0].ok
        await bench.until(
            lambda: bench.partitioned([*others, victim], until), "the keys split again", 300
        )
    return Takeover(
        max(taken_times) - stopped,
        (covered(True) or 0.0) - stopped,
        last_write - stopped,
        expiry - stopped,
        sum(
            1
            for t, _, path in replica.front.writes
            if expiry < t < until and "/leases/" not in path
        ),
        rejoined,
        cancelled,
    )


@dataclass
class Scale:
    moved: int
    to_new: int
    among_old: int
    predicted: int
    ownership_changes: float
    app_writes: int
    status_unmoved: int
    status_moved: int
    settle: float
    status_moved_updated: int = 0
    """Keys whose status was rewritten that had an Application written earlier in the round."""
    moved_updated: int = 0
    """Moved keys that had an Application written earlier in the round."""
    confirmations_lost: int = 0
    """Moved keys whose status lost a confirmation (a ``shipments`` entry ``Synced`` before;
    after, none for that image, or ``Unknown``/``NotShipped``: a newer write replacing it is no
    loss)."""
    old_lists: int = 0
    """The most tag lists in one cycle of an old replica, in its first three after the new
    replicas started (each member list change among them)."""
    old_lists_added: int = 0
    """The most tag lists of an old replica in those three cycles, added."""
    new_lists: int = 0
    """The most tag lists in one cycle of a new replica (it holds no copies yet)."""


def most_lists(
    bench: Bench, names: Sequence[str], after: float, cycles: int, *, added: bool = False
) -> int:
    """The most tag lists in one cycle of ``names``, in the first ``cycles`` after ``after``
    (``added``: in those cycles of one of them, added)."""
    most = 0
    for name in names:
        replica = bench.replicas[name]
        counts = [len(replica.listed_in(c)) for c in replica.done_after(after)[:cycles]]
        most = max(most, sum(counts) if added else max(counts, default=0))
    return most


async def scale(bench: Bench, old: Sequence[str], new: Sequence[str]) -> Scale:
    from argocd_image_updater.controller.shards import owner

    fleet = bench.fleet
    began = time.time()
    before = bench.owners(old, 0.0)
    assert set(before) == fleet.keys
    counted = {n: bench.replicas[n].metric(CHANGES) for n in old}
    writes_before = {n: len(bench.replicas[n].front.writes) for n in old}
    confirmed = {k: bench.confirmed(k) for k in fleet.keys}
    for name in new:
        await bench.start(name)
    everyone = [*old, *new]

    def joined() -> float | None:
        firsts = [bench.replicas[n].done_after(began) for n in new]
        return max(f[0].start for f in firsts) if all(firsts) else None

    await bench.until(lambda: joined() is not None, "the new replicas held keys", within=300)
    settled = await bench.until(
        lambda: bench.partitioned(everyone, joined() or 0.0),
        "the keys split five ways",
        within=300,
    )
    await bench.until(
        lambda: all(len(bench.replicas[n].done_after(began)) >= 3 for n in everyone),
        "three cycles of each replica after the new ones started",
        within=3 * (bench.interval + 120),
    )
    after = bench.owners(everyone, joined() or 0.0)
    moved = {k for k in fleet.keys if before[k] != after[k]}
    to_new = {k for k in moved if after[k] in new}
    predicted = sum(1 for k in fleet.keys if owner(k, everyone) != owner(k, old))
    changes = sum(bench.replicas[n].metric(CHANGES) - counted[n] for n in old)
    changes += sum(bench.replicas[n].metric(CHANGES) for n in new)
    app_writes = status_unmoved = 0
    rewritten: Counter[str] = Counter()
    status = f"/namespaces/{NS}/imageupdaters/"
    for name in everyone:
        replica = bench.replicas[name]
        for t, method, path in replica.front.writes[writes_before.get(name, 0) :]:
            if t > settled:
                continue
            if method == "PATCH" and f"/namespaces/{NS}/applications/" in path:
                app_writes += 1
            elif status in path and path.endswith("/status"):
                key = f"{NS}/{path.split(status, 1)[1].split('/', 1)[0]}"
                if key in moved:
                    rewritten[key] += 1
                else:
                    status_unmoved += 1
    lost = sum(1 for k in moved if confirmed[k] - bench.confirmed(k, known=True))
    # Which of the rewritten ones had an Application written earlier in the round.
    updated = {
        f"{NS}/{app.split('/', 1)[1].rsplit('-e', 1)[0]}"
        for app, writes in bench.app_writes().items()
        if app.startswith(f"{NS}/") and any(t < began for t, _ in writes)
    }
    return Scale(
        len(moved),
        len(to_new),
        len(moved - to_new),
        predicted,
        changes,
        app_writes,
        status_unmoved,
        len(rewritten),
        settled - began,
        len(set(rewritten) & updated),
        len(updated & moved),
        lost,
        most_lists(bench, old, began, 3),
        most_lists(bench, old, began, 3, added=True),
        most_lists(bench, new, began, 3),
    )


CHANGES = "argocd_image_updater_shard_ownership_changes_total"


@dataclass
class Churn:
    """A repository newly used (one Application of an ImageUpdater moved to it), then no
    longer used (moved back): each replica sees the repositories needed change at its next
    cycle, the first of them before the owners' next heartbeats."""

    most: int
    """The most tag lists in one cycle of one replica, in its first two after either change."""
    together: int
    """The tag lists of the replicas' first cycles after a change, added (the more of the two)."""


async def newly_used(bench: Bench, names: Sequence[str]) -> Churn:
    from argocd_image_updater_testing import objects

    fleet, registry = bench.fleet, bench.registry
    most = together = 0
    for r in (registry.add(), fleet.repo_of(0, 0)):
        updater = bench.store.get("imageupdaters", NS, fleet.updater(0))
        updater["spec"]["applicationRefs"][0]["images"][0]["imageName"] = fleet.image(r)
        running = registry.running(r)
        changed = time.time()
        bench.store.put(updater)
        bench.store.put(
            objects.application(fleet.app(0, 0), NS, images=[running], kustomize_images=[running])
        )
        await bench.until(
            lambda at=changed: all(len(bench.replicas[n].done_after(at)) >= 2 for n in names),
            "two cycles of each replica after the repositories needed changed",
            within=2 * bench.interval + 120,
        )
        firsts = 0
        for name in names:
            replica = bench.replicas[name]
            counts = [len(replica.listed_in(c)) for c in replica.done_after(changed)[:2]]
            most, firsts = max(most, *counts), firsts + counts[0]
        together = max(together, firsts)
    return Churn(most, together)


@dataclass
class Round:
    single: Share
    sharded: list[Share]
    churn: Churn
    kill: Takeover
    paused: Takeover
    scale: Scale
    doubly_held: int
    doubly_written: int
    behind: int
    duration: float
    profiles: dict[str, str] = field(default_factory=dict)


async def one_round(
    fleet: Fleet, registry: Registry, registry_url: str, root: Path, args: argparse.Namespace
) -> Round:
    began = time.time()
    bench = Bench(fleet, registry, registry_url, root, args.interval)
    bench.sample = args.sample
    bench.trace = Path(args.trace) if args.trace else None
    profiles: dict[str, str] = {}
    print(
        f"  seeded {fleet.updaters} ImageUpdaters in {time.time() - began:.1f} s", file=sys.stderr
    )
    try:
        # One replica on its copy of the fleet, then three on theirs (or, with --together, all
        # four at the same time).
        three = ["r1", "r2", "r3"]
        if args.apart:
            solo = await bench.start("solo", sharded=False)
            await bench.until(lambda: len(solo.done_after(0)) >= 2, "one replica warmed up", 600)
            (single,) = await measure(bench, ["solo"], args.new_repos, args.cycles)
            behind = bench.behind(SOLO_NS)
            await bench.stop("solo")
            bench.catch_up(NS)
        started = time.time()
        if not args.apart:
            solo = await bench.start("solo", sharded=False)
        for name in three:
            await bench.start(name)
        split = await bench.until(
            lambda: bench.partitioned(three, started), "the keys split three ways", 600
        )
        await bench.until(
            lambda: (
                (args.apart or len(solo.done_after(0)) >= 2)
                and all(bench.replicas[n].done_after(split) for n in three)
            ),
            "every replica warmed up",
            600,
        )
        if args.apart:
            sharded = await measure(bench, three, args.new_repos, args.cycles)
        else:
            single, *sharded = await measure(bench, ["solo", *three], args.new_repos, args.cycles)
            behind = bench.behind(SOLO_NS)
            await bench.stop("solo")
        profiles["one replica"] = bench.profile("solo")
        profiles["r1, one of 3 replicas"] = bench.profile("r1")
        print(f"  one replica, {single}", file=sys.stderr)
        print("  three replicas: " + "; ".join(map(str, sharded)), file=sys.stderr)

        churn = await newly_used(bench, three)
        print(
            f"  a repository newly used, then no longer: at most {churn.most} tag lists in a "
            f"cycle of one replica, {churn.together} in the first cycles after, added",
            file=sys.stderr,
        )
        kill = await take_over(bench, "r3", ["r1", "r2"], args.kill_repos)
        print(f"  kill -9: keys processed {kill.processed:.1f} s after", file=sys.stderr)
        replaced = time.time()
        await bench.start("r4")
        three = ["r1", "r2", "r4"]
        await bench.until(lambda: bench.partitioned(three, replaced), "r4 took its share", 600)
        paused = await take_over(bench, "r1", ["r2", "r4"], args.kill_repos, pause=True)
        print(
            f"  SIGSTOP: keys processed {paused.processed:.1f} s after; the cycle it was "
            f"stopped in {'was cancelled' if paused.cancelled else 'finished'} when resumed",
            file=sys.stderr,
        )
        moved = await scale(bench, three, ["r5", "r6"])
        print(
            f"  scale 3 → 5: {moved.moved} keys moved; the new owners rewrote the status of "
            f"{moved.status_moved} of them, {moved.status_moved_updated} of which had an "
            f"Application written earlier in the round (of {moved.moved_updated} such keys "
            f"that moved); at most {moved.old_lists} tag lists in a cycle of an old replica "
            f"after ({moved.old_lists_added} in three), {moved.new_lists} of a new one",
            file=sys.stderr,
        )
        return Round(
            single,
            sharded,
            churn,
            kill,
            paused,
            moved,
            len(bench.double_holds()),
            bench.double_writes(),
            behind + bench.behind(),
            time.time() - began,
            profiles,
        )
    finally:
        await bench.close()


# --- report -------------------------------------------------------------------------------------


def spread(values: Sequence[float], digits: int = 2) -> str:
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{min(values):.{digits}f} / {statistics.median(values):.{digits}f}"


def parts_table(rounds: list[Round]) -> list[str]:
    """Where a cycle's CPU time goes, one replica against each of three (medians of the
    rounds; each replica's part is the mean of its measured cycles)."""
    lines = [
        "| part of a cycle (CPU s, median) | one replica | each of 3 replicas (mean) | ratio |",
        "|---|---:|---:|---:|",
    ]
    names = {
        "collect": "list and select the whole fleet",
        "scan": "registry scans",
        "plan+write": "plan and write",
        "report+state": "statuses, remembered state, the rest",
    }
    for part, label in [*names.items(), ("cycle", "whole cycle")]:

        def of(share: Share, part: str = part) -> float:
            return share.cpu if part == "cycle" else share.parts[part]

        one = statistics.median(of(r.single) for r in rounds)
        each = statistics.median(statistics.mean(of(s) for s in r.sharded) for r in rounds)
        ratio = f"{each / one:.2f}" if one else "-"
        lines.append(f"| {label} | {one:.3f} | {each:.3f} | {ratio} |")
    return lines


def render(rounds: list[Round], fleet: Fleet, args: argparse.Namespace) -> str:
    minimum, bound = fleet.used_repos(), LEASE + args.interval
    # Rendezvous hashing gives each key to one of the two new replicas with chance 2/5: met
    # within three standard deviations of that binomial share.
    spread_moved = 3 * (0.4 * 0.6 / fleet.updaters) ** 0.5
    sharded = [s for r in rounds for s in r.sharded]

    def zero(value: float) -> float:
        return value

    # measure, target, values (one per round, or per replica and round), how far a value is
    # beyond the target (met at 0 or less), digits
    rows: list[tuple[str, str, list[float], Callable[[float], float] | None, int]] = [
        ("cycle CPU s, one replica", "", [r.single.cpu for r in rounds], None, 2),
        ("cycle CPU s, each of 3 replicas", "", [s.cpu for s in sharded], None, 2),
        (
            "cycle CPU, each of 3 replicas / one replica (each replica's median over the "
            "rounds: the same keys in every round)",
            "1/3 ± 20 %: 0.27–0.40",
            [
                statistics.median(r.sharded[i].cpu / r.single.cpu for r in rounds)
                for i in range(len(rounds[0].sharded))
            ],
            lambda x: abs(3 * x - 1) - 0.2,
            2,
        ),
        (
            "… each replica in each round",
            "",
            [s.cpu / r.single.cpu for r in rounds for s in r.sharded],
            None,
            2,
        ),
        (
            "process CPU s an interval (cycle and between), one replica",
            "",
            [r.single.interval_cpu for r in rounds],
            None,
            2,
        ),
        (
            "process CPU s an interval, each of 3 replicas",
            "",
            [s.interval_cpu for s in sharded],
            None,
            2,
        ),
        (
            "process CPU an interval, each of 3 replicas / one replica",
            "",
            [s.interval_cpu / r.single.interval_cpu for r in rounds for s in r.sharded],
            None,
            2,
        ),
        ("cycle wall s, one replica", "", [r.single.wall for r in rounds], None, 2),
        ("cycle wall s, each of 3 replicas", "", [s.wall for s in sharded], None, 2),
        (
            "tag lists a cycle, one replica",
            f"minimum {minimum}",
            [r.single.tag_lists for r in rounds],
            None,
            0,
        ),
        (
            "tag lists in one cycle of one of 3 replicas (the most)",
            f"≤ {minimum} × 1.2 = {minimum * 1.2:.0f}",
            [max(s.tag_lists_max for s in r.sharded) for r in rounds],
            lambda x: x - minimum * 1.2,
            0,
        ),
        (
            "tag lists a cycle, 3 replicas together (each replica's mean a cycle, added)",
            f"≤ {minimum} × 1.2 = {minimum * 1.2:.0f}",
            [sum(s.tag_lists for s in r.sharded) for r in rounds],
            lambda x: x - minimum * 1.2,
            0,
        ),
        (
            "a repository newly used, then no longer: tag lists in one cycle of one of 3 "
            "replicas, its first two after either (the most)",
            "",
            [r.churn.most for r in rounds],
            None,
            0,
        ),
        (
            "… tag lists of the 3 replicas' first cycles after either, added",
            f"≤ {minimum} × 1.2 = {minimum * 1.2:.0f}",
            [r.churn.together for r in rounds],
            lambda x: x - minimum * 1.2,
            0,
        ),
        (
            "repositories listed twice by a replica in one cycle",
            "0",
            [r.single.repeated + sum(s.repeated for s in r.sharded) for r in rounds],
            zero,
            0,
        ),
        (
            "kill -9: its Lease expired, s after the kill",
            "",
            [r.kill.lease_left for r in rounds],
            None,
            1,
        ),
        (
            "kill -9: survivors' cycles held all its keys, s after",
            f"≤ lease + interval = {bound:g}",
            [r.kill.taken for r in rounds],
            lambda x: x - bound,
            1,
        ),
        (
            "kill -9: … and had processed them (cycles finished), s after",
            f"≤ {bound:g}",
            [r.kill.processed for r in rounds],
            lambda x: x - bound,
            1,
        ),
        (
            "kill -9: its Applications with a new tag written by survivors, s after",
            "",
            [r.kill.written for r in rounds],
            None,
            1,
        ),
        (
            "writes by the killed replica after its Lease expired",
            "0",
            [r.kill.writes_after_expiry for r in rounds],
            zero,
            0,
        ),
        (
            "SIGSTOP in a cycle with new tags, SIGCONT after the takeover: its keys "
            "processed by the others, s after",
            f"≤ {bound:g}",
            [r.paused.processed for r in rounds],
            lambda x: x - bound,
            1,
        ),
        (
            "… writes by the paused replica after its Lease expired, until it held keys again",
            "0",
            [r.paused.writes_after_expiry for r in rounds],
            zero,
            0,
        ),
        (
            "… s from SIGCONT until it held keys again",
            f"≥ lease = {LEASE:g}",
            [r.paused.rejoined for r in rounds],
            lambda x: LEASE - x,
            1,
        ),
        (
            "keys held by two replicas at once (whole round)",
            "0",
            [r.doubly_held for r in rounds],
            zero,
            0,
        ),
        (
            "Applications written by two replicas within one interval",
            "0",
            [r.doubly_written for r in rounds],
            zero,
            0,
        ),
        (
            "scale 3 → 5: share of the keys moved",
            f"0.40 ± {spread_moved:.2f}",
            [r.scale.moved / fleet.updaters for r in rounds],
            lambda x: abs(x - 0.4) - spread_moved,
            2,
        ),
        (
            "scale 3 → 5: keys moved between the old replicas",
            "0",
            [r.scale.among_old for r in rounds],
            zero,
            0,
        ),
        (
            "scale 3 → 5: Applications written + statuses of keys not moved written",
            "0",
            [r.scale.app_writes + r.scale.status_unmoved for r in rounds],
            zero,
            0,
        ),
        (
            "scale 3 → 5: moved keys whose status lost a confirmed shipment (`Synced` → `Unknown`, gone)",
            "0",
            [r.scale.confirmations_lost for r in rounds],
            zero,
            0,
        ),
        (
            "scale 3 → 5: tag lists in one cycle of an old replica, its first three after the "
            "new ones started (the most)",
            "",
            [r.scale.old_lists for r in rounds],
            None,
            0,
        ),
        (
            "… in those three cycles, added (the most of an old replica)",
            "",
            [r.scale.old_lists_added for r in rounds],
            None,
            0,
        ),
        (
            "… of a new replica (no copies yet: every repository)",
            "",
            [r.scale.new_lists for r in rounds],
            None,
            0,
        ),
        (
            "scale 3 → 5: s until the keys were split five ways",
            "",
            [r.scale.settle for r in rounds],
            None,
            1,
        ),
        (
            "Applications not at their newest tag at the end",
            "0",
            [r.behind for r in rounds],
            zero,
            0,
        ),
    ]
    how = "" if len(rounds) == 1 else f"; figures min / median of {len(rounds)} rounds"
    apps, updaters = fleet.sharing()
    lines = [
        f"{fleet.updaters:,} ImageUpdaters × {fleet.apps_per} = "
        f"{fleet.updaters * fleet.apps_per:,} Applications, {fleet.repos} repositories × "
        f"{fleet.tags} tags (each used by {apps:g} Applications of {updaters:g} ImageUpdaters); "
        f"interval {args.interval:g} s, lease {LEASE:g} s / renew {RENEW:g} s / retry "
        f"{RETRY:g} s; one replica on a copy of the fleet "
        f"{'at the same time as' if not args.apart else 'measured before'} three on theirs, "
        f"{args.cycles} measured cycles each after new tags in {args.new_repos} "
        f"repositories{how}.",
        "",
        "| measure | target | figure | worst | met |",
        "|---|---|---:|---:|---|",
    ]
    for measure, target, values, excess, digits in rows:
        worst, met = "", ""
        if excess is not None:
            value = max(values, key=excess)
            worst = f"{value:.{digits}f}"
            met = "yes" if excess(value) <= 0 else "**no**"
        lines.append(f"| {measure} | {target} | {spread(values, digits)} | {worst} | {met} |")
    lines += ["", *parts_table(rounds)]
    lines += [
        "",
        "| round | one replica: CPU s / wall s / tag lists | 3 replicas, each: keys, CPU s, "
        "wall s, tag lists | kill -9: Lease left / keys held / processed, s | SIGSTOP: Lease "
        "left / keys held / processed, s; its cycle | 3 → 5: keys moved (rendezvous predicts), "
        "to the new replicas, status writes of moved keys, ownership changes counted | "
        "round s |",
        "|---|---|---|---|---|---|---:|",
    ]
    for n, r in enumerate(rounds, 1):
        shares = "; ".join(
            f"{s.keys}, {s.cpu:.2f}, {s.wall:.2f}, {s.tag_lists:.0f}" for s in r.sharded
        )
        lines.append(
            f"| {n} | {r.single.cpu:.2f} / {r.single.wall:.2f} / {r.single.tag_lists:.0f} "
            f"| {shares} | {r.kill.lease_left:.1f} / {r.kill.taken:.1f} / "
            f"{r.kill.processed:.1f} | {r.paused.lease_left:.1f} / {r.paused.taken:.1f} / "
            f"{r.paused.processed:.1f}; {'cancelled' if r.paused.cancelled else 'finished'} "
            f"| {r.scale.moved} ({r.scale.predicted}), "
            f"{r.scale.to_new}, {r.scale.status_moved}, {r.scale.ownership_changes:.0f} "
            f"| {r.duration:.0f} |"
        )
    return "\n".join(lines)


def parent_main(args: argparse.Namespace) -> int:
    from argocd_image_updater_testing.registry import RegistryServer

    per = args.repos_per_updater or args.apps_per
    fleet = Fleet(args.updaters, args.apps_per, args.repos, args.tags, per)
    if min(fleet.updaters, fleet.apps_per, fleet.repos, args.rounds, args.cycles) < 1:
        raise SystemExit("--updaters, --apps-per, --repos, --rounds and --cycles must be ≥ 1")
    if fleet.tags < 1:
        raise SystemExit("--tags must be at least 1")
    tags = fleet.tags + args.rounds * (2 * args.new_repos + args.kill_repos) + 10
    root = scratch_dir("sharding-bench-", inodes=fleet.repos * tags * INODES_PER_NAMED_TAG)
    rounds: list[Round] = []
    try:
        began = time.time()
        registry = Registry(root / "storage", fleet)
        print(f"registry storage written in {time.time() - began:.1f} s", file=sys.stderr)
        with RegistryServer(storage=root / "storage") as server:
            for n in range(args.rounds):
                print(f"round {n + 1}/{args.rounds}", file=sys.stderr)
                directory = root / f"round-{n}"
                directory.mkdir()
                cpu = time.process_time()
                rounds.append(asyncio.run(one_round(fleet, registry, server.url, directory, args)))
                print(
                    f"  round {rounds[-1].duration:.0f} s; the fakes and proxies (this process) "
                    f"{time.process_time() - cpu:.0f} s CPU",
                    file=sys.stderr,
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"Machine: {machine()}\n")
    print(render(rounds, fleet, args))
    for name, text in rounds[0].profiles.items():
        if text:
            print(f"\nCPU sampling profile of {name}, its cycles after the first two:\n```")
            print(text.strip() + "\n```")
    failed = problems(rounds)
    for problem in failed:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if failed else 0


def problems(rounds: list[Round]) -> list[str]:
    """What went wrong (not what was slow): double work, writes past a Lease, lost updates."""
    found = []
    for n, r in enumerate(rounds, 1):
        counts = {
            "keys held by two replicas at once": r.doubly_held,
            "Applications written by two replicas within one interval": r.doubly_written,
            "writes by the killed replica after its Lease expired": r.kill.writes_after_expiry,
            "writes by the paused replica after its Lease expired": r.paused.writes_after_expiry,
            "keys moved between the old replicas": r.scale.among_old,
            "repositories listed twice in one cycle": r.single.repeated
            + sum(s.repeated for s in r.sharded),
            "Applications not at their newest tag": r.behind,
        }
        found += [f"round {n}: {count} {what}" for what, count in counts.items() if count]
    return found


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--replica":
        replica_main(sys.argv[2], sys.argv[4:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--updaters", type=int, default=1000)
    parser.add_argument("--apps-per", type=int, default=5, help="Applications per ImageUpdater")
    parser.add_argument("--repos", type=int, default=500)
    parser.add_argument(
        "--repos-per-updater",
        type=int,
        default=0,
        metavar="N",
        help="repositories the Applications of one ImageUpdater use (default: one each, "
        "--apps-per; 1: all of them the same)",
    )
    parser.add_argument("--tags", type=int, default=20)
    parser.add_argument("--interval", type=float, default=5.0, help="--interval of run, seconds")
    parser.add_argument("--cycles", type=int, default=3, help="measured cycles a configuration")
    parser.add_argument(
        "--new-repos",
        type=int,
        default=5,
        help="repositories with a new tag before the measured cycles",
    )
    parser.add_argument(
        "--kill-repos",
        type=int,
        default=10,
        help="repositories of the killed replica's keys with a new tag",
    )
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--together",
        dest="apart",
        action="store_false",
        help="measure the one replica at the same time as the three, instead of first and "
        "stopped before the three start (then they compete for the machine's CPUs, and "
        "replicas whose cycles fall on the one replica's keep overlapping it)",
    )
    parser.add_argument(
        "--apart",
        dest="apart",
        action="store_true",
        default=True,
        help="the one replica first, stopped before the three start (the default)",
    )
    parser.add_argument(
        "--sample",
        type=int,
        default=0,
        metavar="N",
        help="a statistical CPU profile of the cycles of one replica and of one of three "
        "(their CPU per component and N most sampled functions); it slows the cycles",
    )
    parser.add_argument(
        "--trace",
        metavar="DIR",
        help="a deterministic profile (cProfile, CPU time) of each replica's cycles 3 to 7, "
        "written to DIR/<replica>.prof (pstats); it slows the cycles several times",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a small fleet: 60 ImageUpdaters, 30 repositories × 10 tags, 2 measured cycles",
    )
    args = parser.parse_args()
    if args.quick:
        args.updaters, args.repos, args.tags, args.cycles = 60, 30, 10, 2
        args.new_repos, args.kill_repos, args.interval = 3, 3, 3.0
    sys.exit(parent_main(args))


if __name__ == "__main__":
    main()
