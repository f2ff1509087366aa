"""Git credentials and the environment that hands them to one git process.

Secrets never appear in argv, remote URLs or git config:

* HTTPS: ``GIT_ASKPASS`` points at a tiny script (mode 0700, in a private directory) that prints
  the username or the password from environment variables of the git process that asks.
* SSH: ``GIT_SSH_COMMAND`` runs ``ssh`` with the key in a 0600 file, ``IdentitiesOnly`` and strict
  host key checking against a known_hosts file. Host key checking is off only when
  ``insecure_ignore_host_key`` is set explicitly. The operator's ssh client config
  (``$HOME/.ssh/config``, the ``argocd-image-updater-ssh-config`` ConfigMap in a cluster) is read
  when it exists (``ssh -F``), as the original does; the options given here on the command line
  (key, host key checking, batch mode) take precedence over it, since ssh keeps the first value.
* TLS: ``GIT_SSL_CAINFO`` for a custom CA; ``GIT_SSL_NO_VERIFY`` only when ``insecure`` is set.

:func:`prepare_auth` writes these files into a fresh 0700 directory and returns a cleanup that
removes it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from argocd_image_updater.observe.log import register_secret

DEFAULT_USERNAME: Final = "x-access-token"
USERNAME_VAR: Final = "ARGOCD_IMAGE_UPDATER_GIT_USERNAME"
PASSWORD_VAR: Final = "ARGOCD_IMAGE_UPDATER_GIT_PASSWORD"

_ASKPASS: Final = f"""#!/bin/sh
case "$1" in
  [Uu]sername*) printf '%s\\n' "${USERNAME_VAR}" ;;
  *) printf '%s\\n' "${PASSWORD_VAR}" ;;
esac
"""


@dataclass(frozen=True, slots=True)
class TlsOptions:
    """TLS settings for HTTPS remotes: an extra CA (PEM), a client certificate, or no checks."""

    ca_pem: str = ""
    insecure: bool = False
    client_cert_pem: str = ""
    client_key_pem: str = field(default="", repr=False)


@dataclass(frozen=True, slots=True)
class SshOptions:
    """SSH settings: known_hosts lines (``[host]:port keytype key``) or no host key checks."""

    known_hosts: str = ""
    insecure_ignore_host_key: bool = False


@dataclass(frozen=True, slots=True)
class HttpsCredentials:
    """Username and password (or token) for an HTTPS remote; ``""`` user → ``x-access-token``."""

    username: str
    password: str = field(repr=False)
    tls: TlsOptions = TlsOptions()

    @property
    def effective_username(self) -> str:
        return self.username or DEFAULT_USERNAME


@dataclass(frozen=True, slots=True)
class SshCredentials:
    """An SSH private key (OpenSSH or PEM text) for an SSH remote."""

    private_key: str = field(repr=False)
    ssh: SshOptions = SshOptions()


@dataclass(frozen=True, slots=True)
class NoCredentials:
    """Anonymous access; TLS and SSH host checks still apply."""

    tls: TlsOptions = TlsOptions()
    ssh: SshOptions = SshOptions()


GitCredentials = HttpsCredentials | SshCredentials | NoCredentials

Cleanup = Callable[[], None]


def _write_private(path: Path, text: str, mode: int = 0o600) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def _normalise_key(text: str) -> str:
    # ssh refuses keys with CRLF line ends or without a final newline ("invalid format").
    return text.replace("\r\n", "\n").strip() + "\n"


def ssh_config_file() -> Path | None:
    """The ssh client config git's ssh reads: ``$HOME/.ssh/config`` when that file exists.

    git runs with a private ``HOME``, and ssh looks for ``~/.ssh/config`` in the passwd entry's
    home (which a container user may not have), so the file is always passed with ``-F``.
    """
    home = os.environ.get("HOME") or str(Path.home())
    path = Path(home) / ".ssh" / "config"
    return path if path.is_file() else None


def _ssh_command(directory: Path, key: str | None, options: SshOptions) -> str:
    config = ssh_config_file()
    argv = ["ssh", "-F", str(config) if config else os.devnull]
    argv += ["-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes"]
    if key is not None:
        argv += ["-i", str(_write_private(directory / "id_key", _normalise_key(key)))]
    elif config is None:
        argv += ["-o", "IdentityFile=none"]  # else an IdentityFile of the config may apply
    if options.insecure_ignore_host_key:
        argv += [
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            f"UserKnownHostsFile={os.devnull}",
            "-o",
            "LogLevel=ERROR",
        ]
    else:
        known = options.known_hosts.strip()
        known_hosts = _write_private(directory / "known_hosts", known + "\n" if known else "")
        argv += [
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            f"UserKnownHostsFile={known_hosts}",
            "-o",
            f"GlobalKnownHostsFile={os.devnull}",
        ]
    return shlex.join(argv)


def _tls_env(directory: Path, tls: TlsOptions) -> dict[str, str]:
    env: dict[str, str] = {}
    if tls.insecure:
        env["GIT_SSL_NO_VERIFY"] = "true"
    elif tls.ca_pem.strip():
        env["GIT_SSL_CAINFO"] = str(_write_private(directory / "ca.pem", tls.ca_pem))
    if tls.client_cert_pem.strip() and tls.client_key_pem.strip():
        register_secret(tls.client_key_pem.strip())
        env["GIT_SSL_CERT"] = str(_write_private(directory / "client.crt", tls.client_cert_pem))
        env["GIT_SSL_KEY"] = str(_write_private(directory / "client.key", tls.client_key_pem))
    return env


def prepare_auth(creds: GitCredentials, workdir: Path) -> tuple[dict[str, str], Cleanup]:
    """Environment additions for git processes using ``creds``, and the cleanup to run after.

    Files go into a new 0700 directory under ``workdir`` (which should itself be private); the
    cleanup removes that directory. The HTTPS password is only in the returned environment.
    """
    directory = Path(tempfile.mkdtemp(prefix="auth-", dir=workdir))
    os.chmod(directory, 0o700)

    def cleanup() -> None:
        shutil.rmtree(directory, ignore_errors=True)

    try:
        env: dict[str, str] = {}
        if isinstance(creds, HttpsCredentials):
            register_secret(creds.password)
            askpass = _write_private(directory / "askpass.sh", _ASKPASS, 0o700)
            env.update(
                {
                    "GIT_ASKPASS": str(askpass),
                    USERNAME_VAR: creds.effective_username,
                    PASSWORD_VAR: creds.password,
                }
            )
            env.update(_tls_env(directory, creds.tls))
        elif isinstance(creds, SshCredentials):
            register_secret(creds.private_key.strip())
            env["GIT_SSH_COMMAND"] = _ssh_command(directory, creds.private_key, creds.ssh)
        else:
            env.update(_tls_env(directory, creds.tls))
            env["GIT_SSH_COMMAND"] = _ssh_command(directory, None, creds.ssh)
    except BaseException:
        cleanup()
        raise
    return env, cleanup
