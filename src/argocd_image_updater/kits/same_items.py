"""Whether two sequences hold the very same objects: how a stage recognises the input it was
given last cycle (a collection handed out again shares its objects) in one pass without
Python code per item."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any


def same_items(one: Sequence[Any], other: Sequence[Any]) -> bool:
    """Whether ``one`` and ``other`` hold the very same objects (``is``) in the same order."""
    return len(one) == len(other) and all(map(operator.is_, one, other))
