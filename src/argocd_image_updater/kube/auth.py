"""How requests to the Kubernetes API authenticate: a bearer token (fixed, read from a file that
is rotated, from an exec credential plugin, or an OIDC id-token: :mod:`.oidc`) or basic auth.

The client sets the Authorization header from one of these; a token that can change is fetched
again, and the request sent once more, when the API server answers 401 (a rotated service-account token, an expired plugin
credential); a second 401 is the caller's error.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from argocd_image_updater.observe.log import register_secret

EXEC_API_VERSIONS: Final = (
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
    "client.authentication.k8s.io/v1alpha1",
)
TOKEN_FILE_REREAD: Final = 60.0  # seconds, as client-go's cached token source
EXEC_TIMEOUT: Final = 60.0
EXPIRY_MARGIN: Final = timedelta(seconds=10)


class KubeAuthError(Exception):
    """A credential cannot be obtained (the message says which and why)."""


class KubeAuth:
    """A credential for the Authorization header, which may be fetched again after a 401
    (``refreshable``)."""

    refreshable = False

    async def authorization(self, refresh: bool) -> str:
        raise NotImplementedError


class StaticToken(KubeAuth):
    def __init__(self, token: str) -> None:
        register_secret(token)
        self._header = f"Bearer {token}"

    async def authorization(self, refresh: bool) -> str:
        return self._header


class BasicAuth(KubeAuth):
    def __init__(self, username: str, password: str) -> None:
        register_secret(password)
        encoded = base64.b64encode(f"{username}:{password}".encode()).decode()
        self._header = f"Basic {encoded}"

    async def authorization(self, refresh: bool) -> str:
        return self._header


class FileToken(KubeAuth):
    """A token file (a projected service-account token is rotated by the kubelet): read again
    every minute, and at once after a 401."""

    refreshable = True

    def __init__(self, path: Path, clock: Any = time.monotonic) -> None:
        self.path = path
        self._clock = clock
        self._token = ""
        self._read_at = 0.0

    async def authorization(self, refresh: bool) -> str:
        if refresh or not self._token or self._clock() - self._read_at >= TOKEN_FILE_REREAD:
            try:
                token = self.path.read_text().strip()
            except OSError as err:
                if not self._token:
                    raise KubeAuthError(f"cannot read the token file {self.path}: {err}") from None
                token = self._token  # keep the last one; the API server will say if it is stale
            if token:
                register_secret(token)
                self._token = token
            self._read_at = self._clock()
        return f"Bearer {self._token}"


@dataclass(frozen=True)
class ExecCredential:
    token: str = ""
    cert_pem: bytes = b""
    key_pem: bytes = b""
    expires: datetime | None = None

    def fresh(self, now: datetime) -> bool:
        return self.expires is None or now + EXPIRY_MARGIN < self.expires


class ExecPlugin(KubeAuth):
    """An exec credential plugin (``users[].user.exec``) as kubectl runs it: never interactive,
    ``KUBERNETES_EXEC_INFO`` set, its credential kept until its ``expirationTimestamp`` and run
    again after a 401. A client certificate it returns is the connection's, renewed with the
    credential (:class:`argocd_image_updater.kube.tls.ClientTls` builds a new SSL context)."""

    refreshable = True

    def __init__(
        self,
        api_version: str,
        command: str,
        args: list[str],
        env: Mapping[str, str],
        *,
        cluster: Mapping[str, Any] | None = None,
        install_hint: str = "",
    ) -> None:
        self.api_version, self.command, self.args = api_version, command, args
        self.env, self.cluster, self.install_hint = dict(env), cluster, install_hint
        self._current: ExecCredential | None = None
        self._lock: asyncio.Lock | None = None

    @classmethod
    def from_config(
        cls, spec: Any, base: Path, *, cluster: Mapping[str, Any] | None = None
    ) -> ExecPlugin:
        if not isinstance(spec, dict):
            raise KubeAuthError("the user's exec entry is not a mapping")
        api_version = str(spec.get("apiVersion") or "")
        if api_version not in EXEC_API_VERSIONS:
            raise KubeAuthError(
                f"exec plugin: apiVersion '{api_version}' is not one of "
                f"{', '.join(EXEC_API_VERSIONS)}"
            )
        command = str(spec.get("command") or "")
        if not command:
            raise KubeAuthError("exec plugin: no command")
        if os.sep in command and not os.path.isabs(command):
            command = str(base / command)  # relative to the kubeconfig, as kubectl does
        if spec.get("interactiveMode") == "Always":
            raise KubeAuthError(
                f"exec plugin {command}: interactiveMode Always needs a terminal, which a "
                "controller has not"
            )
        env: dict[str, str] = {}
        for item in spec.get("env") or []:
            if isinstance(item, dict) and item.get("name"):
                env[str(item["name"])] = str(item.get("value") or "")
        return cls(
            api_version,
            command,
            [str(a) for a in spec.get("args") or []],
            env,
            cluster=cluster if spec.get("provideClusterInfo") else None,
            install_hint=str(spec.get("installHint") or ""),
        )

    async def authorization(self, refresh: bool) -> str:
        credential = await self.credential(refresh=refresh)
        return f"Bearer {credential.token}" if credential.token else ""

    async def pem(self, refresh: bool) -> tuple[bytes, bytes]:
        """The client certificate and key of the current credential (renewed when expired)."""
        credential = await self.credential(refresh=refresh)
        return credential.cert_pem, credential.key_pem

    async def credential(self, refresh: bool = False) -> ExecCredential:
        if self._lock is None:
            self._lock = asyncio.Lock()
        stale = self._current
        async with self._lock:
            current = self._current
            # Another request may have run the plugin while this one waited for the lock.
            if current is not None and current is not stale:
                return current
            if current is not None and not refresh and current.fresh(datetime.now(UTC)):
                return current
            self._current = await self._run()
            return self._current

    async def _run(self) -> ExecCredential:
        info: dict[str, Any] = {"interactive": False}
        if self.cluster is not None:
            info["cluster"] = dict(self.cluster)
        env = {**os.environ, **self.env}
        env["KUBERNETES_EXEC_INFO"] = json.dumps(
            {"apiVersion": self.api_version, "kind": "ExecCredential", "spec": info}
        )
        try:
            process = await asyncio.create_subprocess_exec(
                self.command,
                *self.args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            )
        except OSError as err:
            hint = f" ({self.install_hint.strip()})" if self.install_hint else ""
            raise KubeAuthError(
                f"exec plugin {self.command}: {err.strerror or err}{hint}"
            ) from None
        try:
            async with asyncio.timeout(EXEC_TIMEOUT):
                out, err_out = await process.communicate()
        except TimeoutError:
            process.kill()
            await process.wait()
            raise KubeAuthError(
                f"exec plugin {self.command} did not answer within {EXEC_TIMEOUT:.0f}s"
            ) from None
        if process.returncode != 0:
            detail = err_out.decode(errors="replace").strip()[-500:]
            raise KubeAuthError(
                f"exec plugin {self.command} failed with exit status {process.returncode}"
                + (f": {detail}" if detail else "")
            )
        return self._parse(out)

    def _parse(self, out: bytes) -> ExecCredential:
        try:
            doc = json.loads(out)
            status = doc["status"] or {}
        except (ValueError, KeyError, TypeError):
            raise KubeAuthError(
                f"exec plugin {self.command} did not print an ExecCredential (JSON with a status)"
            ) from None
        if doc.get("apiVersion") != self.api_version:
            raise KubeAuthError(
                f"exec plugin {self.command} answered apiVersion '{doc.get('apiVersion')}', "
                f"expected '{self.api_version}'"
            )
        expires = None
        if status.get("expirationTimestamp"):
            try:
                expires = datetime.fromisoformat(str(status["expirationTimestamp"]))
            except ValueError:
                raise KubeAuthError(
                    f"exec plugin {self.command}: expirationTimestamp is not RFC 3339"
                ) from None
            if expires.tzinfo is None:
                expires = expires.replace(tzinfo=UTC)
        token = str(status.get("token") or "")
        cert = str(status.get("clientCertificateData") or "").encode()
        key = str(status.get("clientKeyData") or "").encode()
        if not token and not (cert and key):
            raise KubeAuthError(
                f"exec plugin {self.command} returned neither a token nor a client certificate"
            )
        if token:
            register_secret(token)
        return ExecCredential(token, cert, key, expires)
