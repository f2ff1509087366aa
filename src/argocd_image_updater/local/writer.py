"""Local mode, write-back method ``argocd``: edit the Application manifest files, then commit.

The plan becomes the same JSON patch the Kubernetes API would receive; it is applied to the
Application's document in its file surgically (only the changed values' bytes change, see
:mod:`argocd_image_updater.kits.yamltext.patch`).

* Manifests in a directory: all files of a cycle are written atomically and, when the directory
  is inside a Git work tree, committed together in one commit that holds only those files
  (anything else staged or modified is left alone). Nothing is pushed: in CI the job pushes; on a
  laptop the user reviews first. If the commit fails, the files are restored.
* Manifests in a remote repository (``--local-repo``): edited in the cached clone, committed once
  and pushed; a rejected push is retried on the new remote head.

A file that changed since the cycle read it is not touched; its Applications are reported and
updated in the next cycle.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from argocd_image_updater.kits.yamltext import YamlPatchError, apply_patch
from argocd_image_updater.local.manifests import Manifest, file_digest
from argocd_image_updater.local.store import LocalStore, RepoSource
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.ports import BatchWriter
from argocd_image_updater.pipeline.records import BatchResult
from argocd_image_updater.plan.model import AppPlan
from argocd_image_updater.plan.patch import PatchError, json_patch_ops
from argocd_image_updater.writeback.git import (
    CommitSettings,
    GitError,
    WorkTree,
    atomic_write,
    commit_in_place,
)
from argocd_image_updater.writeback.messages import grouped_commit_message

log = get_logger("local")

Member = tuple[AppUpdateConfig, AppPlan, Manifest]


@dataclass(slots=True)
class Edits:
    """The outcome of applying a cycle's plans to the manifest texts."""

    texts: dict[str, str] = field(default_factory=dict)
    """New text per changed file (relative path)."""
    errors: dict[str, str] = field(default_factory=dict)
    written: list[Member] = field(default_factory=list)


def edit_manifests(read: Callable[[str], str | None], by_file: Mapping[str, list[Member]]) -> Edits:
    """Apply each member's plan to its document; ``read(rel)`` gives a file's current text.

    A file whose text is not the one the cycle read is left alone (see the module docs).
    """
    out = Edits()
    for rel, members in by_file.items():
        problem = f"{rel} no longer exists"
        try:
            text = read(rel)
        except (OSError, ValueError) as err:
            text, problem = None, f"cannot read {rel}: {err}"
        changed = text is not None and file_digest(text) != members[0][2].digest
        if text is None or changed:
            for config, _, _ in members:
                app = config.app.qualified_name
                out.errors[app] = (
                    f"{rel} changed while {app} was being updated; it is updated in the next cycle"
                    if changed
                    else problem
                )
            continue
        new = text
        for member in members:
            config, plan, manifest = member
            try:
                ops = json_patch_ops(config.app.raw, plan)
                new = apply_patch(new, ops, document=manifest.document)
                out.written.append(member)
            except (YamlPatchError, PatchError) as err:
                out.errors[config.app.qualified_name] = f"cannot update {rel}: {err}"
        if new != text:
            out.texts[rel] = new
    return out


def _commit_message(commit: CommitSettings, members: Sequence[Member]) -> str:
    return grouped_commit_message(commit.template, [(c.app.name, p.changes) for c, p, _ in members])


class LocalManifestWriter:
    """The batch writer of local mode for Applications using the ``argocd`` method."""

    def __init__(self, store: LocalStore, commit: CommitSettings) -> None:
        self._store = store
        self._commit = commit

    async def write_batch(self, items: Sequence[tuple[AppUpdateConfig, AppPlan]]) -> BatchResult:
        errors: dict[str, str] = {}
        by_file: dict[str, list[Member]] = {}
        for config, plan in items:
            app = config.app
            manifest = self._store.location(app.namespace, app.name)
            if manifest is None:
                errors[app.qualified_name] = (
                    f"Application {app.qualified_name} is no longer in {self._store.source}"
                )
                continue
            by_file.setdefault(manifest.path, []).append((config, plan, manifest))
        source = self._store.source
        if isinstance(source, RepoSource):
            errors.update(await self._write_repo(source, by_file))
        else:
            errors.update(await self._write_directory(source.root, by_file))
        return BatchResult(errors)

    async def _write_directory(
        self, root: Path, by_file: Mapping[str, list[Member]]
    ) -> dict[str, str]:
        def read(rel: str) -> str | None:
            path = root / rel
            # No newline translation: a CRLF manifest keeps its line ends.
            return path.read_bytes().decode("utf-8") if path.is_file() else None

        edits = edit_manifests(read, by_file)
        originals: dict[Path, str] = {}
        for rel, text in edits.texts.items():
            path = root / rel
            originals[path] = path.read_bytes().decode("utf-8")
            atomic_write(path, text)
        if originals:
            try:
                await self._commit_files(root, sorted(originals), edits.written)
            except (GitError, OSError) as err:
                for path, text in originals.items():
                    atomic_write(path, text)
                for config, _, _ in edits.written:
                    edits.errors[config.app.qualified_name] = (
                        f"could not commit the change of {config.app.qualified_name}: {err}"
                    )
        return edits.errors

    async def _write_repo(
        self, source: RepoSource, by_file: Mapping[str, list[Member]]
    ) -> dict[str, str]:
        """Edit in the clone, commit once and push; a rejected push is retried on the new head
        (files that changed upstream are then left for the next cycle)."""
        result = Edits()

        async def apply(work: WorkTree) -> None:
            nonlocal result

            def read(rel: str) -> str | None:
                return work.read(posixpath.join(source.path, rel))

            result = edit_manifests(read, by_file)
            for rel, text in result.texts.items():
                work.write(posixpath.normpath(posixpath.join(source.path, rel)), text)

        members = [m for ms in by_file.values() for m in ms]
        try:
            creds = await source.credentials.resolve("repocreds", source.url, source.namespace)
            async with source.cache.checkout(source.url, creds, source.revision) as work:
                sha = await work.commit_and_push(
                    apply,
                    _commit_message(self._commit, members),
                    author_name=self._commit.user,
                    author_email=self._commit.email,
                    signing_key=self._commit.signing_key,
                    signing_method=self._commit.signing_method,
                    sign_off=self._commit.sign_off,
                )
        except Exception as err:  # every app of the push reports it; nothing was pushed
            return {
                c.app.qualified_name: f"could not push the change of {c.app.qualified_name} to "
                f"{source.url}: {err}"
                for c, _, _ in members
            }
        if sha:
            log.info(
                "committed and pushed %d application(s)",
                len(result.written),
                repository=source.url,
                commit=sha,
            )
        return result.errors

    async def _commit_files(self, root: Path, files: list[Path], members: list[Member]) -> None:
        done = await commit_in_place(
            root, files, _commit_message(self._commit, members), self._commit
        )
        if done is None:
            log.info(
                "updated %d manifest file(s); not in a git work tree, nothing committed",
                len(files),
                path=str(root),
            )
            return
        log.info(
            "committed %d application(s) in %d file(s)",
            len(members),
            len(done.paths),
            repository=str(done.toplevel),
            commit=done.sha,
        )


class SplitBatchWriter:
    """Routes each Application to the manifest writer (``argocd`` method) or the git writer."""

    def __init__(self, manifests: BatchWriter, git: BatchWriter) -> None:
        self._manifests = manifests
        self._git = git

    async def write_batch(self, items: Sequence[tuple[AppUpdateConfig, AppPlan]]) -> BatchResult:
        result = BatchResult()
        local = [(c, p) for c, p in items if not c.write_back.is_git]
        remote = [(c, p) for c, p in items if c.write_back.is_git]
        if local:
            result.update(await self._manifests.write_batch(local))
        if remote:
            result.update(await self._git.write_batch(remote))
        return result
