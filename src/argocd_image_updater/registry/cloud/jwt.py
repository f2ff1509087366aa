"""Reading (not verifying) the claims of a JWT: the tenant of an Entra ID token, the expiry of an
ACR refresh token. Pure: no I/O."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any


def unverified_claims(token: str) -> dict[str, Any]:
    """The payload of ``header.payload.signature``; empty when it is not a readable JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        data = json.loads(base64.urlsafe_b64decode(payload))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def expiry_claim(token: str) -> float | None:
    exp = unverified_claims(token).get("exp")
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None
