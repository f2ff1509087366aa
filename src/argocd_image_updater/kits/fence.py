"""A write fence: a check that writers make right before they issue a write.

Whoever starts a piece of work that may write sets the fence for it (:func:`fenced_context`: a
context in which to run that work's task; every task it starts inherits it); a writer calls
:func:`check_fence` as the last step before it sends a request, pushes or saves. While the
fence's check returns False the write is refused with :class:`WriteFenced` and nothing is sent.
Outside any fence every write is allowed.

The fence is a context variable rather than a parameter threaded through every writer: the
writers sit several calls below whoever knows whether writing is still allowed, and a check that
costs a function call can then be made before every single write.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass


class WriteFenced(Exception):
    """A write was refused because the fence was closed; nothing was sent."""


@dataclass(frozen=True, slots=True)
class _Fence:
    allowed: Callable[[], bool]
    reason: str


_FENCE: contextvars.ContextVar[_Fence | None] = contextvars.ContextVar("write_fence", default=None)


def fenced_context(allowed: Callable[[], bool], reason: str) -> contextvars.Context:
    """A copy of the current context in which writes need ``allowed()`` to be True; ``reason``
    says why a refused write was refused (``not <what>: <reason>``). Run a task in it with
    ``asyncio.create_task(work, context=...)``."""
    context = contextvars.copy_context()
    context.run(_FENCE.set, _Fence(allowed, reason))
    return context


def check_fence(what: str) -> None:
    """Raise :class:`WriteFenced` when the fence of the current context is closed; ``what``
    names the write (``push to branch main of <url>``)."""
    fence = _FENCE.get()
    if fence is not None and not fence.allowed():
        raise WriteFenced(f"not {what}: {fence.reason}")
