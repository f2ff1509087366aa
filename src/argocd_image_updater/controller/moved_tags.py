"""The cycle's check for tags that moved: compare the digests the registry gave in this cycle
(scans and pins) with the remembered ones, log each move once, and remember the new digests.

The Applications that run or chose a moved tag get a ``TagMoved`` Warning event from the report
stage (:attr:`~argocd_image_updater.pipeline.records.AppOutcome.moved_tags`). The remembered
digest is updated at once, so a move is reported in one cycle only, also across restarts and
leader changes (the record is persisted).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from argocd_image_updater.model.controller_state import ControllerState
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.plan.choices import ScanResults
from argocd_image_updater.plan.jobs import AppJobs
from argocd_image_updater.plan.moved import TagKey, TagMove, observed_digests, tag_moves

log = get_logger("cycle")

REASON: Final = "TagMoved"


def note_moved_tags(
    state: ControllerState, apps: Iterable[AppJobs], results: ScanResults
) -> dict[TagKey, TagMove]:
    """The tags that moved since the controller last saw them; every digest seen now is
    remembered."""
    observed = observed_digests(apps, results)
    moves = tag_moves(observed, state.seen_digest)
    for move in moves.values():
        log.warning("%s", move.message, image_name=move.repo, image_tag=move.tag, reason=REASON)
    for (repo, tag), digest in observed.items():
        state.record_digest(repo, tag, digest)
    return moves
