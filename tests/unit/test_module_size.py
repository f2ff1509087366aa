"""Every module of the product stays under 500 lines: a longer one holds more than one thing,
and is split into modules named after what each does."""

from __future__ import annotations

from pathlib import Path

import argocd_image_updater

MAX_LINES = 500
SOURCE = Path(argocd_image_updater.__file__).parent

# Known long modules, to be split by the changes under way in them; this list only shrinks (a
# test below fails when an entry is short enough, so that it is removed).
KNOWN_LONG: frozenset[str] = frozenset(
    {
        "http1/transport.py",  # the HTTP/1.1 transport is being changed (a new timeout key)
    }
)


def _lengths() -> dict[str, int]:
    return {
        path.relative_to(SOURCE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(SOURCE.rglob("*.py"))
    }


def test_no_module_is_longer_than_the_limit() -> None:
    long = {name: n for name, n in _lengths().items() if n > MAX_LINES and name not in KNOWN_LONG}
    assert not long, f"modules over {MAX_LINES} lines (split them): {long}"


def test_every_known_long_module_is_still_long() -> None:
    lengths = _lengths()
    short = sorted(name for name in KNOWN_LONG if lengths.get(name, 0) <= MAX_LINES)
    assert not short, f"no longer over {MAX_LINES} lines, remove from KNOWN_LONG: {short}"
