"""Imports of optional modules that are not installed, made to fail at once.

``httpcore`` runs ``import sniffio`` (an optional module) for every request to learn which
async library runs it; when the module is not installed, every such import searches the whole
``sys.path`` again (about 0.2 ms each, several per request: a third of a second per cycle of
1,000 registry requests). Recording the module as absent in ``sys.modules`` makes the failing
import immediate, with the same outcome (``ImportError``).
"""

from __future__ import annotations

import importlib.util
import sys


def mark_absent(*names: str) -> None:
    """Record each of ``names`` that cannot be imported as absent (a no-op for the others)."""
    for name in names:
        if name in sys.modules:
            continue
        try:
            found = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            found = None
        if found is None:
            sys.modules[name] = None  # type: ignore[assignment]
