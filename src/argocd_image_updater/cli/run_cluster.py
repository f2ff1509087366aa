"""``run`` against a cluster: Applications from the Kubernetes API or Argo CD's API, status and
events written back. Kept apart from :mod:`argocd_image_updater.cli.run_cmd` so that local mode
never loads the Kubernetes client."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from argocd_image_updater.argocd.client import ArgoCDClient
from argocd_image_updater.cli.run_cmd import (
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
from argocd_image_updater.controller.cycle import CredentialsCache
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.controller.secrets import KubeSecretReader
from argocd_image_updater.controller.state_store import ConfigMapStateStore
from argocd_image_updater.controller.stores import ArgoCDStore, KubeStatusStore, KubeStore
from argocd_image_updater.kube.client import KubeClient, KubeError
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.notify.dispatcher import Notifier
from argocd_image_updater.observe.log import get_logger, register_secret
from argocd_image_updater.pipeline.ports import ApplicationStore, AppWriter, StateStore
from argocd_image_updater.registry.helmrepo_secrets import HelmRepoSecrets
from argocd_image_updater.registry.scanner import Scanner
from argocd_image_updater.report.events import EventRecorder
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
        store = ArgoCDStore(client, kube, str(settings.match_application_label))
        writer = ArgoCDAppWriter(client)
    else:
        assert kube is not None
        store = KubeStore(kube)
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

    batch_writer = build_git_writer(settings, kube)
    closers.append(batch_writer)
    state_store: StateStore = (
        ConfigMapStateStore(kube, kube.namespace)
        if kube is not None and not settings.state_dir
        else local_state_store(settings)
    )
    notifier = Notifier(
        secrets,
        namespace=kube.namespace if kube else "argocd",
        default=notifications.current,
    )
    closers.append(notifier)
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
            StatusWriter(KubeStatusStore(kube)) if kube is not None else None,
            EventRecorder(kube, enabled=not settings.disable_kube_events)
            if kube is not None
            else None,
            notifier,
            ShipTracker(
                batch_writer.cache,
                state=state_store,
                fetcher=RevisionFetcher(batch_writer.cache, batch_writer.credentials),
            ),
        ),
    )
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
