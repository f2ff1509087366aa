"""``run`` in local mode: Applications and ImageUpdaters from manifest files in a directory or
a git repository, no cluster (see docs/local-mode.md)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from argocd_image_updater.cli.run_setup import (
    ClosableGitWriter,
    StartupError,
    build_git_writer,
    legacy_filter,
    local_state_store,
    watch_scope,
)
from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.config.settings import Settings
from argocd_image_updater.controller.credentials import CredentialsCache
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.local.prepare import LocalPreparer, RepoFiles
from argocd_image_updater.local.secrets import DirectoryObjects
from argocd_image_updater.local.status_file import local_reporter
from argocd_image_updater.local.store import DirectorySource, LocalStore, RepoSource
from argocd_image_updater.local.writer import LocalManifestWriter, SplitBatchWriter
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.records import Collected
from argocd_image_updater.registry.helmrepo_secrets import HelmRepoSecrets
from argocd_image_updater.registry.scanner import Scanner
from argocd_image_updater.writeback.chart_versions import ChartFileVersions

log = get_logger("run")


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
    store: LocalStore | None = None

    async def parents(parent_namespace: str, name: str) -> dict[str, Any] | None:
        """A parent Application (``writeBackTarget: application``): from the manifests."""
        return await store.listed_application(parent_namespace, name) if store else None

    git_writer = build_git_writer(settings, None, objects, parents=parents)
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
            LocalPreparer(files, namespace, parents),
            ChartFileVersions(git_writer.cache, git_writer.credentials, namespace),
        ),
        config_maps=objects,
        state_store=local_state_store(settings),
        reporter=local_reporter(str(settings.state_dir or "")),
    )
    log.info("reading Applications from manifests", path=str(source))
    return controller, [scanner, git_writer]
