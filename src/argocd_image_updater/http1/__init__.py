"""HTTP clients of the product: httpx on :class:`AsyncHTTP1Transport` (HTTP/1.1 over asyncio
streams), or on httpx's own transport where a proxy is in play."""

from __future__ import annotations

import os
import ssl
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

from argocd_image_updater.http1.transport import DEFAULT_LIMITS, AsyncHTTP1Transport

__all__ = [
    "DEFAULT_LIMITS",
    "AsyncHTTP1Transport",
    "async_client",
    "environment_proxies",
    "send",
    "stream",
]

_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")
_direct: weakref.WeakKeyDictionary[httpx.AsyncClient, AsyncHTTP1Transport] = (
    weakref.WeakKeyDictionary()
)
"""The clients :func:`async_client` built on :class:`AsyncHTTP1Transport`, with it."""


def environment_proxies() -> bool:
    """Whether the environment names a proxy (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, in
    either case), which httpx would then apply to the hosts ``NO_PROXY`` does not exclude."""
    return any(name.lower() in _PROXY_VARIABLES and value for name, value in os.environ.items())


def async_client(
    *,
    ssl_context: ssl.SSLContext | None = None,
    proxy: str | None = None,
    limits: httpx.Limits = DEFAULT_LIMITS,
    **options: Any,
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` with ``options`` (base URL, auth, headers, timeouts …).

    Without a proxy it runs on :class:`AsyncHTTP1Transport`. With ``proxy``, or a proxy in the
    environment, it is httpx's own client, which speaks to proxies (CONNECT tunnels, ``NO_PROXY``
    exclusions) exactly as before; TLS is then verified with ``ssl_context`` as well.
    """
    if proxy or environment_proxies():
        from argocd_image_updater.kits.absent_modules import mark_absent

        mark_absent("sniffio")  # httpcore looks for it on every request: see kits.absent_modules
        return httpx.AsyncClient(
            verify=ssl_context if ssl_context is not None else True,
            proxy=proxy,
            limits=limits,
            **options,
        )
    transport = AsyncHTTP1Transport(ssl_context=ssl_context, limits=limits)
    client = httpx.AsyncClient(transport=transport, **options)
    _direct[client] = transport
    return client


def _plain_transport(client: httpx.AsyncClient) -> AsyncHTTP1Transport | None:
    """The transport of a client of :func:`async_client` that has nothing for httpx's request
    pipeline to do (no auth flow, cookies or event hooks); None for any other client."""
    transport = _direct.get(client)
    if (
        transport is None
        or client.auth is not None
        or client.cookies
        or any(client.event_hooks.values())
    ):
        return None
    return transport


async def send(client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
    """``client.send(request)`` (redirects not followed, the body read), straight to the
    transport for a client that has nothing to add: about a fifth of a small request's CPU
    less."""
    transport = _plain_transport(client)
    if transport is None:
        return await client.send(request, follow_redirects=False)
    response = await transport.handle_async_request(request)
    response.request = request
    try:
        await response.aread()
    finally:
        await response.aclose()
    return response


@asynccontextmanager
async def stream(
    client: httpx.AsyncClient,
    method: str,
    url: httpx.URL,
    *,
    headers: Mapping[str, str],
    follow_redirects: bool = False,
) -> AsyncIterator[httpx.Response]:
    """``client.stream(method, url, headers=headers, follow_redirects=follow_redirects)``,
    straight to the transport when no redirect is to be followed and the client has nothing to
    add (see :func:`send`): the path every registry request takes."""
    transport = None if follow_redirects else _plain_transport(client)
    if transport is None:
        async with client.stream(
            method, url, headers=headers, follow_redirects=follow_redirects
        ) as response:
            yield response
        return
    request = client.build_request(method, url, headers=headers)
    response = await transport.handle_async_request(request)
    response.request = request
    try:
        yield response
    finally:
        await response.aclose()
