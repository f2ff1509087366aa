"""The Application store of local mode: manifests in a directory instead of the Kubernetes API."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

from argocd_image_updater.local.current import (
    declared_source_type,
    detect_source_type,
    sources_of,
    with_status,
)
from argocd_image_updater.local.manifests import Manifest, ManifestSet, load_manifests
from argocd_image_updater.local.prepare import FileRequest, RepoFiles
from argocd_image_updater.model.application import SourceType
from argocd_image_updater.report.log import get_logger

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


class LocalStore:
    """Reads the manifests under ``root`` on every cycle (edits show up without a restart).

    ``files`` (optional) looks into the sources' repositories to detect the source type of
    Applications that do not declare it; without it such sources count as Directory.
    """

    def __init__(self, root: Path, default_namespace: str, files: RepoFiles | None = None) -> None:
        self.root = Path(root)
        self.default_namespace = default_namespace
        self._files = files
        self._current = ManifestSet()
        self._reported: set[str] = set()

    def location(self, namespace: str, name: str) -> Manifest | None:
        """Where the Application was read from in the last listing."""
        for manifest in self._current.applications:
            if manifest.key == (namespace, name):
                return manifest
        return None

    async def _load(self) -> ManifestSet:
        if not self.root.is_dir():
            raise FileNotFoundError(
                f"local applications directory {self.root} does not exist: set --local-path "
                "to a directory holding Application manifests"
            )
        found = load_manifests(self.root, self.default_namespace)
        for problem in found.problems:
            log.error(problem, path=str(self.root))
        await self._detect_types(found)
        self._current = found
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

    async def get_application(self, namespace: str, name: str) -> dict[str, Any] | None:
        await self._load()
        manifest = self.location(namespace, name)
        return manifest.obj if manifest is not None else None
