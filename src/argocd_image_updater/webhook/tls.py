"""TLS for the webhook server: certificate loading, a self-signed fallback, versions and ciphers.

Like the original, ``<tls_dir>/tls.crt`` and ``<tls_dir>/tls.key`` are used when both exist and are
non-empty (they are checked: parseable, currently valid, key matching); otherwise an in-memory
self-signed ECDSA P-256 certificate for ``localhost``, ``127.0.0.1`` and ``::1`` is made, valid for
one year. Its private key only touches the disk encrypted with a random one-time password, in a
private temporary file that is removed as soon as OpenSSL has read it.

Versions are ``1.1``, ``1.2`` or ``1.3`` (``tls1.2`` and blanks accepted; ``""`` = no bound);
the default is TLS 1.3 only. Ciphers use Go's names (``TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256``),
colon-separated, and apply to TLS 1.2 and older: with a minimum version of 1.3 they are checked
and then ignored with a warning, as in the original. TLS 1.3 suites cannot be chosen (always on).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import ssl
import tempfile
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from argocd_image_updater.observe.log import get_logger

CERT_FILE: Final = "tls.crt"
KEY_FILE: Final = "tls.key"
DEFAULT_VERSION: Final = "1.3"
SELF_SIGNED_VALIDITY: Final = timedelta(days=365)

_log = get_logger("webhook.tls")

_VERSIONS: Final[Mapping[str, ssl.TLSVersion]] = {
    "1.1": ssl.TLSVersion.TLSv1_1,
    "1.2": ssl.TLSVersion.TLSv1_2,
    "1.3": ssl.TLSVersion.TLSv1_3,
}

# Go's crypto/tls cipher suite names → OpenSSL names (TLS 1.2 and older).
GO_CIPHERS: Final[Mapping[str, str]] = {
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
}
TLS13_CIPHERS: Final = frozenset(
    {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}
)
"""Accepted like the original accepts them, but TLS 1.3 suites are always enabled."""


class TLSConfigError(ValueError):
    """The TLS settings or the certificate files cannot be used; the message says why."""


def parse_tls_version(text: str, flag: str = "--tlsminversion") -> ssl.TLSVersion | None:
    """``1.1``/``1.2``/``1.3`` (also ``TLS1.2``, surrounding blanks) → version; ``""`` → ``None``."""
    value = text.strip().lower().removeprefix("tls")
    if not value:
        return None
    version = _VERSIONS.get(value)
    if version is None:
        raise TLSConfigError(f"invalid {flag} '{text}': use 1.1, 1.2 or 1.3")
    return version


def parse_tls_ciphers(text: str) -> list[str]:
    """Go cipher names, colon-separated (blanks and empty entries ignored), checked by name."""
    names = [part.strip() for part in text.split(":") if part.strip()]
    unknown = [name for name in names if name not in GO_CIPHERS and name not in TLS13_CIPHERS]
    if unknown:
        raise TLSConfigError(f"invalid --tlsciphers: unknown cipher suite(s) {', '.join(unknown)}")
    return names


def _set_versions(context: ssl.SSLContext, low: ssl.TLSVersion, high: ssl.TLSVersion) -> None:
    with warnings.catch_warnings():
        # Python flags TLS 1.1 as deprecated; it is still the operator's explicit choice.
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = low
        context.maximum_version = high


def _version_name(version: ssl.TLSVersion) -> str:
    return next(name for name, value in _VERSIONS.items() if value == version)


def _configure_protocols(
    context: ssl.SSLContext, min_version: str, max_version: str, ciphers: str
) -> None:
    low = parse_tls_version(min_version, "--tlsminversion")
    high = parse_tls_version(max_version, "--tlsmaxversion")
    if low is not None and high is not None and low > high:
        raise TLSConfigError(
            f"--tlsminversion {_version_name(low)} cannot be higher than "
            f"--tlsmaxversion {_version_name(high)}"
        )
    if low == ssl.TLSVersion.TLSv1_1 or high == ssl.TLSVersion.TLSv1_1:
        _log.warning("TLS 1.1 is deprecated and insecure; prefer 1.2 or 1.3")
    _set_versions(
        context,
        low if low is not None else ssl.TLSVersion.TLSv1_2,
        high if high is not None else ssl.TLSVersion.MAXIMUM_SUPPORTED,
    )
    names = parse_tls_ciphers(ciphers)
    if not names:
        return
    if low is None or low == ssl.TLSVersion.TLSv1_3:
        _log.warning("TLS cipher suites are ignored when the minimum TLS version is 1.3")
        return
    openssl_names = [GO_CIPHERS[name] for name in names if name in GO_CIPHERS]
    if not openssl_names:
        return
    try:
        context.set_ciphers(":".join(openssl_names))
    except ssl.SSLError:
        raise TLSConfigError(
            f"invalid --tlsciphers: none of {', '.join(names)} is available in this TLS library"
        ) from None


def self_signed_pem(
    now: datetime | None = None, validity: timedelta = SELF_SIGNED_VALIDITY
) -> tuple[bytes, ec.EllipticCurvePrivateKey]:
    """A fresh self-signed ECDSA P-256 certificate (PEM) for localhost and its private key."""
    key = ec.generate_private_key(ec.SECP256R1())
    start = now or datetime.now(UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    sans = x509.SubjectAlternativeName(
        [
            x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.IPAddress(ipaddress.ip_address("::1")),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - timedelta(minutes=5))
        .not_valid_after(start + validity)
        .add_extension(sans, critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), key


def _load_self_signed(context: ssl.SSLContext, now: datetime | None) -> None:
    cert_pem, key = self_signed_pem(now)
    password = secrets.token_bytes(32)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(password),
    )
    fd, name = tempfile.mkstemp(prefix="webhook-tls-", suffix=".pem")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(cert_pem + key_pem)
        context.load_cert_chain(name, password=password)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


def _non_empty_file(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size > 0
    except OSError:
        return False


def _no_password() -> bytes:
    raise TLSConfigError("encrypted private keys are not supported")


def _check_certificate(path: Path, now: datetime) -> None:
    try:
        chain = x509.load_pem_x509_certificates(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise TLSConfigError(f"{path}: not a PEM certificate ({exc})") from None
    leaf = chain[0]
    if now < leaf.not_valid_before_utc:
        raise TLSConfigError(
            f"{path}: certificate is not valid before {leaf.not_valid_before_utc:%Y-%m-%dT%H:%M:%SZ}"
        )
    if now > leaf.not_valid_after_utc:
        raise TLSConfigError(
            f"{path}: certificate expired on {leaf.not_valid_after_utc:%Y-%m-%dT%H:%M:%SZ}"
        )


def _load_files(context: ssl.SSLContext, cert: Path, key: Path, now: datetime) -> None:
    _check_certificate(cert, now)
    try:
        context.load_cert_chain(cert, key, password=_no_password)
    except TLSConfigError as exc:
        raise TLSConfigError(f"{key}: {exc}") from None
    except ssl.SSLError as exc:
        reason = exc.reason or exc.__class__.__name__
        raise TLSConfigError(
            f"{key}: cannot load the private key for {cert} ({reason}); it must be an "
            "unencrypted PEM key matching the certificate"
        ) from None
    except OSError as exc:
        raise TLSConfigError(f"cannot read {cert} or {key}: {exc.strerror or exc}") from None


def server_ssl_context(
    tls_dir: Path,
    min_version: str = DEFAULT_VERSION,
    max_version: str = DEFAULT_VERSION,
    ciphers: str = "",
    *,
    http2: bool = False,
    now: datetime | None = None,
) -> ssl.SSLContext:
    """The webhook server's TLS context; :class:`TLSConfigError` when the settings are unusable.

    ``http2`` is accepted for ``--enable-http2``, but the server speaks HTTP/1.1 only, so ALPN
    always offers ``http/1.1`` (a warning says so when HTTP/2 was asked for).
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE
    _configure_protocols(context, min_version, max_version, ciphers)
    if http2:
        _log.warning("HTTP/2 is not available for the webhook server; serving HTTP/1.1")
    context.set_alpn_protocols(["http/1.1"])
    cert, key = Path(tls_dir) / CERT_FILE, Path(tls_dir) / KEY_FILE
    moment = now or datetime.now(UTC)
    if _non_empty_file(cert) and _non_empty_file(key):
        _load_files(context, cert, key, moment)
        _log.info("Using the webhook TLS certificate from %s", cert)
    else:
        if _non_empty_file(cert) or _non_empty_file(key):
            _log.warning(
                "Only one of %s and %s is present; using a self-signed certificate", cert, key
            )
        _load_self_signed(context, moment)
        _log.info("Using a generated self-signed webhook TLS certificate for localhost")
    return context
