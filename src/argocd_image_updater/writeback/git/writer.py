"""Write-back method ``git``: every change of a cycle for the same repository and branch in one
commit and one push.

For each group of Applications sharing (repository, base branch, write branch) the writer takes
the repository's cached clone (fetching only what changed; pushing straight to a named branch
left where our last push put it, no fetch at all: the push carries a lease on that commit and a
moved branch is fetched then), renders each Application's target
files (``.argocd-source-<app>.yaml``, a kustomization, a Helm values file, the manifests of a
directory; every target of a list — only the target bytes change; a target that fails leaves
the Application's other targets unwritten too), commits once with a message listing every app and image, and pushes. A rejected push
(someone else pushed) is retried in-process on the new head; the edits are idempotent.

An image whose new value the target already holds (written in an earlier cycle, Argo CD has not
synced yet) is reported ``waiting-for-sync``, not updated. With a write branch (pull request
mode), the target branch is looked at first: Applications whose change it already holds (a
merged request — merge commit or squash, head branch kept or deleted) get no commit, no push and
no pull request call.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from argocd_image_updater.kits.gotemplate import Template
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.records import BatchResult
from argocd_image_updater.plan.model import AppPlan
from argocd_image_updater.writeback.git.auth import GitCredentials, HttpsCredentials
from argocd_image_updater.writeback.git.credentials import (
    GitCredentialsError,
    GitCredentialsResolver,
)
from argocd_image_updater.writeback.git.member import Member, RolledBack, render_and_hold
from argocd_image_updater.writeback.git.repo import RepoCache
from argocd_image_updater.writeback.git.worktree import WorkTree
from argocd_image_updater.writeback.messages import (
    branch_name,
    grouped_commit_message,
    pr_title_body,
)
from argocd_image_updater.writeback.parent import ParentLookup, find_parent, is_implicit
from argocd_image_updater.writeback.scm import client_for, ensure_pull_request, parse_repo_url
from argocd_image_updater.writeback.targets import group_key, resolve_targets

log = get_logger("git-writer")

Grouping = Literal["repository", "application"]
GROUPINGS: Final = ("repository", "application")


@dataclass(frozen=True, slots=True)
class CommitSettings:
    user: str = "argocd-image-updater"
    email: str = "noreply@argoproj.io"
    signing_key: str = ""
    signing_method: str = "openpgp"
    sign_off: bool = False
    template: Template | None = None
    grouping: Grouping = "repository"


class GitBatchWriter:
    """The ``BatchWriter`` of the cycle for Applications using the ``git`` write-back method."""

    def __init__(
        self,
        cache: RepoCache,
        credentials: GitCredentialsResolver,
        commit: CommitSettings,
        controller_namespace: str,
        pr_api_url: str = "",
        parents: ParentLookup | None = None,
    ) -> None:
        self._parents = parents
        """Reads a parent Application (``writeBackTarget: application``)."""
        self._cache = cache
        self._credentials = credentials
        self._commit = commit
        self._namespace = controller_namespace
        self._pr_api_url = pr_api_url or None

    @property
    def cache(self) -> RepoCache:
        return self._cache

    @property
    def credentials(self) -> GitCredentialsResolver:
        return self._credentials

    @property
    def commit_settings(self) -> CommitSettings:
        return self._commit

    async def _pull_request(
        self, member: Member, creds: GitCredentials, head: str, base: str, message: str
    ) -> str:
        """Open the pull/merge request for ``head`` (or refresh ours), close superseded ones;
        the request's web URL."""
        settings = member.config.write_back.git.pull_request
        if settings is None:
            return ""
        if not isinstance(creds, HttpsCredentials):
            raise GitCredentialsError(
                f"credentials type {type(creds).__name__} do not support PR creation: "
                "use HTTPS credentials (a token as password) or a GitHub App"
            )
        repo = parse_repo_url(member.target.repo_url)
        title, body = pr_title_body(message, member.config.app.namespace, member.config.app.name)
        client = client_for(
            settings.provider,
            repo,
            creds.password,
            api_url=settings.api_url or self._pr_api_url,
            username=creds.username,
        )
        try:
            pr, created, closed = await ensure_pull_request(
                client,
                repo,
                head,
                base,
                title,
                body,
                settings.labels,
                supersedes_prefix=f"image-updater-{member.target.target_key}-",
            )
        finally:
            await client.aclose()
        log.info(
            "pull request %s %s",
            pr.url,
            "created" if created else "updated",
            application=member.key,
            superseded=",".join(p.url for p in closed),
        )
        return pr.url

    async def write_batch(self, items: Sequence[tuple[AppUpdateConfig, AppPlan]]) -> BatchResult:
        result = BatchResult()
        errors = result.errors
        groups: dict[tuple[str, ...], list[Member]] = {}
        for config, plan in items:
            key = f"{config.app.namespace}/{config.app.name}"
            try:
                parent = None
                if is_implicit(config.write_back.write_back_targets):
                    parent = await find_parent(config.app, self._namespace, self._parents)
                target, *more = resolve_targets(
                    config.app, config.write_back, self._namespace, parent
                )
                write_branch = None
                if target.write_branch_template is not None:
                    write_branch = branch_name(
                        target.write_branch_template,
                        plan.changes,
                        config.app.name,
                        config.app.namespace,
                        target.target_key,
                    )
                # Apps share a commit only when they also use the same credentials: one
                # tenant's push never runs with another tenant's Secret.
                group: tuple[str, ...] = (
                    *group_key(target, write_branch),
                    config.write_back.git_credentials_ref or "repocreds",
                    config.app.namespace,
                )
            except ValueError as err:
                errors[key] = f"git write-back of {key}: {err}"
                continue
            groups.setdefault(group, []).append(Member(config, plan, target, tuple(more)))
        await asyncio.gather(
            *(self._write_group(group, members, result) for group, members in groups.items())
        )
        return result

    async def _write_group(
        self, group: tuple[str, ...], members: list[Member], result: BatchResult
    ) -> None:
        first = members[0]
        repo_url = first.target.repo_url
        write_branch = group[2] or None
        base = first.target.base_branch or "HEAD"
        failed: dict[str, str] = {}
        held: dict[str, dict[str, str]] = {}
        rolled: dict[str, dict[str, RolledBack]] = {}
        reverted: dict[str, dict[str, tuple[str, str]]] = {}
        todo = list(members)

        per_app = self._commit.grouping == "application"

        def note(member: Member, aliases: set[str], branch: str) -> None:
            """Note the aliases whose new value the target on ``branch`` already holds."""
            if aliases:
                then = "it to be merged and synced" if branch == write_branch else "Argo CD to sync"
                text = f"already written to branch {branch} of {repo_url}; waiting for {then}"
                held[member.key] = dict.fromkeys(aliases, text)

        async def check(
            work: WorkTree, member: Member, branch: str
        ) -> tuple[tuple[str, str], ...] | None:
            """Render ``member`` on the tree shown in ``work`` (``branch``'s content) and note
            the aliases whose new value it already holds."""
            # YAML parsing is CPU work: keep the event loop free for other repositories.
            rendered, aliases, back = await asyncio.to_thread(render_and_hold, work, member)
            note(member, aliases, branch)
            if back:
                rolled[member.key] = back
            return rendered

        def render_all(work: WorkTree, branch: str, stop: threading.Event) -> None:
            """Render and write every member, one after the other (a later one sees the files
            an earlier one wrote), in one thread: one hand-off for the whole group."""
            for member in todo:
                if stop.is_set():
                    return
                try:
                    rendered, aliases, back = render_and_hold(work, member)
                except (ValueError, OSError) as err:
                    failed[member.key] = f"git write-back of {member.key}: {err}"
                    continue
                note(member, aliases, branch)
                if back:
                    rolled[member.key] = back
                for path, text in rendered or ():
                    work.write(path, text)

        async def apply(work: WorkTree) -> None:
            failed.clear()
            held.clear()
            rolled.clear()
            try:
                await render(work)
            finally:
                await name_authors(work)

        async def name_authors(work: WorkTree) -> None:
            """Who committed the rolled-back values found (one ``git log`` per file)."""
            authors: dict[str, str] = {}
            for back in rolled.values():
                for found in back.values():
                    if found.path not in authors:
                        authors[found.path] = await work.last_author(found.path)
            reverted.clear()
            for key, back in rolled.items():
                verdicts = {
                    alias: found.guard.check(found.found, authors.get(found.path, ""))
                    for alias, found in back.items()
                }
                reverted[key] = {
                    alias: (v.message, v.detail) for alias, v in verdicts.items() if v is not None
                }

        async def render(work: WorkTree) -> None:
            if not per_app:
                stop = threading.Event()
                job = asyncio.ensure_future(
                    asyncio.to_thread(render_all, work, work.branch or base, stop)
                )
                try:
                    await asyncio.shield(job)
                except asyncio.CancelledError:
                    # No file is written once the clone is handed back: stop, then wait.
                    stop.set()
                    await asyncio.wait({job})
                    raise
                return
            for member in todo:
                try:
                    rendered = await check(work, member, work.branch or base)
                except (ValueError, OSError) as err:
                    failed[member.key] = f"git write-back of {member.key}: {err}"
                    continue
                if rendered is None:
                    continue
                for path, text in rendered:
                    work.write(path, text)
                # One commit per application, all in the same push.
                await work.commit(
                    grouped_commit_message(
                        self._commit.template,
                        [(member.config.app.name, member.plan.changes)],
                    ),
                    self._commit.user,
                    self._commit.email,
                    self._commit.signing_key,
                    self._commit.signing_method,
                    self._commit.sign_off,
                )

        async def landed(work: WorkTree, target: str) -> dict[str, dict[str, str]]:
            """What the target branch (shown in ``work``) already holds, per member."""
            for member in members:
                with contextlib.suppress(ValueError, OSError):  # the write reports these
                    await check(work, member, target)
            found = dict(held)
            held.clear()
            rolled.clear()
            return found

        merged: dict[str, dict[str, str]] = {}
        try:
            creds = await self._credentials.resolve(
                first.config.write_back.git_credentials_ref or "repocreds",
                repo_url,
                first.config.app.namespace,
            )
            branch = write_branch or base
            sha: str | None = None
            message = ""
            # Straight to the base branch: push first (with a lease on where the branch was last
            # seen), fetch only when it moved; a write branch is always fetched (the target
            # branch is looked at too).
            async with self._cache.checkout(
                repo_url,
                creds,
                branch,
                base=base if write_branch else None,
                optimistic=not write_branch,
            ) as work:
                resolved_base = work.base or base
                if write_branch and resolved_base != work.branch:
                    # Does the target branch hold the change already (a merged pull request)?
                    if work.remote_head is None:  # the new write branch starts from the target
                        merged = await landed(work, resolved_base)
                    else:
                        async with work.viewing(resolved_base) as shown:
                            if shown:
                                merged = await landed(work, resolved_base)
                    todo = [m for m in members if not _all_held(m, merged)]
                if todo:
                    message = grouped_commit_message(
                        self._commit.template,
                        [(m.config.app.name, m.plan.changes) for m in todo],
                    )
                    sha = await work.commit_and_push(
                        apply,
                        message,
                        author_name=self._commit.user,
                        author_email=self._commit.email,
                        signing_key=self._commit.signing_key,
                        signing_method=self._commit.signing_method,
                        sign_off=self._commit.sign_off,
                    )
            if todo and first.target.pull_request and write_branch:
                # Also when nothing new was committed: the request must exist and be current
                # (the target branch does not hold the change: there is something to merge).
                url = await self._pull_request(todo[0], creds, write_branch, resolved_base, message)
                result.links.update({m.key: url for m in todo if url and m.key not in failed})
        except Exception as err:  # every app of the group reports the failure; others go on
            for member in members:
                result.errors[member.key] = f"git write-back to {repo_url} failed: {err}"
            return
        result.errors.update(failed)
        for key, verdicts in reverted.items():
            if verdicts and key not in failed:
                result.held[key] = verdicts
        if sha and not write_branch:  # what Argo CD's revision must contain to run it
            for member in todo:
                if member.key not in failed and not _all_held(member, held):
                    result.pushed[member.key] = (repo_url, sha)
        for key in merged.keys() | held.keys():
            if key not in failed:  # what the write branch holds is said last
                result.waiting[key] = {**merged.get(key, {}), **held.get(key, {})}
        waiting = sum(1 for m in members if _all_held(m, result.waiting))
        log.info(
            "committed and pushed %d application(s)"
            if sha
            else "nothing to commit for %d application(s)",
            len(members) - waiting if sha else len(members),
            repository=repo_url,
            branch=write_branch or base,
            commit=sha or "",
            waiting_for_sync=waiting,
        )


def _all_held(member: Member, held: Mapping[str, Mapping[str, str]]) -> bool:
    """Whether the target already holds every change of ``member``."""
    aliases = held.get(member.key, {})
    return all(c.alias in aliases for c in member.plan.changes)


def default_cache_root(configured: str) -> Path:
    if configured:
        return Path(configured)
    import tempfile

    return Path(tempfile.mkdtemp(prefix="argocd-image-updater-git-"))
