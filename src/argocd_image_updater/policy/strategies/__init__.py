"""Update strategies, chosen by name: one module per strategy, no list to edit.

Every module of this package except :mod:`.base` defines ``STRATEGY``, an instance of
:class:`~.base.UpdateStrategy` (see that module for what a strategy decides). They are found
when a strategy is first looked up, and listed in the order of their ``position``. Adding a
strategy is adding a module here (plus its tests and its row in ``docs/strategies.md``).

Names are matched case-insensitively; unset or blank means ``semver``. A legacy name is accepted
with a deprecation warning; an unknown name falls back to ``semver`` with the original's warning
``Unknown sort option <name> -- using semver``.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Mapping
from typing import Final

from argocd_image_updater.policy.strategies.base import UpdateStrategy

__all__ = [
    "DEFAULT_STRATEGY",
    "UpdateStrategy",
    "default_strategy",
    "listed_names",
    "named",
    "parse_strategy",
    "strategies",
]

DEFAULT_STRATEGY: Final = "semver"
_NOT_STRATEGIES: Final = frozenset({"base"})


@functools.cache
def strategies() -> tuple[UpdateStrategy, ...]:
    """Every strategy of this package, in listing order."""
    found: list[UpdateStrategy] = []
    for module in pkgutil.iter_modules(__path__):
        if module.name in _NOT_STRATEGIES or module.name.startswith("_"):
            continue
        strategy = importlib.import_module(f"{__name__}.{module.name}").STRATEGY
        if not isinstance(strategy, UpdateStrategy):
            raise TypeError(f"{__name__}.{module.name}.STRATEGY is not an UpdateStrategy")
        found.append(strategy)
    return tuple(sorted(found, key=lambda s: (s.position, s.name)))


@functools.cache
def _by_name() -> Mapping[str, tuple[UpdateStrategy, bool]]:
    """Every accepted name (lower case) → the strategy and whether the name is a legacy one."""
    names: dict[str, tuple[UpdateStrategy, bool]] = {}
    for strategy in strategies():
        for name, legacy in ((strategy.name, False), *((n, True) for n in strategy.legacy_names)):
            key = name.lower()
            if key in names:
                raise ValueError(f"update strategy name '{name}' is used twice")
            names[key] = (strategy, legacy)
    return names


def named(name: str) -> UpdateStrategy:
    """The strategy called ``name`` (its own name, any case); ``KeyError`` when none is."""
    strategy, legacy = _by_name()[name.strip().lower()]
    if legacy:
        raise KeyError(name)
    return strategy


def default_strategy() -> UpdateStrategy:
    return named(DEFAULT_STRATEGY)


def listed_names() -> str:
    """``semver, newest-build, alphabetical or digest``: the names for help texts."""
    names = [s.name for s in strategies()]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def parse_strategy(text: str | None) -> tuple[UpdateStrategy, str | None]:
    """The strategy ``text`` names and a warning (see the module docs)."""
    if text is None or not text.strip():
        return default_strategy(), None
    found = _by_name().get(text.strip().lower())
    if found is None:
        return default_strategy(), f"Unknown sort option {text} -- using {DEFAULT_STRATEGY}"
    strategy, legacy = found
    if legacy:
        return strategy, (
            f"update strategy '{text}' is deprecated and will be removed: "
            f"use '{strategy.name}' instead"
        )
    return strategy, None
