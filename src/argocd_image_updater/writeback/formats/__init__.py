"""Write-back target formats, chosen by ``gitConfig.writeBackTarget``: one module per format.

Every module of this package except :mod:`.base` defines ``FORMAT``, an instance of
:class:`~.base.TargetFormat` (see that module for what a format decides); they are found at
first use, no list to edit. Adding a format is adding a module here (plus its tests and its row
in ``docs/write-back.md``).

:func:`parse_target` reads a target text:

1. unset or blank → the default format (``override``) with the default file;
2. ``<prefix>`` or ``<prefix>:<argument>`` → the format with that prefix;
3. otherwise a bare path, relative to the repository root: each format may refuse the text, then
   the normalised path (a directory is refused); the first format, by position, that claims the
   path is used, else the default format.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Mapping
from typing import Final

from argocd_image_updater.writeback.formats.base import (
    FileTarget,
    PathRules,
    TargetError,
    TargetFormat,
)

__all__ = [
    "DEFAULT_FORMAT",
    "FileTarget",
    "TargetError",
    "TargetFormat",
    "formats",
    "named",
    "parse_target",
]

DEFAULT_FORMAT: Final = "override"
_NOT_FORMATS: Final = frozenset({"base"})
SETTING: Final = "gitConfig.writeBackTarget"


@functools.cache
def formats() -> tuple[TargetFormat, ...]:
    """Every format of this package, in position order."""
    found: list[TargetFormat] = []
    for module in pkgutil.iter_modules(__path__):
        if module.name in _NOT_FORMATS or module.name.startswith("_"):
            continue
        fmt = importlib.import_module(f"{__name__}.{module.name}").FORMAT
        if not isinstance(fmt, TargetFormat):
            raise TypeError(f"{__name__}.{module.name}.FORMAT is not a TargetFormat")
        found.append(fmt)
    return tuple(sorted(found, key=lambda f: (f.position, f.name)))


@functools.cache
def _by_name() -> Mapping[str, TargetFormat]:
    names: dict[str, TargetFormat] = {}
    for fmt in formats():
        if fmt.name in names:
            raise ValueError(f"write-back target format '{fmt.name}' is defined twice")
        names[fmt.name] = fmt
    return names


def named(name: str) -> TargetFormat:
    """The format called ``name`` (:attr:`FileTarget.kind`); ``KeyError`` when none is."""
    return _by_name()[name]


def parse_target(text: str, source_path: str, default_file: str, who: str) -> FileTarget:
    """The target ``text`` names (see the module docs). ``source_path`` is the written
    source's normalised path, ``default_file`` the default override file below it; errors
    (:class:`TargetError`) name ``who`` (the Application) and the setting."""
    rules = PathRules(who, SETTING, text)
    if not text.strip():
        return FileTarget(DEFAULT_FORMAT, default_file, default_file)
    for fmt in formats():
        prefix = fmt.prefix
        if prefix is not None and (text == prefix or text.startswith(prefix + ":")):
            argument = None if text == prefix else text[len(prefix) + 1 :]
            return fmt.parse(argument, source_path, default_file, rules)
    for fmt in formats():
        fmt.refuse_text(text, rules)
    path = rules.inside(text.lstrip("/"))
    for fmt in formats():
        fmt.refuse_path(path, rules)
    if path == "." or text.endswith("/"):
        raise rules.fail("the target names a directory, not a file")
    kind = next((fmt.name for fmt in formats() if fmt.claims(path)), DEFAULT_FORMAT)
    return FileTarget(kind, path, text)
