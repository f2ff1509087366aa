"""Put test images into a registry without Docker: through the registry HTTP API, or by writing
distribution's storage layout directly (fast, for fixture sets with thousands of tags).

Images are tiny but real: a config blob (os, architecture, variant, created, labels), one shared
layer blob, and a Docker v2 or OCI manifest; multi-platform tags are a Docker manifest list or an
OCI index over such manifests.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import io
import json
import re
import ssl
import tarfile
from collections.abc import Generator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from argocd_image_updater.model.platform import Platform
from argocd_image_updater.model.registry import Credentials
from argocd_image_updater.registry.auth import parse_token_response, pick_challenge
from argocd_image_updater.registry.manifest import (
    DOCKER_MANIFEST,
    DOCKER_MANIFEST_LIST,
    MANIFEST_ACCEPT,
    OCI_INDEX,
    OCI_MANIFEST,
    sha256_digest,
)

DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
LAYER = b"argocd-image-updater sandbox layer\n"
HELM_CONFIG = "application/vnd.cncf.helm.config.v1+json"
HELM_CHART_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"


def chart_archive(name: str, version: str) -> bytes:
    """A packaged chart (``<name>-<version>.tgz``) holding only its Chart.yaml."""
    chart_yaml = f"apiVersion: v2\nname: {name}\nversion: {version}\n".encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(f"{name}/Chart.yaml")
        info.size = len(chart_yaml)
        tar.addfile(info, io.BytesIO(chart_yaml))
    return gzip.compress(buffer.getvalue(), mtime=0)


LINUX_AMD64 = Platform("linux", "amd64")


def rfc3339_nano(when: datetime) -> str:
    """``created`` as Go writes it: UTC with nine fractional digits."""
    utc = when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond:06d}000Z"


def image_config(
    created: datetime, platform: Platform = LINUX_AMD64, labels: Mapping[str, str] | None = None
) -> bytes:
    data: dict[str, Any] = {"architecture": platform.arch, "os": platform.os}
    if platform.variant:
        data["variant"] = platform.variant
    data["created"] = rfc3339_nano(created)
    data["config"] = {"Labels": dict(labels or {})}
    data["rootfs"] = {"type": "layers", "diff_ids": [sha256_digest(LAYER)]}
    return json.dumps(data, sort_keys=True).encode()


def _descriptor(media_type: str, data: bytes, **extra: Any) -> dict[str, Any]:
    return {"mediaType": media_type, "size": len(data), "digest": sha256_digest(data), **extra}


def image_manifest(config: bytes, *, oci: bool = False) -> bytes:
    data = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST if oci else DOCKER_MANIFEST,
        "config": _descriptor(OCI_CONFIG if oci else DOCKER_CONFIG, config),
        "layers": [_descriptor(OCI_LAYER if oci else DOCKER_LAYER, LAYER)],
    }
    return json.dumps(data, indent=3).encode()


def index_manifest(children: Sequence[tuple[Platform, bytes]], *, oci: bool) -> bytes:
    entries = []
    for platform, manifest in children:
        p = {"architecture": platform.arch, "os": platform.os}
        if platform.variant:
            p["variant"] = platform.variant
        entries.append(_descriptor(OCI_MANIFEST if oci else DOCKER_MANIFEST, manifest, platform=p))
    data = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX if oci else DOCKER_MANIFEST_LIST,
        "manifests": entries,
    }
    return json.dumps(data, indent=3).encode()


_REPO_IN_PATH = re.compile(r"^(?:/.*)?/v2/(.+?)/(?:blobs|manifests|tags)/")


class _ChallengeAuth(httpx.Auth):
    """Answers the registry's Basic or Bearer challenge (Bearer scope ``pull,push``)."""

    requires_response_body = True

    def __init__(self, credentials: Credentials | None) -> None:
        self._credentials = credentials
        self._basic = ""
        if credentials is not None:
            raw = f"{credentials.username}:{credentials.password}".encode()
            self._basic = "Basic " + base64.b64encode(raw).decode()
        self._bearer = False
        self._tokens: dict[str, str] = {}

    def _apply(self, request: httpx.Request, repository: str) -> None:
        if self._bearer and repository in self._tokens:
            request.headers["Authorization"] = f"Bearer {self._tokens[repository]}"
        elif not self._bearer and self._basic:
            request.headers["Authorization"] = self._basic

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        match = _REPO_IN_PATH.match(request.url.path)
        repository = match.group(1) if match else ""
        self._apply(request, repository)
        response = yield request
        if response.status_code != 401:
            return
        challenge = pick_challenge(response.headers.get_list("www-authenticate"))
        if challenge is None or (challenge.scheme == "basic" and not self._basic):
            return
        if challenge.scheme == "bearer":
            self._bearer = True
            params = {"service": challenge.service}
            if repository:
                params["scope"] = f"repository:{repository}:pull,push"
            token_request = httpx.Request(
                "GET", httpx.URL(challenge.realm).copy_merge_params(params)
            )
            if self._basic:
                token_request.headers["Authorization"] = self._basic
            token_response = yield token_request
            if token_response.status_code != 200:
                return
            self._tokens[repository] = parse_token_response(token_response.content).value
        self._apply(request, repository)
        yield request


class PushError(RuntimeError):
    """The registry refused an upload."""


class ImagePusher:
    """Pushes images through the registry API (monolithic blob upload, then PUT manifest)."""

    def __init__(
        self,
        base_url: str,
        *,
        credentials: Credentials | None = None,
        verify: ssl.SSLContext | bool = True,
        concurrency: int = 8,
    ) -> None:
        self._base = base_url.rstrip("/")
        self._http = httpx.AsyncClient(
            auth=_ChallengeAuth(credentials),
            verify=verify,
            timeout=httpx.Timeout(30.0),
            limits=httpx.Limits(max_connections=concurrency),
        )
        self._concurrency = concurrency
        self._blobs: set[tuple[str, str]] = set()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> ImagePusher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @staticmethod
    def _check(response: httpx.Response, expected: int, what: str) -> None:
        if response.status_code != expected:
            raise PushError(
                f"{what}: HTTP {response.status_code} (expected {expected}): {response.text[:500]}"
            )

    async def upload_blob(self, repository: str, data: bytes) -> str:
        digest = sha256_digest(data)
        if (repository, digest) in self._blobs:
            return digest
        start = await self._http.post(f"{self._base}/v2/{repository}/blobs/uploads/")
        self._check(start, 202, f"start upload to {repository}")
        location = httpx.URL(self._base).join(start.headers["location"])
        done = await self._http.put(
            location.copy_merge_params({"digest": digest}),
            content=data,
            headers={"Content-Type": "application/octet-stream"},
        )
        self._check(done, 201, f"upload blob {digest} to {repository}")
        self._blobs.add((repository, digest))
        return digest

    async def put_manifest(self, repository: str, reference: str, body: bytes) -> str:
        media_type = json.loads(body)["mediaType"]
        response = await self._http.put(
            f"{self._base}/v2/{repository}/manifests/{reference}",
            content=body,
            headers={"Content-Type": media_type},
        )
        self._check(response, 201, f"put manifest {repository}:{reference}")
        digest = sha256_digest(body)
        if response.headers.get("docker-content-digest", digest) != digest:
            raise PushError(f"registry stored {repository}:{reference} under another digest")
        return digest

    async def _push_single(
        self,
        repository: str,
        reference: str,
        created: datetime,
        platform: Platform,
        labels: Mapping[str, str] | None,
        oci: bool,
    ) -> tuple[str, bytes]:
        config = image_config(created, platform, labels)
        await self.upload_blob(repository, LAYER)
        await self.upload_blob(repository, config)
        manifest = image_manifest(config, oci=oci)
        ref = reference or sha256_digest(manifest)
        return await self.put_manifest(repository, ref, manifest), manifest

    async def push_image(
        self,
        repository: str,
        tag: str,
        *,
        created: datetime,
        platform: Platform = LINUX_AMD64,
        labels: Mapping[str, str] | None = None,
        oci: bool = False,
    ) -> str:
        """Push a single-platform image as ``repository:tag``; return its manifest digest."""
        digest, _ = await self._push_single(repository, tag, created, platform, labels, oci)
        return digest

    async def push_index(
        self,
        repository: str,
        tag: str,
        platforms: Sequence[tuple[Platform, datetime]],
        oci: bool,
        labels: Mapping[str, str] | None = None,
    ) -> str:
        """Push a Docker manifest list (``oci=False``) or OCI index; return the index digest."""
        children = [
            (p, (await self._push_single(repository, "", created, p, labels, oci))[1])
            for p, created in platforms
        ]
        return await self.put_manifest(repository, tag, index_manifest(children, oci=oci))

    async def push_artifact(
        self,
        repository: str,
        tag: str,
        *,
        config_media_type: str,
        config: bytes,
        layer_media_type: str,
        layer: bytes,
        annotations: Mapping[str, str] | None = None,
        artifact_type: str = "",
    ) -> str:
        """Push an OCI artifact (an OCI image manifest whose config and layer are not an
        image's) as ``repository:tag``; return its manifest digest."""
        await self.upload_blob(repository, config)
        await self.upload_blob(repository, layer)
        data: dict[str, Any] = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": _descriptor(config_media_type, config),
            "layers": [_descriptor(layer_media_type, layer)],
        }
        if artifact_type:
            data["artifactType"] = artifact_type
        if annotations:
            data["annotations"] = dict(annotations)
        return await self.put_manifest(repository, tag, json.dumps(data, indent=2).encode())

    async def push_chart(
        self, repository: str, version: str, *, created: datetime | None = None
    ) -> str:
        """Push a Helm chart as ``helm push`` does: ``repository`` is ``<path>/<chart name>``,
        the tag is the version, the config is the chart's metadata
        (``application/vnd.cncf.helm.config.v1+json``), the layer the packaged chart
        (``application/vnd.cncf.helm.chart.content.v1.tar+gzip``), and the manifest carries
        the ``org.opencontainers.image.*`` annotations (``created`` when given)."""
        name = repository.rsplit("/", 1)[-1]
        meta = {"apiVersion": "v2", "name": name, "version": version, "type": "application"}
        annotations = {
            "org.opencontainers.image.title": name,
            "org.opencontainers.image.version": version,
        }
        if created is not None:
            annotations["org.opencontainers.image.created"] = rfc3339_nano(created)
        return await self.push_artifact(
            repository,
            version,
            config_media_type=HELM_CONFIG,
            config=json.dumps(meta).encode(),
            layer_media_type=HELM_CHART_LAYER,
            layer=chart_archive(name, version),
            annotations=annotations,
        )

    async def push_tags(
        self,
        repository: str,
        tags: Sequence[str],
        created_start: datetime,
        step: timedelta,
        *,
        platform: Platform = LINUX_AMD64,
    ) -> dict[str, str]:
        """Push many single-platform tags concurrently; tag ``i`` is created at start + i·step."""
        await self.upload_blob(repository, LAYER)
        slots = asyncio.Semaphore(self._concurrency)

        async def one(i: int, tag: str) -> tuple[str, str]:
            async with slots:
                created = created_start + i * step
                return tag, await self.push_image(
                    repository, tag, created=created, platform=platform
                )

        return dict(await asyncio.gather(*(one(i, t) for i, t in enumerate(tags))))

    async def get_manifest(self, repository: str, reference: str) -> tuple[bytes, str]:
        """The stored manifest bytes and media type of ``reference``."""
        response = await self._http.get(
            f"{self._base}/v2/{repository}/manifests/{reference}",
            headers={"Accept": MANIFEST_ACCEPT},
        )
        self._check(response, 200, f"get manifest {repository}:{reference}")
        return response.content, response.headers.get("content-type", "").split(";")[0]

    async def delete_manifest(self, repository: str, digest: str) -> None:
        response = await self._http.delete(f"{self._base}/v2/{repository}/manifests/{digest}")
        self._check(response, 202, f"delete {repository}@{digest}")


def _link(path: Path, digest: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "link").write_text(digest)


def _blob(v2: Path, data: bytes) -> str:
    hex_digest = hashlib.sha256(data).hexdigest()
    directory = v2 / "blobs" / "sha256" / hex_digest[:2] / hex_digest
    if not (directory / "data").exists():
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "data").write_bytes(data)
    return f"sha256:{hex_digest}"


def write_registry_storage(
    root: Path,
    repos: Mapping[str, Sequence[tuple[str, datetime]]],
    *,
    platform: Platform = LINUX_AMD64,
) -> dict[str, dict[str, str]]:
    """Write single-platform Docker v2 images in distribution's filesystem layout under ``root``
    (the registry's ``rootdirectory``), before the registry starts. Returns repo → tag → digest.
    """
    v2 = root / "docker" / "registry" / "v2"
    layer = _blob(v2, LAYER)
    result: dict[str, dict[str, str]] = {}
    for repository, tags in repos.items():
        repo_dir = v2 / "repositories" / repository
        _link(repo_dir / "_layers" / "sha256" / layer.split(":")[1], layer)
        digests: dict[str, str] = {}
        for tag, created in tags:
            config = image_config(created, platform)
            config_digest = _blob(v2, config)
            _link(repo_dir / "_layers" / "sha256" / config_digest.split(":")[1], config_digest)
            manifest = image_manifest(config)
            digest = _blob(v2, manifest)
            hex_digest = digest.split(":")[1]
            _link(repo_dir / "_manifests" / "revisions" / "sha256" / hex_digest, digest)
            tag_dir = repo_dir / "_manifests" / "tags" / tag
            _link(tag_dir / "current", digest)
            _link(tag_dir / "index" / "sha256" / hex_digest, digest)
            digests[tag] = digest
        result[repository] = digests
    return result
