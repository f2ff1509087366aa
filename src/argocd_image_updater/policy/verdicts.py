"""Per-tag verdicts of the tag choice: why a tag was (not) chosen.

The verdict values are a user interface (``test --explain``, the ``ImagesUpToDate`` condition,
the logs): they never change spelling.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class TagVerdict(enum.StrEnum):
    """Why a tag was (not) chosen, in the order ``test --explain`` groups rejected tags."""

    IGNORED = "ignored"
    NOT_ALLOWED = "not-allowed"
    NOT_SEMVER = "not-semver"
    OUTSIDE_CONSTRAINT = "outside-constraint"
    PRERELEASE = "prerelease"
    PLATFORM_MISMATCH = "platform-mismatch"
    TOO_YOUNG = "too-young"
    """Not ``minAge`` old yet (detail: ``until <time>``)."""
    NOT_CONSTRAINT_TAG = "not-constraint-tag"
    NO_METADATA = "no-metadata"
    OLDER = "older"
    CHOSEN = "chosen"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One tag's verdict, with a human detail (``""`` for the chosen tag)."""

    tag: str
    reason: TagVerdict
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Rejection:
    """A verdict without its tag: what a strategy's ranker may return for a rejected tag when
    many tags share it (the choice makes the :class:`Verdict` only if the verdicts are read)."""

    reason: TagVerdict
    detail: str = ""

    def of(self, tag: str) -> Verdict:
        return Verdict(tag, self.reason, self.detail)


class PolicyError(ValueError):
    """A policy that cannot be applied to an image (bad constraint, digest without one)."""
