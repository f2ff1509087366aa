"""``set APP --image ALIAS=TAG`` (or ``ALIAS=TAG@DIGEST``, ``ALIAS=DIGEST``): write a chosen
version of one image through the Application's write-back method, bypassing the update strategy
but not signature verification, and hold the image there until released (or ``--until``). It
takes every option of ``run`` (registries, git credentials, ``--applications-api``,
``--dry-run``, …). The work is in :mod:`argocd_image_updater.cli.set_run`, imported when the
command runs."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import click

from argocd_image_updater.cli import collector
from argocd_image_updater.cli.options import load_settings, settings_options, setup_logging

HELP = (
    "Set an image of an Application to a chosen tag now (through its write-back method) and "
    "hold it there until released"
)


@click.command("set", help=HELP)
@click.argument("app")
@click.option(
    "--image",
    "image",
    required=True,
    metavar="ALIAS=TAG",
    help="the image alias and the tag to write (e.g. web=1.4.2); TAG@sha256:<digest> writes "
    "the tag pinned to that digest (refused when the tag points elsewhere), sha256:<digest> "
    "alone the tag that has that digest",
)
@click.option(
    "--namespace",
    "namespace",
    default="",
    help="the Application's namespace; default: the kubeconfig context's namespace "
    "(local mode: --argocd-namespace, else argocd)",
)
@click.option(
    "--until",
    default="",
    metavar="TIME",
    help="RFC 3339 time after which the hold is ignored (e.g. 2026-03-01T12:00:00Z)",
)
@click.option(
    "--reason",
    default="",
    help="why the image is held at this version; default: set to <TAG>",
)
@settings_options("run")
def set_command(
    app: str, image: str, namespace: str, until: str, reason: str, **params: Any
) -> None:
    from argocd_image_updater.cli import set_run

    collector.resume()
    settings = load_settings("run", params)
    setup_logging(settings)
    try:
        message = asyncio.run(set_run.set_version(settings, app, namespace, image, until, reason))
    except set_run.SET_ERRORS as err:
        click.echo(f"Error: {err}", err=True)
        sys.exit(1)
    click.echo(message)
