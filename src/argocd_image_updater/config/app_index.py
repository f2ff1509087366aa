"""The Applications of one namespace indexed by name, so that a selection finds the few a name
pattern can match (:func:`~argocd_image_updater.config.selection.select_applications`)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import Final

from argocd_image_updater.model.application import Application

_GLOB_CHARS: Final = frozenset("*?[]\\")


class AppIndex:
    """The Applications of one namespace, indexed by name, to find the few a name pattern can
    match without matching it against every one.

    :meth:`candidates` narrows by the common forms: an exact ``name`` (one dictionary lookup)
    and ``prefix*`` (a range of the sorted names). Any other pattern keeps every Application.
    Candidates are a superset of the matches, in the order the Applications were given; the
    selection still matches each pattern, so the result is the same as without an index.
    """

    def __init__(self, apps: Sequence[Application]) -> None:
        self.apps = apps
        self._by_name: dict[str, list[int]] = {}
        for position, app in enumerate(apps):
            self._by_name.setdefault(app.name, []).append(position)
        self._names = sorted(self._by_name)

    def renewed(self, apps: Sequence[Application]) -> AppIndex:
        """The index of ``apps``, which bear the names of this index's Applications in the
        same order (newer views of them): the positions are shared, and so is
        :attr:`positions_token`, under which a selection may keep the positions it found."""
        index = AppIndex.__new__(AppIndex)
        index.apps, index._by_name, index._names = apps, self._by_name, self._names
        return index

    def position(self, name: str) -> int | None:
        """The position of the Application ``name``; None: none (or several) of that name."""
        found = self._by_name.get(name)
        return found[0] if found is not None and len(found) == 1 else None

    @property
    def positions_token(self) -> object:
        """The same object for indexes of the same names in the same order."""
        return self._by_name

    def _positions(self, pattern: str) -> Iterable[int] | None:
        """Positions of the apps ``pattern`` may match; ``None`` for every app."""
        if not any(c in _GLOB_CHARS for c in pattern):
            return self._by_name.get(pattern, ())
        prefix = pattern[:-1]
        if pattern.endswith("*") and not any(c in _GLOB_CHARS for c in prefix):
            found: list[int] = []
            names = self._names
            for i in range(bisect.bisect_left(names, prefix), len(names)):
                if not names[i].startswith(prefix):
                    break
                found.extend(self._by_name[names[i]])
            return found
        return None

    def positions(self, patterns: Iterable[str]) -> list[int] | None:
        """The positions of the apps any of ``patterns`` may match, in order; None: every
        app."""
        positions: set[int] = set()
        for pattern in patterns:
            found = self._positions(pattern)
            if found is None:
                return None
            positions.update(found)
        return sorted(positions)

    def candidates(self, patterns: Iterable[str]) -> Sequence[Application]:
        """The apps any of ``patterns`` may match, in their original order."""
        return self.at(self.positions(patterns))

    def at(self, positions: list[int] | None) -> Sequence[Application]:
        """The apps at ``positions`` (:meth:`positions`; None: every app)."""
        if positions is None:
            return self.apps
        apps = self.apps
        return [apps[i] for i in positions]
