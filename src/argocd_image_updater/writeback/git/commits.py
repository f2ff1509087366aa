"""Building commits with the git CLI: the message in a private file, the ``git commit`` command
line (hooks off, optionally signed and signed off), the author identity, and atomic file writes."""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path
from typing import Final

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
