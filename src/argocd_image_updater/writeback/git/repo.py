"""One local clone per repository URL, kept across cycles; safe commit and push.

:class:`RepoCache` keeps a working clone per repository (keyed by the URL without credentials)
under a private root directory and evicts the least recently used clones beyond ``max_repos`` or
``max_bytes``. ``async with cache.checkout(url, creds, branch) as work`` holds the repository's
lock (one writer per repository at a time) and yields a :class:`WorkTree`.

Fetch depth: every fetch is ``--depth=1`` of exactly the branches needed. The first fetch costs one
snapshot, not the history; later fetches negotiate with what the clone already has, so only the
new commits' changed objects travel; a force-pushed or unrelated branch still costs one snapshot,
never its whole history. When the remote branch did not move since the last use, no fetch runs at
all (one ``ls-remote`` decides). Pushing from the shallow clone works because every commit we push
has the fetched remote head as its parent.

Safety: the remote URL in ``.git/config`` carries no userinfo and credentials live only in the
environment of network git processes (see :mod:`.auth`). Each checkout force-resets the clone to
the fetched remote state and removes untracked files, so a failure half-way (a rejected push, a
crash) never leaks into the next use; a clone whose git process was killed mid-operation is
discarded and fetched again. Pushes are single-ref and atomic; a rejected push is retried by
re-applying the (idempotent) edits on top of the new remote head, and a force push is only ever a
``--force-with-lease`` of a branch the caller declares its own.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path, PurePosixPath
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from argocd_image_updater.observe.log import get_logger, register_secret
from argocd_image_updater.writeback.git.auth import (
    GitCredentials,
    HttpsCredentials,
    NoCredentials,
    prepare_auth,
)
from argocd_image_updater.writeback.git.process import (
    GitError,
    GitTimeout,
    error_for,
    minimal_env,
    redact_text,
    run_git,
)

log = get_logger("writeback.git")

_STALE_LOCKS: Final = ("index.lock", "HEAD.lock", "shallow.lock", "config.lock", "packed-refs.lock")
_BAD_BRANCH_CHARS: Final = frozenset(" ~^:?*[\\\x7f")
SIGNING_METHODS: Final = frozenset({"openpgp", "ssh", "x509"})


def atomic_write(target: Path, text: str) -> None:
    """Replace ``target`` with ``text`` (temp file + rename, mode kept): readers see the old or
    the new content, never a half-written file."""
    try:
        mode = target.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_message(directory: Path, message: str) -> Path:
    """The commit message in a private file (never in argv)."""
    path = directory / f"commit-msg-{secrets.token_hex(4)}"
    path.write_text(message if message.strip() else "Update parameters", encoding="utf-8")
    return path


def commit_command(
    message_file: Path,
    signing_key: str = "",
    signing_method: str = "openpgp",
    sign_off: bool = False,
) -> list[str]:
    """``git commit`` with the message from ``message_file``, hooks off, signed when
    ``signing_key`` is set (a GPG key id, or the path of an SSH key for ``ssh``)."""
    args = ["-c", "commit.gpgSign=false"]
    tail: list[str] = []
    if signing_key:
        if signing_method not in SIGNING_METHODS:
            raise ValueError(f"unknown signing method {signing_method!r}")
        args = ["-c", f"gpg.format={signing_method}"]
        tail.append(f"-S{signing_key}")
    if sign_off:
        tail.append("--signoff")
    return [*args, "commit", "-q", "--no-verify", "--cleanup=strip", "-F", str(message_file), *tail]


def identity_env(name: str, email: str) -> dict[str, str]:
    """The author and committer of a commit."""
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


class PushRejected(GitError):
    """The remote branch moved since our fetch (non-fast-forward or a stale lease)."""


class PushDenied(GitError):
    """The remote refused the push (hook, protected branch, permissions); retrying won't help."""


class BranchNotFound(GitError):
    """Neither the branch nor its base exists on the remote."""


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


def repo_key(url: str) -> str:
    """The cache key of a repository: a hash of its URL without credentials."""
    clean, _ = split_credentials(url.strip())
    return sha256(clean.encode()).hexdigest()[:32]


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


def _du(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


@dataclass(frozen=True, slots=True)
class Timeouts:
    network: float = 120.0
    local: float = 60.0


@dataclass(slots=True)
class _Entry:
    key: str
    path: Path
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0
    size: int | None = None
    broken: bool = False


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
    ) -> AsyncIterator[WorkTree]:
        """Lock the repository, prepare its clone and (unless ``branch`` is ``None``) check out
        ``branch`` (created from ``base`` when missing); yield the :class:`WorkTree`."""
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
                try:
                    await self._prepare(entry, clean_url, local_env)
                    if branch is not None:
                        await work.checkout(branch, base)
                    yield work
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
        of ``url`` alone (no fetch); ``None`` when there is no clone or it lacks either commit."""
        if commit == revision:
            return True
        entry = self._entries.get(repo_key(split_credentials(url.strip())[0]))
        if entry is None or entry.broken or not (entry.path / ".git" / "HEAD").is_file():
            return None
        for sha in (commit, revision):
            if not all(c in "0123456789abcdef" for c in sha) or not 4 <= len(sha) <= 64:
                return None
        async with entry.lock:
            result = await run_git(
                ["merge-base", "--is-ancestor", commit, revision],
                cwd=entry.path,
                env=minimal_env(self._home),
                timeout=self.timeouts.local,
                check=False,
            )
        return {0: True, 1: False}.get(result.code)

    async def _prepare(self, entry: _Entry, url: str, env: Mapping[str, str]) -> None:
        if entry.broken:
            log.info("discarding a clone interrupted mid-operation", repository=url)
            await self._discard(entry.path)
            entry.broken = False
        git_dir = entry.path / ".git"
        if (git_dir / "HEAD").is_file():
            for name in _STALE_LOCKS:
                (git_dir / name).unlink(missing_ok=True)
            for lock in (git_dir / "refs").rglob("*.lock"):
                lock.unlink(missing_ok=True)
            return
        await self._discard(entry.path)
        entry.path.mkdir(mode=0o700)
        timeout = self.timeouts.local
        await run_git(["init", "-q"], cwd=entry.path, env=env, timeout=timeout)
        for key, value in (
            ("remote.origin.url", url),
            ("remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"),
            ("gc.autoDetach", "false"),
            ("maintenance.autoDetach", "false"),
            ("core.autocrlf", "false"),
            ("advice.detachedHead", "false"),
        ):
            await run_git(["config", key, value], cwd=entry.path, env=env, timeout=timeout)

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


__all__ = [
    "BranchNotFound",
    "PushDenied",
    "PushRejected",
    "RepoCache",
    "Timeouts",
    "WorkTree",
    "check_branch_name",
    "repo_key",
    "split_credentials",
]
