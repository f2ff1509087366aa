"""The webhook types: every module of :mod:`argocd_image_updater.webhook.types`, found on first
use (adding a type is adding a module there).

The dispatcher (:mod:`~argocd_image_updater.webhook.router`), the secret settings
(:mod:`~argocd_image_updater.config.settings`) and the metric labels come from this list; tests
check the docs table and the chart against it.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from argocd_image_updater.webhook import types as _package
from argocd_image_updater.webhook.types import WebhookType


@functools.cache
def webhook_types() -> tuple[WebhookType, ...]:
    """Every webhook type, sorted by name; a module without ``WEBHOOK_TYPE`` or a name or
    setting used twice is a programming error."""
    found: list[WebhookType] = []
    for info in sorted(pkgutil.iter_modules(_package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{_package.__name__}.{info.name}")
        declared = getattr(module, "WEBHOOK_TYPE", None)
        if not isinstance(declared, WebhookType):
            raise TypeError(f"{module.__name__} defines no WEBHOOK_TYPE")
        found.append(declared)
    for attribute in ("name", "setting"):
        values = [getattr(t, attribute) for t in found]
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise ValueError(f"webhook types share the {attribute} {', '.join(twice)}")
    return tuple(sorted(found, key=lambda t: t.name))


def type_names() -> tuple[str, ...]:
    """Every webhook type name, sorted."""
    return tuple(t.name for t in webhook_types())


SECRET_KEYS: Final[Mapping[str, str]] = MappingProxyType(
    {t.name: t.secret_key for t in webhook_types()}
)
"""Key of each type's secret in the ``argocd-image-updater-secret`` Secret."""

SECRET_ENV_VARS: Final[Mapping[str, str]] = MappingProxyType(
    {t.name: t.env for t in webhook_types()}
)
"""Environment variable carrying each type's secret."""
