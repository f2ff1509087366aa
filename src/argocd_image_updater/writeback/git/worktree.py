"""A checked-out clone of one repository: fetch, check out, read and write files, commit, push.

Fetch depth: every fetch is ``--depth=1`` of exactly the branches needed. The first fetch costs one
snapshot, not the history; later fetches negotiate with what the clone already has, so only the
new commits' changed objects travel; a force-pushed or unrelated branch still costs one snapshot,
never its whole history. When the remote branch did not move since the last use, no fetch runs at
all (one ``ls-remote`` decides). Pushing from the shallow clone works because every commit we push
has the fetched remote head as its parent.

Each checkout force-resets the clone to the fetched remote state and removes untracked files.
Pushes are single-ref and atomic; a rejected push is retried by re-applying the (idempotent) edits
on top of the new remote head, and a force push is only ever a ``--force-with-lease`` of a branch
the caller declares its own. :class:`~argocd_image_updater.writeback.git.repo.RepoCache` hands
out work trees.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.writeback.git.commits import (
    atomic_write,
    commit_command,
    identity_env,
    write_message,
)
from argocd_image_updater.writeback.git.process import GitError, error_for, redact_text, run_git

log = get_logger("writeback.git")

_BAD_BRANCH_CHARS: Final = frozenset(" ~^:?*[\\\x7f")


class PushRejected(GitError):
    """The remote branch moved since our fetch (non-fast-forward or a stale lease)."""


class PushDenied(GitError):
    """The remote refused the push (hook, protected branch, permissions); retrying won't help."""


class BranchNotFound(GitError):
    """Neither the branch nor its base exists on the remote."""


def check_branch_name(name: str) -> str:
    """``name`` if it is a plausible branch name (git validates the rest); else ValueError."""
    bad = (
        not name
        or name.startswith(("-", "/", "."))
        or name.endswith(("/", ".", ".lock"))
        or ".." in name
        or "//" in name
        or "@{" in name
        or name == "@"
        or any(c in _BAD_BRANCH_CHARS or ord(c) < 32 for c in name)
    )
    if bad:
        raise ValueError(f"invalid branch name {name!r}")
    return name


def _is_head(name: str | None) -> bool:
    return name is None or name in ("", "HEAD")


@dataclass(frozen=True, slots=True)
class Timeouts:
    network: float = 120.0
    local: float = 60.0


class WorkTree:
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
        self.path = path
        self.url = url
        self.branch: str | None = None
        """The branch checked out (and pushed to)."""
        self.base: str | None = None
        """The branch it was created from when it did not exist remotely."""
        self.remote_head: str | None = None
        """The remote commit of :attr:`branch` we build on; ``None`` for a new branch."""
        self.head: str | None = None
        self._local_env = dict(local_env)
        self._net_env = dict(net_env)
        self._tmp = tmpdir
        self._timeouts = timeouts
        self._default_branch: str | None = None
        self._requested: tuple[str | None, str | None] | None = None
        self._fresh = False
        self._closed = False

    # --- git -----------------------------------------------------------------------------------

    async def _git(self, *args: str, net: bool = False, check: bool = True) -> str:
        if self._closed:
            raise RuntimeError("the work tree is no longer checked out")
        result = await run_git(
            args,
            cwd=self.path,
            env=self._net_env if net else self._local_env,
            timeout=self._timeouts.network if net else self._timeouts.local,
            check=check,
        )
        return result.stdout

    async def _rev(self, ref: str) -> str | None:
        result = await run_git(
            ["rev-parse", "-q", "--verify", f"{ref}^{{commit}}"],
            cwd=self.path,
            env=self._local_env,
            timeout=self._timeouts.local,
            check=False,
        )
        return result.stdout.strip() if result.code == 0 else None

    # --- remote state ----------------------------------------------------------------------------

    async def _ls_remote(self, branches: set[str], head: bool) -> tuple[str | None, dict[str, str]]:
        """The remote's default branch (when ``head``) and the commits of ``branches``."""
        patterns = (["HEAD"] if head else []) + [f"refs/heads/{b}" for b in sorted(branches)]
        out = await self._git("ls-remote", "--symref", "origin", *patterns, net=True)
        symref: str | None = None
        head_sha: str | None = None
        heads: dict[str, str] = {}
        for line in out.splitlines():
            left, _, name = line.partition("\t")
            if name == "HEAD":
                if left.startswith("ref: refs/heads/"):
                    symref = left[len("ref: refs/heads/") :]
                else:
                    head_sha = left
            elif name.startswith("refs/heads/"):
                heads[name[len("refs/heads/") :]] = left
        if symref is not None and head_sha is not None:
            heads.setdefault(symref, head_sha)
        return symref, heads

    async def default_branch(self) -> str:
        """The remote's default branch (where its ``HEAD`` points)."""
        if self._default_branch is None:
            symref, _ = await self._ls_remote(set(), head=True)
            self._default_branch = self._require_default(symref)
        return self._default_branch

    def _require_default(self, symref: str | None) -> str:
        if symref is None:
            raise BranchNotFound(
                "ls-remote", f"cannot resolve the default branch of {self.url}: empty repository?"
            )
        return symref

    async def _sync(self, names: list[str]) -> tuple[list[str], dict[str, str | None]]:
        """Resolve ``names`` (``HEAD``/"" → default branch), fetch those that moved.

        Returns the resolved names and each one's remote commit (``None``: not on the remote).
        """
        wanted = {check_branch_name(n) for n in names if not _is_head(n)}
        need_head = any(_is_head(n) for n in names)
        ask_head = need_head and self._default_branch is None
        if need_head and self._default_branch is not None:
            wanted.add(self._default_branch)
        symref, heads = await self._ls_remote(wanted, head=ask_head)
        if ask_head:
            self._default_branch = self._require_default(symref)
        resolved = [self._default_branch if _is_head(n) else n for n in names]
        result: dict[str, str | None] = {}
        to_fetch: list[str] = []
        for name in dict.fromkeys(r for r in resolved if r is not None):
            sha = heads.get(name)
            result[name] = sha
            tracking = f"refs/remotes/origin/{name}"
            if sha is None:
                if await self._rev(tracking) is not None:
                    await self._git("update-ref", "-d", tracking)
            elif await self._rev(tracking) != sha:
                to_fetch.append(name)
        if to_fetch:
            refspecs = [f"+refs/heads/{n}:refs/remotes/origin/{n}" for n in to_fetch]
            await self._git("fetch", "--no-tags", "--depth=1", "origin", *refspecs, net=True)
            for name in to_fetch:
                # The branch may have moved again between ls-remote and fetch.
                result[name] = await self._rev(f"refs/remotes/origin/{name}")
        return [r for r in resolved if r is not None], result

    async def fetch(self, branch: str = "HEAD") -> str | None:
        """Bring ``origin/<branch>`` up to date; its commit, or ``None`` if the remote has no
        such branch. ``HEAD`` or ``""`` means the remote's default branch."""
        (name,), shas = await self._sync([branch])
        return shas[name]

    # --- work tree -------------------------------------------------------------------------------

    async def checkout(self, branch: str = "HEAD", base: str | None = None) -> str:
        """Check out ``branch`` at its remote state, discarding local changes; returns the commit.

        If ``branch`` does not exist on the remote it is created from ``base`` (``None``: no
        base, so the branch must exist; ``HEAD``/"": the default branch).
        """
        (name, base_name), shas = await self._sync([branch, branch if base is None else base])
        if shas[name] is not None:
            start = f"refs/remotes/origin/{name}"
        elif base is not None and shas[base_name] is not None:
            start = f"refs/remotes/origin/{base_name}"
        else:
            where = name if base is None or base_name == name else f"{name} or {base_name}"
            raise BranchNotFound("checkout", f"branch {where} does not exist in {self.url}")
        await self._git("checkout", "-q", "--force", "--no-track", "-B", name, start, "--")
        await self._git("clean", "-q", "-ffdx")
        self.branch, self.base = name, base_name
        self.remote_head = shas[name]
        self.head = await self._rev("HEAD")
        self._requested = (branch, base)
        self._fresh = True
        assert self.head is not None
        return self.head

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

    def _file(self, path: str) -> Path:
        rel = PurePosixPath(path)
        if rel.is_absolute() or not rel.parts or ".." in rel.parts or rel.parts[0] == ".git":
            raise ValueError(f"invalid path in repository: {path!r}")
        target = self.path.joinpath(*rel.parts)
        root = self.path.resolve()
        resolved = target.resolve()
        if resolved == root or root not in resolved.parents:
            raise ValueError(f"path {path!r} leaves the repository")
        if resolved.relative_to(root).parts[0] == ".git":
            raise ValueError(f"path {path!r} points into .git")
        return target

    def read(self, path: str) -> str | None:
        """The text of ``path`` (relative to the repository root), or ``None`` if missing."""
        try:
            return self._file(path).read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def write(self, path: str, text: str) -> None:
        """Write ``path`` atomically (temp file + rename), creating parent directories."""
        target = self._file(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, text)
        self._fresh = False

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
        """
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
            await run_git(
                commit_command(msgfile, signing_key, signing_method, sign_off),
                cwd=self.path,
                env={**self._local_env, **identity_env(author_name, author_email)},
                timeout=self._timeouts.local,
            )
        finally:
            msgfile.unlink(missing_ok=True)
        self.head = await self._rev("HEAD")
        self._fresh = False
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
        args += ["origin", f"HEAD:refs/heads/{name}"]
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
        with jittered exponential backoff. :class:`PushDenied` is never retried.
        """
        if branch is None and base is None and self._requested is not None:
            branch, base = self._requested
        elif branch is None:
            branch = "HEAD"
        assert branch is not None
        for attempt in range(1, max(1, max_attempts) + 1):
            if not (attempt == 1 and self._fresh and self._requested == (branch, base)):
                await self.checkout(branch, base)
            before = self.head
            await apply(self)
            sha = await self.commit(
                message, author_name, author_email, signing_key, signing_method, sign_off
            )
            if sha is None:
                if self.head == before:
                    return None
                sha = self.head  # ``apply`` made the commits itself (one per application)
            try:
                await self.push(self.branch, force=force)
            except PushRejected as exc:
                if attempt >= max_attempts:
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
        raise AssertionError("unreachable")  # pragma: no cover
