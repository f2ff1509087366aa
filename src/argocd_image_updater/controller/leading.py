"""Work that only the leader may do, stopped when the leadership is lost.

The work (an update cycle, a webhook event) runs in a task of its own, under a write fence
(:mod:`argocd_image_updater.kits.fence`) whose check is the elector's :meth:`is_leader`. Two
mechanisms, so that no write is issued once the Lease may be taken by another replica:

* when the elector stands down (it could not renew the Lease within the renew deadline, or
  another replica holds it) the task is cancelled: a request in flight is abandoned (its
  connection closed), a git process is killed with its whole process group, and nothing queued
  behind them starts;
* every writer checks the fence right before it issues a write (an Application patch, a git
  push, a pull-request call, a status write, an event, the state ConfigMap): it closes at the
  renew deadline itself, so a write cannot start after it even when the cancellation has not
  reached the task yet (the event loop was busy).

Because the renew deadline is shorter than the lease duration, both happen before any other
replica may take the Lease. The replica then stands by and campaigns again; the next cycle it
runs as the leader starts from what the cluster and the repositories hold.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, Final, Protocol, TypeVar

from argocd_image_updater.kits.fence import fenced_context
from argocd_image_updater.observe.log import get_logger

log = get_logger("leader")

T = TypeVar("T")

NOT_LEADER: Final = "this replica is no longer the leader"
"""Why a fenced write was refused (``not <write>: <reason>``)."""

CANCEL_WAIT_SECONDS: Final = 10.0
"""How long a cancelled piece of work may take to end (a killed git process group is reaped
within seconds); it is reported, not waited for, beyond that."""


class Leadership(Protocol):
    """What work runs under: a :class:`~argocd_image_updater.controller.leader.LeaderElector`,
    or a sharded fleet's :class:`~argocd_image_updater.controller.membership.Membership`."""

    identity: str
    leading: asyncio.Event
    not_leading: asyncio.Event

    def is_leader(self) -> bool: ...


class LeadershipLost(Exception):
    """The work was cancelled because this replica stopped leading."""


async def run_as_leader(elector: Leadership | None, work: Coroutine[Any, Any, T], what: str) -> T:
    """Run ``work`` (``what``: "update cycle") while ``elector`` leads; without an elector, just
    run it. Raises :class:`LeadershipLost` when the leadership was lost first (the work was
    cancelled and has ended, or was left to end on its own after
    :data:`CANCEL_WAIT_SECONDS`)."""
    if elector is None:
        return await work
    if not elector.is_leader():
        work.close()
        log.warning("not starting the %s: %s", what, NOT_LEADER, identity=elector.identity)
        raise LeadershipLost(f"not starting the {what}: {NOT_LEADER}")
    task = asyncio.create_task(work, context=fenced_context(elector.is_leader, NOT_LEADER))
    lost = asyncio.create_task(elector.not_leading.wait())
    try:
        await asyncio.wait({task, lost}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        lost.cancel()
        await _cancel(task)
        raise
    lost.cancel()
    if task.done():
        return task.result()
    ended = await _cancel(task)
    log.warning(
        "lost the leadership: cancelled the %s and its writes in flight%s; standing by",
        what,
        "" if ended else f" (still ending after {CANCEL_WAIT_SECONDS:g}s)",
        identity=elector.identity,
    )
    raise LeadershipLost(f"the {what} was cancelled: {NOT_LEADER}")


async def _cancel(task: asyncio.Task[Any]) -> bool:
    """Cancel ``task`` and wait (at most :data:`CANCEL_WAIT_SECONDS`) for it to end."""
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=CANCEL_WAIT_SECONDS)
    if task in done:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            task.result()
        return True
    return False
