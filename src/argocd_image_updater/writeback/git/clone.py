"""A clone of one repository and the state of its remote: its refs, its default branch, fetch.

Fetch depth: every fetch is ``--depth=1`` of exactly the branches needed (but
:meth:`Clone.fetch_history`'s, of a synced revision ship tracking lacks, ``--shallow-since``). The first fetch costs one
snapshot, not the history; later fetches negotiate with what the clone already has, so only the
new commits' changed objects travel; a force-pushed or unrelated branch still costs one snapshot,
never its whole history. A checkout costs one ``git fetch`` (one upload-pack session, as a plain
``git clone``): its answer says whether and where the branches moved, so no ``ls-remote`` runs
before it. ``ls-remote`` runs only to learn the remote's default branch the first time a clone is
asked for ``HEAD`` (the answer is kept in the clone as ``refs/remotes/origin/HEAD``, and every
later fetch also fetches the remote ``HEAD`` to check it still points there), and when a fetch
names a branch the remote does not have. A fetch that finds nothing new leaves the clone's
shallow boundary where it was, so the history of our own pushes stays (the ship tracker asks
it whether a synced revision contains a pushed commit). Pushing from the shallow clone works
because every commit we push has the fetched remote head as its parent.

:class:`~argocd_image_updater.writeback.git.worktree.WorkTree` adds the checked-out files,
commits and pushes.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from argocd_image_updater.writeback.git.process import GitError, run_git

_BAD_BRANCH_CHARS: Final = frozenset(" ~^:?*[\\\x7f")
_REMOTE_HEAD: Final = "refs/image-updater/remote-head"
"""Where each fetch puts the commit of the remote's ``HEAD`` (to check the default branch)."""
_DEFAULT_SYMREF: Final = "refs/remotes/origin/HEAD"
"""The remote's default branch as last learned, as ``git clone`` keeps it."""
_MISSING_REF: Final = "couldn't find remote ref"
_HEX: Final = frozenset("0123456789abcdef")


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


def is_head(name: str | None) -> bool:
    return name is None or name in ("", "HEAD")


def _read_shallow(path: Path) -> bytes | None:
    """The clone's list of shallow commits (``None``: none, the history is complete)."""
    try:
        return (path / ".git" / "shallow").read_bytes()
    except FileNotFoundError:
        return None


def _restore_shallow(path: Path, saved: bytes | None) -> None:
    """Put back the shallow list read before a fetch that brought no objects."""
    target = path / ".git" / "shallow"
    if saved is None:
        target.unlink(missing_ok=True)
    elif _read_shallow(path) != saved:
        tmp = target.with_name("shallow.image-updater")
        tmp.write_bytes(saved)
        os.replace(tmp, target)


def _is_object_name(text: str) -> bool:
    return len(text) in (40, 64) and set(text) <= _HEX


@dataclass(frozen=True, slots=True)
class Timeouts:
    network: float = 120.0
    local: float = 60.0


class Clone:
    """A clone of one repository: its refs, and fetching what its remote holds."""

    def __init__(
        self,
        path: Path,
        url: str,
        *,
        local_env: Mapping[str, str],
        net_env: Mapping[str, str],
        timeouts: Timeouts,
    ) -> None:
        self.path = path
        self.url = url
        self._local_env = dict(local_env)
        self._net_env = dict(net_env)
        self._timeouts = timeouts
        self._default_branch: str | None = None
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

    def _read_ref(self, ref: str) -> str | None:
        """The object ``ref`` (a full ref name) points to, from the clone's ref files (no git
        process); ``None`` when there is no such ref. :class:`LookupError` when the files do not
        tell plainly (a symbolic ref, an unexpected format): git is asked then."""
        git_dir = self.path / ".git"
        try:
            text: str | None = (git_dir / ref).read_text(encoding="ascii").strip()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            text = None
        except (OSError, UnicodeDecodeError) as err:
            raise LookupError(ref) from err
        if text is not None:
            if _is_object_name(text):
                return text
            raise LookupError(ref)
        try:
            packed = (git_dir / "packed-refs").read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as err:
            raise LookupError(ref) from err
        for line in packed.splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                if _is_object_name(sha):
                    return sha
                raise LookupError(ref)
        return None

    async def _tip(self, ref: str) -> str | None:
        """The commit of ``ref`` (a full ref name), ``None`` when it does not exist."""
        try:
            return self._read_ref(ref)
        except LookupError:
            return await self._rev(ref)

    async def _head_commit(self) -> str | None:
        """The commit checked out (``HEAD``), read from the ref files when they tell."""
        try:
            text = (self.path / ".git" / "HEAD").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return await self._rev("HEAD")
        if text.startswith("ref: refs/heads/"):
            return await self._tip(text[len("ref: ") :])
        return text if _is_object_name(text) else await self._rev("HEAD")

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

    def _stored_default(self) -> str | None:
        """The default branch learned earlier (``refs/remotes/origin/HEAD``), if any."""
        try:
            text = (self.path / ".git" / _DEFAULT_SYMREF).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return None
        prefix = "ref: refs/remotes/origin/"
        if not text.startswith(prefix):
            return None
        try:
            return check_branch_name(text[len(prefix) :])
        except ValueError:
            return None

    async def _learned_default(self, symref: str | None) -> str:
        """Keep the default branch ``ls-remote`` named (in the clone too, for later uses)."""
        name = self._require_default(symref)
        if name != self._stored_default():
            await self._git("symbolic-ref", _DEFAULT_SYMREF, f"refs/remotes/origin/{name}")
        self._default_branch = name
        return name

    async def default_branch(self) -> str:
        """The remote's default branch (where its ``HEAD`` points)."""
        if self._default_branch is None:
            self._default_branch = self._stored_default()
        if self._default_branch is None:
            symref, _ = await self._ls_remote(set(), head=True)
            await self._learned_default(symref)
        assert self._default_branch is not None
        return self._default_branch

    def _require_default(self, symref: str | None) -> str:
        if symref is None:
            raise BranchNotFound(
                "ls-remote", f"cannot resolve the default branch of {self.url}: empty repository?"
            )
        return check_branch_name(symref)

    async def _sync(self, names: list[str]) -> tuple[list[str], dict[str, str | None]]:
        """Resolve ``names`` (``HEAD``/"" → default branch) and fetch them.

        Returns the resolved names and each one's remote commit (``None``: not on the remote).
        One ``git fetch`` in the usual case; ``ls-remote`` only when the default branch is not
        known yet or moved, or when a branch is missing on the remote.
        """
        wanted = {check_branch_name(n) for n in names if not is_head(n)}
        need_head = any(is_head(n) for n in names)
        if need_head and self._default_branch is None:
            self._default_branch = self._stored_default()
        heads: dict[str, str | None] | None = None
        if not need_head or self._default_branch is not None:
            heads = await self._fetch_tips(wanted, need_head)
        if heads is None:
            heads = await self._listed_sync(wanted, need_head)
        resolved = [self._default_branch if is_head(n) else n for n in names]
        found = [r for r in resolved if r is not None]
        return found, {r: heads.get(r) for r in found}

    async def _fetch_tips(self, wanted: set[str], need_head: bool) -> dict[str, str | None] | None:
        """Fetch ``wanted`` (and the default branch, when ``need_head``) in one ``git fetch``;
        their commits, or ``None`` when the fetch cannot answer: a branch is missing on the
        remote, or its ``HEAD`` no longer points to the default branch we know."""
        branches = set(wanted)
        if need_head:
            assert self._default_branch is not None
            branches.add(self._default_branch)
        refspecs = [f"+refs/heads/{b}:refs/remotes/origin/{b}" for b in sorted(branches)]
        if need_head:
            refspecs.append(f"+HEAD:{_REMOTE_HEAD}")
        before = {b: await self._tip(f"refs/remotes/origin/{b}") for b in sorted(branches)}
        shallow = _read_shallow(self.path)
        try:
            await self._git("fetch", "--no-tags", "--depth=1", "origin", *refspecs, net=True)
        except GitError as err:
            if _MISSING_REF in err.stderr:
                return None
            raise
        tips = {b: await self._tip(f"refs/remotes/origin/{b}") for b in sorted(branches)}
        if tips == before and None not in before.values():
            # Nothing moved, so nothing was fetched; but a --depth=1 fetch marks the tips
            # shallow even when the clone has their parents (our own earlier commits), which
            # would hide the history ancestry questions need. Keep the list as it was.
            _restore_shallow(self.path, shallow)
        if need_head and await self._tip(_REMOTE_HEAD) != tips[self._default_branch or ""]:
            return None
        return dict(tips)

    async def _listed_sync(self, wanted: set[str], need_head: bool) -> dict[str, str | None]:
        """Ask the remote with ``ls-remote`` which branches exist (and its default branch when
        ``need_head``); fetch those that moved and forget the tracking refs of missing ones."""
        symref, heads = await self._ls_remote(wanted, head=need_head)
        if need_head:
            wanted = wanted | {await self._learned_default(symref)}
        result: dict[str, str | None] = {}
        to_fetch: list[str] = []
        for name in sorted(wanted):
            sha = heads.get(name)
            result[name] = sha
            tracking = f"refs/remotes/origin/{name}"
            if sha is None:
                if await self._rev(tracking) is not None:
                    await self._git("update-ref", "-d", tracking)
            elif await self._tip(tracking) != sha:
                to_fetch.append(name)
        if to_fetch:
            refspecs = [f"+refs/heads/{n}:refs/remotes/origin/{n}" for n in to_fetch]
            await self._git("fetch", "--no-tags", "--depth=1", "origin", *refspecs, net=True)
            for name in to_fetch:
                # The branch may have moved again between ls-remote and fetch.
                result[name] = await self._tip(f"refs/remotes/origin/{name}")
        return result

    async def fetch_history(self, revisions: Collection[str], since: datetime) -> None:
        """Fetch the commits ``revisions`` (full names) with their history back to ``since``
        (``--shallow-since``): enough to tell whether a commit pushed since is in them."""
        stamp = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        await self._git(
            "fetch", "--no-tags", f"--shallow-since={stamp}", "origin", *sorted(revisions), net=True
        )

    async def fetch(self, branch: str = "HEAD") -> str | None:
        """Bring ``origin/<branch>`` up to date; its commit, or ``None`` if the remote has no
        such branch. ``HEAD`` or ``""`` means the remote's default branch."""
        (name,), shas = await self._sync([branch])
        return shas[name]
