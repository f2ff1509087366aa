"""A checked-out clone of one repository: fetch, check out, read and write files, commit, push.

Each checkout force-resets the clone to the fetched remote state and removes untracked files,
unless the clone's last use ended normally leaving that very commit checked out and unmodified
(files change only through :meth:`WorkTree.write`, and everything written was committed).
Pushes are single-ref and atomic; a rejected push is retried by re-applying the (idempotent) edits
on top of the new remote head, and a force push is only ever a ``--force-with-lease`` of a branch
the caller declares its own. :class:`~argocd_image_updater.writeback.git.repo.RepoCache` hands
out work trees.

Push first, fetch when needed: a checkout asked with ``optimistic=True`` of a named branch (not
``HEAD``, whose meaning only the remote knows) skips the fetch when the clone's last use ended
at the commit the remote branch was last seen at (our own push, or a fetch), checked out and
unmodified, and that use did not find the branch moved by someone else (a branch others push
to between our uses is fetched first, so a wasted attempt is paid once, not every time). The
edits are then made on that commit and pushed with a lease on it
(``--force-with-lease=refs/heads/<branch>:<commit>``): the remote takes the push only if the
branch is still exactly there, so nothing is ever pushed on a stale base. If the branch moved
(or was deleted), git refuses the push before sending anything; the clone then fetches and the
edits are made again, as after any rejected push, but at once (no back-off) and without
counting as an attempt. A result that pushes nothing (every file already right) is never
concluded from such an unconfirmed view: the clone fetches and the edits are made again first.
"""

from __future__ import annotations

import asyncio
import os
import random
import stat
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path, PurePosixPath
from typing import Final

from argocd_image_updater.kits.fence import check_fence
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.writeback.git.clone import (
    BranchNotFound,
    Clone,
    Timeouts,
    check_branch_name,
    is_head,
)
from argocd_image_updater.writeback.git.commits import (
    atomic_write,
    commit_command,
    identity_env,
    write_message,
)
from argocd_image_updater.writeback.git.process import GitError, error_for, redact_text, run_git

log = get_logger("writeback.git")

_NOTHING_TO_COMMIT: Final = ("nothing to commit", "no changes added to commit")


class PushRejected(GitError):
    """The remote branch moved since our fetch (non-fast-forward or a stale lease)."""


class PushDenied(GitError):
    """The remote refused the push (hook, protected branch, permissions); retrying won't help."""


def _has_link(root: Path, parts: tuple[str, ...]) -> bool:
    """Whether a path component of ``root/parts`` below ``root`` is a symbolic link (one
    ``lstat`` per existing component; a missing one ends the walk: nothing below it exists)."""
    current = str(root)
    for part in parts:
        current = os.path.join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return False
        if stat.S_ISLNK(mode):
            return True
    return False


class WorkTree(Clone):
    """A checked-out clone of one repository, used while the repository's lock is held."""

    def __init__(
        self,
        path: Path,
        url: str,
        *,
        local_env: Mapping[str, str],
        net_env: Mapping[str, str],
        tmpdir: Path,
        timeouts: Timeouts,
    ) -> None:
        super().__init__(path, url, local_env=local_env, net_env=net_env, timeouts=timeouts)
        self.branch: str | None = None
        """The branch checked out (and pushed to)."""
        self.base: str | None = None
        """The branch it was created from when it did not exist remotely."""
        self.remote_head: str | None = None
        """The remote commit of :attr:`branch` we build on; ``None`` for a new branch."""
        self.head: str | None = None
        self._tmp = tmpdir
        self._requested: tuple[str | None, str | None] | None = None
        self._fresh = False
        self._written: dict[str, bool] = {}
        """Files written since the checkout or the last commit, and whether git tracks them."""
        self.left_at: str | None = None
        """The commit the clone's last use left the work tree at, unmodified (set by the
        cache); a checkout of that very commit then needs no ``git checkout`` nor ``clean``."""
        self.seen: tuple[str, str] | None = None
        """(branch, commit): where the clone's last use saw that remote branch last, by a fetch
        or by our own push (set by the cache); an optimistic checkout builds on it unfetched."""
        self.confirmed = True
        """Whether :attr:`remote_head` was read from the remote by this use (a fetch or a
        push); False after an optimistic checkout until a push succeeds."""
        self._moved = False
        """Whether this use found the branch moved since :attr:`seen` (by someone else): the
        next use then fetches first."""
        self._clean = False
        self.tidy = False
        """Whether the work tree holds no file that the commit checked out does not (a new,
        empty clone; set by the cache): a checkout then needs no ``git clean``."""

    # --- work tree -------------------------------------------------------------------------------

    async def checkout(
        self, branch: str = "HEAD", base: str | None = None, *, optimistic: bool = False
    ) -> str:
        """Check out ``branch`` at its remote state, discarding local changes; returns the commit.

        If ``branch`` does not exist on the remote it is created from ``base`` (``None``: no
        base, so the branch must exist; ``HEAD``/"": the default branch). With ``optimistic``,
        a named branch the clone's last use left where the remote was last seen is used as it
        is, without a fetch (:attr:`confirmed` is then False; see the module's docstring).
        """
        if optimistic and base is None and not is_head(branch):
            name = check_branch_name(branch)
            if (commit := await self._unchanged_since_seen(name)) is not None:
                self.left_at = None
                self.branch, self.base = name, name
                self.remote_head = self.head = commit
                self._clean = True
                self._requested = (branch, base)
                self._fresh = True
                self._written.clear()
                self.confirmed = False
                return commit
        (name, base_name), shas = await self._sync([branch, branch if base is None else base])
        if shas[name] is not None:
            start = f"refs/remotes/origin/{name}"
        elif base is not None and shas[base_name] is not None:
            start = f"refs/remotes/origin/{base_name}"
        else:
            where = name if base is None or base_name == name else f"{name} or {base_name}"
            raise BranchNotFound("checkout", f"branch {where} does not exist in {self.url}")
        commit = shas[name] if shas[name] is not None else shas[base_name]
        left_at, self.left_at = self.left_at, None
        if not (left_at is not None and left_at == commit and await self._on(name, commit)):
            # Untracked files can only be there if the clone is neither new, nor as this use or
            # the last one left it (everything written committed: the checkout removes or
            # replaces every file the old commit tracked).
            tidy = (
                self.tidy
                or (self._clean and not self._written and self.head is not None)
                or (left_at is not None and await self._head_commit() == left_at)
            )
            await self._git("checkout", "-q", "--force", "--no-track", "-B", name, start, "--")
            if not tidy:
                await self._git("clean", "-q", "-ffdx")
        self.tidy = False
        self.branch, self.base = name, base_name
        self.remote_head = shas[name]
        self.head = commit
        self.confirmed = True
        if self.seen is not None and self.seen[0] == name and self.seen[1] != shas[name]:
            self._moved = True
        self._clean = True
        self._requested = (branch, base)
        self._fresh = True
        self._written.clear()
        assert self.head is not None
        return self.head

    async def _unchanged_since_seen(self, name: str) -> str | None:
        """The commit the remote branch ``name`` was last seen at, when the clone still holds
        it as it was left: checked out, unmodified, and the tracking ref there too."""
        seen, left_at = self.seen, self.left_at
        if seen is None or seen[0] != name or left_at != seen[1]:
            return None
        if await self._tip(f"refs/remotes/origin/{name}") != left_at:
            return None
        return left_at if await self._on(name, left_at) else None

    def seen_remote(self) -> tuple[str, str] | None:
        """(branch, commit) when this use saw the remote branch at the commit the work tree
        holds unmodified (fetched, or pushed by us); else ``None``."""
        head = self.clean_commit()
        if self._moved:
            return None  # a branch others push to: fetch first next time
        if self.confirmed and self.branch and head is not None and head == self.remote_head:
            return self.branch, head
        return None

    async def _on(self, branch: str, commit: str | None) -> bool:
        """Whether ``branch`` is checked out (``HEAD`` names it) at ``commit``."""
        try:
            head = (self.path / ".git" / "HEAD").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return False
        ref = f"refs/heads/{branch}"
        return head == f"ref: {ref}" and commit is not None and await self._tip(ref) == commit

    def clean_commit(self) -> str | None:
        """The commit the work tree holds unmodified: right after a checkout or a commit of
        everything :meth:`write` wrote (files are only changed through it); else ``None``."""
        return self.head if self._clean and not self._written else None

    @asynccontextmanager
    async def viewing(self, branch: str) -> AsyncIterator[bool]:
        """Show the fetched remote state of ``branch`` in the work tree (no network) while the
        block runs, to read files; then restore the checkout, which must be unmodified. Yields
        False (and shows nothing) when ``branch`` was not fetched or is what is checked out."""
        tracking = f"refs/remotes/origin/{check_branch_name(branch)}"
        if branch == self.branch or await self._rev(tracking) is None:
            yield False
            return
        if self.branch is None or self.head is None or not self._fresh:
            raise RuntimeError("viewing another branch needs a fresh, unmodified checkout")
        branch_name, head = self.branch, self.head
        await self._git("checkout", "-q", "--force", "--detach", tracking, "--")
        await self._git("clean", "-q", "-ffdx")
        try:
            yield True
        finally:
            await self._git("checkout", "-q", "--force", "--no-track", "-B", branch_name, head)
            await self._git("clean", "-q", "-ffdx")

    def _locate(self, path: str) -> tuple[Path, str]:
        """The file ``path`` names in the work tree and its normalised relative spelling; a
        :class:`ValueError` when it is not a file of the repository (absolute, ``..``, in
        ``.git``, or leaving the work tree through a symbolic link)."""
        rel = PurePosixPath(path)
        parts = rel.parts
        if rel.is_absolute() or not parts or ".." in parts or parts[0] == ".git":
            raise ValueError(f"invalid path in repository: {path!r}")
        target = self.path.joinpath(*parts)
        if _has_link(self.path, parts):
            # A symbolic link on the way: where it really leads must stay in the work tree.
            root = self.path.resolve()
            resolved = target.resolve()
            if resolved == root or root not in resolved.parents:
                raise ValueError(f"path {path!r} leaves the repository")
            if resolved.relative_to(root).parts[0] == ".git":
                raise ValueError(f"path {path!r} points into .git")
        return target, "/".join(parts)

    def _file(self, path: str) -> Path:
        return self._locate(path)[0]

    def read(self, path: str) -> str | None:
        """The text of ``path`` (relative to the repository root), or ``None`` if missing.
        Line ends are kept as they are (no newline translation): a CRLF file stays CRLF."""
        try:
            return self._file(path).read_bytes().decode("utf-8")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    async def last_author(self, path: str) -> str:
        """``name <email>`` of the author of the newest commit checked out that changed
        ``path`` (as far as the clone's history reaches); ``""`` when unknown."""
        rel = self._locate(path)[1]
        out = await self._git("log", "-1", "--format=%an <%ae>", "HEAD", "--", rel, check=False)
        return out.strip()

    def write(self, path: str, text: str) -> None:
        """Write ``path`` atomically (temp file + rename), creating parent directories."""
        target, rel = self._locate(path)
        existed = self._written.get(rel)
        if existed is None:
            existed = target.is_file()
        if not existed and not target.parent.is_dir():
            target.parent.mkdir(parents=True, exist_ok=True)
        self._clean = False
        atomic_write(target, text)
        self._fresh = False
        self._written[rel] = self._written.get(rel, existed)

    # --- commit and push -------------------------------------------------------------------------

    async def commit(
        self,
        message: str,
        author_name: str,
        author_email: str,
        signing_key: str = "",
        signing_method: str = "openpgp",
        sign_off: bool = False,
    ) -> str | None:
        """Commit every change in the work tree; the new commit, or ``None`` if nothing changed.

        ``signing_key`` is a GPG key id (``openpgp``) or the path of an SSH private key (``ssh``).
        The files written with :meth:`write` since the checkout (or the last commit) are
        committed by name: one ``git commit`` (and one ``git add`` for new files), no scan of
        the whole work tree. Without such files every change in the work tree is committed.
        """
        written = dict(self._written)
        pathspec: list[str] = []
        if written:
            if new := [path for path, existed in written.items() if not existed]:
                await self._git("--literal-pathspecs", "add", "--", *new)
            pathspec = ["--", *written]
        else:
            await self._git("add", "-A")
            diff = await run_git(
                ["diff", "--cached", "--quiet"],
                cwd=self.path,
                env=self._local_env,
                timeout=self._timeouts.local,
                check=False,
            )
            if diff.code == 0:
                return None
            if diff.code != 1:
                raise error_for("diff", diff.code, diff.stderr)
        msgfile = write_message(self._tmp, message)
        try:
            result = await run_git(
                [
                    "--literal-pathspecs",
                    *commit_command(msgfile, signing_key, signing_method, sign_off),
                    *pathspec,
                ],
                cwd=self.path,
                env={**self._local_env, **identity_env(author_name, author_email)},
                timeout=self._timeouts.local,
                check=False,
            )
        finally:
            msgfile.unlink(missing_ok=True)
        if result.code != 0:
            if written and result.code == 1 and any(t in result.stdout for t in _NOTHING_TO_COMMIT):
                self._written.clear()  # the files hold what the last commit holds
                return None
            raise error_for("commit", result.code, result.stderr)
        self._written.clear()
        self.head = await self._head_commit()
        self._fresh = False
        self._clean = self.head is not None
        return self.head

    async def push(self, branch: str | None = None, *, force: bool = False) -> None:
        """Push ``HEAD`` to ``branch`` (default: the checked-out branch).

        ``force`` is for the caller's own write branch only and becomes ``--force-with-lease``
        against the remote commit we built on; it is refused for the base branch.
        """
        name = check_branch_name(branch or self.branch or "")
        args = ["push", "--porcelain", "--no-verify"]
        if force:
            if self.base is not None and self.base == name and self.remote_head is not None:
                raise ValueError(f"refusing to force-push {name}: it is the base branch")
            args.append(f"--force-with-lease=refs/heads/{name}:{self.remote_head or ''}")
        elif not self.confirmed and name == self.branch and self.remote_head is not None:
            # Built on where the branch was last seen, unfetched: only if it is still there
            # (our commits descend from it, so this stays a fast-forward).
            args.append(f"--force-with-lease=refs/heads/{name}:{self.remote_head}")
        args += ["origin", f"HEAD:refs/heads/{name}"]
        check_fence(f"pushing to branch {name} of {self.url}")
        result = await run_git(
            args,
            cwd=self.path,
            env=self._net_env,
            timeout=self._timeouts.network,
            check=False,
        )
        rejected = [ln for ln in result.stdout.splitlines() if ln.startswith("!")]
        if result.code == 0 and not rejected:
            self.remote_head = self.head
            self.branch = name
            self.confirmed = True
            return
        remote_lines = [
            ln[len("remote:") :].strip()
            for ln in result.stderr.splitlines()
            if ln.startswith("remote:") and ln[len("remote:") :].strip()
        ]
        for line in rejected:
            summary = line.split("\t")[-1]
            if "[remote rejected]" in summary or "[remote failure]" in summary:
                detail = "; ".join(remote_lines) or summary
                raise PushDenied(
                    "push",
                    redact_text(
                        f"push to branch {name} of {self.url} was denied by the remote: "
                        f"{detail} ({summary})"
                    ),
                    code=result.code,
                    stderr=redact_text(result.stderr),
                )
            if "[rejected]" in summary:
                raise PushRejected(
                    "push",
                    f"push to branch {name} of {self.url} was rejected: {summary} "
                    "(the branch changed on the remote)",
                    code=result.code,
                    stderr=redact_text(result.stderr),
                )
        raise error_for("push", result.code, result.stderr)

    async def commit_and_push(
        self,
        apply: Callable[[WorkTree], Awaitable[None]],
        message: str,
        *,
        author_name: str,
        author_email: str,
        signing_key: str = "",
        signing_method: str = "openpgp",
        sign_off: bool = False,
        branch: str | None = None,
        base: str | None = None,
        force: bool = False,
        max_attempts: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
    ) -> str | None:
        """Fetch, ``apply`` the edits, commit and push; the pushed commit or ``None`` (no change).

        Without ``branch``/``base`` the work tree's current checkout is used. When the push is
        rejected because the branch moved, the clone is reset to the new remote head, ``apply``
        runs again (it must be idempotent) and the push is retried, up to ``max_attempts`` in all
        with jittered exponential backoff. :class:`PushDenied` is never retried. After an
        optimistic checkout (nothing fetched), a rejected push or a result with nothing to push
        fetches and runs ``apply`` again at once, without counting as an attempt.
        """
        if branch is None and base is None and self._requested is not None:
            branch, base = self._requested
        elif branch is None:
            branch = "HEAD"
        assert branch is not None
        attempt = 0
        reuse = self._fresh and self._requested == (branch, base)
        while True:
            if not reuse:
                await self.checkout(branch, base)
            reuse = False
            confirmed = self.confirmed
            before = self.head
            await apply(self)
            sha = await self.commit(
                message, author_name, author_email, signing_key, signing_method, sign_off
            )
            if sha is None:
                if self.head == before:
                    if not confirmed:
                        # "Nothing to change" must hold on the remote's state: fetch first
                        # (the work tree is as checked out: no reset needed if nothing moved).
                        self.left_at = self.head
                        log.debug(
                            "nothing to push on an unfetched clone: fetching", repository=self.url
                        )
                        continue
                    return None
                sha = self.head  # ``apply`` made the commits itself (one per application)
            try:
                await self.push(self.branch, force=force)
            except PushRejected as exc:
                if not confirmed:
                    log.debug(
                        "the branch moved since it was last seen: fetching",
                        repository=self.url,
                        branch=self.branch,
                    )
                    continue
                attempt += 1
                if attempt >= max(1, max_attempts):
                    raise
                delay = min(max_backoff, backoff * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
                log.info(
                    "push rejected, retrying on the new remote head",
                    repository=self.url,
                    branch=self.branch,
                    attempt=attempt,
                    delay=round(delay, 3),
                    reason=str(exc),
                )
                await asyncio.sleep(delay)
            else:
                log.info("pushed", repository=self.url, branch=self.branch, commit=sha)
                return sha
