"""``run`` against a cluster: Applications from the Kubernetes API or Argo CD's API, status and
events written back. Kept apart from local mode (:mod:`argocd_image_updater.cli.run_local`),
which never loads the Kubernetes client."""

from __future__ import annotations

import socket
import time
import uuid
from datetime import timedelta
from typing import Any, Final

from argocd_image_updater.argocd.client import ArgoCDClient
from argocd_image_updater.cli.run_setup import (
    IMAGE_UPDATER_SECRET,
    StartupError,
    build_git_writer,
    legacy_filter,
    local_state_store,
    watch_scope,
)
from argocd_image_updater.config.notifications_file import (
    NotificationsFile,
    NotificationsFileError,
)
from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.config.secrets import SecretReader
from argocd_image_updater.config.settings import Settings
from argocd_image_updater.controller.crd_check import CrdCheck
from argocd_image_updater.controller.credentials import CredentialsCache
from argocd_image_updater.controller.leader import DEFAULT_LEASE_NAME, LeaderElector
from argocd_image_updater.controller.lease_sightings import MembersGuard
from argocd_image_updater.controller.membership import Membership, member_name
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.controller.secrets import KubeSecretReader
from argocd_image_updater.controller.shard_state import ShardedStateStore
from argocd_image_updater.controller.shards import leader_lease_name
from argocd_image_updater.controller.state_store import ConfigMapStateStore
from argocd_image_updater.controller.state_sweep import StateSweep
from argocd_image_updater.controller.stores import ArgoCDStore, KubeStatusStore, KubeStore
from argocd_image_updater.controller.watched_objects import WatchedFleet
from argocd_image_updater.kube.client import KubeClient, KubeError
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.notify.dispatcher import Notifier
from argocd_image_updater.observe.log import get_logger, register_secret
from argocd_image_updater.pipeline.ports import ApplicationStore, AppWriter, StateStore
from argocd_image_updater.registry.helmrepo_secrets import HelmRepoSecrets
from argocd_image_updater.registry.scanner import Scanner
from argocd_image_updater.report.events import EventRecorder
from argocd_image_updater.report.installed_crd import InstalledCrd
from argocd_image_updater.report.reporter import Reporter
from argocd_image_updater.report.ship_tracker import ShipTracker
from argocd_image_updater.report.status import StatusWriter
from argocd_image_updater.writeback.argocd import ArgoCDAppWriter, KubeAppWriter
from argocd_image_updater.writeback.chart_versions import ChartFileVersions
from argocd_image_updater.writeback.git import RevisionFetcher

log = get_logger("run")


async def _argocd_token(settings: Settings, kube: KubeClient | None) -> str:
    token = str(settings.argocd_auth_token)
    if not token and kube is not None:
        try:
            data = await kube.read_secret(kube.namespace, IMAGE_UPDATER_SECRET)
            token = data.get("argocd.token", b"").decode()
        except KubeError as err:
            log.debug("cannot read %s: %s", IMAGE_UPDATER_SECRET, str(err))
    if token:
        register_secret(token)
    return token


async def build_cluster_controller(
    settings: Settings, registries: RegistryConfig
) -> tuple[Controller, list[Any]]:
    """Applications from the Kubernetes API (or Argo CD's API), status and events written back."""
    notifications = default_notifications(settings)  # checked before anything is opened
    closers: list[Any] = []
    kube: KubeClient | None = None
    if not settings.disable_kubernetes:
        try:
            kube = await KubeClient.connect(str(settings.kubeconfig))
        except KubeError as err:
            raise StartupError(str(err)) from None
        closers.append(kube)
    elif settings.applications_api != "argocd":
        raise StartupError("--disable-kubernetes requires --applications-api argocd")

    crd = InstalledCrd() if kube is not None else None
    if kube is not None and crd is not None:
        check = CrdCheck(kube, crd)
        await check.start()
        closers.append(check)
    store: ApplicationStore
    writer: AppWriter
    if settings.applications_api == "argocd":
        server = str(settings.argocd_server_addr) or (
            f"argocd-server.{kube.namespace}" if kube else "argocd-server.argocd"
        )
        try:
            client = ArgoCDClient(
                server,
                await _argocd_token(settings, kube),
                insecure=bool(settings.argocd_insecure),
                plaintext=bool(settings.argocd_plaintext),
            )
        except ValueError as err:
            raise StartupError(str(err)) from None
        closers.append(client)
        store = ArgoCDStore(client, kube, str(settings.match_application_label), crd)
        writer = ArgoCDAppWriter(client)
    else:
        assert kube is not None
        store = KubeStore(kube, crd)
        writer = KubeAppWriter(kube)

    secrets: SecretReader | None = KubeSecretReader(kube) if kube is not None else None
    scanner = Scanner()
    scanner.helm_index.credentials = HelmRepoSecrets(
        kube, str(settings.argocd_namespace) or (kube.namespace if kube else "argocd")
    )
    closers.append(scanner)
    interval: timedelta = settings.interval
    if settings.once:
        interval = timedelta(0)

    def writer_for(config: AppUpdateConfig) -> AppWriter | None:
        return None if config.write_back.is_git else writer

    batch_writer = build_git_writer(settings, kube, parents=store.get_application)
    closers.append(batch_writer)
    state_store: StateStore = (
        ConfigMapStateStore(kube, kube.namespace)
        if kube is not None and not settings.state_dir
        else local_state_store(settings)
    )
    sharded_state = None
    if kube is not None and not settings.state_dir and settings.sharding:
        sharded_state = ShardedStateStore(kube, kube.namespace, registries)
        state_store = sharded_state  # one ConfigMap per shard key
    notifier = Notifier(
        secrets,
        namespace=kube.namespace if kube else "argocd",
        default=notifications.current,
    )
    closers.append(notifier)
    status_store = KubeStatusStore(kube) if kube is not None else None
    status_writer = StatusWriter(status_store) if status_store is not None else None
    if status_writer is not None:
        status_writer.crd = crd
    controller = Controller(
        store=store,
        registries=registries,
        scanner=scanner,
        credentials=CredentialsCache(secrets, bool(settings.cloud_credentials_auto)),
        writer_for=writer_for,
        namespaces=watch_scope(settings, kube.namespace if kube else "argocd"),
        legacy=legacy_filter(settings),
        interval=interval,
        dry_run=bool(settings.dry_run),
        max_concurrent_apps=int(settings.max_concurrent_apps),
        kube=kube,
        batch_writer=batch_writer,
        prepare=ChartFileVersions(
            batch_writer.cache,
            batch_writer.credentials,
            str(settings.argocd_namespace) or (kube.namespace if kube else "argocd"),
        ),
        state_store=state_store,
        reporter=Reporter(
            status_writer,
            EventRecorder(kube, enabled=not settings.disable_kube_events)
            if kube is not None
            else None,
            notifier,
            ShipTracker(
                batch_writer.cache,
                state=state_store,
                fetcher=RevisionFetcher(batch_writer.cache, batch_writer.credentials),
            ),
            crd=crd,
        ),
    )
    if isinstance(store, KubeStore) and isinstance(writer, KubeAppWriter):
        # Run by the controller's loop; the store serves from it, our writes are read back.
        watched = WatchedFleet(
            store.kube, controller.namespaces, crd, image_updaters=controller.read_crs
        )
        store.watched = controller.watched = watched
        writer.written = watched.application_written
        if status_store is not None:
            status_store.written = watched.image_updater_written
    if sharded_state is not None:
        controller.state_scope = sharded_state.scoped
        controller.sweep = StateSweep(sharded_state.kube, sharded_state.namespace)
    tracker = controller.reporter.shipping if controller.reporter is not None else None
    if tracker is not None:
        tracker.may_save = controller.is_leader  # what it follows is stored by the leader
    return controller, closers


def default_notifications(settings: Settings) -> NotificationsFile:
    """The default notification targets (the ConfigMap key ``notifications.yaml``), re-read
    when the file changes; their Secrets are read in the controller's namespace."""
    path = str(settings.notifications_config_path)
    try:
        return NotificationsFile(path)
    except NotificationsFileError as err:
        raise StartupError(f"notifications configuration: {err}") from None


def leader_elector(settings: Settings, kube: KubeClient) -> LeaderElector:
    """The elector of ``run --leader-election`` (the default), which does not take the Lease
    while members of a sharded fleet run; :class:`StartupError` unless retry period < renew
    deadline < lease duration."""
    namespace = str(settings.leader_election_namespace) or kube.namespace
    guard = MembersGuard(kube, namespace, str(settings.shard_selector), time.monotonic)
    try:
        return LeaderElector(
            kube,
            namespace=namespace,
            name=leader_lease_name(str(settings.shard_selector) or None, DEFAULT_LEASE_NAME),
            may_acquire=guard.blocker,
            identity=f"{socket.gethostname()}_{uuid.uuid4()}",
            lease_duration=settings.leader_election_lease_duration.total_seconds(),
            renew_deadline=settings.leader_election_renew_deadline.total_seconds(),
            retry_period=settings.leader_election_retry_period.total_seconds(),
        )
    except ValueError as err:
        raise StartupError(f"{err} {_TIMING_FLAGS}") from None


def shard_membership(settings: Settings, kube: KubeClient) -> Membership:
    """The membership of ``run --sharding``: a member Lease with the leader election timings;
    :class:`StartupError` unless retry period < renew deadline < lease duration."""
    try:
        return Membership(
            kube,
            namespace=str(settings.leader_election_namespace) or kube.namespace,
            member=member_name(),
            shard_selector=str(settings.shard_selector) or None,
            lease_duration=settings.leader_election_lease_duration.total_seconds(),
            renew_deadline=settings.leader_election_renew_deadline.total_seconds(),
            retry_period=settings.leader_election_retry_period.total_seconds(),
        )
    except ValueError as err:
        raise StartupError(f"{err} {_TIMING_FLAGS}") from None


_TIMING_FLAGS: Final = (
    "(--leader-election-retry-period, --leader-election-renew-deadline, "
    "--leader-election-lease-duration)"
)
