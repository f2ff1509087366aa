"""Sigstore trusted roots (``trusted_root.json``): the certificate authorities that issue signing
certificates (Fulcio) and the transparency logs (Rekor) whose keys sign log entries.

The format is Sigstore's ``application/vnd.dev.sigstore.trustedroot+json;version=0.1``::

    {"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
     "tlogs": [{"baseUrl": "…", "hashAlgorithm": "SHA2_256",
                "publicKey": {"rawBytes": "<base64 DER SubjectPublicKeyInfo>",
                              "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                              "validFor": {"start": "2021-01-12T11:53:27Z"}},
                "logId": {"keyId": "<base64 SHA-256 of the DER key>"}}],
     "certificateAuthorities": [{"uri": "…", "certChain": {"certificates": [
                                    {"rawBytes": "<base64 DER>"}, …]},
                                 "validFor": {"start": "…", "end": "…"}}],
     "ctlogs": […], "timestampAuthorities": […]}

``ctlogs`` and ``timestampAuthorities`` are read past (certificate transparency timestamps and
RFC 3161 timestamps are not checked; the Rekor entry is the signature's time and transparency).

The public Sigstore root shipped in ``data/sigstore_trusted_root.json`` is the one the
``sigstore`` package (4.5.1, Apache-2.0) bundles for ``tuf-repo-cdn.sigstore.dev``, which the
Sigstore project distributes through TUF; it is read offline, never fetched.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import TYPE_CHECKING, Any, Final

from argocd_image_updater.verify.keys import PublicKey, UnusableKey, check_key

if TYPE_CHECKING:  # imported where used: a controller that verifies nothing never loads it
    from cryptography import x509

MEDIA_TYPE_PREFIX: Final = "application/vnd.dev.sigstore.trustedroot"
PUBLIC_ROOT: Final = "data/sigstore_trusted_root.json"
PUBLIC_NAME: Final = "the public Sigstore trusted root"


class TrustRootError(ValueError):
    """A ``trusted_root.json`` that cannot be used; the message names the field."""


@dataclass(frozen=True, slots=True)
class Window:
    start: datetime | None = None
    end: datetime | None = None

    def covers(self, when: datetime) -> bool:
        return (self.start is None or self.start <= when) and (self.end is None or when <= self.end)


@dataclass(frozen=True, slots=True)
class Authority:
    """A certificate authority: its chain (issuing certificate first, root last)."""

    certificates: tuple[x509.Certificate, ...]
    valid: Window
    uri: str = ""


@dataclass(frozen=True, slots=True)
class LogKey:
    key_id: bytes
    key: PublicKey
    valid: Window
    url: str = ""


@dataclass(frozen=True, slots=True)
class TrustedRoot:
    authorities: tuple[Authority, ...]
    logs: tuple[LogKey, ...]
    name: str
    """Where it comes from, for messages (``ConfigMap ns/name key k``)."""
    fingerprint: str
    """SHA-256 of the document (a changed root is a changed policy)."""

    def log(self, key_id: bytes) -> LogKey | None:
        return next((log for log in self.logs if log.key_id == key_id), None)


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TrustRootError(f"{where} is not an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise TrustRootError(f"{where} is not a list")
    return value


def _bytes(value: Any, where: str) -> bytes:
    if not isinstance(value, str) or not value:
        raise TrustRootError(f"{where} is missing")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise TrustRootError(f"{where} is not base64") from None


def _time(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TrustRootError(f"{where} is not an RFC 3339 time")
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise TrustRootError(f"{where}: '{value}' is not an RFC 3339 time") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _window(value: Any, where: str) -> Window:
    if value is None:
        return Window()
    data = _object(value, where)
    return Window(
        _time(data.get("start"), f"{where}.start"), _time(data.get("end"), f"{where}.end")
    )


def _log(value: Any, where: str) -> LogKey:
    data = _object(value, where)
    public = _object(data.get("publicKey"), f"{where}.publicKey")
    der = _bytes(public.get("rawBytes"), f"{where}.publicKey.rawBytes")
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    try:
        key = check_key(serialization.load_der_public_key(der))
    except (ValueError, UnsupportedAlgorithm, UnusableKey) as err:
        raise TrustRootError(
            f"{where}.publicKey.rawBytes: not a usable public key ({err})"
        ) from None
    log_id = data.get("logId")
    key_id = (
        _bytes(_object(log_id, f"{where}.logId").get("keyId"), f"{where}.logId.keyId")
        if log_id is not None
        else hashlib.sha256(der).digest()
    )
    url = data.get("baseUrl")
    return LogKey(
        key_id,
        key,
        _window(public.get("validFor"), f"{where}.publicKey.validFor"),
        url if isinstance(url, str) else "",
    )


def _authority(value: Any, where: str) -> Authority:
    data = _object(value, where)
    chain = _object(data.get("certChain"), f"{where}.certChain")
    raw = _list(chain.get("certificates"), f"{where}.certChain.certificates")
    if not raw:
        raise TrustRootError(f"{where}.certChain.certificates is empty")
    from cryptography import x509

    certificates = []
    for i, item in enumerate(raw):
        at = f"{where}.certChain.certificates[{i}].rawBytes"
        der = _bytes(_object(item, at).get("rawBytes"), at)
        try:
            certificates.append(x509.load_der_x509_certificate(der))
        except ValueError as err:
            raise TrustRootError(f"{at}: not a DER certificate ({err})") from None
    uri = data.get("uri")
    return Authority(
        tuple(certificates),
        _window(data.get("validFor"), f"{where}.validFor"),
        uri if isinstance(uri, str) else "",
    )


def parse_trusted_root(document: bytes, name: str) -> TrustedRoot:
    """A ``trusted_root.json``; :class:`TrustRootError` names the field that is wrong."""
    try:
        data = json.loads(document)
    except (ValueError, UnicodeDecodeError) as err:
        raise TrustRootError(f"not valid JSON ({err})") from None
    data = _object(data, "trusted root")
    media_type = data.get("mediaType")
    if not isinstance(media_type, str) or not media_type.startswith(MEDIA_TYPE_PREFIX):
        raise TrustRootError(
            f"mediaType is {media_type!r}, expected "
            "'application/vnd.dev.sigstore.trustedroot+json;version=0.1'"
        )
    authorities = tuple(
        _authority(item, f"certificateAuthorities[{i}]")
        for i, item in enumerate(
            _list(data.get("certificateAuthorities"), "certificateAuthorities")
        )
    )
    logs = tuple(
        _log(item, f"tlogs[{i}]") for i, item in enumerate(_list(data.get("tlogs"), "tlogs"))
    )
    if not authorities:
        raise TrustRootError(
            "certificateAuthorities is empty (keyless needs a certificate authority)"
        )
    if not logs:
        raise TrustRootError("tlogs is empty (keyless needs a transparency log key)")
    return TrustedRoot(authorities, logs, name, hashlib.sha256(document).hexdigest())


@functools.cache
def public_trusted_root() -> TrustedRoot:
    """The public Sigstore trusted root shipped with the package."""
    document = resources.files("argocd_image_updater.verify").joinpath(PUBLIC_ROOT).read_bytes()
    return parse_trusted_root(document, PUBLIC_NAME)
