"""HTTP endpoints for operators: ``/metrics`` (Prometheus), ``/healthz`` and ``/readyz``.

``/readyz`` answers 200 only once the first cycle has filled the caches; ``/healthz`` turns 503
when the watchdog sees no cycle finish within ``stall_after`` (a stuck controller gets restarted
by its liveness probe instead of silently doing nothing).
"""

from __future__ import annotations

import ssl

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from argocd_image_updater.observe.health import Health
from argocd_image_updater.observe.metrics import REGISTRY


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``:8081``, ``0.0.0.0:8081`` or ``8081``; ``0`` or empty disables; ``:0`` picks a free port."""
    address = address.strip()
    if address in ("", "0"):
        return None
    host, _, port = address.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"invalid bind address '{address}': use [host]:port or 0") from None
    if not 0 <= number < 65536:
        raise ValueError(f"invalid bind address '{address}': port out of range")
    return (host.strip("[]") or "0.0.0.0"), number  # noqa: S104 - probes must be reachable


def metrics_app() -> web.Application:
    async def metrics(_: web.Request) -> web.Response:
        body = generate_latest(REGISTRY)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    return app


def health_app(health: Health) -> web.Application:
    async def healthz(_: web.Request) -> web.Response:
        ok, message = health.healthy()
        return web.Response(status=200 if ok else 503, text=message)

    async def readyz(_: web.Request) -> web.Response:
        if health.ready:
            return web.Response(text="ok")
        return web.Response(status=503, text="waiting for the first update cycle")

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app


class Servers:
    """Starts the metrics and health servers on their addresses; stop with :meth:`close`."""

    def __init__(self) -> None:
        self._runners: list[web.AppRunner] = []
        self.ports: dict[str, int] = {}

    async def start(
        self,
        name: str,
        app: web.Application,
        address: str,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        bind = parse_bind_address(address)
        if bind is None:
            return
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, bind[0], bind[1], ssl_context=ssl_context)
        await site.start()
        self._runners.append(runner)
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.ports[name] = sockets[0].getsockname()[1] if sockets else bind[1]

    async def close(self) -> None:
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners.clear()
