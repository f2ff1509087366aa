"""Run the git CLI as an asyncio subprocess with a minimal environment, a timeout and no leftovers.

Every git process starts in its own session (and so its own process group). On timeout or
cancellation the whole group is killed — git, ``git-remote-https``, ``ssh`` and whatever else the
operation spawned — and reaped before :func:`run_git` ends, also when the cancellation comes while
the process is still being set up, so no git process outlives its operation. Errors carry the git
subcommand and a redacted excerpt of git's stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from prometheus_client import Counter, Histogram

from argocd_image_updater.observe.log import get_logger, redact
from argocd_image_updater.observe.metrics import REGISTRY

log = get_logger("writeback.git")

GIT_OPERATIONS: Final = Counter(
    "argocd_image_updater_git_operations",
    "git CLI invocations by subcommand and result (success, error, timeout)",
    ["operation", "result"],
    registry=REGISTRY,
)
GIT_OPERATION_DURATION: Final = Histogram(
    "argocd_image_updater_git_operation_duration_seconds",
    "Duration of git CLI invocations by subcommand",
    ["operation"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
    registry=REGISTRY,
)

DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
# Transports git may use; ``ext::`` (runs arbitrary commands) and friends stay disabled.
ALLOWED_PROTOCOLS: Final = "file:git:http:https:ssh"
_EXCERPT_CHARS: Final = 1500
STOP_TIMEOUT: Final = 10.0
"""Seconds to wait for a killed git process group to be reaped (or a cancelled start to end)."""
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/@\s:]*):([^/@\s]*)@")
# Options of ``git`` itself that take a separate value (``git -C DIR …``, ``git -c K=V …``).
_GLOBAL_OPTS_WITH_VALUE: Final = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})


@dataclass(frozen=True, slots=True)
class GitResult:
    stdout: str
    stderr: str
    code: int


class GitError(Exception):
    """A git command failed; ``str()`` names the subcommand and shows redacted stderr."""

    def __init__(
        self, operation: str, message: str, *, code: int | None = None, stderr: str = ""
    ) -> None:
        super().__init__(message)
        self.operation = operation
        self.code = code
        self.stderr = stderr


class GitTimeout(GitError):
    """The git command did not finish in time; its whole process group was killed."""


class GitAuthError(GitError):
    """The remote refused our credentials (or none were configured)."""


class GitHostKeyError(GitError):
    """The SSH host key is unknown or does not match the configured known_hosts."""


class GitTlsError(GitError):
    """The remote's TLS certificate could not be verified."""


_CLASSIFY: Final[tuple[tuple[re.Pattern[str], type[GitError], str], ...]] = (
    (
        re.compile(
            r"Authentication failed|could not read (Username|Password)|"
            r"Permission denied \(publickey|terminal prompts disabled|"
            r"The requested URL returned error: 40[13]",
            re.I,
        ),
        GitAuthError,
        "authentication failed (check the repository credentials)",
    ),
    (
        re.compile(
            r"Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|"
            r"No (ED25519|RSA|ECDSA)? ?host key is known",
            re.I,
        ),
        GitHostKeyError,
        "SSH host key verification failed (check known_hosts for this host)",
    ),
    (
        re.compile(
            r"SSL certificate problem|server certificate verification failed|"
            r"unable to get local issuer certificate|certificate verify failed",
            re.I,
        ),
        GitTlsError,
        "TLS certificate verification failed (configure the CA of this server)",
    ),
)


def redact_text(text: str) -> str:
    """Mask registered secrets and the password part of ``scheme://user:pass@`` URLs."""
    return _URL_USERINFO.sub(r"\1\2:*****@", redact(text))


def subcommand(args: Sequence[str]) -> str:
    """The git subcommand of ``args`` (``["-c", "k=v", "push", …]`` → ``push``)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _GLOBAL_OPTS_WITH_VALUE:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return "git"


def _excerpt(stderr: str) -> str:
    text = redact_text(stderr.strip())
    if len(text) > _EXCERPT_CHARS:
        text = "…" + text[-_EXCERPT_CHARS:]
    return text


def error_for(operation: str, code: int, stderr: str) -> GitError:
    """The most specific :class:`GitError` for a failed command's stderr."""
    excerpt = _excerpt(stderr)
    for pattern, cls, hint in _CLASSIFY:
        if pattern.search(stderr):
            return cls(operation, f"git {operation}: {hint}: {excerpt}", code=code, stderr=excerpt)
    return GitError(
        operation, f"git {operation} failed (exit {code}): {excerpt}", code=code, stderr=excerpt
    )


_PROXY_VARIABLES: Final = tuple(
    name
    for base in ("http_proxy", "https_proxy", "no_proxy", "all_proxy")
    for name in (base, base.upper())
)


def minimal_env(home: Path | str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The complete environment for a git process: nothing inherited but ``PATH`` (and proxy
    settings and the GnuPG home, when set).

    ``HOME`` is a private directory; system and global git config are ignored; git never prompts
    (no terminal, ``GIT_TERMINAL_PROMPT=0``, stdin closed) and never downloads LFS objects.
    ``extra`` (credentials, ``GIT_SSH_COMMAND``, …) is applied last.
    """
    env = {
        "PATH": os.environ.get("PATH") or DEFAULT_PATH,
        "HOME": str(home),
        "LANG": "C",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_LFS_SKIP_SMUDGE": "1",
        "GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS,
        "GIT_ATTR_NOSYSTEM": "1",
    }
    # Commit signing with a GPG key needs the operator's keyring (Argo CD's ARGOCD_GNUPGHOME
    # convention too), and a cluster behind a proxy needs the proxy settings.
    if gnupghome := os.environ.get("GNUPGHOME") or os.environ.get("ARGOCD_GNUPGHOME"):
        env["GNUPGHOME"] = gnupghome
    for name in _PROXY_VARIABLES:
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(extra or {})
    return env


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _outlast(future: asyncio.Future[Any], within: float) -> bool:
    """Wait up to ``within`` seconds for ``future``, also when the waiting task is cancelled
    meanwhile (clean-up must complete); return whether it was."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    cancelled = False
    while not future.done() and (left := deadline - loop.time()) > 0:
        try:
            await asyncio.wait((future,), timeout=left)
        except asyncio.CancelledError:
            cancelled = True
    return cancelled


async def _kill_and_reap(proc: asyncio.subprocess.Process, operation: str) -> bool:
    """Kill ``proc``'s process group and wait (bounded) until git is reaped and the pipes its
    group held are closed; return whether the caller was cancelled meanwhile."""
    _kill_group(proc.pid)
    reaped = asyncio.ensure_future(proc.wait())
    cancelled = await _outlast(reaped, STOP_TIMEOUT)
    if not reaped.done():
        reaped.cancel()
        log.error(
            "git process group still running after SIGKILL",
            operation=operation,
            pid=proc.pid,
            waited=f"{STOP_TIMEOUT:g}s",
        )
    return cancelled


def _kill_when_started(start: asyncio.Future[asyncio.subprocess.Process]) -> None:
    if not start.cancelled() and start.exception() is None:
        _kill_group(start.result().pid)


async def _start(operation: str, argv: Sequence[str], **options: Any) -> asyncio.subprocess.Process:
    """Start ``argv`` in a session (and process group) of its own.

    asyncio forks first and connects the pipes afterwards. A cancellation in between would
    abandon the process: asyncio then kills only git, not the remote helper or ssh it already
    started, and waits for pipes those still hold. So the start always completes, and a
    cancelled start kills and reaps the group before the cancellation goes on.
    """
    start = asyncio.ensure_future(
        asyncio.create_subprocess_exec(*argv, start_new_session=True, **options)
    )
    try:
        return await asyncio.shield(start)
    except asyncio.CancelledError:
        await _outlast(start, STOP_TIMEOUT)
        if not start.done():
            start.add_done_callback(_kill_when_started)
            log.error("git did not start in time and is killed once it has", operation=operation)
        elif not start.cancelled() and start.exception() is None:
            await _kill_and_reap(start.result(), operation)
        raise


async def run_git(
    args: Sequence[str],
    *,
    cwd: Path | str | None,
    env: Mapping[str, str],
    timeout: float,  # noqa: ASYNC109 - the deadline is enforced per process group
    input: bytes | str | None = None,
    check: bool = True,
    git: str = "git",
) -> GitResult:
    """Run ``git *args`` and return its output; raise :class:`GitError` when it fails.

    ``env`` is the full environment (see :func:`minimal_env`). With ``check=False`` a non-zero
    exit is returned, not raised; timeouts always raise :class:`GitTimeout`.
    """
    operation = subcommand(args)
    data = input.encode() if isinstance(input, str) else input
    started = time.monotonic()
    result = "error"
    log.trace("running git", operation=operation, args=" ".join(args))
    try:
        proc = await _start(
            operation,
            [git, *args],
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.PIPE if data is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            # Not asyncio.wait_for: on 3.11 it loses a cancellation that comes as git ends.
            async with asyncio.timeout(timeout):
                out, err = await proc.communicate(data)
        except TimeoutError:
            result = "timeout"
            if await _kill_and_reap(proc, operation):
                raise asyncio.CancelledError from None
            raise GitTimeout(
                operation, f"git {operation} timed out after {timeout:g} s", code=None
            ) from None
        except BaseException:
            # Cancelled (or anything else): take the whole process group down with us.
            await _kill_and_reap(proc, operation)
            raise
        # git itself exited; make sure nothing it started (ssh, remote helpers) lingers on.
        _kill_group(proc.pid)
        code = proc.returncode if proc.returncode is not None else -1
        stdout = out.decode("utf-8", "replace")
        stderr = err.decode("utf-8", "replace")
        if code != 0:
            log.debug("git failed", operation=operation, code=code, stderr=_excerpt(stderr))
            if check:
                raise error_for(operation, code, stderr)
        else:
            result = "success"
        return GitResult(stdout, stderr, code)
    finally:
        GIT_OPERATIONS.labels(operation, result).inc()
        GIT_OPERATION_DURATION.labels(operation).observe(time.monotonic() - started)
