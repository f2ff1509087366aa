"""Local mode, before planning: read the write-back targets and fill in the live images.

Files are read from the same cached clones the git write-back uses (one checkout per repository
and branch per cycle), so the read costs at most a fetch of what moved.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass

from argocd_image_updater.local.current import TargetText, fill_current
from argocd_image_updater.model.repo_url import repository_key
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.records import Collected, CRState
from argocd_image_updater.writeback.git import GitCredentialsResolver, RepoCache, WorkTree
from argocd_image_updater.writeback.targets import GitTarget, resolve_target

log = get_logger("local")


@dataclass(frozen=True, slots=True)
class FileRequest:
    """Read ``path`` (a file, or the names in a directory when ``listing``) at ``branch``."""

    repo_url: str
    branch: str
    path: str
    listing: bool = False
    credentials_ref: str = "repocreds"
    namespace: str = ""


class RepoFiles:
    """Reads files of remote repositories through the git write-back's clone cache."""

    def __init__(self, cache: RepoCache, credentials: GitCredentialsResolver) -> None:
        self._cache = cache
        self._credentials = credentials

    async def read(self, requests: Iterable[FileRequest]) -> dict[FileRequest, object]:
        """Each request's result: ``str`` (file text), ``list[str]`` (names), ``None`` (missing)
        or the ``Exception`` met reading it. One checkout per repository (by
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


def _read_one(work: WorkTree, request: FileRequest) -> object:
    try:
        if request.listing:
            directory = work.path / request.path if request.path not in ("", ".") else work.path
            return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else None
        return work.read(request.path)
    except (OSError, ValueError) as err:
        return err


def _target_request(config: AppUpdateConfig, target: GitTarget) -> FileRequest:
    return FileRequest(
        target.repo_url,
        target.base_branch,
        target.file_path,
        listing=target.format.lists_directory,
        credentials_ref=config.write_back.git_credentials_ref or "repocreds",
        namespace=config.app.namespace,
    )


class LocalPreparer:
    """Fills each selected Application's live images from its write-back target (see
    :mod:`argocd_image_updater.local.current`)."""

    def __init__(self, files: RepoFiles, controller_namespace: str) -> None:
        self._files = files
        self._namespace = controller_namespace

    async def __call__(self, collected: Collected) -> Collected:
        targets: dict[int, tuple[GitTarget, FileRequest]] = {}
        for index, (config, _) in enumerate(collected.configs):
            if not config.write_back.is_git:
                continue
            try:
                target = resolve_target(config.app, config.write_back, self._namespace)
            except ValueError:
                continue  # the git writer reports it with the app
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
                value = found.get(request)
                if isinstance(value, Exception):
                    log.warning(
                        "cannot read the write-back target %s of %s: %s; its images are "
                        "treated as not set",
                        posixpath.join(target.repo_url, request.path),
                        config.app.qualified_name,
                        str(value),
                    )
                text = TargetText(target.kind, value if isinstance(value, str) else None)
            configs.append((fill_current(config, text), cr))
        return Collected(
            configs=configs,
            crs=collected.crs,
            problems=collected.problems,
            listed=collected.listed,
        )
