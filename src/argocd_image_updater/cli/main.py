"""The ``argocd-image-updater`` command line (``run``, ``test``, ``demo``, ``version``, …)."""

from __future__ import annotations

import importlib
import platform
from typing import Final

import click

from argocd_image_updater import __version__

# Subcommands are imported on first use, so that `test` does not pay for the controller's
# imports and `version` stays instant (the pattern click documents for lazy subcommands).
LAZY_COMMANDS: Final = {
    "run": "argocd_image_updater.cli.run_cmd:run_command",
    "test": "argocd_image_updater.cli.test_cmd:test_command",
    "demo": "argocd_image_updater.cli.demo_cmd:demo_command",
    "webhook": "argocd_image_updater.cli.webhook_cmd:webhook_command",
    "template": "argocd_image_updater.cli.template_cmd:template_command",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = LAZY_COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, attr = target.split(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command


@click.group(
    cls=LazyGroup,
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
    # Go's platform names (linux/amd64), as the original prints them.
    from argocd_image_updater.policy.platforms import runtime_platform

    click.echo(f"  Platform: {runtime_platform()}")


def main() -> None:
    cli(prog_name="argocd-image-updater")
