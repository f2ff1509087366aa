"""The ``argocd-image-updater`` command line (``run``, ``test``, ``demo``, ``version``, …)."""

from __future__ import annotations

import importlib
import platform
from typing import Final

import click

from argocd_image_updater import __version__

# Subcommands are imported on first use, so that `test` does not pay for the controller's
# imports and `version` stays instant (the pattern click documents for lazy subcommands). The
# one-line help is kept here, so that `--help` imports no subcommand at all (a test checks that
# each line matches its command's own help).
LAZY_COMMANDS: Final = {
    "run": "argocd_image_updater.cli.run_cmd:run_command",
    "test": "argocd_image_updater.cli.test_cmd:test_command",
    "demo": "argocd_image_updater.cli.demo_cmd:demo_command",
    "webhook": "argocd_image_updater.cli.webhook_cmd:webhook_command",
    "template": "argocd_image_updater.cli.template_cmd:template_command",
}
SHORT_HELP: Final = {
    "run": "Runs the argocd-image-updater with a set of options",
    "test": "Test the behaviour of argocd-image-updater for IMAGE",
    "demo": "Run the built-in demo against a local registry with sample tags",
    "webhook": "Start webhook server to receive registry events",
    "template": "Renders a commit message template with example data",
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

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in SHORT_HELP:
                rows.append((name, SHORT_HELP[name]))
                continue
            command = super().get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(formatter.width)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


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
