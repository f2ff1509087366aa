"""A real container registry (CNCF distribution, Debian's ``docker-registry``) on a free local port.

Modes: plain HTTP, htpasswd Basic auth, TLS, Bearer token auth (see ``token_server``). Each
instance has its own temporary directory and generated configuration, listens on 127.0.0.1 only
and is stopped by the process id it was started with.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argocd_image_updater_testing.process import ManagedProcess

DEFAULT_BINARY = "/usr/bin/docker-registry"
_LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+)")


class RegistryServerError(RuntimeError):
    """The registry could not be started."""


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """PEM files for serving TLS; ``ca`` is the CA that clients need (kept for convenience)."""

    certificate: Path
    key: Path
    ca: Path | None = None


@dataclass(frozen=True, slots=True)
class TokenAuth:
    """Token authentication: where clients get tokens and how the registry checks them."""

    realm: str
    service: str
    issuer: str
    rootcertbundle: Path


def _yaml_str(value: str | Path) -> str:
    # JSON strings are valid YAML flow scalars; quoting keeps paths with odd characters intact.
    text = str(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _htpasswd_line(user: str, password: str) -> str:
    htpasswd = shutil.which("htpasswd") or "/usr/bin/htpasswd"
    if not Path(htpasswd).exists():
        raise RegistryServerError("htpasswd not found: install apache2-utils (run scripts/setup)")
    # Password on stdin (-i) keeps it out of the process list.
    out = subprocess.run(
        [htpasswd, "-Bin", user],
        input=password,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return out.stdout.strip()


class RegistryServer(ManagedProcess):
    """``docker-registry serve`` with a generated config. Sync ``start()``/``stop()``, ``with`` or
    ``async with``.

    ``storage`` is the storage root to serve (e.g. prepared by ``push.write_registry_storage``);
    without it a fresh empty one is made (on ``/dev/shm`` when available) and removed at stop.
    """

    def __init__(
        self,
        *,
        users: Mapping[str, str] | None = None,
        tls: TlsFiles | None = None,
        token: TokenAuth | None = None,
        storage: Path | None = None,
        binary: str = DEFAULT_BINARY,
        startup_timeout: float = 15.0,
    ) -> None:
        if users and token:
            raise ValueError("choose either htpasswd users or token auth, not both")
        self.users: Mapping[str, str] = dict(users or {})
        self.tls = tls
        self.token = token
        self._storage = storage
        self._binary = binary
        self._timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: Path | None = None
        self._port = 0

    # --- properties ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if not self._port:
            raise RegistryServerError("the registry is not running: call start() first")
        return self._port

    @property
    def host(self) -> str:
        """``127.0.0.1:PORT`` — the registry part of image references."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}"

    @property
    def storage_root(self) -> Path:
        if self._storage is not None:
            return self._storage
        if self._dir is None:
            raise RegistryServerError("the registry is not running: call start() first")
        return self._dir / "storage"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def log_file(self) -> Path | None:
        return self._dir / "registry.log" if self._dir is not None else None

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self) -> RegistryServer:
        if self._proc is not None:
            return self
        if not os.access(self._binary, os.X_OK):
            raise RegistryServerError(
                f"{self._binary} not found: install docker-registry: scripts/setup "
                "(apt-get install docker-registry apache2-utils)"
            )
        shm = Path("/dev/shm")  # noqa: S108 - mkdtemp makes a private (0700) directory there
        base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
        self._dir = Path(tempfile.mkdtemp(prefix="registry-", dir=base))
        try:
            config = self._write_config(self._dir)
            log_path = self._dir / "registry.log"
            env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
            with log_path.open("wb") as log:
                self._proc = subprocess.Popen(
                    [self._binary, "serve", str(config)],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    cwd=self._dir,
                    start_new_session=True,
                )
            self._port = self._wait_for_port(log_path)
        except BaseException:
            self.stop()
            raise
        return self

    # --- internals -----------------------------------------------------------------------------

    def _wait_for_port(self, log_path: Path) -> int:
        assert self._proc is not None
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            text = log_path.read_text(errors="replace")
            match = _LISTENING.search(text)
            if match:
                return int(match.group(1))
            if self._proc.poll() is not None:
                raise RegistryServerError(
                    f"docker-registry exited with code {self._proc.returncode}:\n{text[-2000:]}"
                )
            time.sleep(0.005)
        raise RegistryServerError(
            f"docker-registry did not report its port within {self._timeout} s:\n"
            f"{log_path.read_text(errors='replace')[-2000:]}"
        )

    def _write_config(self, directory: Path) -> Path:
        storage = self._storage or directory / "storage"
        storage.mkdir(parents=True, exist_ok=True)
        lines = [
            "version: 0.1",
            "log: {level: info, accesslog: {disabled: true}}",
            "storage:",
            f"  filesystem: {{rootdirectory: {_yaml_str(storage)}}}",
            "  delete: {enabled: true}",
            "  maintenance: {uploadpurging: {enabled: false}}",
            "http:",
            '  addr: "127.0.0.1:0"',
            f"  secret: {secrets.token_hex(16)}",
        ]
        if self.tls is not None:
            lines.append(
                f"  tls: {{certificate: {_yaml_str(self.tls.certificate)}, "
                f"key: {_yaml_str(self.tls.key)}}}"
            )
        lines.append("health: {storagedriver: {enabled: false}}")
        auth: dict[str, Any] = {}
        if self.users:
            htpasswd = directory / "htpasswd"
            htpasswd.write_text("".join(_htpasswd_line(u, p) + "\n" for u, p in self.users.items()))
            auth = {"htpasswd": {"realm": "basic-realm", "path": htpasswd}}
        elif self.token is not None:
            auth = {
                "token": {
                    "realm": self.token.realm,
                    "service": self.token.service,
                    "issuer": self.token.issuer,
                    "rootcertbundle": self.token.rootcertbundle,
                }
            }
        if auth:
            (kind, settings), *_ = auth.items()
            inner = ", ".join(f"{k}: {_yaml_str(v)}" for k, v in settings.items())
            lines.append(f"auth: {{{kind}: {{{inner}}}}}")
        config = directory / "config.yml"
        config.write_text("\n".join(lines) + "\n")
        return config
