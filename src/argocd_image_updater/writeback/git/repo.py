"""One local clone per repository URL, kept across cycles.

:class:`RepoCache` keeps a working clone per repository (keyed by the URL without credentials)
under a private root directory and evicts the least recently used clones beyond ``max_repos`` or
``max_bytes``. ``async with cache.checkout(url, creds, branch) as work`` holds the repository's
lock (one writer per repository at a time) and yields a
:class:`~argocd_image_updater.writeback.git.worktree.WorkTree`.

Safety: the remote URL in ``.git/config`` carries no userinfo and credentials live only in the
environment of network git processes (see :mod:`.auth`). Each checkout starts from the fetched
remote state, so a failure half-way (a rejected push, a crash) never leaks into the next use; a
clone whose git process was killed mid-operation is discarded and fetched again.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from argocd_image_updater.observe.log import get_logger, register_secret
from argocd_image_updater.writeback.git.auth import (
    GitCredentials,
    HttpsCredentials,
    NoCredentials,
    prepare_auth,
)
from argocd_image_updater.writeback.git.clone import Timeouts
from argocd_image_updater.writeback.git.objects import absent_objects
from argocd_image_updater.writeback.git.process import GitTimeout, minimal_env, run_git
from argocd_image_updater.writeback.git.worktree import WorkTree

log = get_logger("writeback.git")

_STALE_LOCKS: Final = ("index.lock", "HEAD.lock", "shallow.lock", "config.lock", "packed-refs.lock")
_CLONE_CONFIG: Final = """[remote "origin"]
\turl = {url}
\tfetch = +refs/heads/*:refs/remotes/origin/*
[gc]
\tautoDetach = false
[maintenance]
\tautoDetach = false
[core]
\tautocrlf = false
[advice]
\tdetachedHead = false
"""


def config_value(value: str) -> str:
    """``value`` quoted for a git config file (ValueError for control characters)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError("a repository URL cannot contain control characters")
    if value == value.strip() and not any(c in value for c in '"\\;#'):
        return value  # as ``git config`` writes it
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def split_credentials(url: str) -> tuple[str, HttpsCredentials | None]:
    """``url`` without credentials, and the username/password it carried (HTTP(S) only).

    For SSH URLs the user name is part of the address and is kept; a password is dropped.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return url, None
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, has_password, password = userinfo.partition(":")
    if parts.scheme in ("http", "https"):
        creds = HttpsCredentials(user, password) if has_password else None
        return urlunsplit(parts._replace(netloc=hostport)), creds
    if has_password:
        return urlunsplit(parts._replace(netloc=f"{user}@{hostport}")), None
    return url, None


def _is_sha(text: str) -> bool:
    return 4 <= len(text) <= 64 and all(c in "0123456789abcdef" for c in text)


def _configure(git_dir: Path, url: str) -> None:
    """The settings of a new clone, appended to the config ``git init`` wrote (one process for
    the set-up, not one ``git config`` per key)."""
    with open(git_dir / "config", "a", encoding="utf-8") as config:
        config.write(_CLONE_CONFIG.format(url=config_value(url)))


def _has_origin(git_dir: Path) -> bool:
    """Whether the clone's config was completed (an interrupted set-up is started again)."""
    try:
        return '[remote "origin"]' in (git_dir / "config").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def repo_key(url: str) -> str:
    """The cache key of a repository: a hash of its URL without credentials."""
    clean, _ = split_credentials(url.strip())
    return sha256(clean.encode()).hexdigest()[:32]


def _du(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


@dataclass(slots=True)
class _Entry:
    key: str
    path: Path
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0
    size: int | None = None
    broken: bool = False
    left_at: str | None = None
    """The commit the work tree was left at, unmodified, by the last use that ended normally
    (its checkout or commit); ``None`` when unknown."""
    seen: tuple[str, str] | None = None
    """(branch, commit): where that use last saw the remote branch, when it left the work tree
    there (fetched, or pushed by us); ``None`` when unknown."""


_ANCESTRY_MEMO: Final = 4096


class RepoCache:
    """Local clones of remote repositories under ``root``, one per URL, LRU-evicted.

    ``max_bytes`` bounds the disk used by clones not in use (a single clone larger than the
    budget is kept while it is the most recently used). One process owns ``root``.
    """

    def __init__(
        self,
        root: Path,
        max_repos: int = 50,
        max_bytes: int | None = None,
        *,
        timeouts: Timeouts | None = None,
    ) -> None:
        if max_repos < 1:
            raise ValueError("max_repos must be at least 1")
        self.root = Path(root)
        self.max_repos = max_repos
        self.max_bytes = max_bytes
        self.timeouts = timeouts or Timeouts()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        # Ancestry never changes once both commits are known: every (repository, commit,
        # revision) is asked of git once, however many Applications or cycles ask again.
        self._ancestry: OrderedDict[tuple[str, str, str], bool] = OrderedDict()
        self._repos = self.root / "repos"
        self._home = self.root / "home"
        self._tmp = self.root / "tmp"
        for directory in (self.root, self._repos, self._home, self._tmp):
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(directory, 0o700)
        self._adopt()

    def _adopt(self) -> None:
        """Reuse clones left by a previous run (oldest first); drop leftovers."""
        for leftover in self._tmp.iterdir():
            shutil.rmtree(leftover, ignore_errors=True)
        found: list[tuple[float, Path]] = []
        for path in self._repos.iterdir():
            if path.name.startswith("trash-") or not (path / ".git" / "HEAD").is_file():
                shutil.rmtree(path, ignore_errors=True)
            else:
                found.append((path.stat().st_mtime, path))
        for _, path in sorted(found):
            self._entries[path.name] = _Entry(path.name, path)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, url: object) -> bool:
        return isinstance(url, str) and repo_key(url) in self._entries

    def path_for(self, url: str) -> Path:
        return self._repos / repo_key(url)

    @asynccontextmanager
    async def checkout(
        self,
        url: str,
        creds: GitCredentials | None = None,
        branch: str | None = "HEAD",
        *,
        base: str | None = None,
        optimistic: bool = False,
    ) -> AsyncIterator[WorkTree]:
        """Lock the repository, prepare its clone and (unless ``branch`` is ``None``) check out
        ``branch`` (created from ``base`` when missing); yield the :class:`WorkTree`.

        ``optimistic``: a named branch left where the remote was last seen is used without a
        fetch, for a push with a lease on it (:meth:`WorkTree.checkout`)."""
        clean_url, url_creds = split_credentials(url.strip())
        if url_creds is not None:
            register_secret(url_creds.password)
            if creds is None or isinstance(creds, NoCredentials):
                tls = creds.tls if isinstance(creds, NoCredentials) else url_creds.tls
                creds = HttpsCredentials(url_creds.username, url_creds.password, tls)
        creds = creds or NoCredentials()
        key = repo_key(clean_url)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(key, self._repos / key)
        self._entries.move_to_end(key)
        entry.users += 1
        try:
            async with entry.lock:
                tmpdir = Path(tempfile.mkdtemp(prefix="op-", dir=self._tmp))
                auth_env, cleanup = prepare_auth(creds, tmpdir)
                local_env = minimal_env(self._home)
                work = WorkTree(
                    entry.path,
                    clean_url,
                    local_env=local_env,
                    net_env=minimal_env(self._home, auth_env),
                    tmpdir=tmpdir,
                    timeouts=self.timeouts,
                )
                work.left_at, entry.left_at = entry.left_at, None
                work.seen, entry.seen = entry.seen, None
                try:
                    work.tidy = await self._prepare(entry, clean_url, local_env)
                    if branch is not None:
                        await work.checkout(branch, base, optimistic=optimistic)
                    yield work
                    entry.left_at = work.clean_commit()
                    entry.seen = work.seen_remote()
                except (GitTimeout, asyncio.CancelledError):
                    # A git process was killed mid-operation: do not trust this clone again.
                    entry.broken = True
                    raise
                finally:
                    work._closed = True
                    cleanup()
                    shutil.rmtree(tmpdir, ignore_errors=True)
                    if entry.path.exists():
                        os.utime(entry.path)
                    entry.size = None
        finally:
            entry.users -= 1
        await self._evict()

    async def contains_commit(self, url: str, commit: str, revision: str) -> bool | None:
        """Whether ``commit`` is ``revision`` or an ancestor of it, answered by the cached clone
        of ``url`` alone (no fetch); ``None`` when there is no clone, it lacks either commit, or
        its shallow history cannot tell. Answers are remembered per commit pair."""
        return (await self.contains_commits(url, [(commit, revision)]))[(commit, revision)]

    async def contains_commits(
        self, url: str, pairs: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], bool | None]:
        """:meth:`contains_commit` for many ``(commit, revision)`` pairs of one repository. The
        clone's object store tells which commits it has (read from its files; one ``git
        cat-file`` when it cannot be read that way); ``git merge-base`` runs only for pairs it
        has both of and has not answered before."""
        answers: dict[tuple[str, str], bool | None] = {}
        todo: list[tuple[str, str]] = []
        for pair in dict.fromkeys(pairs):
            answers[pair] = True if pair[0] == pair[1] else None
            if pair[0] != pair[1] and all(_is_sha(sha) for sha in pair):
                todo.append(pair)
        entry = self._entries.get(repo_key(split_credentials(url.strip())[0]))
        if not todo or entry is None or entry.broken:
            return answers
        if not (entry.path / ".git" / "HEAD").is_file():
            return answers
        async with entry.lock:
            asked: list[tuple[str, str]] = []
            for pair in todo:
                key = (entry.key, *pair)
                if key in self._ancestry:
                    self._ancestry.move_to_end(key)
                    answers[pair] = self._ancestry[key]
                else:
                    asked.append(pair)
            present = await self._present(entry, asked) if asked else None
            for commit, revision in asked:
                if present is not None and not {commit, revision} <= present:
                    continue  # unknown commits may arrive with a later fetch: ask again then
                answer = await self._is_ancestor(entry, commit, revision)
                if answer is False and (entry.path / ".git" / "shallow").is_file():
                    # A shallow clone cuts history: "not an ancestor" may only mean "not
                    # fetched", unless the revision is older than the commit (then it cannot
                    # contain it).
                    answer = False if await self._is_ancestor(entry, revision, commit) else None
                answers[(commit, revision)] = answer
                if answer is not None:
                    self._ancestry[(entry.key, commit, revision)] = answer
                    while len(self._ancestry) > _ANCESTRY_MEMO:
                        self._ancestry.popitem(last=False)
        return answers

    async def _present(self, entry: _Entry, pairs: Sequence[tuple[str, str]]) -> set[str]:
        """The commits named in ``pairs`` that the clone may have: those its object store's
        files hold (read without a git process; ``merge-base`` then tells a commit from other
        objects), or else those one ``git cat-file`` calls commits."""
        names = list(dict.fromkeys(sha for pair in pairs for sha in pair))
        absent = absent_objects(entry.path / ".git", names)
        if absent is not None:
            return set(names) - absent
        result = await run_git(
            ["cat-file", "--batch-check=%(objecttype)"],
            cwd=entry.path,
            env=minimal_env(self._home),
            timeout=self.timeouts.local,
            input="".join(f"{name}\n" for name in names),
            check=False,
        )
        if result.code != 0:
            return set(names)  # cannot tell: let merge-base answer each
        lines = result.stdout.splitlines()
        return {name for name, line in zip(names, lines, strict=False) if line == "commit"}

    async def _is_ancestor(self, entry: _Entry, commit: str, revision: str) -> bool | None:
        result = await run_git(
            ["merge-base", "--is-ancestor", commit, revision],
            cwd=entry.path,
            env=minimal_env(self._home),
            timeout=self.timeouts.local,
            check=False,
        )
        return {0: True, 1: False}.get(result.code)

    async def _prepare(self, entry: _Entry, url: str, env: Mapping[str, str]) -> bool:
        """Make sure the entry has a usable clone; whether it is a new, empty one."""
        if entry.broken:
            log.info("discarding a clone interrupted mid-operation", repository=url)
            await self._discard(entry.path)
            entry.broken = False
        git_dir = entry.path / ".git"
        if (git_dir / "HEAD").is_file() and _has_origin(git_dir):
            for name in _STALE_LOCKS:
                (git_dir / name).unlink(missing_ok=True)
            for lock in (git_dir / "refs").rglob("*.lock"):
                lock.unlink(missing_ok=True)
            return False
        await self._discard(entry.path)
        entry.path.mkdir(mode=0o700)
        await run_git(["init", "-q"], cwd=entry.path, env=env, timeout=self.timeouts.local)
        _configure(entry.path / ".git", url)
        return True

    async def _discard(self, path: Path) -> None:
        """Move ``path`` out of the way at once, then delete it."""
        trash = self._repos / f"trash-{secrets.token_hex(6)}"
        try:
            await asyncio.to_thread(path.rename, trash)
        except FileNotFoundError:
            return
        await asyncio.to_thread(shutil.rmtree, trash, True)

    async def _evict(self) -> None:
        async def over_budget() -> bool:
            if len(self._entries) > self.max_repos:
                return True
            if self.max_bytes is None:
                return False
            total = 0
            for entry in list(self._entries.values()):
                if entry.size is None and entry.users == 0:
                    entry.size = await asyncio.to_thread(_du, entry.path)
                total += entry.size or 0
            return total > self.max_bytes

        while await over_budget():
            victims = [e for e in list(self._entries.values())[:-1] if e.users == 0]
            if not victims:
                return
            victim = victims[0]
            del self._entries[victim.key]
            log.debug("evicting cached clone", path=str(victim.path))
            await self._discard(victim.path)


__all__ = ["RepoCache", "repo_key", "split_credentials"]
