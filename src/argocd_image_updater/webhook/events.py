"""Values exchanged between the webhook HTTP layer and the payload parsers.

:class:`WebhookRequest` is what the server hands to the parsers (an already read body, no I/O),
a :class:`~argocd_image_updater.model.registry_event.RegistryEvent` is what a valid
notification yields, and :class:`WebhookRejected` carries the HTTP status and error text the
original answers with when a notification is refused.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field


class Headers(Mapping[str, str]):
    """Read-only HTTP headers with case-insensitive lookups (the original casing is kept)."""

    __slots__ = ("_items",)

    def __init__(self, source: Mapping[str, str] | None = None) -> None:
        items: dict[str, tuple[str, str]] = {}
        for name, value in (source or {}).items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise TypeError(f"header {name!r}: names and values must be strings")
            items[name.lower()] = (name, value)
        self._items = items

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()][1]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return (original for original, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:  # values may hold secrets: show names only
        return f"Headers({sorted(self)!r})"

    def value(self, name: str) -> str:
        """The header's value, or ``""`` when absent (like Go's ``Header.Get``)."""
        entry = self._items.get(name.lower())
        return entry[1] if entry else ""


@dataclass(frozen=True, slots=True)
class WebhookRequest:
    """An incoming webhook call with its body already read.

    ``query`` holds the first value of each query parameter and ``headers`` accepts any mapping;
    it is converted into case-insensitive :class:`Headers`. The body is plain bytes, so it can be
    read by validation and parsing alike.
    """

    method: str
    path: str = "/webhook"
    query: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    remote: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.body, bytes):
            raise TypeError(f"webhook request body must be bytes, not {type(self.body).__name__}")
        if not isinstance(self.headers, Headers):
            object.__setattr__(self, "headers", Headers(self.headers))
        object.__setattr__(self, "query", dict(self.query))

    def header(self, name: str) -> str:
        """The header ``name`` (case-insensitive), or ``""`` when absent."""
        return self.headers.get(name, "")

    def param(self, name: str) -> str:
        """The query parameter ``name``, or ``""`` when absent."""
        return self.query.get(name, "")

    def __repr__(self) -> str:  # query and headers may carry secrets: never show their values
        return (
            f"WebhookRequest(method={self.method!r}, path={self.path!r}, "
            f"query={sorted(self.query)!r}, headers={sorted(self.headers)!r}, "
            f"body=<{len(self.body)} bytes>, remote={self.remote!r})"
        )


class RejectionReason(enum.StrEnum):
    """Short machine-readable codes for why a webhook call was refused (metric labels)."""

    BAD_METHOD = "bad-method"
    BAD_CONTENT_TYPE = "bad-content-type"
    MISSING_SECRET = "missing-secret"
    BAD_SIGNATURE = "bad-signature"
    BAD_TIMESTAMP = "bad-timestamp"
    WRONG_EVENT = "wrong-event"
    MALFORMED_JSON = "malformed-json"
    MISSING_FIELD = "missing-field"
    UNSUPPORTED_TYPE = "unsupported-type"
    NO_HANDLERS = "no-handlers"
    TOO_LARGE = "too-large"


class WebhookRejected(Exception):
    """A webhook call was refused: ``status`` and ``message`` are the HTTP answer (the original's
    status code and error text), ``reason`` a short code from :class:`RejectionReason` for
    metrics."""

    def __init__(self, message: str, *, reason: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = str(reason)

    def __repr__(self) -> str:
        return f"WebhookRejected(status={self.status}, reason={self.reason!r}, message={self.message!r})"


def reject(message: str, reason: RejectionReason, status: int = 400) -> WebhookRejected:
    """The refusal of a call: ``message`` is the answer's text."""
    return WebhookRejected(message, reason=reason, status=status)
