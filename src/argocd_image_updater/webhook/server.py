"""The registry webhook HTTP(S) server.

* ``POST /webhook?type=<type>`` (or header ``X-Registry-Type``): the body (at most ``max_body``
  bytes, else ``413 request body too large``) goes to :meth:`WebhookParsers.handle`; a refused
  call is answered with the original's status and error text, an accepted one is handed to the
  :class:`~argocd_image_updater.webhook.dispatch.EventDispatcher` and answered
  ``200 Webhook received and processing`` while the update runs in the background.
* ``GET /healthz`` → ``200 OK``. Other paths answer 404, other methods 405.

Checks in order: the per-source request limit (``429``), leadership (a follower answers ``503``
so a load balancer in front of several replicas retries elsewhere), body size, type, secret and
payload (``400``/``413``), the hourly event budget (``429``), room in the dispatcher (``503``).
Secrets are never logged: each is registered for masking and the refusal texts never carry them.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from aiohttp import web

from argocd_image_updater.model.registry_event import RegistryEvent
from argocd_image_updater.observe.log import Logger, get_logger, register_secret
from argocd_image_updater.webhook.checks import MAX_BODY_BYTES
from argocd_image_updater.webhook.dispatch import EventDispatcher, metric_type, record_rejection
from argocd_image_updater.webhook.events import WebhookRejected, WebhookRequest
from argocd_image_updater.webhook.ratelimit import (
    DEFAULT_PER_SOURCE_PER_MINUTE,
    WebhookRateLimiter,
    retry_after,
)
from argocd_image_updater.webhook.router import WebhookParsers, detect_type

ACCEPTED_TEXT: Final = "Webhook received and processing"
NOT_LEADER_TEXT: Final = "not the leader; retry against the leader"
TOO_MANY_PENDING_TEXT: Final = "too many pending events"
SHUTTING_DOWN_TEXT: Final = "shutting down; retry later"
TOO_LARGE_TEXT: Final = "request body too large"
RATE_LIMITED_TEXT: Final = "webhook rate limit exceeded; retry later"
SOURCE_LIMITED_TEXT: Final = "too many requests from this address; retry later"
READ_TIMEOUT_TEXT: Final = "timed out reading the request body"

_log = get_logger("webhook.server")


def _always_leader() -> bool:
    return True


def _text(status: int, text: str, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=text, headers=dict(headers or {}))


class _BodyTooLarge(Exception):
    pass


class WebhookServer:
    """Serves registry webhooks on ``host:port`` (``port`` 0 picks a free port).

    ``secrets`` maps webhook type names (``docker.io``, ``ghcr.io``, …, ``generic``) to their
    secrets; ``ssl_context`` ``None`` serves plain HTTP (``--disable-tls``). ``clock`` is the
    wall clock the ``generic`` type checks its timestamps against.
    """

    def __init__(
        self,
        *,
        port: int,
        host: str = "0.0.0.0",  # noqa: S104 - registries call in from outside the pod
        secrets: Mapping[str, str],
        require_secret: bool,
        ssl_context: ssl.SSLContext | None,
        rate_limit_per_hour: int,
        dispatcher: EventDispatcher,
        is_leader: Callable[[], bool] = _always_leader,
        max_body: int = MAX_BODY_BYTES,
        clock: Callable[[], float] = time.time,
        per_source_per_minute: int = DEFAULT_PER_SOURCE_PER_MINUTE,
        read_timeout: float = 30.0,
        shutdown_timeout: float = 5.0,
    ) -> None:
        if max_body < 1:
            raise ValueError("max_body must be at least 1 byte")
        self._parsers = WebhookParsers(clock=clock)
        self._secrets = {name: value for name, value in secrets.items() if value}
        self._require_secret = require_secret
        # Unknown type names in ``secrets`` are a configuration error: fail now, not per call.
        self.registered = self._parsers.registered(self._secrets, require_secret)
        for value in self._secrets.values():
            register_secret(value)
        self._host = host
        self._port = port
        self._ssl = ssl_context
        self._limiter = WebhookRateLimiter(rate_limit_per_hour, per_source_per_minute)
        self._dispatcher = dispatcher
        self._is_leader = is_leader
        self._max_body = max_body
        self._read_timeout = read_timeout
        self._shutdown_timeout = shutdown_timeout
        self._runner: web.AppRunner | None = None
        self.port = 0
        """The port actually listened on, once started."""

    @property
    def tls(self) -> bool:
        return self._ssl is not None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/webhook", self._webhook)
        app.router.add_get("/healthz", self._healthz)
        return app

    async def start(self) -> int:
        """Listen and serve; returns the port (useful with ``port=0``)."""
        if self._runner is not None:
            raise RuntimeError("the webhook server is already running")
        runner = web.AppRunner(
            self.app(),
            access_log=None,
            handle_signals=False,
            shutdown_timeout=self._shutdown_timeout,
            auto_decompress=False,  # signatures cover the bytes as sent
        )
        await runner.setup()
        try:
            site = web.TCPSite(
                runner,
                self._host,
                self._port,
                ssl_context=self._ssl,
            )
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        addresses = runner.addresses
        self.port = int(addresses[0][1]) if addresses else self._port
        if not self.registered:
            _log.warning(
                "No webhook handlers are registered; every webhook call will be refused. "
                "Configure at least one webhook secret or set --webhook-require-secret=false"
            )
        _log.info(
            "Starting webhook server on port %d",
            self.port,
            tls=self.tls,
            types=",".join(self.registered),
        )
        return self.port

    async def stop(self) -> None:
        """Stop listening and close connections (pending events stay with the dispatcher)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
            _log.info("Webhook server stopped")

    async def __aenter__(self) -> WebhookServer:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------------------- handlers

    async def _healthz(self, _: web.Request) -> web.Response:
        return _text(200, "OK")

    async def _webhook(self, request: web.Request) -> web.Response:
        received = self._dispatcher.clock()
        remote = _remote(request)
        type_name = request.query.get("type", "") or request.headers.get("X-Registry-Type", "")
        log = _log.bind(webhook_remote=remote)

        wait = self._limiter.admit_source(request.remote or remote)
        if wait:
            record_rejection(type_name, "source-rate-limited")
            log.warning("Refused webhook call: too many requests from this address")
            return _text(429, SOURCE_LIMITED_TEXT, {"Retry-After": retry_after(wait)})
        if not self._is_leader():
            record_rejection(type_name, "not-leader")
            log.debug("Refused webhook call: this replica is not the leader")
            return _text(503, NOT_LEADER_TEXT, {"Retry-After": "1"})

        try:
            async with asyncio.timeout(self._read_timeout):
                body = await self._read_body(request)
        except _BodyTooLarge:
            record_rejection(type_name, "too-large")
            log.warning("Refused webhook call: request body too large")
            return _text(413, TOO_LARGE_TEXT, {"Connection": "close"})
        except TimeoutError:
            record_rejection(type_name, "read-timeout")
            log.warning("Refused webhook call: timed out reading the request body")
            return _text(408, READ_TIMEOUT_TEXT, {"Connection": "close"})

        call = WebhookRequest(
            method=request.method,
            path=request.path,
            query=_first_values(request.query.items(), fold=False),
            headers=_first_values(request.headers.items(), fold=True),
            body=body,
            remote=remote,
        )
        type_name = detect_type(call)
        try:
            event = self._parsers.handle(
                call, self._secrets, self._require_secret, max_body=self._max_body
            )
        except WebhookRejected as exc:
            record_rejection(type_name, exc.reason)
            log.warning(
                "Refused webhook call: %s",
                exc.message,
                webhook_type=metric_type(type_name),
                reason=exc.reason,
            )
            return _text(exc.status, exc.message)
        return self._accept(event, received, log)

    def _accept(self, event: RegistryEvent, received: float, log: Logger) -> web.Response:
        bound = log.bind(
            webhook_registry=event.registry,
            webhook_repository=event.repository,
            webhook_tag=event.tag,
            webhook_type=event.source_type,
        )
        wait = self._limiter.admit_event()
        if wait:
            record_rejection(event.source_type, "rate-limited")
            bound.warning("Refused webhook event: hourly webhook rate limit reached")
            return _text(429, RATE_LIMITED_TEXT, {"Retry-After": retry_after(wait)})
        if not self._dispatcher.submit(event, received_at=received):
            if self._dispatcher.closed:
                return _text(503, SHUTTING_DOWN_TEXT, {"Retry-After": "5"})
            return _text(503, TOO_MANY_PENDING_TEXT, {"Retry-After": "5"})
        bound.info("Received webhook event")
        return _text(200, ACCEPTED_TEXT)

    async def _read_body(self, request: web.Request) -> bytes:
        declared = request.content_length
        if declared is not None and declared > self._max_body:
            raise _BodyTooLarge
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = await request.content.readany()
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > self._max_body:
                raise _BodyTooLarge
            chunks.append(chunk)


def _remote(request: web.Request) -> str:
    """``ip:port`` of the peer (like Go's ``RemoteAddr``), or just the address when unknown."""
    peer = request.transport.get_extra_info("peername") if request.transport else None
    if isinstance(peer, tuple) and len(peer) >= 2:
        host, port = str(peer[0]), peer[1]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return request.remote or ""


def _first_values(items: Iterable[tuple[str, str]], *, fold: bool) -> dict[str, str]:
    """The first value of each name (header names compared case-insensitively when ``fold``)."""
    result: dict[str, str] = {}
    seen: set[str] = set()
    for name, value in items:
        key = name.lower() if fold else name
        if key not in seen:
            seen.add(key)
            result[name] = value
    return result
