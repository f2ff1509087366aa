"""A finished HTTP exchange as :func:`argocd_image_updater.http1.fetch` returns it: status, header
fields as received, the body read whole. Lighter than ``httpx.Response`` (built per request,
read by a few fields): header lookups scan the raw fields, and ``httpx.Headers`` is built only
when a caller asks for all of them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx


def _text(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


@dataclass(slots=True, kw_only=True)
class Answer:
    """``status`` and ``reason``, the header fields in arrival order (``raw_headers``), the body
    (``truncated`` when it was longer than the caller's limit, then cut there), and the request's
    ``method`` and ``url``."""

    status: int
    raw_headers: list[tuple[bytes, bytes]]
    body: bytes
    method: str
    url: str | httpx.URL
    reason: str = ""
    truncated: bool = False
    _headers: httpx.Headers | None = field(default=None, repr=False, compare=False)

    def header(self, name: str) -> str:
        """The field ``name`` (any case); several are joined with ``", "`` (as httpx does), and
        an absent one is ``""``."""
        values = self.header_list(name)
        return values[0] if len(values) == 1 else ", ".join(values)

    def header_list(self, name: str) -> list[str]:
        """Every value of the field ``name``, in arrival order."""
        wanted = name.lower().encode("latin-1")
        return [_text(value) for key, value in self.raw_headers if key.lower() == wanted]

    @property
    def headers(self) -> httpx.Headers:
        if self._headers is None:
            self._headers = httpx.Headers(self.raw_headers)
        return self._headers

    @property
    def links(self) -> dict[str | None, dict[str, str]]:
        """The ``Link`` header's links by relation, parsed as ``httpx.Response.links`` does."""
        if not self.header_list("link"):
            return {}
        return httpx.Response(self.status, headers=self.headers).links

    @property
    def path(self) -> str:
        """The path of the request's URL."""
        return self.url.path if isinstance(self.url, httpx.URL) else urlsplit(self.url).path

    def json(self) -> Any:
        return json.loads(self.body)
