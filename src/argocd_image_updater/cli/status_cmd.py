"""``status``: per image of each ImageUpdater, the current tag, the candidate, the verdict and
its reason, the last write and whether it shipped, as the controller last recorded them. The
work is in :mod:`argocd_image_updater.cli.status_run` and the layout in
:mod:`argocd_image_updater.cli.status_view`, imported when the command runs."""

from __future__ import annotations

import asyncio
import shutil
import sys
from typing import Any

import click

from argocd_image_updater.cli.hold_cmd import controller_namespace_option

HELP = "Show per image why it was (not) updated, its last write and whether it shipped"


@click.command("status", help=HELP)
@click.argument("app", required=False, default="")
@click.option(
    "--image-updater",
    "image_updater",
    default="",
    metavar="NAME",
    help="only this ImageUpdater (a name or namespace/name)",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json", "yaml"], case_sensitive=False),
    default="table",
    show_default=True,
)
@click.option(
    "--namespace",
    default="",
    help="the ImageUpdaters' namespace; default: the kubeconfig context's namespace (local mode: every namespace of the manifests)",
)
@click.option(
    "-A",
    "--all-namespaces",
    "all_namespaces",
    is_flag=True,
    help="ImageUpdaters of every namespace",
)
@click.option(
    "--kubeconfig",
    envvar="KUBECONFIG",
    default="",
    help="kubeconfig file; default: in-cluster, then ~/.kube/config",
)
@click.option(
    "--applications-api",
    "applications_api",
    type=click.Choice(["kubernetes", "local"], case_sensitive=False),
    default="kubernetes",
    envvar="APPLICATIONS_API",
    show_default=True,
    help="kubernetes: the cluster; local: the manifests under --local-path and --state-dir",
)
@click.option(
    "--local-path",
    "local_path",
    envvar="IMAGE_UPDATER_LOCAL_PATH",
    default="",
    help="applications-api local: the directory holding the manifests",
)
@controller_namespace_option
@click.option(
    "--state-dir",
    "state_dir",
    envvar="IMAGE_UPDATER_STATE_DIR",
    default="",
    help="applications-api local: the controller's --state-dir",
)
def status_command(output: str, **params: Any) -> None:
    from argocd_image_updater.cli import status_run, status_view

    try:
        views = asyncio.run(status_run.gather(**params))
    except status_run.StatusError as err:
        raise click.ClickException(str(err)) from None
    output = output.lower()
    if output == "json":
        click.echo(status_view.as_json(views))
    elif output == "yaml":
        from ruamel.yaml import YAML

        yaml = YAML(typ="safe", pure=True)
        yaml.default_flow_style = False
        yaml.dump({"imageUpdaters": status_view.as_data(views)}, sys.stdout)
    else:
        width = status_view.WIDTH
        if sys.stdout.isatty():
            width = min(width, shutil.get_terminal_size((width, 24)).columns)
        if not views:
            click.echo("no ImageUpdater found")
        for line in status_view.table(views, width=width, style=_style):
            click.echo(line)  # click drops the colours when stdout is not a terminal


def _style(text: str, colour: str) -> str:
    return click.style(text, fg=colour)
