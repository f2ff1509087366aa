"""Building commits with the git CLI: the message in a private file, the ``git commit`` command
line (hooks off, optionally signed and signed off), the author identity, and atomic file writes."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Final

SIGNING_METHODS: Final = frozenset({"openpgp", "ssh", "x509"})


def atomic_write(target: Path, text: str) -> None:
    """Replace ``target`` with ``text`` (temp file + rename, mode kept): readers see the old or
    the new content, never a half-written file."""
    try:
        mode = os.stat(target).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    data = text.encode("utf-8")
    directory = os.path.dirname(target)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
    while True:
        tmp = os.path.join(directory, f".tmp-{secrets.token_hex(6)}")
        try:
            fd = os.open(tmp, flags, 0o600)
            break
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
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
