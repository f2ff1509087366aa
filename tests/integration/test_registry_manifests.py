"""Manifests of every kind from a real registry: digests, configs, platforms, verification."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from argocd_image_updater.model.platform import Platform
from argocd_image_updater.registry.client import RegistryClient
from argocd_image_updater.registry.errors import (
    InvalidReference,
    ManifestNotFound,
    RegistryProtocolError,
)
from argocd_image_updater.registry.manifest import (
    DOCKER_MANIFEST,
    DOCKER_MANIFEST_LIST,
    OCI_INDEX,
    OCI_MANIFEST,
)
from argocd_image_updater_testing.push import ImagePusher

CREATED = datetime(2024, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
AMD64 = Platform("linux", "amd64")
ARM64 = Platform("linux", "arm64")
ARMV7 = Platform("linux", "arm", "v7")


@pytest.mark.parametrize(("oci", "media_type"), [(False, DOCKER_MANIFEST), (True, OCI_MANIFEST)])
async def test_single_manifest_digest_config_and_labels(
    oci, media_type, registry, endpoint_for, repo
):
    labels = {"org.opencontainers.image.revision": "abc123", "team": "x"}
    async with ImagePusher(registry.url) as pusher:
        digest = await pusher.push_image(
            repo, "1.0", created=CREATED, platform=ARMV7, labels=labels, oci=oci
        )
    async with RegistryClient(endpoint_for(registry)) as client:
        manifest = await client.get_manifest(repo, "1.0")
        assert manifest.media_type == media_type
        assert manifest.digest == digest
        assert not manifest.is_index
        assert await client.head_digest(repo, "1.0") == digest
        assert (await client.get_manifest(repo, digest)).digest == digest
        assert manifest.config is not None
        config = await client.get_config(repo, manifest.config.digest)
    assert config.created == CREATED  # written with nine fractional digits
    assert config.platform == ARMV7
    assert dict(config.labels) == labels


@pytest.mark.parametrize(("oci", "media_type"), [(False, DOCKER_MANIFEST_LIST), (True, OCI_INDEX)])
async def test_index_digest_and_platforms(oci, media_type, registry, endpoint_for, repo):
    builds = [(AMD64, CREATED), (ARM64, CREATED.replace(hour=9)), (ARMV7, CREATED)]
    async with ImagePusher(registry.url) as pusher:
        digest = await pusher.push_index(repo, "multi", builds, oci=oci)
    async with RegistryClient(endpoint_for(registry)) as client:
        index = await client.get_manifest(repo, "multi")
        assert index.is_index
        assert index.media_type == media_type
        assert index.digest == digest
        assert await client.head_digest(repo, "multi") == digest
        assert [e.platform for e in index.manifests] == [AMD64, ARM64, ARMV7]
        child = await client.get_manifest(repo, index.manifests[1].digest)
        assert child.media_type == (OCI_MANIFEST if oci else DOCKER_MANIFEST)
        assert child.config is not None
        config = await client.get_config(repo, child.config.digest)
    assert config.platform == ARM64
    assert config.created == CREATED.replace(hour=9)


async def test_unknown_tag_is_manifest_not_found(registry, endpoint_for, repo):
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0", created=CREATED)
    async with RegistryClient(endpoint_for(registry)) as client:
        with pytest.raises(ManifestNotFound) as err:
            await client.get_manifest(repo, "9.9")
        with pytest.raises(ManifestNotFound):
            await client.head_digest(repo, "9.9")
    assert f"manifest '9.9' not found in registry {registry.host}, repository '{repo}'" in str(
        err.value
    )


async def test_manifest_content_not_matching_its_digest_is_rejected(
    registry, proxy, endpoint_for, repo
):
    async with ImagePusher(registry.url) as pusher:
        digest = await pusher.push_image(repo, "1.0", created=CREATED)
    p = await proxy(registry)
    forged = (
        b'{"schemaVersion": 2, "mediaType": "' + DOCKER_MANIFEST.encode() + b'", "config": '
        b'{"mediaType": "x", "size": 1, "digest": "sha256:' + b"0" * 64 + b'"}, "layers": []}'
    )
    p.corrupt(kind="manifest", body=forged, times=2)
    async with RegistryClient(endpoint_for(p)) as client:
        with pytest.raises(RegistryProtocolError, match="content was altered"):
            await client.get_manifest(repo, digest)
        # By tag there is nothing to compare with: the digest is that of the bytes received.
        assert (await client.get_manifest(repo, "1.0")).digest != digest


async def test_config_blob_not_matching_its_digest_is_rejected(registry, proxy, endpoint_for, repo):
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0", created=CREATED)
    p = await proxy(registry)
    async with RegistryClient(endpoint_for(p)) as client:
        manifest = await client.get_manifest(repo, "1.0")
        assert manifest.config is not None
        p.corrupt(kind="blob", body=b'{"os": "linux", "architecture": "amd64"}')
        with pytest.raises(RegistryProtocolError, match="digest mismatch"):
            await client.get_config(repo, manifest.config.digest)


async def test_unsupported_media_type_is_protocol_error(registry, proxy, endpoint_for, repo):
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0", created=CREATED)
    p = await proxy(registry)
    p.corrupt(
        kind="manifest",
        body=b'{"schemaVersion": 1, "name": "x", "fsLayers": []}',
        headers={"Content-Type": "application/vnd.docker.distribution.manifest.v1+prettyjws"},
    )
    async with RegistryClient(endpoint_for(p)) as client:
        with pytest.raises(RegistryProtocolError, match="schema 1 manifests are not supported"):
            await client.get_manifest(repo, "1.0")


@pytest.mark.parametrize("reference", ["../etc", "has space", "sha256:short", ""])
async def test_invalid_references_are_refused_before_any_request(
    reference, registry, endpoint_for, repo
):
    async with RegistryClient(endpoint_for(registry)) as client:
        with pytest.raises(InvalidReference):
            await client.get_manifest(repo, reference)
        with pytest.raises(InvalidReference, match="repository name 'Bad/Name'"):
            await client.list_tags("Bad/Name")
        assert client.stats.total == 0
