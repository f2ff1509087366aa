"""``argocd-image-updater template [PATH]``: render a commit message template for an example."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from argocd_image_updater.writeback.messages import MessageError, render_template_command


@click.command("template", help="Renders a commit message template with example data")
@click.argument("path", required=False)
def template_command(path: str | None) -> None:
    # Unlike the original (which exits 0), a template that cannot be used is a failure.
    try:
        text = Path(path).read_text(encoding="utf-8") if path else None
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        click.echo(f"error: could not read commit message template {path}: {reason}", err=True)
        sys.exit(1)
    try:
        click.echo(render_template_command(text), nl=False)
    except MessageError as err:
        click.echo(f"error: {path or 'default template'}: {err}", err=True)
        sys.exit(1)
