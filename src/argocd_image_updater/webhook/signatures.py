"""Secret and signature checks for webhook calls (pure, constant-time).

* shared secrets (query parameter, ``Authorization`` or ``X-Webhook-Secret`` header) are compared
  with :func:`secrets_equal`;
* GitHub-style ``sha256=<hex>`` HMAC signatures over the raw body with
  :func:`verify_prefixed_signature`;
* the ``generic`` type signs ``"<timestamp>.<raw body>"`` (see :func:`generic_signing_input`) and
  its ``X-Timestamp`` must lie within :data:`GENERIC_TIMESTAMP_TOLERANCE` of the receiver's clock.
"""

from __future__ import annotations

import hashlib
import hmac
import re

SIGNATURE_PREFIX = "sha256="
GENERIC_TIMESTAMP_TOLERANCE = 300.0
"""Seconds a ``generic`` notification's timestamp may differ from the receiver's clock."""

_UNIX_SECONDS = re.compile(r"[0-9]{1,12}")


def secrets_equal(given: str, expected: str) -> bool:
    """Whether a presented secret equals the configured one, in constant time."""
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def hmac_sha256_hex(secret: str, message: bytes) -> str:
    """Lower-case hex HMAC-SHA256 of ``message`` keyed with ``secret``."""
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def verify_prefixed_signature(signature: str, secret: str, message: bytes) -> bool:
    """Whether ``signature`` is ``sha256=<hex>`` of ``message`` keyed with ``secret``.

    Like GitHub's ``X-Hub-Signature-256`` check in the original, the hex digest is compared as
    text (lower case) and in constant time; a missing prefix or an empty value never matches.
    """
    if not signature.startswith(SIGNATURE_PREFIX):
        return False
    given = signature[len(SIGNATURE_PREFIX) :]
    expected = hmac_sha256_hex(secret, message)
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("ascii"))


def generic_signing_input(timestamp: str, body: bytes) -> bytes:
    """The bytes a ``generic`` notification signs: the ``X-Timestamp`` text, ``.``, the raw body."""
    return timestamp.encode("utf-8") + b"." + body


def sign_generic(secret: str, timestamp: int | str, body: bytes) -> str:
    """The ``X-Signature-256`` header value a sender attaches to a ``generic`` notification."""
    digest = hmac_sha256_hex(secret, generic_signing_input(str(timestamp), body))
    return f"{SIGNATURE_PREFIX}{digest}"


def parse_timestamp(value: str) -> int | None:
    """Unix seconds from an ``X-Timestamp`` header, or ``None`` when it is not a plain integer."""
    text = value.strip()
    if not _UNIX_SECONDS.fullmatch(text):
        return None
    return int(text)


def timestamp_fresh(
    timestamp: int, now: float, tolerance: float = GENERIC_TIMESTAMP_TOLERANCE
) -> bool:
    """Whether ``timestamp`` lies within ``tolerance`` seconds of ``now`` (either direction)."""
    return abs(now - timestamp) <= tolerance
