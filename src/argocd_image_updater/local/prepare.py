"""Local mode, before planning: read the write-back targets and fill in the live images.

Files are read from the same cached clones the git write-back uses (one checkout per repository
and branch per cycle), so the read costs at most a fetch of what moved. A ``directory`` target
is read whole (its ``.yaml``/``.yml`` files, below subdirectories too with
``directory.recurse``); an ``application`` target found through the parent (an app of apps)
takes the parent from the local manifests and reads the YAML files below the parent's path for
the Application's document, as the git write-back does.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass

from argocd_image_updater.local.current import FileSnapshot, TargetText, fill_current
from argocd_image_updater.model.repo_url import repository_key
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.records import Collected, CRState
from argocd_image_updater.writeback.formats.base import TargetError
from argocd_image_updater.writeback.formats.directory import directory_settings
from argocd_image_updater.writeback.git import (
    GitCredentialsResolver,
    RepoCache,
    WorkFiles,
    WorkTree,
)
from argocd_image_updater.writeback.manifests import MANIFEST_SUFFIXES
from argocd_image_updater.writeback.parent import (
    ParentLookup,
    find_parent,
    is_implicit,
    locate_manifest,
)
from argocd_image_updater.writeback.targets import GitTarget, resolve_target

log = get_logger("local")


@dataclass(frozen=True, slots=True)
class FileRequest:
    """Read ``path`` at ``branch``: a file, the names in a directory (``listing``), or the
    ``.yaml``/``.yml`` files below a directory (``tree``; its subdirectories too when
    ``recurse``)."""

    repo_url: str
    branch: str
    path: str
    listing: bool = False
    tree: bool = False
    recurse: bool = False
    credentials_ref: str = "repocreds"
    namespace: str = ""


class RepoFiles:
    """Reads files of remote repositories through the git write-back's clone cache."""

    def __init__(self, cache: RepoCache, credentials: GitCredentialsResolver) -> None:
        self._cache = cache
        self._credentials = credentials

    async def read(self, requests: Iterable[FileRequest]) -> dict[FileRequest, object]:
        """Each request's result: ``str`` (file text), ``list[str]`` (names), a
        :class:`FileSnapshot` (a tree), ``None`` (missing) or the ``Exception`` met reading it. One checkout per repository (by
        :func:`~argocd_image_updater.model.repo_url.same_repository`), branch and credentials
        (reference and namespace)."""
        groups: dict[tuple[str, str, str, str], list[FileRequest]] = {}
        for request in requests:
            # Requests share a checkout only when they use the same credentials: one tenant's
            # read never runs with another tenant's Secret.
            key = (
                repository_key(request.repo_url),
                request.branch,
                request.credentials_ref,
                request.namespace,
            )
            groups.setdefault(key, []).append(request)
        results: dict[FileRequest, object] = {}
        for (_, branch, _, _), group in groups.items():
            first = group[0]
            url = first.repo_url
            try:
                creds = await self._credentials.resolve(first.credentials_ref, url, first.namespace)
                async with self._cache.checkout(url, creds, branch or "HEAD") as work:
                    for request in group:
                        results[request] = _read_one(work, request)
            except Exception as err:  # reported per app by the caller
                for request in group:
                    results[request] = err
        return results


def _read_tree(work: WorkTree, request: FileRequest) -> FileSnapshot:
    texts: dict[str, str] = {}
    for name in WorkFiles(work).files(request.path, request.recurse):
        if not name.endswith(MANIFEST_SUFFIXES):
            continue
        try:
            text = work.read(name)
        except (OSError, ValueError):  # not text: the write-back names it, if it matters
            continue
        if text is not None:
            texts[name] = text
    return FileSnapshot(texts)


def _read_one(work: WorkTree, request: FileRequest) -> object:
    try:
        if request.tree:
            return _read_tree(work, request)
        if request.listing:
            directory = work.path / request.path if request.path not in ("", ".") else work.path
            return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else None
        return work.read(request.path)
    except (OSError, ValueError) as err:
        return err


def _target_request(config: AppUpdateConfig, target: GitTarget) -> FileRequest:
    tree = target.format.reads_tree or target.scan is not None
    recurse = False
    if tree:
        scan = target.scan
        if scan is None:
            scan = config.app.write_source(config.write_back.write_back_target).raw
        recurse = directory_settings(scan)[0]
    return FileRequest(
        target.repo_url,
        target.base_branch,
        target.file_path,
        listing=target.format.lists_directory,
        tree=tree,
        recurse=recurse,
        credentials_ref=config.write_back.git_credentials_ref or "repocreds",
        namespace=config.app.namespace,
    )


class LocalPreparer:
    """Fills each selected Application's live images from its write-back target (see
    :mod:`argocd_image_updater.local.current`); ``parents`` reads a parent Application from
    the local manifests (``writeBackTarget: application``)."""

    def __init__(
        self, files: RepoFiles, controller_namespace: str, parents: ParentLookup | None = None
    ) -> None:
        self._files = files
        self._namespace = controller_namespace
        self._parents = parents

    async def _target(self, config: AppUpdateConfig) -> GitTarget | None:
        """The first write-back target of a git Application; ``None`` when it cannot be
        resolved (the git writer reports it with the Application)."""
        try:
            parent = None
            if is_implicit(config.write_back.write_back_targets):
                parent = await find_parent(config.app, self._namespace, self._parents)
            return resolve_target(config.app, config.write_back, self._namespace, parent=parent)
        except ValueError:
            return None

    async def __call__(self, collected: Collected) -> Collected:
        targets: dict[int, tuple[GitTarget, FileRequest]] = {}
        for index, (config, _) in enumerate(collected.configs):
            if not config.write_back.is_git:
                continue
            target = await self._target(config)
            if target is not None:
                targets[index] = (target, _target_request(config, target))
        found = await self._files.read(r for _, r in targets.values())
        listed: dict[int, FileRequest] = {}  # the file chosen from a directory listing
        for index, (target, request) in targets.items():
            names = found.get(request)
            if target.format.lists_directory and isinstance(names, list):
                try:
                    path = target.format.file_path(target.file_path, names)
                except ValueError:
                    continue
                listed[index] = FileRequest(
                    request.repo_url,
                    request.branch,
                    path,
                    credentials_ref=request.credentials_ref,
                    namespace=request.namespace,
                )
        found.update(await self._files.read(listed.values()))
        configs: list[tuple[AppUpdateConfig, CRState | None]] = []
        for index, (config, cr) in enumerate(collected.configs):
            text: TargetText | None = None
            if index in targets:
                target, request = targets[index]
                request = listed.get(index, request)
                text = _target_text(config, target, request, found.get(request))
            configs.append((fill_current(config, text), cr))
        return Collected(
            configs=configs,
            crs=collected.crs,
            problems=collected.problems,
            listed=collected.listed,
        )


def _target_text(
    config: AppUpdateConfig, target: GitTarget, request: FileRequest, value: object
) -> TargetText:
    """What was read of the target (see :class:`TargetText`); a read that failed, or an
    Application's manifest not found through its parent, leaves the images not set."""
    problem = value if isinstance(value, Exception) else None
    if isinstance(value, FileSnapshot) and target.scan is not None:
        app = config.app
        try:
            path = locate_manifest(value, target.file_path, target.scan, app, target.repo_url)
            return TargetText(target.kind, value.read(path))
        except TargetError as err:
            problem, value = err, None
    if problem is not None:
        log.warning(
            "cannot read the write-back target %s of %s: %s; its images are treated as not set",
            posixpath.join(target.repo_url, request.path),
            config.app.qualified_name,
            str(problem),
        )
    if isinstance(value, FileSnapshot):
        return TargetText(target.kind, None, value, target.file_path)
    return TargetText(target.kind, value if isinstance(value, str) else None)
