"""The receiver types: every module of :mod:`argocd_image_updater.notify.targets`, found on first
use (adding a type is adding a module there, and describing it in
:mod:`argocd_image_updater.model.notifications`; a test checks both lists agree)."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Mapping
from types import MappingProxyType

from argocd_image_updater.notify import targets as _package
from argocd_image_updater.notify.targets import TargetType


@functools.cache
def target_types() -> Mapping[str, TargetType]:
    """Every receiver type by name; a module without ``TARGET`` or a name used twice is a
    programming error."""
    found: dict[str, TargetType] = {}
    for info in sorted(pkgutil.iter_modules(_package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{_package.__name__}.{info.name}")
        declared = getattr(module, "TARGET", None)
        if declared is None or not callable(getattr(declared, "render", None)):
            raise TypeError(f"{module.__name__} defines no TARGET")
        if declared.name in found:
            raise ValueError(f"two receiver types are named {declared.name}")
        found[declared.name] = declared
    return MappingProxyType(dict(sorted(found.items())))
