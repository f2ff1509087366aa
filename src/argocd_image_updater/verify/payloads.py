"""Cosign signature payloads, parsed into plain values (pure; no I/O, no cryptography).

Two layouts are read, as cosign writes them:

* **simple signing** (``application/vnd.dev.cosign.simplesigning.v1+json``): a JSON payload
  naming the signed manifest in ``critical.image.docker-manifest-digest``; it is a layer of a
  ``sha256-<hex>.sig`` manifest whose ``dev.cosignproject.cosign/signature`` annotation holds the
  base64 signature over the payload bytes (and, for keyless signatures, the certificate, chain
  and Rekor bundle in other annotations);
* **sigstore bundle v0.3** (``application/vnd.dev.sigstore.bundle.v0.3+json``): a DSSE envelope
  whose payload is an in-toto Statement (the image digest is a ``subject`` digest) or a simple
  signing payload; the signature is over the DSSE pre-authentication encoding (PAE).

:func:`signed_digests` answers the anti-replay question: which manifest digests a payload vouches
for. A signature is only good for an image whose digest is among them.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

SIMPLE_SIGNING: Final = "application/vnd.dev.cosign.simplesigning.v1+json"
BUNDLE_V03: Final = "application/vnd.dev.sigstore.bundle.v0.3+json"
BUNDLE_TYPES: Final = frozenset(
    {BUNDLE_V03, "application/vnd.dev.sigstore.bundle+json;version=0.3"}
)
IN_TOTO: Final = "application/vnd.in-toto+json"
SIGNATURE_ANNOTATION: Final = "dev.cosignproject.cosign/signature"
CERTIFICATE_ANNOTATION: Final = "dev.sigstore.cosign/certificate"
CHAIN_ANNOTATION: Final = "dev.sigstore.cosign/chain"
REKOR_BUNDLE_ANNOTATION: Final = "dev.sigstore.cosign/bundle"
_STATEMENT_TYPES: Final = frozenset(
    {"https://in-toto.io/Statement/v1", "https://in-toto.io/Statement/v0.1"}
)


class PayloadError(ValueError):
    """A signature payload, envelope or bundle that cannot be read."""


@dataclass(frozen=True, slots=True)
class Signed:
    """One signature to check: ``message`` is exactly what was signed (payload bytes, or the
    DSSE PAE), ``payload``/``payload_type`` what it says; ``certificate`` and ``chain`` are PEM
    or DER certificates of a keyless signature, ``tlog`` its transparency-log evidence."""

    message: bytes
    signature: bytes
    payload: bytes
    payload_type: str
    certificate: bytes = b""
    chain: tuple[bytes, ...] = ()
    tlog: tuple[Mapping[str, Any], ...] = ()
    layout: str = ""
    """``simple signing`` or ``sigstore bundle (DSSE …)``, for explanations."""


def b64decode(text: Any, what: str) -> bytes:
    if not isinstance(text, str) or not text:
        raise PayloadError(f"{what} is missing or not a string")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        try:
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (binascii.Error, ValueError):
            raise PayloadError(f"{what} is not base64") from None


def _json(data: bytes, what: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as err:
        raise PayloadError(f"{what} is not valid JSON ({err})") from None


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise PayloadError(f"{what} is not a JSON object")
    return value


def pae(payload_type: str, payload: bytes) -> bytes:
    """The DSSE v1 pre-authentication encoding: what a DSSE signature signs."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def simple_signing_digest(payload: bytes) -> str:
    """``critical.image.docker-manifest-digest`` of a simple signing payload."""
    data = _object(_json(payload, "simple signing payload"), "simple signing payload")
    critical = _object(data.get("critical"), "simple signing payload 'critical'")
    image = _object(critical.get("image"), "simple signing payload 'critical.image'")
    digest = image.get("docker-manifest-digest")
    if not isinstance(digest, str) or not digest:
        raise PayloadError("simple signing payload has no critical.image.docker-manifest-digest")
    return digest


def statement_digests(payload: bytes) -> tuple[str, ...]:
    """The ``sha256:<hex>`` subject digests of an in-toto Statement."""
    data = _object(_json(payload, "in-toto statement"), "in-toto statement")
    if data.get("_type") not in _STATEMENT_TYPES:
        raise PayloadError(f"in-toto statement has an unknown _type {data.get('_type')!r}")
    subjects = data.get("subject")
    if not isinstance(subjects, list):
        raise PayloadError("in-toto statement has no subject list")
    out: list[str] = []
    for subject in subjects:
        digests = _object(subject, "in-toto subject").get("digest")
        if isinstance(digests, dict) and isinstance(digests.get("sha256"), str):
            out.append(f"sha256:{digests['sha256'].lower()}")
    return tuple(out)


def signed_digests(signed: Signed) -> tuple[str, ...]:
    """The manifest digests ``signed`` vouches for (anti-replay: the image's must be one)."""
    if signed.payload_type == IN_TOTO:
        return statement_digests(signed.payload)
    if signed.payload_type == SIMPLE_SIGNING:
        return (simple_signing_digest(signed.payload),)
    raise PayloadError(f"unsupported payload type '{signed.payload_type}'")


def simple_signing_layer(payload: bytes, annotations: Mapping[str, str]) -> Signed:
    """A simple signing layer of a ``.sig`` manifest (``payload`` is the layer blob)."""
    signature = b64decode(
        annotations.get(SIGNATURE_ANNOTATION), f"annotation {SIGNATURE_ANNOTATION}"
    )
    tlog: tuple[Mapping[str, Any], ...] = ()
    rekor = annotations.get(REKOR_BUNDLE_ANNOTATION)
    if rekor:
        tlog = (_object(_json(rekor.encode(), REKOR_BUNDLE_ANNOTATION), REKOR_BUNDLE_ANNOTATION),)
    chain = annotations.get(CHAIN_ANNOTATION, "")
    return Signed(
        message=payload,
        signature=signature,
        payload=payload,
        payload_type=SIMPLE_SIGNING,
        certificate=annotations.get(CERTIFICATE_ANNOTATION, "").encode(),
        chain=(chain.encode(),) if chain else (),
        tlog=tlog,
        layout="simple signing",
    )


def parse_bundle(data: bytes) -> Signed:
    """A sigstore bundle v0.3 holding a DSSE envelope."""
    bundle = _object(_json(data, "sigstore bundle"), "sigstore bundle")
    media_type = bundle.get("mediaType")
    if media_type not in BUNDLE_TYPES:
        raise PayloadError(f"sigstore bundle has media type {media_type!r}, expected {BUNDLE_V03}")
    if "dsseEnvelope" not in bundle:
        raise PayloadError(
            "sigstore bundle has no dsseEnvelope (message signatures do not name the image)"
        )
    envelope = _object(bundle["dsseEnvelope"], "sigstore bundle dsseEnvelope")
    payload = b64decode(envelope.get("payload"), "dsseEnvelope.payload")
    payload_type = envelope.get("payloadType")
    if not isinstance(payload_type, str) or not payload_type:
        raise PayloadError("dsseEnvelope.payloadType is missing")
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list) or len(signatures) != 1:
        raise PayloadError("dsseEnvelope must hold exactly one signature")
    signature = b64decode(_object(signatures[0], "DSSE signature").get("sig"), "DSSE signature")
    material = _object(bundle.get("verificationMaterial"), "bundle verificationMaterial")
    certificate = b""
    chain: tuple[bytes, ...] = ()
    if "certificate" in material:
        raw = _object(material["certificate"], "verificationMaterial.certificate")
        certificate = b64decode(raw.get("rawBytes"), "certificate rawBytes")
    elif "x509CertificateChain" in material:
        certs = _object(material["x509CertificateChain"], "x509CertificateChain").get(
            "certificates"
        )
        if not isinstance(certs, list) or not certs:
            raise PayloadError("x509CertificateChain has no certificates")
        der = [
            b64decode(_object(c, "chain entry").get("rawBytes"), "chain rawBytes") for c in certs
        ]
        certificate, chain = der[0], tuple(der[1:])
    entries = material.get("tlogEntries") or []
    if not isinstance(entries, list):
        raise PayloadError("verificationMaterial.tlogEntries is not a list")
    kind = "in-toto statement" if payload_type == IN_TOTO else payload_type
    return Signed(
        message=pae(payload_type, payload),
        signature=signature,
        payload=payload,
        payload_type=payload_type,
        certificate=certificate,
        chain=chain,
        tlog=tuple(_object(e, "tlog entry") for e in entries),
        layout=f"sigstore bundle (DSSE, {kind})",
    )
