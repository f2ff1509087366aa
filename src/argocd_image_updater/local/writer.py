"""Local mode, write-back method ``argocd``: edit the Application manifest files, then commit.

The plan becomes the same JSON patch the Kubernetes API would receive; it is applied to the
Application's document in its file surgically (only the changed values' bytes change, see
:mod:`argocd_image_updater.writeback.yamlpatch`). All files of a cycle are written atomically
and, when the directory is inside a Git work tree, committed together in one commit that holds
only those files (anything else staged or modified is left alone). Nothing is pushed: in CI the
job pushes; on a laptop the user reviews first. If the commit fails, the files are restored.

A file that changed since the cycle read it is not touched; its Applications are reported and
updated in the next cycle.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from argocd_image_updater.config.update_config import AppUpdateConfig
from argocd_image_updater.controller.cycle import BatchWriter
from argocd_image_updater.local.manifests import Manifest, file_digest
from argocd_image_updater.local.store import LocalStore
from argocd_image_updater.plan.model import AppPlan
from argocd_image_updater.plan.patch import PatchError, json_patch_ops
from argocd_image_updater.report.log import get_logger
from argocd_image_updater.writeback.git.process import GitError, minimal_env, run_git
from argocd_image_updater.writeback.git.writer import CommitSettings
from argocd_image_updater.writeback.messages import grouped_commit_message
from argocd_image_updater.writeback.yamlpatch import YamlPatchError, apply_patch

log = get_logger("local")

GIT_TIMEOUT = 60.0

Member = tuple[AppUpdateConfig, AppPlan, Manifest]


def _atomic_write(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _relative(files: Sequence[Path], toplevel: Path) -> list[str]:
    top = toplevel.resolve()
    return [f.resolve().relative_to(top).as_posix() for f in files]


class LocalManifestWriter:
    """The batch writer of local mode for Applications using the ``argocd`` method."""

    def __init__(self, store: LocalStore, commit: CommitSettings) -> None:
        self._store = store
        self._commit = commit

    async def write_batch(self, items: Sequence[tuple[AppUpdateConfig, AppPlan]]) -> dict[str, str]:
        errors: dict[str, str] = {}
        by_file: dict[str, list[Member]] = {}
        for config, plan in items:
            app = config.app
            manifest = self._store.location(app.namespace, app.name)
            if manifest is None:
                errors[app.qualified_name] = (
                    f"Application {app.qualified_name} is no longer in {self._store.root}"
                )
                continue
            by_file.setdefault(manifest.path, []).append((config, plan, manifest))
        originals: dict[Path, str] = {}
        written: list[Member] = []
        for rel, members in by_file.items():
            path = self._store.root / rel
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as err:
                for config, _, _ in members:
                    errors[config.app.qualified_name] = f"cannot read {rel}: {err}"
                continue
            if file_digest(text) != members[0][2].digest:
                for config, _, _ in members:
                    errors[config.app.qualified_name] = (
                        f"{rel} changed while {config.app.qualified_name} was being updated; "
                        "it is updated in the next cycle"
                    )
                continue
            new = text
            done: list[Member] = []
            for member in members:
                config, plan, manifest = member
                try:
                    new = apply_patch(
                        new, json_patch_ops(config.app.raw, plan), document=manifest.document
                    )
                    done.append(member)
                except (YamlPatchError, PatchError) as err:
                    errors[config.app.qualified_name] = f"cannot update {rel}: {err}"
            if new != text:
                _atomic_write(path, new)
                originals[path] = text
            written.extend(done)
        if originals:
            try:
                await self._commit_files(sorted(originals), written)
            except (GitError, OSError) as err:
                for path, text in originals.items():
                    _atomic_write(path, text)
                for config, _, _ in written:
                    errors[config.app.qualified_name] = (
                        f"could not commit the change of {config.app.qualified_name}: {err}"
                    )
        return errors

    async def _commit_files(self, files: list[Path], members: list[Member]) -> None:
        root = self._store.root
        with tempfile.TemporaryDirectory(prefix="argocd-image-updater-") as home:
            env = minimal_env(home)
            probe = await run_git(
                ["rev-parse", "--show-toplevel"],
                cwd=root,
                env=env,
                timeout=GIT_TIMEOUT,
                check=False,
            )
            if probe.code != 0:
                log.info(
                    "updated %d manifest file(s); not in a git work tree, nothing committed",
                    len(files),
                    path=str(root),
                )
                return
            toplevel = Path(probe.stdout.strip())
            paths = _relative(files, toplevel)
            message = grouped_commit_message(
                self._commit.template, [(c.app.name, p.changes) for c, p, _ in members]
            )
            msgfile = Path(home) / f"msg-{secrets.token_hex(4)}"
            msgfile.write_text(message or "Update parameters", encoding="utf-8")
            args = ["-c", "commit.gpgSign=false"]
            tail: list[str] = []
            if self._commit.signing_key:
                args = ["-c", f"gpg.format={self._commit.signing_method}"]
                tail.append(f"-S{self._commit.signing_key}")
            if self._commit.sign_off:
                tail.append("--signoff")
            identity = {
                "GIT_AUTHOR_NAME": self._commit.user,
                "GIT_AUTHOR_EMAIL": self._commit.email,
                "GIT_COMMITTER_NAME": self._commit.user,
                "GIT_COMMITTER_EMAIL": self._commit.email,
            }
            await run_git(["add", "--", *paths], cwd=toplevel, env=env, timeout=GIT_TIMEOUT)
            commit = [*args, "commit", "-q", "--no-verify", "-F", str(msgfile), *tail]
            await run_git(
                [*commit, "--only", "--", *paths],
                cwd=toplevel,
                env={**env, **identity},
                timeout=GIT_TIMEOUT,
            )
            head = await run_git(["rev-parse", "HEAD"], cwd=toplevel, env=env, timeout=GIT_TIMEOUT)
            log.info(
                "committed %d application(s) in %d file(s)",
                len(members),
                len(paths),
                repository=str(toplevel),
                commit=head.stdout.strip(),
            )


class SplitBatchWriter:
    """Routes each Application to the manifest writer (``argocd`` method) or the git writer."""

    def __init__(self, manifests: BatchWriter, git: BatchWriter) -> None:
        self._manifests = manifests
        self._git = git

    async def write_batch(
        self, items: Sequence[tuple[AppUpdateConfig, AppPlan]]
    ) -> Mapping[str, str]:
        errors: dict[str, str] = {}
        local = [(c, p) for c, p in items if not c.write_back.is_git]
        remote = [(c, p) for c, p in items if c.write_back.is_git]
        if local:
            errors.update(await self._manifests.write_batch(local))
        if remote:
            errors.update(await self._git.write_batch(remote))
        return errors
