"""``ext:`` credentials: run the script, read ``<username>:<password>`` from its output.

The script runs without a shell, in its own process group (a timeout kills its children too),
with the updater's environment minus the updater's own secrets.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Final

from argocd_image_updater.config.credentials import split_user_password
from argocd_image_updater.model.registry import Credentials
from argocd_image_updater.registry.credentials.errors import CredentialsError

DEFAULT_EXT_TIMEOUT: Final = 10.0
_STDERR_LIMIT: Final = 500
_STDOUT_LIMIT: Final = 64 * 1024
_DEFAULT_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# The updater's own secrets, which a credentials script has no business seeing.
_PRIVATE_ENV: Final = frozenset({"ARGOCD_TOKEN", "ARGOCD_AUTH_TOKEN"})
_PRIVATE_SUFFIXES: Final = ("_WEBHOOK_SECRET",)
_PRIVATE_PREFIXES: Final = ("ARGOCD_IMAGE_UPDATER_GIT_",)


def _script_env() -> dict[str, str]:
    """The environment of an ``ext:`` script: the updater's, minus its own secrets.

    Cloud login scripts need their SDK's variables (``AWS_ROLE_ARN`` and
    ``AWS_WEB_IDENTITY_TOKEN_FILE`` for IRSA, ``AZURE_*`` for workload identity, proxies, …),
    as the original passes them; the Argo CD token and webhook secrets are withheld.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in _PRIVATE_ENV
        and not key.endswith(_PRIVATE_SUFFIXES)
        and not key.startswith(_PRIVATE_PREFIXES)
    }
    env.setdefault("PATH", _DEFAULT_PATH)
    return env


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def run_script(path: str, time_limit: float = DEFAULT_EXT_TIMEOUT) -> Credentials:
    """The credentials the script at ``path`` prints; raises :class:`CredentialsError`."""
    where = f"ext:{path}"
    if not os.path.isabs(path):
        raise CredentialsError(f"{where}: path to script must be absolute, but is '{path}'")
    try:
        proc = await asyncio.create_subprocess_exec(
            path,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=_script_env(),
            start_new_session=True,  # own process group, so a timeout kills its children too
        )
    except FileNotFoundError:
        raise CredentialsError(f"{where}: script not found") from None
    except PermissionError:
        raise CredentialsError(f"{where}: script is not executable (chmod +x it)") from None
    except OSError as exc:
        raise CredentialsError(f"{where}: cannot run script: {exc.strerror}") from None
    try:
        async with asyncio.timeout(time_limit):
            stdout, stderr = await proc.communicate()
    except TimeoutError:
        _kill_group(proc)
        await proc.wait()
        raise CredentialsError(
            f"{where}: script did not finish within {time_limit:g}s and was killed"
        ) from None
    except BaseException:  # cancelled: do not leave the script running
        _kill_group(proc)
        await proc.wait()
        raise
    if proc.returncode != 0:
        err = stderr.decode("utf-8", "replace").strip()
        if len(err) > _STDERR_LIMIT:
            err = err[:_STDERR_LIMIT] + "…"
        raise CredentialsError(
            f"{where}: script failed with exit code {proc.returncode}" + (f": {err}" if err else "")
        )
    creds = None
    if len(stdout) <= _STDOUT_LIMIT:
        text = stdout.decode("utf-8", "replace")
        lines = text.removesuffix("\n").removesuffix("\r").split("\n")
        creds = split_user_password(lines[0]) if len(lines) == 1 else None
    if creds is None:
        raise CredentialsError(
            f"{where}: invalid script output, must be single line with syntax <username>:<password>"
        )
    return creds
