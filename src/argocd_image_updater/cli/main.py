"""The ``argocd-image-updater`` command line (``run``, ``test``, ``demo``, ``version``, …)."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Final

import click

from argocd_image_updater.cli import collector

# httpx imports its own command line (and with it rich and pygments, ~0.3 s) whenever those
# happen to be installed, e.g. next to development tools. This program never runs httpx's command
# line, so it is marked as absent: httpx then defines a stub, exactly as when they are missing.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

from argocd_image_updater import __version__

# Subcommands are imported on first use, so that `test` does not pay for the controller's
# imports and `version` stays instant (the pattern click documents for lazy subcommands). The
# one-line help is kept here, so that `--help` imports no subcommand at all (a test checks that
# each line matches its command's own help).
LAZY_COMMANDS: Final = {
    "run": "argocd_image_updater.cli.run_cmd:run_command",
    "test": "argocd_image_updater.cli.test_cmd:test_command",
    "demo": "argocd_image_updater_testing.demo:demo_command",
    "webhook": "argocd_image_updater.cli.webhook_cmd:webhook_command",
    "template": "argocd_image_updater.cli.template_cmd:template_command",
    "hold": "argocd_image_updater.cli.hold_cmd:hold_command",
    "release": "argocd_image_updater.cli.hold_cmd:release_command",
    "status": "argocd_image_updater.cli.status_cmd:status_command",
}
SHORT_HELP: Final = {
    "run": "Runs the argocd-image-updater with a set of options",
    "test": "Test the behaviour of argocd-image-updater for IMAGE",
    # Plugins (entry point group below) known by name, so that `--help` need not import them.
    "demo": "Run the built-in demo against a local registry with sample tags",
    "webhook": "Start webhook server to receive registry events",
    "template": "Renders a commit message template with example data",
    "hold": "Hold images of an Application: they are not updated until released (or until --until)",
    "release": "Release held images of an Application (manual holds and rollback holds)",
    "status": "Show per image why it was (not) updated, its last write and whether it shipped",
}
# Commands that import their work only when they run: they resume the garbage collector once
# it is imported (see collector); every other command resumes it when it starts.
IMPORT_WHEN_RUN: Final = frozenset({"test", "run"})
# Commands that other distributions add: the development package registers `demo` here, so the
# product ships no test double and still offers the demo from a checkout.
PLUGIN_GROUP: Final = "argocd_image_updater.commands"
PLUGIN_HINTS: Final = {
    "demo": "the demo ships with the development tools: from a clone of the repository, run "
    "scripts/demo (it installs them)",
}


def plugin_commands() -> dict[str, str]:
    """Installed plugin commands: name → ``module:attribute``.

    The ``entry_points.txt`` files on ``sys.path`` are read directly: ``importlib.metadata``
    costs more to import (~30 ms) than the whole of ``--help`` may take. As with
    ``importlib.metadata.entry_points``, the first distribution of a name on the path wins.
    """
    found: dict[str, str] = {}
    seen: set[str] = set()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            distribution = name.rsplit(".", 1)[0].split("-", 1)[0].lower().replace("_", "-")
            if distribution in seen:
                continue
            seen.add(distribution)
            path = os.path.join(entry or ".", name, "entry_points.txt")
            try:
                with open(path, encoding="utf-8") as file:
                    text = file.read()
            except OSError:
                continue
            for command, target in _group_entries(text, PLUGIN_GROUP):
                found.setdefault(command, target)
    return found


def _group_entries(text: str, group: str) -> list[tuple[str, str]]:
    """``name = value`` lines of the ``[group]`` section of an ``entry_points.txt``."""
    if f"[{group}]" not in text:
        return []
    entries, inside = [], False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            inside = line == f"[{group}]"
        elif inside and "=" in line:
            command, target = line.split("=", 1)
            entries.append((command.strip(), target.strip()))
    return entries


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS, *plugin_commands()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = LAZY_COMMANDS.get(cmd_name)
        if target is None and cmd_name not in self.commands:
            target = plugin_commands().get(cmd_name)
            if target is None and cmd_name in PLUGIN_HINTS:
                raise click.UsageError(f"{cmd_name}: {PLUGIN_HINTS[cmd_name]}", ctx)
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
@click.pass_context
def cli(ctx: click.Context) -> None:
    if ctx.invoked_subcommand not in IMPORT_WHEN_RUN:
        collector.resume()


@cli.command(help="Display version information")
@click.option("--short", is_flag=True, help="show only the version number")
def version(short: bool) -> None:
    text = f"v{__version__}"
    if short:
        click.echo(text)
        return
    click.echo(f"argocd-image-updater: {text}")
    import platform

    click.echo(f"  PythonVersion: {platform.python_version()}")
    click.echo(f"  PythonImplementation: {platform.python_implementation()}")
    # Go's platform names (linux/amd64), as the original prints them.
    from argocd_image_updater.model.platform import runtime_platform

    click.echo(f"  Platform: {runtime_platform()}")


def main() -> None:
    collector.pause()
    one_shot = sys.argv[1:2] == ["test"]
    if one_shot:
        # A process of its own for one `test`: nothing reads its metrics (see metrics_off), and
        # nothing needs its objects freed when it ends (see quick_exit).
        from argocd_image_updater.observe import metrics_off

        metrics_off.switch_off()
    try:
        cli(prog_name="argocd-image-updater")
    except SystemExit as done:
        if one_shot:
            from argocd_image_updater.cli import quick_exit

            quick_exit.leave(done)
        raise
