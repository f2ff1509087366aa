"""What building the controller needs in either mode (local, cluster): the scope of namespaces,
the registry configuration, the git writer, the v0.x filter, the remembered record's store, and
the error that stops a start."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from argocd_image_updater.config.registries import RegistriesConfError, RegistryConfig
from argocd_image_updater.config.reloading import ReloadingRegistryConfig
from argocd_image_updater.config.settings import Settings
from argocd_image_updater.controller.sources import LegacyFilter
from argocd_image_updater.kits.gotemplate import Template
from argocd_image_updater.local.state_file import FileStateStore
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.ports import StateStore
from argocd_image_updater.pipeline.state import MemoryStateStore
from argocd_image_updater.writeback.commit_template import CommitTemplateFile
from argocd_image_updater.writeback.git.credentials import ClusterObjects, GitCredentialsResolver
from argocd_image_updater.writeback.git.repo import RepoCache
from argocd_image_updater.writeback.git.writer import (
    CommitSettings,
    GitBatchWriter,
    default_cache_root,
)
from argocd_image_updater.writeback.messages import MessageError
from argocd_image_updater.writeback.parent import ParentLookup

if TYPE_CHECKING:
    from argocd_image_updater.kube.client import KubeClient

log = get_logger("run")

IMAGE_UPDATER_SECRET = "argocd-image-updater-secret"


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
    settings: Settings,
    kube: KubeClient | None,
    objects: ClusterObjects | None = None,
    parents: ParentLookup | None = None,
) -> ClosableGitWriter:
    """The git writer; ``objects`` replaces ``kube`` for credential lookups (local mode);
    ``parents`` reads the parent Applications (``writeBackTarget: application``)."""
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
        parents=parents,
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


def local_state_store(settings: Settings) -> StateStore:
    """``--state-dir``'s file; without it the record lives as long as the process."""
    if settings.state_dir:
        return FileStateStore(str(settings.state_dir))
    return MemoryStateStore()
