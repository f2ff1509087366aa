"""``argocd-image-updater run``: the controller."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import click

from argocd_image_updater import __version__
from argocd_image_updater.cli.options import load_settings, settings_options
from argocd_image_updater.config.durations import format_go_duration
from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.config.registries_file import RegistriesConfError
from argocd_image_updater.config.reloading import ReloadingRegistryConfig
from argocd_image_updater.config.settings import Settings
from argocd_image_updater.controller.cycle import CredentialsCache
from argocd_image_updater.controller.runner import Controller, run_until_stopped
from argocd_image_updater.controller.sources import LegacyFilter
from argocd_image_updater.kits.gotemplate import Template
from argocd_image_updater.kube.errors import KubeError
from argocd_image_updater.local.prepare import LocalPreparer, RepoFiles
from argocd_image_updater.local.secrets import DirectoryObjects
from argocd_image_updater.local.state_file import FileStateStore
from argocd_image_updater.local.status_file import local_reporter
from argocd_image_updater.local.store import DirectorySource, LocalStore, RepoSource
from argocd_image_updater.local.writer import LocalManifestWriter, SplitBatchWriter
from argocd_image_updater.observe import log as logging_setup
from argocd_image_updater.observe.health import Health
from argocd_image_updater.observe.log import get_logger, register_secret
from argocd_image_updater.pipeline.ports import StateStore
from argocd_image_updater.pipeline.records import Collected
from argocd_image_updater.pipeline.state import MemoryStateStore
from argocd_image_updater.registry.helmrepo_secrets import HelmRepoSecrets
from argocd_image_updater.registry.scanner import Scanner
from argocd_image_updater.writeback.chart_versions import ChartFileVersions
from argocd_image_updater.writeback.commit_template import CommitTemplateFile
from argocd_image_updater.writeback.git.credentials import ClusterObjects, GitCredentialsResolver
from argocd_image_updater.writeback.git.repo import RepoCache
from argocd_image_updater.writeback.git.writer import (
    CommitSettings,
    GitBatchWriter,
    default_cache_root,
)
from argocd_image_updater.writeback.messages import MessageError

if TYPE_CHECKING:
    # Loaded where they are used: the Kubernetes client only for a cluster, the HTTP server
    # only when something is served (local mode with --once loads neither).
    from argocd_image_updater.kube.client import KubeClient
    from argocd_image_updater.webhook.server import WebhookServer

log = get_logger("run")

IMAGE_UPDATER_SECRET = "argocd-image-updater-secret"
WEBHOOK_TLS_DIR = Path("/app/config/tls")
WEBHOOK_COALESCE_WINDOW = 0.05
"""Seconds events for one repository are gathered: bursts (one event per platform of a
multi-arch push) still coalesce, and a lone event is not held back for long; events during a
running update coalesce anyway."""
EXIT_STARTUP_ERROR: Final = 1
EXIT_CYCLE_ERRORS: Final = 4
"""``run --once``: the cycle ran, but an application, a manifest file or an object had an error."""


class StartupError(Exception):
    pass


def watch_scope(settings: Settings, own_namespace: str) -> list[str] | None:
    """``--watch-namespaces``: "" = own namespace, "*" = all (None), else the listed ones."""
    value = str(settings.watch_namespaces).strip()
    if value == "*":
        return None
    if not value and settings.applications_api == "local":
        return None  # the manifests in the directory are the scope
    if not value:
        if settings.applications_api == "argocd" or settings.application_namespace:
            # v0.x: Applications were read in every namespace unless narrowed.
            return [settings.application_namespace] if settings.application_namespace else None
        return [own_namespace]
    return [ns.strip() for ns in value.split(",") if ns.strip()]


def load_registries(path: str) -> RegistryConfig:
    """registries.conf, re-read when the file changes; a bad one at start stops the start."""
    try:
        return ReloadingRegistryConfig(Path(path))
    except (RegistriesConfError, OSError) as err:
        raise StartupError(f"could not load registries configuration from {path}: {err}") from None


def load_commit_template(path: str) -> Template:
    """The commit message template, re-read when the file changes; a missing file means the
    default, a bad one at start stops the start."""
    try:
        return CommitTemplateFile(path)
    except (MessageError, OSError, UnicodeDecodeError) as err:
        raise StartupError(f"commit message template {path}: {err}") from None


class ClosableGitWriter(GitBatchWriter):
    """The git writer plus the private clone directory it removes at exit (when temporary)."""

    def __init__(self, *args: Any, cleanup: Path | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cleanup = cleanup

    async def close(self) -> None:
        if self._cleanup is not None:
            shutil.rmtree(self._cleanup, ignore_errors=True)


async def github_app_installation_token(
    app_id: str, installation_id: str, private_key: str, api_url: str
) -> str:
    from argocd_image_updater.writeback.scm import github_app_token

    return await github_app_token(app_id, installation_id, private_key, api_url or None)


def build_git_writer(
    settings: Settings, kube: KubeClient | None, objects: ClusterObjects | None = None
) -> ClosableGitWriter:
    """The git writer; ``objects`` replaces ``kube`` for credential lookups (local mode)."""
    if settings.git_commit_method == "api":
        log.warning(
            "--git-commit-method api (GitHub API commits) is not supported yet; "
            "commits are made with the git CLI"
        )
    configured = str(settings.git_cache_dir)
    try:
        root = default_cache_root(configured)
        cache = RepoCache(root)
    except OSError as err:
        where = configured or "the temporary directory ($TMPDIR, else /tmp)"
        raise StartupError(
            f"cannot create the git clone cache in {where}: {err.strerror or err}; "
            "mount a writable volume there or set --git-cache-dir (GIT_CACHE_DIR) to a "
            "writable directory"
        ) from None
    namespace = str(settings.argocd_namespace) or (kube.namespace if kube else "argocd")
    return ClosableGitWriter(
        cache,
        GitCredentialsResolver(
            objects if objects is not None else kube, namespace, github_app_installation_token
        ),
        CommitSettings(
            user=str(settings.git_commit_user),
            email=str(settings.git_commit_email),
            signing_key=str(settings.git_commit_signing_key),
            signing_method=str(settings.git_commit_signing_method),
            sign_off=bool(settings.git_commit_sign_off),
            template=load_commit_template(str(settings.git_commit_message_path)),
            grouping=settings.git_commit_grouping,
        ),
        namespace,
        pr_api_url=str(settings.pr_api_url),
        cleanup=None if configured else root,
    )


def legacy_filter(settings: Settings) -> LegacyFilter:
    """The v0.x flags narrowing which annotated Applications are processed."""
    return LegacyFilter(
        enabled=bool(settings.legacy_annotations),
        namespace=str(settings.application_namespace),
        name_patterns=tuple(settings.match_application_name),
        label=str(settings.match_application_label),
    )


async def build_controller(settings: Settings) -> tuple[Controller, list[Any]]:
    registries = load_registries(str(settings.registries_conf_path))
    if settings.applications_api == "local":
        return await build_local_controller(settings, registries)
    # The Kubernetes client (and Argo CD's) are loaded only here: local mode needs neither.
    from argocd_image_updater.cli.run_cluster import build_cluster_controller

    return await build_cluster_controller(settings, registries)


def _local_source(
    settings: Settings, git_writer: ClosableGitWriter, namespace: str
) -> DirectorySource | RepoSource:
    configured = str(settings.local_path)
    if settings.local_repo:
        try:
            return RepoSource(
                git_writer.cache,
                git_writer.credentials,
                str(settings.local_repo),
                str(settings.local_revision),
                configured,
                namespace,
            )
        except ValueError as err:
            raise StartupError(str(err)) from None
    if not configured:
        raise StartupError(
            "--applications-api local needs --local-path: the directory holding the "
            "Application and ImageUpdater manifests (e.g. a checkout of your app-of-apps "
            "repository), or --local-repo with the repository's URL"
        )
    root = Path(configured).expanduser().resolve()
    if not root.is_dir():
        raise StartupError(f"--local-path {configured}: no such directory")
    return DirectorySource(root)


Prepare = Callable[[Collected], Awaitable[Collected]]


def chain_prepare(*steps: Prepare) -> Prepare:
    """The ``prepare`` steps run in order, each on the previous one's result."""

    async def prepare(collected: Collected) -> Collected:
        for step in steps:
            collected = await step(collected)
        return collected

    return prepare


async def build_local_controller(
    settings: Settings, registries: RegistryConfig
) -> tuple[Controller, list[Any]]:
    """Local mode: manifests from a directory, no cluster (see docs/local-mode.md)."""
    namespace = str(settings.argocd_namespace) or "argocd"
    objects: DirectoryObjects | None = None
    if settings.secrets_dir:
        objects = DirectoryObjects(Path(str(settings.secrets_dir)))
    git_writer = build_git_writer(settings, None, objects)
    source = _local_source(settings, git_writer, namespace)
    files = RepoFiles(git_writer.cache, git_writer.credentials)
    store = LocalStore(source, namespace, files)
    scanner = Scanner()
    scanner.helm_index.credentials = HelmRepoSecrets(objects, namespace)
    controller = Controller(
        store=store,
        registries=registries,
        scanner=scanner,
        credentials=CredentialsCache(
            objects.reader if objects is not None else None, bool(settings.cloud_credentials_auto)
        ),
        writer_for=lambda config: None,  # every write goes through the batch writer
        namespaces=watch_scope(settings, namespace),
        legacy=legacy_filter(settings),
        interval=timedelta(0) if settings.once else settings.interval,
        dry_run=bool(settings.dry_run),
        max_concurrent_apps=int(settings.max_concurrent_apps),
        batch_writer=SplitBatchWriter(
            LocalManifestWriter(store, git_writer.commit_settings), git_writer
        ),
        prepare=chain_prepare(
            LocalPreparer(files, namespace),
            ChartFileVersions(git_writer.cache, git_writer.credentials, namespace),
        ),
        config_maps=objects,
        state_store=local_state_store(settings),
        reporter=local_reporter(str(settings.state_dir or "")),
    )
    log.info("reading Applications from manifests", path=str(source))
    return controller, [scanner, git_writer]


def local_state_store(settings: Settings) -> StateStore:
    """``--state-dir``'s file; without it the record lives as long as the process."""
    if settings.state_dir:
        return FileStateStore(str(settings.state_dir))
    return MemoryStateStore()


async def close_resource(resource: Any) -> None:
    if hasattr(resource, "aclose"):
        await resource.aclose()
    elif hasattr(resource, "stop"):
        await resource.stop()
    else:
        await resource.close()


def bind_addresses(settings: Settings) -> tuple[str, str]:
    """(metrics, health) addresses; the v0.x port flags win; ``--once`` serves no probes."""
    metrics_address = str(settings.metrics_bind_address)
    if settings.metrics_port is not None:
        metrics_address = f":{settings.metrics_port}" if settings.metrics_port else "0"
    health_address = str(settings.health_probe_bind_address)
    if settings.health_port is not None:
        health_address = f":{settings.health_port}" if settings.health_port else "0"
    if runs_once(settings):
        health_address = "0"
    return metrics_address, health_address


def runs_once(settings: Settings) -> bool:
    """``--once``, or an interval of 0."""
    return bool(settings.once) or settings.interval <= timedelta(0)


def serves(address: str) -> bool:
    """Whether a bind address means "serve" (``0`` and "" switch the server off)."""
    return address.strip() not in ("", "0")


async def webhook_secrets(settings: Settings, kube: KubeClient | None) -> dict[str, str]:
    """Each type's secret: flag/environment first, else the argocd-image-updater-secret key."""
    from argocd_image_updater.webhook.registry import webhook_types

    secrets: dict[str, str] = {}
    stored: dict[str, bytes] = {}
    if kube is not None:
        try:
            stored = await kube.read_secret(kube.namespace, IMAGE_UPDATER_SECRET)
        except KubeError as err:
            log.debug("cannot read %s: %s", IMAGE_UPDATER_SECRET, str(err))
    for webhook_type in webhook_types():
        value = str(settings.values.get(webhook_type.option, "") or "")
        if not value:
            value = stored.get(webhook_type.secret_key, b"").decode()
        if value:
            secrets[webhook_type.name] = value
            register_secret(value)
    return secrets


async def start_webhook(
    settings: Settings, controller: Controller, port: int, closers: list[Any]
) -> tuple[WebhookServer, int]:
    """The webhook server of ``run --enable-webhook`` and of the ``webhook`` command."""
    from argocd_image_updater.controller.events import handle_event
    from argocd_image_updater.controller.leading import LeadershipLost, run_as_leader
    from argocd_image_updater.model.registry_event import RegistryEvent
    from argocd_image_updater.webhook.dispatch import EventDispatcher
    from argocd_image_updater.webhook.server import WebhookServer
    from argocd_image_updater.webhook.tls import TLSConfigError, server_ssl_context

    try:
        context = None
        if not settings.disable_tls:
            context = server_ssl_context(
                WEBHOOK_TLS_DIR,
                str(settings.tls_min_version),
                str(settings.tls_max_version),
                str(settings.tls_ciphers),
                http2=bool(settings.enable_http2),
            )
    except TLSConfigError as err:
        raise StartupError(f"webhook TLS: {err}") from None

    async def handle(event: RegistryEvent) -> None:
        with contextlib.suppress(LeadershipLost):  # logged where it is noticed
            await run_as_leader(
                controller.elector, handle_event(controller, event), "webhook event"
            )

    dispatcher = EventDispatcher(
        handle,
        coalesce_window=WEBHOOK_COALESCE_WINDOW,
        max_concurrency=int(settings.values.get("max_concurrent_updaters", 1)),
    )
    try:
        server = WebhookServer(
            port=port,
            secrets=await webhook_secrets(settings, controller.kube),
            require_secret=bool(settings.webhook_require_secret),
            ssl_context=context,
            rate_limit_per_hour=int(settings.webhook_ratelimit_allowed),
            per_source_per_minute=int(settings.webhook_ratelimit_per_source),
            dispatcher=dispatcher,
            is_leader=controller.is_leader,
        )
    except ValueError as err:
        raise StartupError(f"webhook: {err}") from None
    actual = await server.start()
    closers.append(server)
    log.info(
        "webhook server listening",
        port=actual,
        tls=context is not None,
        types=",".join(sorted(server.registered)),
    )
    return server, actual


async def _start_servers(settings: Settings, health: Health, closers: list[Any]) -> None:
    """/metrics and /healthz, /readyz where configured (the HTTP server is loaded only then)."""
    metrics_address, health_address = bind_addresses(settings)
    if not serves(metrics_address) and not serves(health_address):
        return
    from argocd_image_updater.observe.server import Servers, health_app, metrics_app
    from argocd_image_updater.webhook.tls import TLSConfigError, server_ssl_context

    servers = Servers()
    closers.append(servers)
    try:
        metrics_tls = None
        if settings.metrics_secure:
            # A self-signed certificate, like the original's metrics endpoint.
            metrics_tls = server_ssl_context(Path("/nonexistent"), "1.2", "1.3")
        await servers.start("metrics", metrics_app(), metrics_address, metrics_tls)
        await servers.start("health", health_app(health), health_address)
    except (OSError, ValueError, TLSConfigError) as err:
        raise StartupError(f"cannot start the metrics/health server: {err}") from None


async def _main(settings: Settings) -> int:
    """Run the controller; the exit code (``--once``: whether the cycle had errors)."""
    controller, closers = await build_controller(settings)
    interval = controller.interval.total_seconds()
    controller.health = Health(stall_after=max(3 * interval, 600.0) if interval > 0 else 0.0)
    elector_task: asyncio.Task[None] | None = None
    elector_stop = asyncio.Event()
    once = runs_once(settings) or controller.interval <= timedelta(0)
    try:
        if settings.leader_election and not settings.once and controller.kube is not None:
            from argocd_image_updater.cli.run_cluster import leader_elector

            controller.elector = leader_elector(settings, controller.kube)
            elector_task = asyncio.create_task(controller.elector.run(elector_stop))
        await _start_servers(settings, controller.health, closers)
        if settings.enable_webhook:
            await start_webhook(settings, controller, int(settings.webhook_port), closers)
        await run_until_stopped(controller, once=once)
    finally:
        if elector_task is not None:
            elector_stop.set()
            await elector_task
        for closer in reversed(closers):
            await close_resource(closer)
    return cycle_exit_code(controller, once, bool(settings.exit_zero_on_error))


def cycle_exit_code(controller: Controller, once: bool, exit_zero_on_error: bool) -> int:
    """``run --once`` fails (exit 4) when the cycle failed or any application, manifest file or
    object had an error, so that a CI job sees it; ``--exit-zero-on-error`` opts out."""
    if not once or exit_zero_on_error:
        return 0
    result = controller.last_result
    if result is None or result.errors:
        errors = "the update cycle failed" if result is None else f"errors={result.errors}"
        log.error(
            "exiting with code %d: %s (--exit-zero-on-error exits 0)", EXIT_CYCLE_ERRORS, errors
        )
        return EXIT_CYCLE_ERRORS
    return 0


def start_fields(settings: Settings) -> dict[str, Any]:
    """What the start line shows: only the settings that apply to this run."""
    local = settings.applications_api == "local"
    once = runs_once(settings)
    fields: dict[str, Any] = {
        "app": f"argocd-image-updater: v{__version__}",
        "loglevel": str(settings.loglevel),
        "interval": "once" if once else format_go_duration(settings.interval),
        "applicationsAPI": str(settings.applications_api),
    }
    if local:
        fields["localPath"] = str(settings.local_path)
        if settings.local_repo:
            fields["localRepo"] = str(settings.local_repo)
    if settings.argocd_namespace:
        fields["argocdNamespace"] = str(settings.argocd_namespace)
    metrics_address, health_address = bind_addresses(settings)
    if serves(health_address):
        fields["healthPort"] = health_address
    if serves(metrics_address):
        fields["metricsPort"] = metrics_address
    fields["dryRun"] = bool(settings.dry_run)
    return fields


@click.command("run", help="Runs the argocd-image-updater with a set of options")
@settings_options("run")
def run_command(**params: Any) -> None:
    settings = load_settings("run", params)
    try:
        logging_setup.setup(str(settings.loglevel), str(settings.logformat))
    except logging_setup.LogConfigError as err:
        raise click.UsageError(str(err)) from None
    log.info("starting", **start_fields(settings))
    interval = settings.interval
    if timedelta(0) < interval < timedelta(minutes=1) and not settings.once:
        log.warning(
            "interval %s is shorter than 1m: watch your registries' rate limits",
            format_go_duration(interval),
        )
    try:
        code = asyncio.run(_main(settings))
    except StartupError as err:
        log.error(str(err))
        sys.exit(EXIT_STARTUP_ERROR)
    sys.exit(code)
