"""Errors of native cloud logins. Messages say what went wrong and never hold a secret."""

from __future__ import annotations

import enum
from typing import Final

_DETAIL_LIMIT: Final = 400


class Failure(enum.StrEnum):
    SDK_MISSING = "sdk-missing"
    NO_IDENTITY = "no-identity"
    UNREACHABLE = "unreachable"
    DENIED = "denied"
    CONFIG = "config"
    INVALID_RESPONSE = "invalid-response"


PERMANENT: Final = frozenset({Failure.SDK_MISSING, Failure.NO_IDENTITY, Failure.CONFIG})
"""Failures that do not go away by themselves: retried only after the longest back-off."""


class CloudLoginError(Exception):
    """A cloud login failed; ``failure`` says in which way."""

    def __init__(self, message: str, failure: Failure) -> None:
        super().__init__(message)
        self.failure = failure


def shorten(text: str) -> str:
    """One line of at most a few hundred characters (SDK errors can be long)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _DETAIL_LIMIT else flat[:_DETAIL_LIMIT] + "…"
