"""``argocd-image-updater template [PATH]``: render a commit message template for an example."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from argocd_image_updater.writeback.messages import MessageError, render_template_command


@click.command("template", help="Renders a commit message template with example data")
@click.argument("path", required=False)
def template_command(path: str | None) -> None:
    try:
        text = Path(path).read_text(encoding="utf-8") if path else None
        click.echo(render_template_command(text), nl=False)
    except (OSError, MessageError) as err:
        # Unlike the original (which exits 0), a template that cannot be used is a failure.
        click.echo(f"error: {err}", err=True)
        sys.exit(1)
