"""Whether two sequences hold the very same objects, and where they do not: how a stage
recognises the input it was given last cycle (a collection handed out again, or mended, shares
its objects) in one pass without Python code per item."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import compress
from typing import Any


def same_items(one: Sequence[Any], other: Sequence[Any]) -> bool:
    """Whether ``one`` and ``other`` hold the very same objects (``is``) in the same order."""
    return len(one) == len(other) and all(map(operator.is_, one, other))


def changed_places(one: Sequence[Any], other: Sequence[Any]) -> list[int]:
    """The places where ``one`` and ``other`` (of the same length) hold different objects."""
    return list(compress(range(len(one)), map(operator.is_not, one, other)))
