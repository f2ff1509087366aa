"""Update strategies and how their names are read (``updateStrategy`` / ``update-strategy``)."""

from __future__ import annotations

import enum
from typing import Final


class Strategy(enum.StrEnum):
    SEMVER = "semver"
    NEWEST_BUILD = "newest-build"
    ALPHABETICAL = "alphabetical"
    DIGEST = "digest"

    @property
    def needs_metadata(self) -> bool:
        """Whether the registry scan must fetch manifests: creation dates for ``newest-build``,
        the manifest digest for ``digest``."""
        return self in (Strategy.NEWEST_BUILD, Strategy.DIGEST)

    @property
    def is_cacheable(self) -> bool:
        """Whether tag metadata may be cached (a tag followed by ``digest`` moves)."""
        return self is not Strategy.DIGEST

    @property
    def needs_constraint(self) -> bool:
        """Whether the image must carry a constraint (``digest`` follows the named tag)."""
        return self is Strategy.DIGEST


_DEPRECATED: Final = {"latest": Strategy.NEWEST_BUILD, "name": Strategy.ALPHABETICAL}


def parse_strategy(text: str | None) -> tuple[Strategy, str | None]:
    """The strategy ``text`` names (case-insensitive; unset means ``semver``) and a warning.

    The warning is set for the deprecated aliases ``latest`` and ``name`` and for unknown names,
    which fall back to ``semver`` as in the original.
    """
    if text is None or not text.strip():
        return Strategy.SEMVER, None
    key = text.strip().lower()
    try:
        return Strategy(key), None
    except ValueError:
        pass
    if key in _DEPRECATED:
        strategy = _DEPRECATED[key]
        return strategy, (
            f"update strategy '{text}' is deprecated and will be removed: "
            f"use '{strategy.value}' instead"
        )
    return Strategy.SEMVER, f"Unknown sort option {text} -- using semver"
