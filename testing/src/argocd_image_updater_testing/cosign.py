"""Sign test images the way cosign lays signatures out in a registry, with keys made here.

* :func:`push_signature_tag` — cosign's classic layout: ``<repo>:sha256-<hex>.sig``, an OCI
  manifest whose layers are simple signing payloads, the base64 signature in the
  ``dev.cosignproject.cosign/signature`` annotation (one layer per signature, appended as
  ``cosign sign`` does);
* :func:`push_bundle_referrer` — cosign v3 / sigstore-go's layout: an OCI artifact of type
  ``application/vnd.dev.sigstore.bundle.v0.3+json`` with the image as ``subject``, its layer a
  sigstore bundle v0.3 holding a DSSE envelope over an in-toto Statement (or simple signing);
* :func:`push_referrers_tag` — the OCI 1.1 referrers tag schema ``sha256-<hex>``: an index of
  referrer descriptors, as clients keep it on registries without the Referrers API.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

from argocd_image_updater.registry.manifest import OCI_INDEX, OCI_MANIFEST, sha256_digest
from argocd_image_updater.verify.payloads import (
    BUNDLE_V03,
    IN_TOTO,
    SIGNATURE_ANNOTATION,
    SIMPLE_SIGNING,
    pae,
)
from argocd_image_updater_testing.push import ImagePusher

KeyKind = Literal["p256", "p384", "ed25519", "rsa"]
PrivateKey = ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey
EMPTY_CONFIG = "application/vnd.oci.empty.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
COSIGN_PREDICATE = "https://sigstore.dev/cosign/sign/v1"


def generate_key(kind: KeyKind = "p256") -> PrivateKey:
    if kind == "p256":
        return ec.generate_private_key(ec.SECP256R1())
    if kind == "p384":
        return ec.generate_private_key(ec.SECP384R1())
    if kind == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_pem(key: PrivateKey) -> bytes:
    """The public key as ``cosign generate-key-pair`` writes ``cosign.pub``."""
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def sign(key: PrivateKey, message: bytes) -> bytes:
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key.sign(message)
    if isinstance(key, rsa.RSAPrivateKey):
        return key.sign(message, padding.PKCS1v15(), hashes.SHA256())
    return key.sign(message, ec.ECDSA(hashes.SHA256()))


def simple_signing_payload(reference: str, digest: str) -> bytes:
    """Exactly cosign's payload (Go's encoding/json: compact, this key order)."""
    data = {
        "critical": {
            "identity": {"docker-reference": reference},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature",
        },
        "optional": None,
    }
    return json.dumps(data, separators=(",", ":")).encode()


def statement(name: str, digest: str, predicate_type: str = COSIGN_PREDICATE) -> bytes:
    data = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": name, "digest": {"sha256": digest.split(":", 1)[1]}}],
        "predicateType": predicate_type,
        "predicate": {},
    }
    return json.dumps(data, separators=(",", ":")).encode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def dsse_bundle(
    key: PrivateKey,
    payload: bytes,
    payload_type: str = IN_TOTO,
    *,
    signature: bytes | None = None,
    material: Mapping[str, Any] | None = None,
) -> bytes:
    """A sigstore bundle v0.3 with a DSSE envelope signed by ``key`` (or ``signature``)."""
    sig = signature if signature is not None else sign(key, pae(payload_type, payload))
    bundle = {
        "mediaType": BUNDLE_V03,
        "verificationMaterial": dict(material or {"publicKey": {"hint": ""}}),
        "dsseEnvelope": {
            "payload": _b64(payload),
            "payloadType": payload_type,
            "signatures": [{"sig": _b64(sig), "keyid": ""}],
        },
    }
    return json.dumps(bundle).encode()


async def subject_descriptor(pusher: ImagePusher, repository: str, digest: str) -> dict[str, Any]:
    """The descriptor of a pushed manifest (media type and size read back from the registry)."""
    body, media_type = await pusher.get_manifest(repository, digest)
    return {"mediaType": media_type, "digest": sha256_digest(body), "size": len(body)}


async def push_signature_tag(
    pusher: ImagePusher,
    repository: str,
    digest: str,
    signatures: Sequence[tuple[bytes, bytes]],
    *,
    extra_annotations: Mapping[str, str] | None = None,
) -> str:
    """``<repo>:sha256-<hex>.sig`` with one simple signing layer per ``(payload, signature)``."""
    layers = []
    for payload, signature in signatures:
        await pusher.upload_blob(repository, payload)
        layers.append(
            {
                "mediaType": SIMPLE_SIGNING,
                "size": len(payload),
                "digest": sha256_digest(payload),
                "annotations": {SIGNATURE_ANNOTATION: _b64(signature), **(extra_annotations or {})},
            }
        )
    config = {
        "architecture": "",
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": [layer["digest"] for layer in layers]},
        "config": {},
    }
    config_bytes = json.dumps(config, separators=(",", ":")).encode()
    await pusher.upload_blob(repository, config_bytes)
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {
            "mediaType": OCI_CONFIG,
            "size": len(config_bytes),
            "digest": sha256_digest(config_bytes),
        },
        "layers": layers,
    }
    tag = digest.replace(":", "-", 1) + ".sig"
    return await pusher.put_manifest(repository, tag, json.dumps(manifest).encode())


async def push_bundle_referrer(
    pusher: ImagePusher,
    repository: str,
    subject: Mapping[str, Any],
    bundle: bytes,
) -> tuple[str, dict[str, Any]]:
    """The bundle as an OCI artifact referring to ``subject``, pushed by digest. Returns the
    artifact's digest and its descriptor (as a referrers index lists it)."""
    await pusher.upload_blob(repository, b"{}")
    await pusher.upload_blob(repository, bundle)
    annotations = {
        "dev.sigstore.bundle.content": "dsse-envelope",
        "dev.sigstore.bundle.predicateType": COSIGN_PREDICATE,
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": BUNDLE_V03,
        "config": {
            "mediaType": EMPTY_CONFIG,
            "size": 2,
            "digest": sha256_digest(b"{}"),
            "data": "e30=",
        },
        "layers": [{"mediaType": BUNDLE_V03, "size": len(bundle), "digest": sha256_digest(bundle)}],
        "subject": dict(subject),
        "annotations": annotations,
    }
    body = json.dumps(manifest).encode()
    digest = await pusher.put_manifest(repository, sha256_digest(body), body)
    descriptor = {
        "mediaType": OCI_MANIFEST,
        "digest": digest,
        "size": len(body),
        "artifactType": BUNDLE_V03,
        "annotations": annotations,
    }
    return digest, descriptor


async def push_referrers_tag(
    pusher: ImagePusher, repository: str, digest: str, descriptors: Sequence[Mapping[str, Any]]
) -> str:
    """The referrers tag schema: ``<repo>:sha256-<hex>``, an OCI index of the referrers."""
    index = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [dict(d) for d in descriptors],
    }
    return await pusher.put_manifest(
        repository, digest.replace(":", "-", 1), json.dumps(index).encode()
    )
