"""HTTP/1.1 for the product's clients: :func:`async_client` builds one, :func:`fetch` sends a
request through it and returns the :class:`Answer` read whole."""

from __future__ import annotations

from argocd_image_updater.http1.answer import Answer
from argocd_image_updater.http1.client import (
    DEFAULT_DEADLINE,
    DeadlineExceeded,
    ProxyConfigError,
    async_client,
    environment_proxies,
    fetch,
)
from argocd_image_updater.http1.transport import DEFAULT_LIMITS, AsyncHTTP1Transport

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_LIMITS",
    "Answer",
    "AsyncHTTP1Transport",
    "DeadlineExceeded",
    "ProxyConfigError",
    "async_client",
    "environment_proxies",
    "fetch",
]
