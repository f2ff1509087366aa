"""Registry credential references (``env:``, ``ext:``, ``secret:``, ``pullsecret:``) and fetching.

A reference says where credentials come from; :func:`fetch_credentials` reads them.
:class:`EndpointCredentials` serves a registry-level reference (``credentials`` in registries.conf)
with caching until ``credsexpire``; :class:`ImageCredentials` serves a per-image pull secret.
Both implement :class:`argocd_image_updater.model.registry.CredentialProvider`.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import os
import re
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from argocd_image_updater.config.dockerconfig import (
    DockerConfigError,
    credentials_from_docker_config,
)
from argocd_image_updater.config.secrets import (
    SecretError,
    SecretReader,
    is_valid_field,
    is_valid_namespace,
    is_valid_secret_name,
    read_field,
)
from argocd_image_updater.model.registry import Credentials, RegistryEndpoint
from argocd_image_updater.report import metrics
from argocd_image_updater.report.log import get_logger, register_secret

PULL_SECRET_FIELD: Final = ".dockerconfigjson"
DEFAULT_EXT_TIMEOUT: Final = 10.0
_STDERR_LIMIT: Final = 500
_STDOUT_LIMIT: Final = 64 * 1024
_DEFAULT_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_ENV_NAME_RE: Final = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
ACCEPTED_FORMS: Final = (
    "use env:<VARIABLE>, ext:</absolute/path/to/script>, secret:<namespace>/<name>#<field> "
    "or pullsecret:<namespace>/<name>, optionally prefixed with <registry>="
)

_log = get_logger(__name__)


class CredentialRefError(ValueError):
    """A credential reference that cannot be parsed; says which part is wrong."""


class CredentialsError(Exception):
    """Credentials could not be fetched; the message never holds a secret value."""


class CredentialKind(enum.StrEnum):
    ENV = "env"
    EXT = "ext"
    SECRET = "secret"
    PULLSECRET = "pullsecret"


@dataclass(frozen=True, slots=True)
class CredentialRef:
    """A parsed reference. ``registry`` is the optional ``<registry>=`` prefix (informational)."""

    kind: CredentialKind
    registry: str = ""
    env_name: str = ""
    script_path: str = ""
    namespace: str = ""
    name: str = ""
    field: str = ""

    @property
    def key(self) -> str:
        """The canonical source, e.g. ``env:VAR`` or ``secret:ns/name#field`` (no registry)."""
        match self.kind:
            case CredentialKind.ENV:
                return f"env:{self.env_name}"
            case CredentialKind.EXT:
                return f"ext:{self.script_path}"
            case CredentialKind.SECRET:
                return f"secret:{self.namespace}/{self.name}#{self.field}"
            case CredentialKind.PULLSECRET:
                return f"pullsecret:{self.namespace}/{self.name}"

    def __str__(self) -> str:
        return f"{self.registry}={self.key}" if self.registry else self.key


def _ref_error(problem: str) -> CredentialRefError:
    return CredentialRefError(f"invalid credential reference: {problem}; {ACCEPTED_FORMS}")


def _parse_secret_location(kind: str, location: str) -> tuple[str, str]:
    namespace, sep, name = location.partition("/")
    if not sep:
        raise _ref_error(f"{kind}: needs <namespace>/<name>, got '{location}' (no '/')")
    if not namespace:
        raise _ref_error(f"{kind}: the namespace before '/' is empty")
    if not name:
        raise _ref_error(f"{kind}: the secret name after '/' is empty")
    if not is_valid_namespace(namespace):
        raise _ref_error(f"{kind}: '{namespace}' is not a valid Kubernetes namespace name")
    if not is_valid_secret_name(name):
        raise _ref_error(f"{kind}: '{name}' is not a valid Kubernetes secret name")
    return namespace, name


def parse_credential_ref(text: str, require_registry_prefix: bool = False) -> CredentialRef:
    """Parse ``[<registry>=]<type>:<source>``; the type keyword is case-insensitive.

    Raises :class:`CredentialRefError` naming the wrong part. The text of an unrecognised
    reference is not repeated in the message, as it may be a mistyped secret.
    """
    spec = text.strip()
    registry = ""
    if "=" in spec:
        registry, _, spec = spec.partition("=")
        registry = registry.strip()
        if not registry:
            raise _ref_error("the registry before '=' is empty")
    elif require_registry_prefix:
        raise _ref_error(
            "a '<registry>=' prefix is required here, e.g. 'gcr.io=pullsecret:ns/name'"
        )
    kind_text, sep, source = spec.partition(":")
    if not sep:
        raise _ref_error("no '<type>:' found")
    try:
        kind = CredentialKind(kind_text.strip().lower())
    except ValueError:
        raise _ref_error("unknown credential type (it is the part before ':')") from None
    if not source:
        raise _ref_error(f"nothing after '{kind}:'")
    match kind:
        case CredentialKind.ENV:
            if _ENV_NAME_RE.fullmatch(source) is None:
                raise _ref_error(
                    "env: needs an environment variable name (letters, digits, '_', '-', '.')"
                )
            return CredentialRef(kind, registry, env_name=source)
        case CredentialKind.EXT:
            if not os.path.isabs(source):
                raise _ref_error(f"ext: path to script must be absolute, but is '{source}'")
            return CredentialRef(kind, registry, script_path=source)
        case CredentialKind.SECRET:
            location, sep, field = source.partition("#")
            if not sep or not field:
                raise _ref_error(
                    "secret: needs a field after '#' (secret:<namespace>/<name>#<field>)"
                )
            if not is_valid_field(field):
                raise _ref_error(f"secret: '{field}' is not a valid secret field name")
            namespace, name = _parse_secret_location("secret", location)
            return CredentialRef(kind, registry, namespace=namespace, name=name, field=field)
        case CredentialKind.PULLSECRET:
            if "#" in source:
                raise _ref_error(
                    "pullsecret: takes no '#<field>' (it always reads .dockerconfigjson); "
                    "use secret:<namespace>/<name>#<field> for another field"
                )
            namespace, name = _parse_secret_location("pullsecret", source)
            return CredentialRef(
                kind, registry, namespace=namespace, name=name, field=PULL_SECRET_FIELD
            )


def _split_user_pass(value: str) -> Credentials | None:
    username, sep, password = value.partition(":")
    if not sep or not username or not password:
        return None
    return Credentials(username, password)


def _strip_newline(value: str) -> str:
    return value.removesuffix("\n").removesuffix("\r")


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


async def _run_script(path: str, time_limit: float) -> Credentials:
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
        lines = _strip_newline(stdout.decode("utf-8", "replace")).split("\n")
        creds = _split_user_pass(lines[0]) if len(lines) == 1 else None
    if creds is None:
        raise CredentialsError(
            f"{where}: invalid script output, must be single line with syntax <username>:<password>"
        )
    return creds


async def fetch_credentials(
    ref: CredentialRef,
    *,
    api_url: str,
    prefix: str,
    secrets: SecretReader | None,
    env: Mapping[str, str] | None = None,
    ext_timeout: float = DEFAULT_EXT_TIMEOUT,
) -> Credentials:
    """Read the credentials ``ref`` points to for the registry at ``api_url`` / ``prefix``.

    ``env`` defaults to the process environment; ``secrets`` is needed for ``secret:`` and
    ``pullsecret:``. Raises :class:`CredentialsError`. The password is registered with the log
    masking so that it never appears in a log line.
    """
    creds: Credentials | None
    match ref.kind:
        case CredentialKind.ENV:
            value = (os.environ if env is None else env).get(ref.env_name, "")
            if not value:
                raise CredentialsError(f"env '{ref.env_name}' is not set")
            creds = _split_user_pass(_strip_newline(value))
            if creds is None:
                raise CredentialsError(
                    f"env '{ref.env_name}' does not hold credentials in the form "
                    "<username>:<password> (both parts non-empty)"
                )
        case CredentialKind.EXT:
            creds = await _run_script(ref.script_path, ext_timeout)
        case CredentialKind.SECRET | CredentialKind.PULLSECRET:
            creds = await _from_secret(ref, api_url=api_url, prefix=prefix, secrets=secrets)
    register_secret(creds.password)
    return creds


async def _from_secret(
    ref: CredentialRef, *, api_url: str, prefix: str, secrets: SecretReader | None
) -> Credentials:
    where = f"{ref.kind}:{ref.namespace}/{ref.name}"
    if secrets is None:
        raise CredentialsError(
            f"{where}: could not fetch credentials: no Kubernetes client given "
            "(secret: and pullsecret: references need access to the cluster)"
        )
    try:
        raw = await read_field(secrets, ref.namespace, ref.name, ref.field)
    except SecretError as exc:
        raise CredentialsError(f"{where}: {exc}") from None
    if ref.kind is CredentialKind.PULLSECRET:
        try:
            return credentials_from_docker_config(raw, api_url, prefix)
        except DockerConfigError as exc:
            raise CredentialsError(f"{where}: {exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    creds = _split_user_pass(_strip_newline(text))
    if creds is None:
        raise CredentialsError(
            f"invalid credentials in secret '{ref.namespace}/{ref.name}' field '{ref.field}': "
            "expected <username>:<password> (both parts non-empty)"
        )
    return creds


class _CachingProvider:
    """Single-flight fetching with an optional time-to-live, shared by both providers."""

    def __init__(
        self,
        ref: CredentialRef | None,
        *,
        endpoint: RegistryEndpoint,
        ttl: timedelta,
        secrets: SecretReader | None,
        env: Mapping[str, str] | None,
        clock: Callable[[], float],
        ext_timeout: float,
    ) -> None:
        self._ref = ref
        self._endpoint = endpoint
        self._ttl = ttl.total_seconds()
        self._secrets = secrets
        self._env = env
        self._clock = clock
        self._ext_timeout = ext_timeout
        self._cached: Credentials | None = None
        self._fetched_at = 0.0
        self._inflight: asyncio.Future[Credentials] | None = None
        self._refetch_pending = False
        self._generation = 0

    @property
    def key(self) -> str:
        return self._ref.key if self._ref is not None else ""

    @property
    def ref(self) -> CredentialRef | None:
        return self._ref

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key={self.key!r}, registry={self._endpoint.prefix!r})"

    def _fresh(self) -> bool:
        if self._cached is None:
            return False
        return self._ttl <= 0 or self._clock() - self._fetched_at < self._ttl

    async def get(self) -> Credentials | None:
        if self._ref is None:
            return None
        if self._fresh():
            metrics.CACHE_HITS.labels("credentials").inc()
            return self._cached
        metrics.CACHE_MISSES.labels("credentials").inc()
        if self._inflight is None:
            task = asyncio.ensure_future(self._fetch(self._ref, self._generation))
            task.add_done_callback(self._fetch_done)
            self._inflight = task
        # shield: one caller giving up must not cancel the fetch the others wait for
        return await asyncio.shield(self._inflight)

    async def _fetch(self, ref: CredentialRef, generation: int) -> Credentials:
        _log.debug("fetching credentials", source=ref.key, registry=self._endpoint.prefix)
        creds = await fetch_credentials(
            ref,
            api_url=self._endpoint.api_url,
            prefix=self._endpoint.prefix,
            secrets=self._secrets,
            env=self._env,
            ext_timeout=self._ext_timeout,
        )
        if generation == self._generation:
            self._cached = creds
            self._fetched_at = self._clock()
        return creds

    def _fetch_done(self, task: asyncio.Future[Credentials]) -> None:
        self._inflight = None
        self._refetch_pending = False
        if not task.cancelled():
            task.exception()  # retrieved here so that an unawaited failure is not reported

    def invalidate(self) -> bool:
        """Forget the cached credentials after the registry refused them (HTTP 401/403).

        Returns True when the next :meth:`get` reads the source again and so may get different
        credentials: when credentials were cached, and also for further callers until that
        re-read has finished (they were refused the same credentials). Returns False when there
        is nothing to re-read (no reference, or the last re-read already happened); the caller
        then reports the authentication error instead of retrying.
        """
        if self._ref is None:
            return False
        if self._cached is not None:
            self._cached = None
            self._generation += 1
            self._refetch_pending = True
            return True
        return self._refetch_pending


class EndpointCredentials(_CachingProvider):
    """Credentials of a registries.conf entry: cached until ``credsexpire`` (0 = forever).

    Concurrent callers share one fetch (an ``ext:`` script runs once). ``clock`` returns
    seconds (monotonic) and is injectable for tests.
    """

    def __init__(
        self,
        endpoint: RegistryEndpoint,
        *,
        secrets: SecretReader | None = None,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        ext_timeout: float = DEFAULT_EXT_TIMEOUT,
    ) -> None:
        ref = parse_credential_ref(endpoint.credentials) if endpoint.credentials else None
        super().__init__(
            ref,
            endpoint=endpoint,
            ttl=endpoint.creds_expire,
            secrets=secrets,
            env=env,
            clock=clock,
            ext_timeout=ext_timeout,
        )


class ImageCredentials(_CachingProvider):
    """Credentials of a per-image pull secret; they override the registry-level ones.

    Create one per image and update cycle: the source is read on first use in that cycle and
    kept only by this object, never on the endpoint, so the next cycle reads it again.
    """

    def __init__(
        self,
        ref: CredentialRef | str,
        endpoint: RegistryEndpoint,
        *,
        secrets: SecretReader | None = None,
        env: Mapping[str, str] | None = None,
        ext_timeout: float = DEFAULT_EXT_TIMEOUT,
    ) -> None:
        parsed = parse_credential_ref(ref) if isinstance(ref, str) else ref
        super().__init__(
            parsed,
            endpoint=endpoint,
            ttl=timedelta(0),
            secrets=secrets,
            env=env,
            clock=time.monotonic,
            ext_timeout=ext_timeout,
        )
