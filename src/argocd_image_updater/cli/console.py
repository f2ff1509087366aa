"""The ``argocd-image-updater`` console script.

It pauses the garbage collector before the command line (click) is imported, so that every
module a command needs is imported with the collector waiting (see
:mod:`~argocd_image_updater.cli.collector`), then runs :func:`argocd_image_updater.cli.main.main`.
"""

from __future__ import annotations

from argocd_image_updater.cli import collector


def main() -> None:
    collector.pause()
    from argocd_image_updater.cli.main import main as run

    run()
