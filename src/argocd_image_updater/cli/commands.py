"""Registers the subcommands (kept apart so that ``version`` stays cheap to import)."""

from __future__ import annotations

import click


def register(group: click.Group) -> None:
    del group
