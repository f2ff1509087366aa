"""When and how long to wait before retrying an HTTP request: the registry client and the
pull/merge request clients share it (pure)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_RANDOM = random.Random()


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and jitter.

    ``attempts`` counts every try (1 = never retry). A ``Retry-After`` header overrides the
    backoff but is capped at ``max_retry_after`` seconds.
    """

    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 10.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"retry attempts must be at least 1, got {self.attempts}")

    def backoff(self, retry: int, rng: random.Random | None = None) -> float:
        """Delay before retry number ``retry`` (0-based): half fixed, half random ("equal jitter")."""
        ceiling = min(self.max_delay, self.base_delay * (2.0**retry))
        return ceiling / 2 + (rng or _RANDOM).uniform(0, ceiling / 2)

    def delay(self, retry: int, retry_after: str | None, now: datetime | None = None) -> float:
        parsed = parse_retry_after(retry_after, now) if retry_after else None
        if parsed is not None:
            return min(parsed, self.max_retry_after)
        return self.backoff(retry)


def parse_retry_after(value: str, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or an HTTP date); None if bad."""
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
