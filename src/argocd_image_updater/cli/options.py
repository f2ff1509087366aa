"""Click options generated from the settings table, so flags, environment and ConfigMap agree."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import click

from argocd_image_updater.config.durations import format_go_duration
from argocd_image_updater.config.settings import (
    Settings,
    SettingsError,
    options_for,
    read_configmap_dir,
    resolve,
)

F = TypeVar("F", bound=Callable[..., Any])

CONFIG_DIR_ENV = "IMAGE_UPDATER_CONFIG_DIR"


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, timedelta):
        return format_go_duration(value)
    return str(value)


def settings_options(command: str, defaults: Mapping[str, Any] | None = None) -> Callable[[F], F]:
    """Add every option of ``command`` (all default to None so that 'given' can be told apart).

    ``defaults`` names the command's own defaults where they differ from the table's (shown in
    the help; the command applies them itself).
    """

    def decorate(func: F) -> F:
        for option in reversed(options_for(command)):
            names = [option.flag, *option.aliases, option.name]
            help_text = option.help
            if option.env:
                help_text += f"  [env: {', '.join(option.env)}]"
            default = (defaults or {}).get(option.name, option.default)
            if default not in (None, "", ()):
                help_text += f"  [default: {_show(default)}]"
            if option.multiple:
                func = click.option(*names, multiple=True, default=None, help=help_text)(func)
            elif option.is_flag or isinstance(option.default, bool):
                # Go-style booleans: `--flag` means true, `--flag=false` is accepted too.
                func = click.option(
                    *names,
                    is_flag=False,
                    flag_value="true",
                    default=None,
                    metavar="[=BOOL]",
                    help=help_text,
                )(func)
            else:
                func = click.option(*names, default=None, help=help_text)(func)
        return click.option(
            "--config-dir",
            "config_dir",
            default=None,
            help="directory holding the argocd-image-updater-config ConfigMap (one file per key)"
            f"  [env: {CONFIG_DIR_ENV}]",
        )(func)

    return decorate


def load_settings(command: str, params: dict[str, Any]) -> Settings:
    """Turn click's parameters into :class:`Settings`; invalid values raise click errors."""
    flags: dict[str, Any] = {}
    for option in options_for(command):
        raw = params.pop(option.name, None)
        if raw is None or (option.multiple and not raw):
            continue
        if option.multiple:
            flags[option.name] = tuple(raw)
            continue
        try:
            flags[option.name] = option.parse(raw)
        except ValueError as err:
            raise click.BadParameter(str(err), param_hint=option.flag) from None
    config_dir = params.pop("config_dir", None) or os.environ.get(CONFIG_DIR_ENV)
    try:
        configmap = read_configmap_dir(Path(config_dir)) if config_dir else None
        return resolve(command, flags, configmap=configmap)
    except (SettingsError, OSError) as err:
        raise click.UsageError(str(err)) from None


def setup_logging(settings: Settings) -> None:
    """Configure logging from ``--loglevel``/``--logformat``; a bad value is a usage error."""
    from argocd_image_updater.observe import log as logging_setup

    try:
        logging_setup.setup(str(settings.loglevel), str(settings.logformat))
    except logging_setup.LogConfigError as err:
        raise click.UsageError(str(err)) from None
