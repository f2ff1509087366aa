"""What an update strategy is: the protocol every strategy module implements.

A strategy is a singleton of a subclass of :class:`UpdateStrategy`, exported as ``STRATEGY`` by
its own module in this package. It carries everything that differs between strategies: its name
and legacy names, how it reads the image's constraint, what the registry scan must fetch for it,
how it orders tags (through a :class:`Ranker` prepared for one choice), the words of its
summaries, how ``test --explain`` orders rejected tags, whether a chosen tag is *below* the
running one (never downgrade), and whether the result is pinned to its digest.

The filters common to every strategy (``allowTags``, ``ignoreTags``, platforms) and the choice
itself live in :mod:`~argocd_image_updater.policy.select`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeAlias

from argocd_image_updater.model.platform import PlatformFilter
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy.verdicts import Rejection, Verdict

Key: TypeAlias = tuple[Any, ...]
"""A sort key: among the eligible tags of one choice, the greatest key wins."""


class Ranker(ABC):
    """A strategy prepared for one choice (its constraint read, the registry's order known)."""

    def excludes(self, name: str) -> Verdict | None:
        """A verdict for a tag the strategy never considers, checked before the platforms."""
        return None

    @abstractmethod
    def rank(self, tag: TagInfo, platforms: PlatformFilter) -> Key | Verdict | Rejection:
        """The sort key of a tag that passed every filter, or the verdict rejecting it."""


class UpdateStrategy(ABC):
    """One update strategy (``updateStrategy`` / ``update-strategy``)."""

    name: ClassVar[str]
    """The name users write (matched case-insensitively)."""
    legacy_names: ClassVar[tuple[str, ...]] = ()
    """Deprecated names still accepted, each with a warning naming :attr:`name`."""
    position: ClassVar[int]
    """Where the strategy is listed (help texts, docs): lower first."""
    pins_digest: ClassVar[bool] = False
    """Whether the result is the digest of the chosen tag: the image is written as
    ``tag@digest``, is up to date only with that digest, and picks the live container by it.
    Other strategies compare and write tag names."""
    cacheable: ClassVar[bool] = True
    """Whether tag metadata may be cached (a tag whose digest is followed moves)."""
    needs_constraint: ClassVar[bool] = False
    """Whether an image must carry a constraint to use the strategy."""
    beaten: ClassVar[str] = "older than"
    """How the verdict of a tag the chosen one beat reads: ``<beaten> '<chosen>'``."""
    choice: ClassVar[str] = ""
    """How the summary names what was chosen, e.g. ``newest build``."""

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<update strategy {self.name}>"

    def needs_metadata(self, *, time_sorted: bool = False) -> bool:
        """Whether the scan must fetch each tag's manifest; ``time_sorted``: the registry lists
        tags by age."""
        return False

    def only_tags(self, constraint: str) -> tuple[str, ...]:
        """The only tags the scan needs (``()``: every tag)."""
        return ()

    @abstractmethod
    def prepare(self, constraint: str, image: str, order_hint: Mapping[str, int] | None) -> Ranker:
        """The ranker for one choice. ``constraint`` is the image's tag part; raise
        :class:`~argocd_image_updater.policy.verdicts.PolicyError` naming ``image`` when the
        strategy cannot use it. ``order_hint`` maps tag names to their age rank (higher is
        newer) when the registry lists tags by age."""

    def chosen_summary(self, chosen: TagInfo, constraint: str, counted: str) -> str:
        """The summary of a choice; ``counted`` reads ``<n> tags``."""
        return f"chose '{chosen.name}': {self.choice} ({counted})"

    def none_summary(self, constraint: str, verdicts: Sequence[Verdict], detail: str) -> str:
        """The summary when no tag is eligible; ``detail`` counts the tags per verdict."""
        return f"no tag is eligible for strategy '{self.name}' ({detail})"

    def explain_key(
        self,
        tag: TagInfo | None,
        name: str,
        platforms: PlatformFilter,
        order_hint: Mapping[str, int] | None,
    ) -> Key:
        """``test --explain``'s order of any tag, greater is better; tags the strategy cannot
        order come last, by name."""
        return (1, name)

    def downgrade(
        self,
        running: str,
        chosen: TagInfo,
        tags: Sequence[TagInfo],
        order_hint: Mapping[str, int] | None,
        platforms: PlatformFilter,
    ) -> str | None:
        """Why ``chosen`` is ordered below the ``running`` tag (a phrase naming both), ``None``
        when it is not or the two cannot be ordered. ``tags`` and ``order_hint`` are the scan's.
        ``running`` is a tag other than the chosen one."""
        return None
