"""Public keys and signature checks (pure).

Key types cosign signs with: ECDSA P-256 and P-384 (the original accepts only ECDSA), Ed25519
and RSA (2048 bits or more). ECDSA signatures are ASN.1 DER over SHA-256 (P-384 also over
SHA-384, as newer signers hash by curve); RSA signatures are PKCS#1 v1.5 or PSS over SHA-256;
Ed25519 signs the message itself.

``cryptography`` is imported by the functions that use it: a controller that verifies no
signature never loads it (about 11 MB).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

PublicKey: TypeAlias = "ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey | rsa.RSAPublicKey"

MIN_RSA_BITS = 2048
_CURVES = ("secp256r1", "secp384r1")


def _curve_hashes(curve: str) -> tuple[hashes.HashAlgorithm, ...]:
    from cryptography.hazmat.primitives import hashes

    if curve == "secp256r1":
        return (hashes.SHA256(),)
    if curve == "secp384r1":
        return (hashes.SHA256(), hashes.SHA384())
    return ()


class UnusableKey(ValueError):
    """A public key that cannot be used (unreadable, unsupported type or size)."""


@dataclass(frozen=True, slots=True)
class VerifyingKey:
    key: PublicKey
    description: str
    """e.g. ``ECDSA P-256 key sha256:1a2b3c4d…`` (the fingerprint of the DER public key)."""

    def verify(self, signature: bytes, message: bytes) -> bool:
        """True when ``signature`` is this key's signature over ``message``."""
        return verify_with(self.key, signature, message)


def fingerprint(key: PublicKey) -> str:
    from cryptography.hazmat.primitives import serialization

    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return "sha256:" + hashlib.sha256(der).hexdigest()


def describe(key: PublicKey) -> str:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    if isinstance(key, ec.EllipticCurvePublicKey):
        kind = {"secp256r1": "ECDSA P-256", "secp384r1": "ECDSA P-384"}.get(
            key.curve.name, key.curve.name
        )
    elif isinstance(key, ed25519.Ed25519PublicKey):
        kind = "Ed25519"
    else:
        kind = f"RSA-{key.key_size}"
    return f"{kind} key {fingerprint(key)[:19]}…"


def check_key(key: object) -> PublicKey:
    """``key`` if it is a supported public key; otherwise :class:`UnusableKey` saying why."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if isinstance(key, ec.EllipticCurvePublicKey):
        if key.curve.name not in _CURVES:
            raise UnusableKey(f"ECDSA curve {key.curve.name} is not supported (use P-256 or P-384)")
        return key
    if isinstance(key, ed25519.Ed25519PublicKey):
        return key
    if isinstance(key, rsa.RSAPublicKey):
        if key.key_size < MIN_RSA_BITS:
            raise UnusableKey(f"RSA key of {key.key_size} bits is too small (2048 or more)")
        return key
    raise UnusableKey(
        f"{type(key).__name__} keys are not supported (use ECDSA P-256/P-384, Ed25519 or RSA)"
    )


def load_public_key(pem: bytes) -> VerifyingKey:
    """A PEM ``PUBLIC KEY`` (as ``cosign generate-key-pair`` writes ``cosign.pub``)."""
    text = pem.strip()
    if b"PRIVATE KEY" in text:
        raise UnusableKey("this is a private key: configure the public key (cosign.pub)")
    if not text.startswith(b"-----BEGIN"):
        raise UnusableKey("not a PEM public key (expected -----BEGIN PUBLIC KEY-----)")
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    try:
        key = check_key(serialization.load_pem_public_key(text))
    except (ValueError, UnsupportedAlgorithm) as err:
        raise UnusableKey(f"not a readable PEM public key ({err})") from None
    return VerifyingKey(key, describe(key))


def verify_with(key: PublicKey, signature: bytes, message: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

    try:
        if isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(signature, message)
            return True
        if isinstance(key, rsa.RSAPublicKey):
            for pad in (
                padding.PKCS1v15(),
                padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.AUTO),
            ):
                try:
                    key.verify(signature, message, pad, hashes.SHA256())
                    return True
                except InvalidSignature:
                    continue
            return False
        for algorithm in _curve_hashes(key.curve.name):
            try:
                key.verify(signature, message, ec.ECDSA(algorithm))
                return True
            except InvalidSignature:
                continue
        return False
    except (InvalidSignature, ValueError):
        return False
