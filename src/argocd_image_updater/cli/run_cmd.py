"""``argocd-image-updater run``: the controller."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
from collections.abc import Coroutine
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import click

from argocd_image_updater import __version__
from argocd_image_updater.cli import collector
from argocd_image_updater.cli.options import load_settings, settings_options, setup_logging
from argocd_image_updater.config.durations import format_go_duration
from argocd_image_updater.config.settings import Settings
from argocd_image_updater.observe.log import get_logger, register_secret

if TYPE_CHECKING:
    # Loaded when the command runs, so that `run --help` stays instant: the controller, the
    # Kubernetes client only for a cluster, the HTTP server only when something is served
    # (local mode with --once loads neither).
    from argocd_image_updater.controller.fleet_events import FleetEvents
    from argocd_image_updater.controller.membership import Membership
    from argocd_image_updater.controller.runner import Controller
    from argocd_image_updater.kube.client import KubeClient
    from argocd_image_updater.observe.health import Health
    from argocd_image_updater.webhook.server import WebhookServer

log = get_logger("run")

WEBHOOK_TLS_DIR = Path("/app/config/tls")
WEBHOOK_COALESCE_WINDOW = 0.05
"""Seconds events for one repository are gathered: bursts (one event per platform of a
multi-arch push) still coalesce, and a lone event is not held back for long; events during a
running update coalesce anyway."""
EXIT_STARTUP_ERROR: Final = 1
EXIT_CYCLE_ERRORS: Final = 4
"""``run --once``: the cycle ran, but an application, a manifest file or an object had an error."""


async def build_controller(settings: Settings) -> tuple[Controller, list[Any]]:
    # The controller is loaded only here, so that `run --help` stays instant; the Kubernetes
    # client (and Argo CD's) only for a cluster: local mode needs neither.
    from argocd_image_updater.cli.run_setup import load_registries

    registries = load_registries(str(settings.registries_conf_path))
    if settings.applications_api == "local":
        from argocd_image_updater.cli.run_local import build_local_controller

        return await build_local_controller(settings, registries)
    from argocd_image_updater.cli.run_cluster import build_cluster_controller

    return await build_cluster_controller(settings, registries)


async def close_resource(resource: Any) -> None:
    if hasattr(resource, "aclose"):
        await resource.aclose()
    elif hasattr(resource, "stop"):
        await resource.stop()
    else:
        await resource.close()


def bind_addresses(settings: Settings) -> tuple[str, str]:
    """(metrics, health) addresses; the v0.x port flags win; ``--once`` serves no probes."""
    metrics_address = str(settings.metrics_bind_address)
    if settings.metrics_port is not None:
        metrics_address = f":{settings.metrics_port}" if settings.metrics_port else "0"
    health_address = str(settings.health_probe_bind_address)
    if settings.health_port is not None:
        health_address = f":{settings.health_port}" if settings.health_port else "0"
    if runs_once(settings):
        health_address = "0"
    return metrics_address, health_address


def runs_once(settings: Settings) -> bool:
    """``--once``, or an interval of 0."""
    return bool(settings.once) or settings.interval <= timedelta(0)


def serves(address: str) -> bool:
    """Whether a bind address means "serve" (``0`` and "" switch the server off)."""
    return address.strip() not in ("", "0")


async def webhook_secrets(settings: Settings, kube: KubeClient | None) -> dict[str, str]:
    """Each type's secret: flag/environment first, else the argocd-image-updater-secret key."""
    from argocd_image_updater.cli.run_setup import IMAGE_UPDATER_SECRET
    from argocd_image_updater.kube.errors import KubeError
    from argocd_image_updater.webhook.registry import webhook_types

    secrets: dict[str, str] = {}
    stored: dict[str, bytes] = {}
    if kube is not None:
        try:
            stored = await kube.read_secret(kube.namespace, IMAGE_UPDATER_SECRET)
        except KubeError as err:
            log.debug("cannot read %s: %s", IMAGE_UPDATER_SECRET, str(err))
    for webhook_type in webhook_types():
        value = str(settings.values.get(webhook_type.option, "") or "")
        if not value:
            value = stored.get(webhook_type.secret_key, b"").decode()
        if value:
            secrets[webhook_type.name] = value
            register_secret(value)
    return secrets


async def start_webhook(
    settings: Settings, controller: Controller, port: int, closers: list[Any]
) -> tuple[WebhookServer, int]:
    """The webhook server of ``run --enable-webhook`` and of the ``webhook`` command."""
    from argocd_image_updater.cli.run_setup import StartupError
    from argocd_image_updater.controller.events import handle_event
    from argocd_image_updater.controller.leading import LeadershipLost, run_as_leader
    from argocd_image_updater.model.registry_event import RegistryEvent
    from argocd_image_updater.webhook.dispatch import EventDispatcher
    from argocd_image_updater.webhook.server import WebhookServer
    from argocd_image_updater.webhook.tls import TLSConfigError, server_ssl_context

    try:
        context = None
        if not settings.disable_tls:
            context = server_ssl_context(
                WEBHOOK_TLS_DIR,
                str(settings.tls_min_version),
                str(settings.tls_max_version),
                str(settings.tls_ciphers),
                http2=bool(settings.enable_http2),
            )
    except TLSConfigError as err:
        raise StartupError(f"webhook TLS: {err}") from None

    async def handle(event: RegistryEvent) -> None:
        with contextlib.suppress(LeadershipLost):  # logged where it is noticed
            await run_as_leader(
                controller.elector, handle_event(controller, event), "webhook event"
            )

    fleet = controller.fleet  # sharded: events are passed on to the owners of the other keys
    dispatcher = EventDispatcher(
        handle,
        coalesce_window=WEBHOOK_COALESCE_WINDOW,
        max_concurrency=int(settings.values.get("max_concurrent_updaters", 1)),
        forward=fleet.publish if fleet is not None else None,
    )
    if fleet is not None:
        fleet.receive = functools.partial(dispatcher.submit, forwarded=True)
    try:
        server = WebhookServer(
            port=port,
            secrets=await webhook_secrets(settings, controller.kube),
            require_secret=bool(settings.webhook_require_secret),
            ssl_context=context,
            rate_limit_per_hour=int(settings.webhook_ratelimit_allowed),
            per_source_per_minute=int(settings.webhook_ratelimit_per_source),
            dispatcher=dispatcher,
            # Sharded, every settled member takes events (for the keys it owns).
            is_leader=controller.shards.settled
            if controller.shards is not None
            else controller.is_leader,
        )
    except ValueError as err:
        raise StartupError(f"webhook: {err}") from None
    actual = await server.start()
    closers.append(server)
    log.info(
        "webhook server listening",
        port=actual,
        tls=context is not None,
        types=",".join(sorted(server.registered)),
    )
    return server, actual


async def _start_servers(settings: Settings, health: Health, closers: list[Any]) -> None:
    """/metrics and /healthz, /readyz where configured (the HTTP server is loaded only then)."""
    metrics_address, health_address = bind_addresses(settings)
    if not serves(metrics_address) and not serves(health_address):
        return
    from argocd_image_updater.cli.run_setup import StartupError
    from argocd_image_updater.observe.server import Servers, health_app, metrics_app
    from argocd_image_updater.webhook.tls import TLSConfigError, server_ssl_context

    servers = Servers()
    closers.append(servers)
    try:
        metrics_tls = None
        if settings.metrics_secure:
            # A self-signed certificate, like the original's metrics endpoint.
            metrics_tls = server_ssl_context(Path("/nonexistent"), "1.2", "1.3")
        await servers.start("metrics", metrics_app(), metrics_address, metrics_tls)
        await servers.start("health", health_app(health), health_address)
    except (OSError, ValueError, TLSConfigError) as err:
        raise StartupError(f"cannot start the metrics/health server: {err}") from None


def start_election(
    settings: Settings, controller: Controller, stop: asyncio.Event
) -> asyncio.Task[None] | None:
    """Who may write, running until ``stop`` is set: the membership of a sharded fleet
    (``--sharding``), else the leader election (``--leader-election``, the default); neither
    with ``--once`` or without a cluster. ``--shard-selector`` narrows the work either way."""
    controller.shard_selector = str(settings.shard_selector) or None
    if settings.once or controller.kube is None:
        return None
    if settings.sharding:
        from argocd_image_updater.cli.run_cluster import shard_membership
        from argocd_image_updater.controller.fleet_events import join_fleet
        from argocd_image_updater.controller.shard_state import ShardedStateStore

        membership = controller.shards = shard_membership(settings, controller.kube)
        controller.elector = membership
        fleet = controller.fleet = join_fleet(
            membership, controller.kube, controller.scanner.budget, controller.health
        )
        work = [membership.run(stop), fleet.run(stop)]
        share_tag_lists(controller, membership, fleet)
        state = controller.state_store
        if isinstance(state, ShardedStateStore) and state.cache is None:
            from argocd_image_updater.controller.state_cache import StateCache

            state.cache = StateCache(state.kube, state.namespace)  # loads without a request
            work.append(state.cache.run(stop, controller.health))
        return asyncio.create_task(_together(*work))
    if settings.leader_election:
        from argocd_image_updater.cli.run_cluster import leader_elector

        elector = leader_elector(settings, controller.kube)
        controller.elector = elector
        return asyncio.create_task(elector.run(stop))
    return None


def share_tag_lists(controller: Controller, membership: Membership, fleet: FleetEvents) -> None:
    """Each repository listed by one member a cycle, the others reusing their copies while it
    vouches for them (:mod:`argocd_image_updater.controller.fleet_tag_lists`)."""
    from argocd_image_updater.controller.fleet_scans import FleetScans
    from argocd_image_updater.controller.fleet_tag_lists import FleetTagLists
    from argocd_image_updater.registry.vouched_lists import VouchedLists

    def max_age() -> float:  # the interval as it is now
        return 2 * controller.interval.total_seconds() + membership.lease_duration

    lists = FleetTagLists(membership, max_age, announce=fleet.publish)
    controller.fleet_scans = FleetScans(lists)
    controller.scanner.vouched = VouchedLists(lists)


async def _together(*work: Coroutine[Any, Any, None]) -> None:
    await asyncio.gather(*work)


async def _main(settings: Settings) -> int:
    """Run the controller; the exit code (``--once``: whether the cycle had errors)."""
    from argocd_image_updater.controller.runner import run_until_stopped
    from argocd_image_updater.observe.health import Health

    controller, closers = await build_controller(settings)
    interval = controller.interval.total_seconds()
    controller.health = Health(stall_after=max(3 * interval, 600.0) if interval > 0 else 0.0)
    elector_task: asyncio.Task[None] | None = None
    elector_stop = asyncio.Event()
    once = runs_once(settings) or controller.interval <= timedelta(0)
    try:
        elector_task = start_election(settings, controller, elector_stop)
        await _start_servers(settings, controller.health, closers)
        if settings.enable_webhook:
            await start_webhook(settings, controller, int(settings.webhook_port), closers)
        await run_until_stopped(controller, once=once)
    finally:
        if elector_task is not None:
            elector_stop.set()
            await elector_task
        for closer in reversed(closers):
            await close_resource(closer)
    return cycle_exit_code(controller, once, bool(settings.exit_zero_on_error))


def cycle_exit_code(controller: Controller, once: bool, exit_zero_on_error: bool) -> int:
    """``run --once`` fails (exit 4) when the cycle failed or any application, manifest file or
    object had an error, so that a CI job sees it; ``--exit-zero-on-error`` opts out."""
    if not once or exit_zero_on_error:
        return 0
    result = controller.last_result
    if result is None or result.errors:
        errors = "the update cycle failed" if result is None else f"errors={result.errors}"
        log.error(
            "exiting with code %d: %s (--exit-zero-on-error exits 0)", EXIT_CYCLE_ERRORS, errors
        )
        return EXIT_CYCLE_ERRORS
    return 0


def start_fields(settings: Settings) -> dict[str, Any]:
    """What the start line shows: only the settings that apply to this run."""
    local = settings.applications_api == "local"
    once = runs_once(settings)
    fields: dict[str, Any] = {
        "app": f"argocd-image-updater: v{__version__}",
        "loglevel": str(settings.loglevel),
        "interval": "once" if once else format_go_duration(settings.interval),
        "applicationsAPI": str(settings.applications_api),
    }
    if local:
        fields["localPath"] = str(settings.local_path)
        if settings.local_repo:
            fields["localRepo"] = str(settings.local_repo)
    if settings.argocd_namespace:
        fields["argocdNamespace"] = str(settings.argocd_namespace)
    metrics_address, health_address = bind_addresses(settings)
    if serves(health_address):
        fields["healthPort"] = health_address
    if serves(metrics_address):
        fields["metricsPort"] = metrics_address
    fields["dryRun"] = bool(settings.dry_run)
    return fields


@click.command("run", help="Runs the argocd-image-updater with a set of options")
@settings_options("run")
def run_command(**params: Any) -> None:
    # The controller (and local mode, as small as it is) is imported now that the command runs;
    # the collector then resumes, as for every command (see cli.collector). The cluster part
    # is imported later, only for a cluster.
    import argocd_image_updater.cli.run_local  # noqa: F401
    from argocd_image_updater.cli.run_setup import StartupError

    collector.resume()
    settings = load_settings("run", params)
    setup_logging(settings)
    log.info("starting", **start_fields(settings))
    interval = settings.interval
    if timedelta(0) < interval < timedelta(minutes=1) and not settings.once:
        log.warning(
            "interval %s is shorter than 1m: watch your registries' rate limits",
            format_go_duration(interval),
        )
    try:
        code = asyncio.run(_main(settings))
    except StartupError as err:
        log.error(str(err))
        sys.exit(EXIT_STARTUP_ERROR)
    sys.exit(code)
