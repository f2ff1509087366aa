"""A private Sigstore for tests: a certificate authority acting as Fulcio, a log key acting as
Rekor, and the ``trusted_root.json`` naming both; keyless signatures laid out as cosign lays
them out.

* :meth:`Sigstore.certificate` issues a Fulcio-profile certificate (no subject; critical subject
  alternative name holding the email or URI identity; code signing; the OIDC issuer in
  extensions ``1.3.6.1.4.1.57264.1.1`` and ``…1.8``), ten minutes long by default;
* :meth:`Sigstore.log` enters a body in the log: the entry carries a signed entry timestamp
  (SET) and an RFC 6962 inclusion proof with a signed checkpoint (either can be left out);
* :meth:`Sigstore.sign_sig_layer` signs a simple signing payload for a ``.sig`` tag, with the
  ``dev.sigstore.cosign/certificate``, ``…/chain`` and ``…/bundle`` annotations (the Rekor bundle
  holds the SET, as cosign writes it); :meth:`Sigstore.sign_bundle` makes a sigstore bundle v0.3
  (DSSE over an in-toto Statement, ``dsse`` log entry).

Everything is written here from the formats' definitions, independently of the verifier.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

from argocd_image_updater_testing import cosign

ISSUER_V1 = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
ISSUER_V2 = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
CERTIFICATE_ANNOTATION = "dev.sigstore.cosign/certificate"
CHAIN_ANNOTATION = "dev.sigstore.cosign/chain"
BUNDLE_ANNOTATION = "dev.sigstore.cosign/bundle"
LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)
FAR_AHEAD = datetime(2040, 1, 1, tzinfo=UTC)
ORIGIN = "rekor.test - 1"
IN_TOTO = "application/vnd.in-toto+json"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _der(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.DER)


def _spki(key: ec.EllipticCurvePublicKey) -> bytes:
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _utf8(text: str) -> bytes:
    raw = text.encode()
    assert len(raw) < 128
    return bytes([0x0C, len(raw)]) + raw


def _ca(
    name: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None,
    path_length: int | None,
) -> x509.Certificate:
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "sigstore.test"),
            x509.NameAttribute(NameOID.COMMON_NAME, name),
        ]
    )
    signer_cert, signer_key = issuer if issuer is not None else (None, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(signer_cert.subject if signer_cert is not None else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(LONG_AGO)
        .not_valid_after(FAR_AHEAD)
        .add_extension(x509.BasicConstraints(ca=True, path_length=path_length), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer_key.public_key()), False
        )
    )
    if issuer is not None:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), False
        )
    return builder.sign(signer_key, hashes.SHA256())


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _tree_hash(leaves: list[bytes]) -> bytes:
    """RFC 6962 MTH over leaf hashes."""
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return _node(_tree_hash(leaves[:k]), _tree_hash(leaves[k:]))


def _audit_path(m: int, leaves: list[bytes]) -> list[bytes]:
    """RFC 6962 PATH(m, D[n])."""
    if len(leaves) == 1:
        return []
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    if m < k:
        return [*_audit_path(m, leaves[:k]), _tree_hash(leaves[k:])]
    return [*_audit_path(m - k, leaves[k:]), _tree_hash(leaves[:k])]


@dataclass
class Sigstore:
    """A Fulcio-like CA (root → intermediate) and a Rekor-like log, made fresh."""

    root_key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    intermediate_key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    log_key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    leaves: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root = _ca("sigstore-test", self.root_key, None, 1)
        self.intermediate = _ca(
            "sigstore-test-intermediate", self.intermediate_key, (self.root, self.root_key), 0
        )
        # Other entries of the log, so that inclusion proofs have a path to check.
        self.leaves = [hashlib.sha256(b"\x00" + bytes([i])).digest() for i in range(5)]

    @property
    def log_id(self) -> bytes:
        return hashlib.sha256(_spki(self.log_key.public_key())).digest()

    def trusted_root(self, *, log_valid_from: datetime = LONG_AGO) -> bytes:
        """``trusted_root.json`` naming this CA (intermediate first, root last) and log key."""
        document = {
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [
                {
                    "baseUrl": "https://rekor.test",
                    "hashAlgorithm": "SHA2_256",
                    "publicKey": {
                        "rawBytes": _b64(_spki(self.log_key.public_key())),
                        "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                        "validFor": {"start": log_valid_from.strftime("%Y-%m-%dT%H:%M:%SZ")},
                    },
                    "logId": {"keyId": _b64(self.log_id)},
                }
            ],
            "certificateAuthorities": [
                {
                    "subject": {"organization": "sigstore.test", "commonName": "sigstore-test"},
                    "uri": "https://fulcio.test",
                    "certChain": {
                        "certificates": [
                            {"rawBytes": _b64(_der(self.intermediate))},
                            {"rawBytes": _b64(_der(self.root))},
                        ]
                    },
                    "validFor": {"start": "2020-01-01T00:00:00Z"},
                }
            ],
            "ctlogs": [],
            "timestampAuthorities": [],
        }
        return json.dumps(document, indent=2).encode()

    def certificate(
        self,
        identity: str,
        issuer: str,
        *,
        not_before: datetime | None = None,
        lifetime: timedelta = timedelta(minutes=10),
        signer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None = None,
    ) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        """A Fulcio-profile signing certificate for ``identity`` (email, or URI when it has
        ``://``), by the intermediate unless ``signer`` is given."""
        key = ec.generate_private_key(ec.SECP256R1())
        start = not_before or datetime.now(UTC) - timedelta(minutes=1)
        ca_cert, ca_key = signer or (self.intermediate, self.intermediate_key)
        name: x509.GeneralName = (
            x509.UniformResourceIdentifier(identity)
            if "://" in identity
            else x509.RFC822Name(identity)
        )
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([]))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(start + lifetime)
            .add_extension(x509.SubjectAlternativeName([name]), critical=True)
            .add_extension(
                x509.KeyUsage(True, False, False, False, False, False, False, False, False),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
            )
            .add_extension(x509.UnrecognizedExtension(ISSUER_V1, issuer.encode()), False)
            .add_extension(x509.UnrecognizedExtension(ISSUER_V2, _utf8(issuer)), False)
            .sign(ca_key, hashes.SHA256())
        )
        return key, cert

    def log(
        self,
        body: bytes,
        when: datetime | None = None,
        *,
        promise: bool = True,
        proof: bool = True,
        log_key: ec.EllipticCurvePrivateKey | None = None,
    ) -> dict[str, Any]:
        """Enter ``body``; the entry as a bundle's ``tlogEntries[]`` item. ``log_key`` signs
        the SET and checkpoint instead of the log's own key (a forged entry)."""
        signer = log_key or self.log_key
        integrated = int((when or datetime.now(UTC)).timestamp())
        self.leaves.append(hashlib.sha256(b"\x00" + body).digest())
        index, size = len(self.leaves) - 1, len(self.leaves)
        body_b64 = _b64(body)
        canonical = (
            f'{{"body":"{body_b64}","integratedTime":{integrated},'
            f'"logID":"{self.log_id.hex()}","logIndex":{index}}}'
        ).encode()
        entry: dict[str, Any] = {
            "logIndex": str(index),
            "logId": {"keyId": _b64(self.log_id)},
            "kindVersion": {"kind": json.loads(body)["kind"], "version": "0.0.1"},
            "integratedTime": str(integrated),
            "canonicalizedBody": body_b64,
        }
        if promise:
            set_signature = signer.sign(canonical, ec.ECDSA(hashes.SHA256()))
            entry["inclusionPromise"] = {"signedEntryTimestamp": _b64(set_signature)}
        if proof:
            root = _tree_hash(self.leaves)
            note = f"{ORIGIN}\n{size}\n{_b64(root)}\n"
            signature = signer.sign(note.encode(), ec.ECDSA(hashes.SHA256()))
            hint = self.log_id[:4]
            entry["inclusionProof"] = {
                "logIndex": str(index),
                "rootHash": _b64(root),
                "treeSize": str(size),
                "hashes": [_b64(h) for h in _audit_path(index, self.leaves)],
                "checkpoint": {"envelope": f"{note}\n\u2014 {ORIGIN} {_b64(hint + signature)}\n"},
            }
        return entry

    # --- signatures ----------------------------------------------------------------------

    def sign_sig_layer(
        self,
        name: str,
        digest: str,
        identity: str,
        issuer: str,
        **options: Any,
    ) -> tuple[bytes, bytes, dict[str, str]]:
        """``(payload, signature, annotations)`` of a keyless simple signing layer, for
        :func:`~argocd_image_updater_testing.cosign.push_signature_tag`. ``options``:
        ``certificate`` (key and cert), ``when``, ``promise``, ``proof``, ``log_key``,
        ``chain`` (``False`` leaves out the chain annotation)."""
        key, cert = options.pop("certificate", None) or self.certificate(identity, issuer)
        payload = cosign.simple_signing_payload(name, digest)
        signature = cosign.sign(key, payload)
        body = hashedrekord(signature, payload, cert)
        entry = self.log(body, **_log_options(options))
        rekor_bundle = {
            "SignedEntryTimestamp": entry.get("inclusionPromise", {}).get(
                "signedEntryTimestamp", ""
            ),
            "Payload": {
                "body": entry["canonicalizedBody"],
                "integratedTime": int(entry["integratedTime"]),
                "logIndex": int(entry["logIndex"]),
                "logID": self.log_id.hex(),
            },
        }
        annotations = {
            CERTIFICATE_ANNOTATION: _pem(cert).decode(),
            BUNDLE_ANNOTATION: json.dumps(rekor_bundle),
        }
        if options.pop("chain", True):
            annotations[CHAIN_ANNOTATION] = (_pem(self.intermediate) + _pem(self.root)).decode()
        return payload, signature, annotations

    def sign_bundle(
        self,
        name: str,
        digest: str,
        identity: str,
        issuer: str,
        **options: Any,
    ) -> bytes:
        """A sigstore bundle v0.3 (DSSE over an in-toto Statement) signed keyless; ``options``
        as :meth:`sign_sig_layer`, and ``chain=True`` for an ``x509CertificateChain``."""
        key, cert = options.pop("certificate", None) or self.certificate(identity, issuer)
        statement = cosign.statement(name, digest)
        signature = cosign.sign(key, _pae(IN_TOTO, statement))
        entry = self.log(dsse_body(statement, signature, cert), **_log_options(options))
        material: dict[str, Any] = {"tlogEntries": [entry]}
        if options.pop("chain", False):
            material["x509CertificateChain"] = {
                "certificates": [{"rawBytes": _b64(_der(c))} for c in (cert, self.intermediate)]
            }
        else:
            material["certificate"] = {"rawBytes": _b64(_der(cert))}
        return cosign.dsse_bundle(key, statement, signature=signature, material=material)


def _log_options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: options.pop(k) for k in ("when", "promise", "proof", "log_key") if k in options}


def _pae(payload_type: str, payload: bytes) -> bytes:
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def hashedrekord(signature: bytes, signed: bytes, cert: x509.Certificate) -> bytes:
    """A ``hashedrekord`` 0.0.1 entry body, as Rekor canonicalizes it."""
    body: Mapping[str, Any] = {
        "apiVersion": "0.0.1",
        "kind": "hashedrekord",
        "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": hashlib.sha256(signed).hexdigest()}},
            "signature": {"content": _b64(signature), "publicKey": {"content": _b64(_pem(cert))}},
        },
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def dsse_body(payload: bytes, signature: bytes, cert: x509.Certificate) -> bytes:
    """A ``dsse`` 0.0.1 entry body (without the ``envelopeHash`` Rekor adds, which verifiers
    cannot recompute from a bundle)."""
    body = {
        "apiVersion": "0.0.1",
        "kind": "dsse",
        "spec": {
            "payloadHash": {"algorithm": "sha256", "value": hashlib.sha256(payload).hexdigest()},
            "signatures": [{"signature": _b64(signature), "verifier": _b64(_pem(cert))}],
        },
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
