"""The limits of one template expansion, in one place.

Templates come from tenants (an ImageUpdater's ``imageName``, a branch name, a commit message), so
an expansion is bounded the way Go bounds it and a little more:

* :data:`MAX_FMT_NUMBER`: Go's ``fmt`` refuses a width or precision whose magnitude passes one
  million (``tooLarge``): a ``*`` argument that large prints ``%!(BADWIDTH)`` / ``%!(BADPREC)``,
  a literal that long ends the format (``%!(NOVERB)``). Fixed, as in Go.
* :data:`MAX_TEMPLATE_DEPTH`: nested ``{{template}}`` calls; :data:`MAX_PARSE_DEPTH`: nested
  actions (``if``, ``with``, ``range``, ``block``, parentheses) in the source, a parse error
  ``max expression depth exceeded`` (Go's words for parentheses, which it caps at 10,000). Fixed.
* :attr:`Limits.max_output` (default :data:`MAX_OUTPUT_BYTES`): the bytes (UTF-8) one expansion
  writes; every text a function builds (``print``, ``printf``, ``println``, an extra function's
  result) is held to it too, so no value larger than the output can be built. Going past it
  raises :class:`~.errors.OutputLimitError`.
* :attr:`Limits.max_steps` (default :data:`MAX_STEPS`): the execution steps of one expansion.
  Each node executed (text, action, ``if``/``with``/``range``, ``{{template}}``), each range
  iteration and each function call is one step, and a function's text result costs one more step
  per :data:`STEP_BYTES` bytes, so every step does bounded work. Going past it raises
  :class:`~.errors.StepLimitError`.

A caller passes its own :class:`Limits` to :meth:`~.template.Template.render`; without, the
defaults apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MAX_OUTPUT_BYTES: Final = 1 << 20
"""Default cap on the bytes one expansion writes (1 MiB)."""
MAX_STEPS: Final = 100_000
"""Default cap on the execution steps of one expansion."""
STEP_BYTES: Final = 1024
"""A function's text result costs one extra step per this many bytes."""
MAX_FMT_NUMBER: Final = 1_000_000
"""Go's ``fmt`` bound on a width or precision (``tooLarge``: beyond ±1e6)."""
MAX_TEMPLATE_DEPTH: Final = 100
"""Nested ``{{template}}`` calls."""
MAX_PARSE_DEPTH: Final = 100
"""Nesting of ``if``/``with``/``range``/``block`` and parenthesized pipelines in the source."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The caps of one expansion (see the module docstring)."""

    max_output: int = MAX_OUTPUT_BYTES
    max_steps: int = MAX_STEPS


DEFAULT_LIMITS: Final = Limits()
