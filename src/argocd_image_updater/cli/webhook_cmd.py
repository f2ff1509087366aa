"""``argocd-image-updater webhook``: only the webhook server, no polling."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import click

from argocd_image_updater.cli.options import load_settings, settings_options, setup_logging
from argocd_image_updater.cli.run_cmd import build_controller, close_resource, start_webhook
from argocd_image_updater.cli.run_setup import StartupError
from argocd_image_updater.config.settings import Settings, resolve
from argocd_image_updater.controller.runner import install_signal_handlers
from argocd_image_updater.observe.log import get_logger

log = get_logger("webhook")
DEFAULT_PORT = 8080


async def serve(settings: Settings) -> None:
    controller, closers = await build_controller(settings)
    stop = asyncio.Event()
    install_signal_handlers(stop)
    port = int(settings.webhook_port) if settings.given("webhook_port") else DEFAULT_PORT
    try:
        await start_webhook(settings, controller, port, closers)
        await stop.wait()
    finally:
        for closer in reversed(closers):
            await close_resource(closer)


@click.command("webhook", help="Start webhook server to receive registry events")
@settings_options("webhook", defaults={"webhook_port": DEFAULT_PORT})
def webhook_command(**params: Any) -> None:
    own = load_settings("webhook", params)
    # Everything `webhook` has no flag for takes the `run` defaults (and environment).
    base = resolve("run", {})
    settings = Settings({**base.values, **own.values}, {**base.sources, **own.sources})
    setup_logging(settings)
    log.info("starting webhook server", loglevel=str(settings.loglevel))
    try:
        asyncio.run(serve(settings))
    except StartupError as err:
        log.error(str(err))
        sys.exit(1)
