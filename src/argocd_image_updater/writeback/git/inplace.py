"""Commit files where they are, in the work tree that holds them (local mode's manifest
directory): the commit holds only those files; anything else staged or modified is left alone.
Nothing is pushed."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from argocd_image_updater.writeback.git.commits import commit_command, identity_env, write_message
from argocd_image_updater.writeback.git.process import minimal_env, run_git
from argocd_image_updater.writeback.git.writer import CommitSettings

GIT_TIMEOUT: Final = 60.0


@dataclass(frozen=True, slots=True)
class InPlaceCommit:
    toplevel: Path
    """The work tree's top directory."""
    paths: list[str]
    """The committed files, relative to ``toplevel``."""
    sha: str


def _relative(files: Sequence[Path], toplevel: Path) -> list[str]:
    top = toplevel.resolve()
    return [f.resolve().relative_to(top).as_posix() for f in files]


async def commit_in_place(
    root: Path, files: Sequence[Path], message: str, commit: CommitSettings
) -> InPlaceCommit | None:
    """Commit ``files`` (below ``root``) with ``message``; None when ``root`` is not in a git
    work tree (nothing is committed). :class:`~.process.GitError` when git fails."""
    with tempfile.TemporaryDirectory(prefix="argocd-image-updater-") as home:
        env = minimal_env(home)
        probe = await run_git(
            ["rev-parse", "--show-toplevel"], cwd=root, env=env, timeout=GIT_TIMEOUT, check=False
        )
        if probe.code != 0:
            return None
        toplevel = Path(probe.stdout.strip())
        paths = _relative(files, toplevel)
        msgfile = write_message(Path(home), message)
        c = commit
        await run_git(["add", "--", *paths], cwd=toplevel, env=env, timeout=GIT_TIMEOUT)
        command = commit_command(msgfile, c.signing_key, c.signing_method, c.sign_off)
        await run_git(
            [*command, "--only", "--", *paths],
            cwd=toplevel,
            env={**env, **identity_env(c.user, c.email)},
            timeout=GIT_TIMEOUT,
        )
        head = await run_git(["rev-parse", "HEAD"], cwd=toplevel, env=env, timeout=GIT_TIMEOUT)
        return InPlaceCommit(toplevel, paths, head.stdout.strip())
