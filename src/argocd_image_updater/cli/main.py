"""The ``argocd-image-updater`` command line (``run``, ``test``, ``demo``, ``version``, …)."""

from __future__ import annotations

import platform
import sys

import click

from argocd_image_updater import __version__


@click.group(
    help="Automatically update container images with ArgoCD",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
def cli() -> None:
    pass


@cli.command(help="Display version information")
@click.option("--short", is_flag=True, help="show only the version number")
def version(short: bool) -> None:
    text = f"v{__version__}"
    if short:
        click.echo(text)
        return
    click.echo(f"argocd-image-updater: {text}")
    click.echo(f"  PythonVersion: {platform.python_version()}")
    click.echo(f"  PythonImplementation: {platform.python_implementation()}")
    click.echo(f"  Platform: {sys.platform}/{platform.machine()}")


def main() -> None:
    from argocd_image_updater.cli import commands

    commands.register(cli)
    cli(prog_name="argocd-image-updater")
