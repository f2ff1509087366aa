"""Fencing on lost leadership, end to end: replicas of the controller on the Kubernetes API fake
(one front per replica over one store, so that one replica's Lease renewals can be made to fail)
writing to a real git server over smart HTTP.

A leader that cannot renew its Lease stands down at the renew deadline — before another replica
may take the Lease — and what it had in flight is cancelled: a git push stalled in the network
is killed and never lands, an Application patch waiting for its answer is abandoned, and no
write is issued after. The next leader writes once. Every wait polls with a deadline.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf, seed_web_app
from waiting import eventually

from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.leader import LeaderElector
from argocd_image_updater.controller.leading import NOT_LEADER, LeadershipLost, run_as_leader
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.kube.client import REQUEST_TIMEOUT, KubeClient
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.git_servers import (
    GitHttpServer,
    bare_repo,
    log_subjects,
    push_attempts,
    show,
)
from argocd_image_updater_testing.kube import KubeApiServer, KubeStore
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 6, 1, tzinfo=UTC)
TIMING = {"lease_duration": 4.0, "renew_deadline": 2.5, "retry_period": 0.2}
USER, TOKEN = "bot", "deploy-token-do-not-log"
KUSTOMIZATION = (
    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
    "resources:\n- deployment.yaml\nimages:\n- name: {image}\n  newTag: 1.0.0\n"
)
WRITES = ("create", "update", "patch", "delete")


@dataclass
class Replica:
    controller: Controller
    elector: LeaderElector
    api: KubeApiServer
    clones: Path
    closers: list[Any]
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class Replicas:
    """Controllers, each with its elector, running as ``run`` runs them (one update cycle as
    soon as it leads, the next an hour later)."""

    def __init__(self, tmp_path: Path, conf: Path) -> None:
        self.tmp_path, self.conf = tmp_path, conf
        self.started: list[Replica] = []

    async def start(
        self,
        api: KubeApiServer,
        identity: str,
        clock: Callable[[], float] | None = None,
        **timing: float,
    ) -> Replica:
        clones = self.tmp_path / f"clones-{identity}"
        settings = resolve(
            "run",
            {
                "kubeconfig": str(
                    api.write_kubeconfig(self.tmp_path / f"kubeconfig-{identity}", namespace=NS)
                ),
                "registries_conf_path": str(self.conf),
                "git_cache_dir": str(clones),
                "git_commit_message_path": str(self.tmp_path / "no-template"),
            },
            env={},
        )
        controller, closers = await build_controller(settings)
        controller.interval = timedelta(hours=1)
        assert controller.kube is not None
        extra = {"clock": clock} if clock is not None else {}
        elector = LeaderElector(
            controller.kube, namespace=NS, identity=identity, **(timing or TIMING), **extra
        )
        controller.elector = elector
        replica = Replica(controller, elector, api, clones.resolve(), closers)
        replica.tasks = [
            asyncio.create_task(elector.run(replica.stop)),
            asyncio.create_task(controller.run(stop=replica.stop)),
        ]
        self.started.append(replica)
        return replica

    async def close(self) -> None:
        for replica in self.started:
            replica.stop.set()
        for replica in self.started:
            _, pending = await asyncio.wait(replica.tasks, timeout=30)
            for task in pending:
                task.cancel()
            await asyncio.gather(*replica.tasks, return_exceptions=True)
            for closer in reversed(replica.closers):
                await close_resource(closer)
        self.started.clear()


@pytest.fixture
def store() -> KubeStore:
    return KubeStore(namespaces=(NS,))


@pytest.fixture
async def api_a(store: KubeStore) -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(store) as server:
        yield server


@pytest.fixture
async def api_b(store: KubeStore) -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(store) as server:
        yield server


@pytest.fixture
async def git_server(tmp_path: Path) -> AsyncIterator[GitHttpServer]:
    root = tmp_path / "srv"
    root.mkdir()
    async with GitHttpServer(root, users={USER: TOKEN}) as server:
        yield server


def writes(api: KubeApiServer) -> dict[tuple[str, str], int]:
    """The write requests a replica sent through its API front (Lease renewals aside)."""
    return {
        key: count for key, count in api.requests.items() if key[0] in WRITES and key[1] != "leases"
    }


def logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The leader election's log messages so far."""
    return [r.getMessage() for r in caplog.records if r.name.endswith(".leader")]


def processes_in(directory: Path) -> list[int]:
    """Processes whose working directory is in ``directory`` (a replica's git processes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue  # ended, or a zombie
        if cwd == str(directory) or cwd.startswith(f"{directory}/"):
            found.append(int(entry.name))
    return found


async def git_fleet(
    store: KubeStore, registry: RegistryServer, repo: str, git_server: GitHttpServer
) -> tuple[str, Path]:
    """Tags 1.0.0 and 1.1.0; an Application ``web`` running 1.0.0 whose kustomization lives in
    the repository ``deploy.git`` of ``git_server`` (branch main, with its repository Secret);
    an ImageUpdater writing back through git. Returns the image and the bare repository."""
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(["1.0.0", "1.1.0"]):
            await pusher.push_image(repo, tag, created=START + timedelta(days=i))
    image = f"{registry.host}/{repo}"
    remote = bare_repo(
        git_server.root / "deploy.git",
        files={"app/kustomization.yaml": KUSTOMIZATION.format(image=image)},
    )
    url = git_server.url_for("deploy.git")
    store.put(
        objects.secret(
            "repo-deploy",
            NS,
            {"url": url, "username": USER, "password": TOKEN, "insecure": "true"},
            labels={"argocd.argoproj.io/secret-type": "repository"},
        )
    )
    store.put(
        objects.application(
            "web", NS, images=[f"{image}:1.0.0"], repo_url=url, path="app", target_revision="main"
        )
    )
    store.put(
        objects.image_updater(
            "web",
            NS,
            {
                "writeBackConfig": {
                    "method": "git",
                    "gitConfig": {"writeBackTarget": "kustomization"},
                },
                "applicationRefs": [
                    {"namePattern": "web", "images": [{"alias": "web", "imageName": image}]}
                ],
            },
        )
    )
    return image, remote


async def test_a_push_stalled_when_the_lease_is_lost_never_lands_and_the_next_leader_pushes_once(
    store: KubeStore,
    api_a: KubeApiServer,
    api_b: KubeApiServer,
    git_server: GitHttpServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    image, remote = await git_fleet(store, registry, repo, git_server)
    home = tmp_path / "home"
    home.mkdir()
    replicas = Replicas(tmp_path, registries_conf(tmp_path, registry))
    try:
        git_server.hold("receive-pack")
        a = await replicas.start(api_a, "replica-a")
        await eventually(lambda: git_server.held == 1, "replica-a's push reaching the git server")
        assert a.elector.is_leader()
        assert processes_in(a.clones), "the push is a git process working in replica-a's clone"
        before = writes(api_a)

        api_a.fail_next(100_000, resource="leases", status=503)  # renewals fail from now on
        await eventually(lambda: a.elector.not_leading.is_set(), "replica-a standing down")
        await eventually(lambda: not processes_in(a.clones), "replica-a's git processes killed")
        lost = (
            "lost the leadership: cancelled the update cycle and its writes in flight; standing by"
        )
        await eventually(lambda: lost in logged(caplog), "the cancellation logged")
        assert "stopped leading: could not renew the lease within 2.5s" in logged(caplog)
        # The network recovers: the bytes of the killed push are gone with their connection.
        git_server.release()
        await eventually(lambda: git_server.dropped == 1, "the killed push dropped")
        assert push_attempts(remote) == 0
        assert log_subjects(remote, "main", home=home) == ["Initial commit"]

        b = await replicas.start(api_b, "replica-b")
        # The loop records a cycle's result once the cycle's task has returned to it.
        await eventually(
            lambda: b.controller.last_result is not None, "replica-b's first cycle as leader"
        )
        assert b.elector.is_leader() and not a.elector.is_leader()
        assert b.controller.last_result.errors == 0
        assert push_attempts(remote) == 1
        assert log_subjects(remote, "main", home=home) == [
            "build: automatic update of web",
            "Initial commit",
        ]
        text = show(remote, "main", "app/kustomization.yaml", home=home)
        assert text == KUSTOMIZATION.format(image=image).replace("1.0.0", "1.1.0")
        assert writes(api_a) == before, "replica-a wrote after it lost the lease"
        assert a.controller.cycles == 0  # its only cycle was cancelled
    finally:
        git_server.release()
        await replicas.close()


async def test_an_application_patch_in_flight_is_abandoned_when_the_lease_is_lost(
    store: KubeStore,
    api_a: KubeApiServer,
    api_b: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
) -> None:
    image, conf = await seed_web_app(api_a, registry, repo, tmp_path, ["1.0.0", "1.1.0"])

    def images() -> Any:
        return store.get("applications", NS, "web")["spec"]["source"]["kustomize"]["images"]

    replicas = Replicas(tmp_path, conf)
    try:
        # replica-a's patch reaches the API server and waits there for its answer.
        api_a.set_latency(600.0, verb="patch", resource="applications")
        a = await replicas.start(api_a, "replica-a")
        await eventually(
            lambda: api_a.request_count("patch", "applications") == 1, "replica-a's patch sent"
        )
        before = writes(api_a)

        api_a.fail_next(100_000, resource="leases", status=503)
        await eventually(lambda: a.elector.not_leading.is_set(), "replica-a standing down")
        # Abandoned by the cancellation, long before the client's own timeout would give up.
        await eventually(
            lambda: api_a.abandoned[("patch", "applications")] == 1,
            "replica-a's patch abandoned",
            within=REQUEST_TIMEOUT / 2,
        )
        assert not a.elector.is_leader()
        assert images() == [f"{image}:1.0.0"]

        b = await replicas.start(api_b, "replica-b")
        await eventually(lambda: b.controller.cycles >= 1, "replica-b's first cycle as leader")
        assert images() == [f"{image}:1.1.0"]
        assert api_b.request_count("patch", "applications") == 1
        assert writes(api_a) == before, "replica-a wrote after it lost the lease"
    finally:
        await replicas.close()


async def test_no_write_starts_after_the_renew_deadline_even_before_the_elector_notices(
    store: KubeStore,
    api_a: KubeApiServer,
    git_server: GitHttpServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
) -> None:
    """The renewal loop would notice the missed deadline only at its next turn (here: never
    during the test), so nothing cancels the cycle: the fence alone refuses the push, the
    status write and the events, because leadership ends at the deadline by itself."""
    _, remote = await git_fleet(store, registry, repo, git_server)
    now = 0.0
    replicas = Replicas(tmp_path, registries_conf(tmp_path, registry))
    slow = {"lease_duration": 100.0, "renew_deadline": 60.0, "retry_period": 50.0}
    try:
        git_server.hold("upload-pack")  # the clone before the push stalls
        a = await replicas.start(api_a, "replica-a", clock=lambda: now, **slow)
        await eventually(lambda: git_server.held >= 1, "replica-a fetching the repository")
        assert a.elector.is_leader()
        before = writes(api_a)

        now = 60.0  # the renew deadline passed on the elector's clock
        assert not a.elector.is_leader() and a.elector.leading.is_set()
        git_server.release()
        # The loop records the cycle's result once the cycle's task has returned to it.
        await eventually(lambda: a.controller.last_result is not None, "replica-a's cycle ending")
        result = a.controller.last_result
        assert result is not None and a.controller.cycles == 1
        [outcome] = result.apps
        url = git_server.url_for("deploy.git")
        assert outcome.error == (
            f"git write-back to {url} failed: not pushing to branch main of {url}: "
            "this replica is no longer the leader"
        )
        assert push_attempts(remote) == 0
        home = tmp_path / "home"
        home.mkdir()
        assert log_subjects(remote, "main", home=home) == ["Initial commit"]
        assert writes(api_a) == before
        assert not a.elector.not_leading.is_set()  # the elector has not noticed yet
    finally:
        git_server.release()
        await replicas.close()


async def test_work_never_starts_on_a_replica_that_does_not_lead(tmp_path: Path) -> None:
    """A webhook event queued before the leadership was lost is not started after it."""
    unused = KubeApiServer()  # never started: no request is made
    kube = await KubeClient.connect(str(unused.write_kubeconfig(tmp_path / "config")))
    elector = LeaderElector(kube, namespace=NS, identity="follower")
    started = []

    async def work() -> int:
        started.append(True)
        return 42

    try:
        with pytest.raises(LeadershipLost, match=f"^not starting the webhook event: {NOT_LEADER}$"):
            await run_as_leader(elector, work(), "webhook event")
        assert started == []
        assert await run_as_leader(None, work(), "webhook event") == 42  # no leader election
    finally:
        await kube.close()
