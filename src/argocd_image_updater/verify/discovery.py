"""Finding the signatures of a manifest digest in a registry (the only I/O of verification).

Places looked at, in order, as cosign and the OCI distribution spec 1.1 lay them out:

1. the **Referrers API**, ``GET /v2/<repo>/referrers/<digest>?artifactType=…``: an OCI index of
   the artifacts whose ``subject`` is the image; sigstore bundles
   (``application/vnd.dev.sigstore.bundle.v0.3+json``) are read. A registry without the API
   answers 404;
2. the **referrers tag schema** ``sha256-<hex>``: the same index kept under a tag by clients
   pushing to registries without the API;
3. cosign's **signature tag** ``sha256-<hex>.sig``: a manifest whose layers are simple signing
   payloads (signature in the ``dev.cosignproject.cosign/signature`` annotation) or sigstore
   bundles, or an index of bundle manifests.

Tags are looked at when the Referrers API is missing or has no signature that passes, because
cosign v2 writes ``.sig`` tags even to registries that have the API. Each place yields
:class:`Candidate` values lazily, so looking stops at the first signature that passes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from argocd_image_updater.model.registry import CredentialProvider
from argocd_image_updater.registry.client import RegistryClient
from argocd_image_updater.registry.errors import ManifestNotFound, RegistryError
from argocd_image_updater.registry.manifest import INDEX_TYPES, is_digest
from argocd_image_updater.verify.payloads import (
    BUNDLE_TYPES,
    BUNDLE_V03,
    SIMPLE_SIGNING,
    PayloadError,
    Signed,
    parse_bundle,
    simple_signing_layer,
)

MAX_SIGNATURES: Final = 32
"""Signature manifests read per place (a registry could list any number)."""
MAX_PAYLOAD_BYTES: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Candidate:
    """A signature found at ``where``; ``problem`` says why it could not be read (then
    ``signed`` is ``None``)."""

    where: str
    signed: Signed | None = None
    problem: str = ""


def signature_tag(digest: str) -> str:
    return digest.replace(":", "-", 1) + ".sig"


def referrers_tag(digest: str) -> str:
    return digest.replace(":", "-", 1)


def _document(body: bytes) -> Mapping[str, Any]:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as err:
        raise PayloadError(f"not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise PayloadError("not a JSON object")
    return data


def _entries(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = data.get(key) or []
    if not isinstance(items, list):
        raise PayloadError(f"'{key}' is not a list")
    return [item for item in items if isinstance(item, dict)]


def _bundle_entries(index: Mapping[str, Any]) -> list[str]:
    """Digests of the bundle artifacts an index lists (filtered on ``artifactType``)."""
    out = []
    for entry in _entries(index, "manifests"):
        digest = entry.get("digest")
        if entry.get("artifactType") in BUNDLE_TYPES and isinstance(digest, str):
            out.append(digest)
    return out[:MAX_SIGNATURES]


class Discovery:
    """Reads the signatures of one image digest from ``repository`` (the image's repository,
    or a separate signature repository) through ``client``."""

    def __init__(
        self,
        client: RegistryClient,
        repository: str,
        credentials: CredentialProvider | None,
        digest: str,
    ) -> None:
        if not is_digest(digest):
            raise ValueError(f"'{digest}' is not a sha256 digest")
        self.client = client
        self.repository = repository
        self.credentials = credentials
        self.digest = digest
        self.notes: list[str] = []
        """What was looked at and found empty (``referrers API: not supported (404)``)."""

    async def candidates(
        self, *, referrers: bool = True, tags: bool = True
    ) -> AsyncIterator[Candidate]:
        if referrers:
            async for candidate in self._referrers():
                yield candidate
        if tags:
            async for candidate in self._tag_index():
                yield candidate
            async for candidate in self._signature_tag():
                yield candidate

    async def _referrers(self) -> AsyncIterator[Candidate]:
        try:
            body = await self.client.get_referrers(
                self.repository, self.digest, BUNDLE_V03, self.credentials
            )
        except RegistryError as err:
            self.notes.append(f"referrers API: {err}")
            return
        if body is None:
            self.notes.append("referrers API: not supported by the registry (404)")
            return
        try:
            entries = _bundle_entries(_document(body))
        except PayloadError as err:
            yield Candidate("referrers API", problem=f"invalid referrers index: {err}")
            return
        if not entries:
            self.notes.append("referrers API: no sigstore bundle refers to the image")
        for digest in entries:
            async for candidate in self._artifact(digest, f"referrer {digest}"):
                yield candidate

    async def _tag_index(self) -> AsyncIterator[Candidate]:
        tag = referrers_tag(self.digest)
        document = await self._tagged(tag)
        if document is None:
            return
        media_type = document.get("mediaType")
        if media_type not in INDEX_TYPES:
            async for candidate in self._layers(document, f"tag {tag}"):
                yield candidate
            return
        entries = _bundle_entries(document)
        if not entries:
            self.notes.append(f"tag {tag}: no sigstore bundle listed")
        for digest in entries:
            async for candidate in self._artifact(digest, f"tag {tag} → {digest}"):
                yield candidate

    async def _signature_tag(self) -> AsyncIterator[Candidate]:
        tag = signature_tag(self.digest)
        document = await self._tagged(tag)
        if document is None:
            return
        if document.get("mediaType") in INDEX_TYPES:
            for entry in _entries(document, "manifests")[:MAX_SIGNATURES]:
                digest = entry.get("digest")
                if isinstance(digest, str):
                    async for candidate in self._artifact(digest, f"tag {tag} → {digest}"):
                        yield candidate
            return
        async for candidate in self._layers(document, f"tag {tag}"):
            yield candidate

    async def _tagged(self, tag: str) -> Mapping[str, Any] | None:
        try:
            _, body = await self.client.get_manifest_bytes(self.repository, tag, self.credentials)
        except ManifestNotFound:
            self.notes.append(f"tag {tag}: not found")
            return None
        except RegistryError as err:
            self.notes.append(f"tag {tag}: {err}")
            return None
        try:
            return _document(body)
        except PayloadError as err:  # get_manifest_bytes parsed it already; kept for safety
            self.notes.append(f"tag {tag}: {err}")
            return None

    async def _artifact(self, digest: str, where: str) -> AsyncIterator[Candidate]:
        """A signature manifest by digest: its ``subject`` must be the image."""
        try:
            _, body = await self.client.get_manifest_bytes(
                self.repository, digest, self.credentials
            )
            document = _document(body)
        except (RegistryError, PayloadError) as err:
            yield Candidate(where, problem=f"cannot read the signature manifest: {err}")
            return
        subject = document.get("subject")
        if isinstance(subject, dict) and subject.get("digest") != self.digest:
            yield Candidate(
                where,
                problem=f"its subject is {subject.get('digest')}, not the image {self.digest}",
            )
            return
        async for candidate in self._layers(document, where):
            yield candidate

    async def _layers(self, document: Mapping[str, Any], where: str) -> AsyncIterator[Candidate]:
        try:
            layers = _entries(document, "layers")[:MAX_SIGNATURES]
        except PayloadError as err:
            yield Candidate(where, problem=f"invalid signature manifest: {err}")
            return
        if not layers:
            yield Candidate(where, problem="the signature manifest has no layers")
        for i, layer in enumerate(layers):
            at = f"{where} layer {i}" if len(layers) > 1 else where
            media_type = layer.get("mediaType")
            digest = layer.get("digest")
            if media_type not in BUNDLE_TYPES and media_type != SIMPLE_SIGNING:
                yield Candidate(at, problem=f"layer of media type {media_type!r} is no signature")
                continue
            if not isinstance(digest, str) or not is_digest(digest):
                yield Candidate(at, problem="layer has no valid digest")
                continue
            try:
                blob = await self.client.get_blob(
                    self.repository, digest, self.credentials, limit=MAX_PAYLOAD_BYTES
                )
                if media_type == SIMPLE_SIGNING:
                    annotations = layer.get("annotations") or {}
                    if not isinstance(annotations, dict):
                        raise PayloadError("layer annotations are not an object")
                    signed = simple_signing_layer(
                        blob, {str(k): str(v) for k, v in annotations.items()}
                    )
                else:
                    signed = parse_bundle(blob)
            except (RegistryError, PayloadError) as err:
                yield Candidate(at, problem=str(err))
                continue
            yield Candidate(at, signed)
