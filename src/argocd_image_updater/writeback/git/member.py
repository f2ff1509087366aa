"""One Application's part of a git batch: its targets rendered against the work tree.

Every target of the Application (``writeBackTarget`` may list several) is rendered before
anything is written, so a target that fails leaves the others unwritten too; a change whose
target file was set back from the tag written before (a revert) is held, not written again
(:class:`~argocd_image_updater.plan.holds.RollbackGuard`).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.plan.holds import RollbackGuard
from argocd_image_updater.plan.model import AppPlan, ImageChange
from argocd_image_updater.plan.params import image_tag
from argocd_image_updater.writeback.formats.base import ImageLookup
from argocd_image_updater.writeback.git.worktree import WorkTree
from argocd_image_updater.writeback.parent import locate_manifest
from argocd_image_updater.writeback.targets import GitTarget


@dataclass(frozen=True, slots=True)
class Member:
    config: AppUpdateConfig
    plan: AppPlan
    target: GitTarget
    more: tuple[GitTarget, ...] = ()
    """The targets after the first (``writeBackTarget`` as a list)."""

    @property
    def key(self) -> str:
        return f"{self.config.app.namespace}/{self.config.app.name}"


def _only(member: Member, change: ImageChange) -> Member:
    """``member`` reduced to one image change (to ask whether the target holds that one)."""
    plan = dataclasses.replace(
        member.plan,
        changes=(change,),
        managed=change.edits,
        results=tuple(r for r in member.plan.results if r.alias == change.alias),
    )
    return dataclasses.replace(member, plan=plan)


def held_aliases(
    work: WorkTree, member: Member, rendered: tuple[tuple[str, str], ...] | None
) -> set[str]:
    """The aliases whose new value the member's target file already holds. ``rendered`` is
    :func:`render_member`'s answer for the whole member (None: the file is already right)."""
    changes = member.plan.changes
    if rendered is None:
        return {c.alias for c in changes}
    if len(changes) < 2:
        return set()
    return {c.alias for c in changes if render_member(work, _only(member, c)) is None}


class WorkFiles:
    """A work tree as the target formats read it (a
    :class:`~argocd_image_updater.writeback.formats.base.TreeFiles`), with the files in
    ``pending`` (rendered for a member, not yet written) read in their new state."""

    def __init__(self, work: WorkTree) -> None:
        self._work = work
        self.pending: dict[str, str] = {}

    def _dir(self, path: str) -> Path:
        return self._work.path / path if path not in ("", ".") else self._work.path

    def read(self, path: str) -> str | None:
        pending = self.pending.get(path)
        return pending if pending is not None else self._work.read(path)

    def listdir(self, path: str) -> list[str] | None:
        try:
            return os.listdir(self._dir(path))
        except (FileNotFoundError, NotADirectoryError):
            return None

    def files(self, path: str, recurse: bool) -> list[str]:
        top = self._dir(path)
        if top.is_symlink() or not top.is_dir():
            return []
        out: list[str] = []
        for root, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and recurse)
            rel = Path(root).relative_to(self._work.path).as_posix()
            for name in names:
                full = Path(root, name)
                if not name.startswith(".") and full.is_file() and not full.is_symlink():
                    out.append(name if rel == "." else f"{rel}/{name}")
        return sorted(out)


def render_member(work: WorkTree, member: Member) -> tuple[tuple[str, str], ...] | None:
    """(path, new text) of every file the Application's targets change, or None when they
    already hold the plan. A target that fails fails them all (nothing is written)."""
    files = WorkFiles(work)
    for target in (member.target, *member.more):
        for path, new in target.format.render_files(
            target.file_path, files, member.config, member.plan
        ):
            files.pending[path] = new
    return tuple(files.pending.items()) or None


@dataclass(frozen=True, slots=True)
class RolledBack:
    """A change held because the target file holds an older tag than the one written before."""

    guard: RollbackGuard
    found: str
    path: str


def rolled_back(work: WorkTree, member: Member) -> dict[str, RolledBack]:
    """The changes of ``member`` whose target file was rolled back (:class:`RollbackGuard`);
    the first target is the one compared."""
    guarded = [c for c in member.plan.changes if isinstance(c.guard, RollbackGuard)]
    if not guarded:
        return {}
    target = member.target
    files = WorkFiles(work)
    found: dict[str, RolledBack] = {}
    for change in guarded:
        guard = change.guard
        assert isinstance(guard, RollbackGuard)
        lookup = ImageLookup(guard.kind, guard.names, guard.kustomize_name, change.image)
        value, path = target.format.current_in(target.file_path, files, member.config, lookup)
        tag = image_tag(value)
        if guard.check(tag) is not None:
            found[change.alias] = RolledBack(guard, tag, path)
    return found


def located(work: WorkTree, member: Member) -> Member:
    """``member`` with the file of a target found through the parent (``writeBackTarget:
    application``) located in ``work``; :class:`TargetError` when there is not one."""
    target = member.target
    if target.scan is None:
        return member
    app = member.config.app
    path = locate_manifest(WorkFiles(work), target.file_path, target.scan, app, target.repo_url)
    return dataclasses.replace(
        member, target=dataclasses.replace(target, file_path=path, scan=None)
    )


def render_and_hold(
    work: WorkTree, member: Member
) -> tuple[tuple[tuple[str, str], ...] | None, set[str], dict[str, RolledBack]]:
    """:func:`render_member` and :func:`held_aliases` of one member (one hand-off to a thread),
    leaving out the changes whose target was rolled back (:func:`rolled_back`); the file of
    a target found through the parent is located first (:func:`located`)."""
    member = located(work, member)
    back = rolled_back(work, member)
    if back:
        member = dataclasses.replace(member, plan=member.plan.held(dict.fromkeys(back, ("", ""))))
    rendered = render_member(work, member)
    return rendered, held_aliases(work, member, rendered), back
