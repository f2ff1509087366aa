"""The webhook types: every module of :mod:`argocd_image_updater.webhook.types`, found on first
use (adding a type is adding a module there).

The dispatcher (:mod:`~argocd_image_updater.webhook.router`) and the metric labels come from this
list; it must name exactly the types described in :mod:`~argocd_image_updater.model.webhook_types`
(from which the secret settings of :mod:`~argocd_image_updater.config.settings` come); tests
check the docs table and the chart against it.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from argocd_image_updater.model.webhook_types import WEBHOOK_TYPES
from argocd_image_updater.webhook import types as _package
from argocd_image_updater.webhook.types import WebhookType


@functools.cache
def webhook_types() -> tuple[WebhookType, ...]:
    """Every webhook type, sorted by name; a module without ``WEBHOOK_TYPE``, a name or setting
    used twice, or a type not described in ``model.webhook_types`` (or described differently)
    is a programming error."""
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
    described = {d.name: d for d in WEBHOOK_TYPES}
    for webhook_type in found:
        description = described.pop(webhook_type.name, None)
        if description is None or not webhook_type.describes(description):
            raise ValueError(
                f"webhook type {webhook_type.name} is not the one described in "
                "model.webhook_types; refer to its description there"
            )
    if described:
        raise ValueError(f"webhook types without a module: {', '.join(sorted(described))}")
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
