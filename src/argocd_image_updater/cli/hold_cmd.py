"""``hold`` and ``release``: set or remove manual holds on an Application (its annotation
``argocd-image-updater.argoproj.io/hold``) through the Kubernetes API, or in its manifest file
in local mode. ``release`` also ends a rollback hold. The work is in
:mod:`argocd_image_updater.cli.hold_run`, imported when a command runs."""

from __future__ import annotations

import asyncio
from typing import Any

import click

_API = click.Choice(["kubernetes", "local"], case_sensitive=False)

controller_namespace_option = click.option(
    "--controller-namespace",
    "controller_namespace",
    default="",
    envvar="POD_NAMESPACE",
    help="the controller's namespace, where its ConfigMap argocd-image-updater-state is; "
    "default: the kubeconfig context's namespace",
)
"""Where the controller keeps its state (``hold``, ``release``, ``status``)."""


def _common(command: Any) -> Any:
    options = [
        click.option(
            "--namespace",
            "namespace",
            default="",
            help="the Application's namespace; default: the kubeconfig context's namespace (local mode: argocd)",
        ),
        click.option(
            "--image",
            "images",
            multiple=True,
            metavar="ALIAS",
            help="an image alias (repeatable); default: every image (*)",
        ),
        click.option(
            "--kubeconfig",
            envvar="KUBECONFIG",
            default="",
            help="kubeconfig file; default: in-cluster, then ~/.kube/config",
        ),
        click.option(
            "--applications-api",
            "applications_api",
            type=_API,
            default="kubernetes",
            envvar="APPLICATIONS_API",
            show_default=True,
            help="kubernetes: through the Kubernetes API; local: edit the manifest under --local-path",
        ),
        click.option(
            "--local-path",
            "local_path",
            envvar="IMAGE_UPDATER_LOCAL_PATH",
            default="",
            help="applications-api local: the directory holding the manifests",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _run(work: str, **params: Any) -> None:
    from argocd_image_updater.cli import hold_run

    try:
        message = asyncio.run(getattr(hold_run, work)(**params))
    except hold_run.HoldError as err:
        raise click.ClickException(str(err)) from None
    click.echo(message)


@click.command(
    "hold",
    help="Hold images of an Application: they are not updated until released (or until --until)",
)
@click.argument("app")
@_common
@click.option(
    "--until",
    default="",
    metavar="TIME",
    help="RFC 3339 time after which the hold is ignored (e.g. 2026-03-01T12:00:00Z)",
)
@click.option("--reason", default="", help="why the images are held (shown in the status and logs)")
def hold_command(**params: Any) -> None:
    _run("hold", **params)


@click.command(
    "release", help="Release held images of an Application (manual holds and rollback holds)"
)
@click.argument("app")
@_common
@controller_namespace_option
@click.option(
    "--state-dir",
    "state_dir",
    envvar="IMAGE_UPDATER_STATE_DIR",
    default="",
    help="the controller's --state-dir, when it keeps its record in a file",
)
def release_command(**params: Any) -> None:
    _run("release", **params)
