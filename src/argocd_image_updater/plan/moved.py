"""Tags that moved: a tag the controller saw before with one digest now has another (pushed
again under the same name). Pure: the digests seen before come from the remembered record
(:class:`~argocd_image_updater.model.controller_state.ControllerState`), the digests seen now
from the cycle's scans and pins.

The digests seen in a cycle are those the registry gave: every tag a metadata scan read
(``newest-build``, ``digest``) and every tag pinned for ``pinDigest``. ``semver`` and
``alphabetical`` without ``pinDigest`` read tag names only: their tags have no digest to compare.
An Application hears of a move (a ``TagMoved`` Warning event) when one of its images runs the
moved tag or has it chosen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from argocd_image_updater.model.controller_state import repo_key
from argocd_image_updater.plan.choices import ScanResults
from argocd_image_updater.plan.jobs import AppJobs, ImageJob, ScanKey
from argocd_image_updater.policy.select import PolicyError

TagKey = tuple[str, str]
"""``(<registry host>/<repository path>, tag)``, the remembered record's keys."""


@dataclass(frozen=True, slots=True)
class TagMove:
    """``tag`` of ``repo`` had digest ``old`` when last seen and has ``new`` now."""

    repo: str
    tag: str
    old: str
    new: str

    @property
    def message(self) -> str:
        return (
            f"tag '{self.tag}' of {self.repo} moved to another digest: it was {self.old} when "
            f"last seen, it is {self.new} now"
        )


def _repo(job: ImageJob) -> str:
    return repo_key(job.endpoint.host, job.repository)


def _chosen(job: ImageJob, results: ScanResults) -> str:
    scan = results.get(job.scan_key)
    if scan is None or isinstance(scan, Exception):
        return ""
    try:
        chosen = results.choose(job.scan_key, job.policy, scan).chosen
    except PolicyError:
        return ""
    return chosen.name if chosen is not None else ""


def observed_digests(apps: Iterable[AppJobs], results: ScanResults) -> dict[TagKey, str]:
    """The digests the registry gave in this cycle, by repository and tag."""
    seen: dict[TagKey, str] = {}
    read: set[tuple[str, ScanKey]] = set()  # a scan shared by many Applications is read once
    for jobs in apps:
        for job in jobs.jobs:
            if not job.scan_key.metadata and not job.pin_digest:
                continue  # a scan of tag names gives no digest, and nothing was pinned for it
            scan = results.get(job.scan_key)
            if scan is None or isinstance(scan, Exception):
                continue
            repo = _repo(job)
            if (repo, job.scan_key) not in read:
                read.add((repo, job.scan_key))
                for tag in scan.tags:
                    if tag.digest:
                        seen[(repo, tag.name)] = tag.digest
            chosen = _chosen(job, results)
            pinned = results.pinned(job.scan_key, chosen) if chosen else None
            if isinstance(pinned, str) and pinned:
                seen[(repo, chosen)] = pinned
    return seen


def tag_moves(
    observed: Mapping[TagKey, str], seen_before: Callable[[str, str], str | None]
) -> dict[TagKey, TagMove]:
    """The tags of ``observed`` whose digest differs from the one seen before (a tag never seen
    before has not moved)."""
    moves: dict[TagKey, TagMove] = {}
    for (repo, tag), digest in observed.items():
        old = seen_before(repo, tag)
        if old and old != digest:
            moves[(repo, tag)] = TagMove(repo, tag, old, digest)
    return moves


def moves_of(
    jobs: AppJobs, results: ScanResults, moves: Mapping[TagKey, TagMove]
) -> tuple[TagMove, ...]:
    """The moves an Application hears of: tags its images run or have chosen."""
    if not moves:
        return ()
    found: dict[TagKey, TagMove] = {}
    for job in jobs.jobs:
        repo = _repo(job)
        tags = {_chosen(job, results)}
        if job.live is not None and job.live.tag:
            tags.add(job.live.tag)
        for tag in sorted(t for t in tags if t):
            move = moves.get((repo, tag))
            if move is not None:
                found.setdefault((repo, tag), move)
    return tuple(found.values())
