"""Where the tests find the tools ``scripts/setup`` installs: on PATH, else in ``.tools/bin``
(setup puts uv there when it is not on PATH)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETUP_TOOLS = ROOT / ".tools" / "bin"


def setup_tool(name: str) -> str | None:
    """The path of ``name``: from PATH, else the copy ``scripts/setup`` installed."""
    found = shutil.which(name)
    if found is not None:
        return found
    candidate = SETUP_TOOLS / name
    return str(candidate) if os.access(candidate, os.X_OK) else None
