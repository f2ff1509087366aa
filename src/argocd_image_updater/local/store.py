"""The Application store of local mode: manifests in a directory instead of the Kubernetes API."""

from __future__ import annotations

import asyncio
import posixpath
from pathlib import Path
from typing import Any

from argocd_image_updater.local.current import (
    declared_source_type,
    detect_source_type,
    sources_of,
    with_status,
)
from argocd_image_updater.local.manifests import (
    Manifest,
    ManifestSet,
    field_line,
    load_manifests,
)
from argocd_image_updater.local.prepare import FileRequest, RepoFiles
from argocd_image_updater.model.application import SourceType
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.registry.singleflight import SingleFlight
from argocd_image_updater.writeback.git import GitCredentialsResolver, RepoCache

log = get_logger("local")


def _source_request(source: dict[str, Any] | Any, namespace: str) -> FileRequest | None:
    if not isinstance(source, dict):
        return None
    url = source.get("repoURL")
    if not isinstance(url, str) or not url or source.get("chart"):
        return None
    revision = str(source.get("targetRevision") or "HEAD")
    path = posixpath.normpath(str(source.get("path") or "."))
    if path.startswith(".."):
        return None
    return FileRequest(url, revision, path, listing=True, namespace=namespace)


class DirectorySource:
    """Manifests in a local directory (a Git work tree or not)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._parsed: dict[str, list[Any]] = {}

    def __str__(self) -> str:
        return str(self.root)

    async def load(self, default_namespace: str) -> ManifestSet:
        if not self.root.is_dir():
            raise FileNotFoundError(
                f"local applications directory {self.root} does not exist: set --local-path "
                "to a directory holding Application manifests"
            )
        return await asyncio.to_thread(load_manifests, self.root, default_namespace, self._parsed)


class RepoSource:
    """Manifests under ``path`` in a remote Git repository, read from the clone cache."""

    def __init__(
        self,
        cache: RepoCache,
        credentials: GitCredentialsResolver,
        url: str,
        revision: str,
        path: str,
        namespace: str,
    ) -> None:
        self.cache = cache
        self.credentials = credentials
        self.url = url
        self.revision = revision or "HEAD"
        self.path = posixpath.normpath(path or ".")
        if self.path.startswith("..") or self.path.startswith("/"):
            raise ValueError(f"--local-path {path}: must be a path inside the repository")
        self.namespace = namespace
        self._parsed: dict[str, list[Any]] = {}

    def __str__(self) -> str:
        return f"{self.url}@{self.revision}:{self.path}"

    async def load(self, default_namespace: str) -> ManifestSet:
        creds = await self.credentials.resolve("repocreds", self.url, self.namespace)
        async with self.cache.checkout(self.url, creds, self.revision) as work:
            root = work.path / self.path
            if not root.is_dir():
                raise FileNotFoundError(f"{self}: no such directory in the repository")
            return await asyncio.to_thread(load_manifests, root, default_namespace, self._parsed)


class LocalStore:
    """Reads the manifests on every cycle (edits show up without a restart).

    ``files`` (optional) looks into the sources' repositories to detect the source type of
    Applications that do not declare it; without it such sources count as Directory.
    """

    def __init__(
        self,
        source: DirectorySource | RepoSource,
        default_namespace: str,
        files: RepoFiles | None = None,
    ) -> None:
        self.source = source
        self.default_namespace = default_namespace
        self._files = files
        self._current = ManifestSet()
        self._by_key: dict[tuple[str, str], Manifest] = {}
        self._loading: SingleFlight[str, ManifestSet] = SingleFlight()
        self._reported: set[str] = set()

    def location(self, namespace: str, name: str) -> Manifest | None:
        """Where the Application was read from in the last listing."""
        return self._by_key.get((namespace, name))

    async def _load(self) -> ManifestSet:
        """Read the manifests again; concurrent callers (the apps of a webhook event) share one
        read."""
        found, _ = await self._loading.do("", self._read)
        return found

    async def _read(self) -> ManifestSet:
        found = await self.source.load(self.default_namespace)
        for problem in found.problems:
            log.error(problem, path=str(self.source))
        await self._detect_types(found)
        self._current = found
        self._by_key = {m.key: m for m in found.applications}
        return found

    async def _detect_types(self, found: ManifestSet) -> None:
        requests: dict[int, list[FileRequest | None]] = {}
        for index, manifest in enumerate(found.applications):
            sources = sources_of(manifest.obj)
            if any(declared_source_type(s) is SourceType.UNKNOWN for s in sources):
                namespace = manifest.key[0]
                requests[index] = [
                    _source_request(s, namespace)
                    if declared_source_type(s) is SourceType.UNKNOWN
                    else None
                    for s in sources
                ]
        listings: dict[FileRequest, object] = {}
        if self._files is not None:
            wanted = {r for rs in requests.values() for r in rs if r is not None}
            listings = await self._files.read(wanted)
        for index, manifest in enumerate(found.applications):
            types = []
            for i, source in enumerate(sources_of(manifest.obj)):
                request = requests.get(index, [None] * (i + 1))[i]
                names = listings.get(request) if request is not None else None
                if isinstance(names, Exception):
                    self._report_once(
                        f"cannot look into {request.repo_url if request else '?'} to detect the "
                        f"source type of {manifest.key[0]}/{manifest.key[1]}: {names}"
                    )
                types.append(detect_source_type(source, names if isinstance(names, list) else []))
            found.applications[index] = Manifest(
                manifest.path, manifest.document, with_status(manifest.obj, types), manifest.digest
            )

    def problems(self) -> list[str]:
        """The files and objects of the last listing that were skipped (already logged)."""
        return list(self._current.problems)

    def origin(self, kind: str, namespace: str, name: str, path: str = "") -> str:
        """``<file>:<line>`` of an object read in the last listing (of its field ``path`` when
        given and present); "" when it is not known."""
        found = self._current.applications if kind == "Application" else []
        if kind == "ImageUpdater":
            found = self._current.image_updaters
        for manifest in found:
            if manifest.key == (namespace, name):
                text = self._current.texts.get(manifest.path, "")
                line = field_line(text, manifest.document, path)
                return f"{manifest.path}:{line}" if line else manifest.path
        return ""

    def _report_once(self, message: str) -> None:
        if message not in self._reported:
            self._reported.add(message)
            log.warning(message)

    async def list_applications(self, namespace: str | None) -> list[dict[str, Any]]:
        found = await self._load()
        return [m.obj for m in found.applications if namespace in (None, m.key[0])]

    async def list_image_updaters(self, namespace: str | None) -> list[dict[str, Any]]:
        out = []
        for manifest in self._current.image_updaters:
            if namespace in (None, manifest.key[0]):
                obj = dict(manifest.obj)
                meta = dict(obj["metadata"])
                meta.setdefault("generation", 1)
                meta.setdefault("resourceVersion", manifest.digest[:16])
                obj["metadata"] = meta
                out.append(obj)
        return out

    async def listed_application(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Application as read in the last listing (a parent Application of
        ``writeBackTarget: application``, in the cycle that listed it), without reading the
        manifests again; ``None`` when it was not listed."""
        manifest = self.location(namespace, name)
        return manifest.obj if manifest is not None else None

    async def get_application(self, namespace: str, name: str) -> dict[str, Any] | None:
        await self._load()
        manifest = self.location(namespace, name)
        return manifest.obj if manifest is not None else None
