"""The signature of the ``webhook`` (and, when configured, ``cloudevents``) payloads.

``X-Timestamp: <unix seconds>`` and ``X-Signature-256: sha256=<hex>``, the HMAC-SHA256 with the
signing secret over ``<timestamp>.<body>``: a receiver recomputes it over the raw body and
refuses a stale timestamp, so a captured message cannot be replayed later.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

TIMESTAMP_HEADER: Final = "X-Timestamp"
SIGNATURE_HEADER: Final = "X-Signature-256"


def signature(secret: bytes, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>`` of ``<timestamp>.<body>``."""
    digest = hmac.new(secret, timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return f"sha256={digest.hexdigest()}"


def signature_headers(secret: bytes, body: bytes, unix_seconds: int) -> dict[str, str]:
    timestamp = str(unix_seconds)
    return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: signature(secret, timestamp, body)}
