"""Every module of the product stays under 500 lines: a longer one holds more than one thing,
and is split into modules named after what each does."""

from __future__ import annotations

from pathlib import Path

import argocd_image_updater

MAX_LINES = 500
SOURCE = Path(argocd_image_updater.__file__).parent


def _lengths() -> dict[str, int]:
    return {
        path.relative_to(SOURCE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(SOURCE.rglob("*.py"))
    }


def test_no_module_is_longer_than_the_limit() -> None:
    long = {name: n for name, n in _lengths().items() if n > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them): {long}"
