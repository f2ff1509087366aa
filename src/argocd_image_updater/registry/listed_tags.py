"""The tags of name-only scans, reused while a repository lists exactly the same names.

A scan that needs tag names only (``semver``, ``alphabetical``, time-sorted registries) turns
each listed name into a :class:`~argocd_image_updater.model.tags.TagInfo`. From one cycle to the
next most repositories list the same names: the last cycle's tuple of ``TagInfo`` is handed out
again, so the planner's choice memory (:class:`~argocd_image_updater.plan.choices.ChoiceMemory`)
recognises the tags by identity instead of comparing them one by one. The names are compared
exactly (a new, removed or reordered tag is a new list). A repository that no scan listed in
the last :data:`ROUNDS_KEPT` rounds is forgotten, so the entries follow the repositories in use.

A name-only ``TagInfo`` is its name alone, so one ``TagInfo`` per distinct name serves every
repository that lists it (repositories of one organisation mostly share their version names:
2,000 repositories × 100 tags are 200,000 tags, but often a few hundred distinct names).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Final

from argocd_image_updater.model.tags import TagInfo

ROUNDS_KEPT: Final = 64
"""A repository's entry is dropped when no scan listed it for this many rounds."""


class ListedTags:
    """Last listing's names and tags per scan (repository, credentials and tag filter)."""

    __slots__ = ("_entries", "_infos", "_round")

    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[int, tuple[str, ...], tuple[TagInfo, ...]]] = {}
        self._infos: dict[str, TagInfo] = {}
        """One name-only ``TagInfo`` per name, shared by the repositories listing it."""
        self._round = 0

    def __len__(self) -> int:
        return len(self._entries)

    def new_round(self) -> None:
        """A new scan round began; forget the repositories no recent round listed."""
        self._round += 1
        if self._round % ROUNDS_KEPT == 0:
            oldest = self._round - ROUNDS_KEPT
            self._entries = {k: v for k, v in self._entries.items() if v[0] > oldest}
            self._infos = {tag.name: tag for entry in self._entries.values() for tag in entry[2]}

    def tags(self, key: Hashable, names: tuple[str, ...]) -> tuple[TagInfo, ...]:
        """The ``TagInfo`` of ``names``: the last ones of ``key`` when it listed the same."""
        kept = self._entries.get(key)
        if kept is not None and kept[1] == names:
            tags = kept[2]
        else:
            infos = self._infos
            for name in set(names).difference(infos):
                infos[name] = TagInfo(name)
            tags = tuple(map(infos.__getitem__, names))  # no Python code per name
        self._entries[key] = (self._round, names, tags)
        return tags
