"""Registry credential references and fetching.

References: ``env:``, ``ext:``, ``secret:``, ``pullsecret:``, and the native cloud logins
``ecr:``, ``gcp:``, ``azure:`` (see :mod:`argocd_image_updater.registry.cloud`).

A reference says where credentials come from; :func:`fetch_credentials` reads them.
:class:`EndpointCredentials` serves a registry-level reference (``credentials`` in registries.conf)
with caching until ``credsexpire``; :class:`ImageCredentials` serves a per-image pull secret.
Both implement :class:`argocd_image_updater.model.registry.CredentialProvider`. Cloud logins are
cached by their own expiry instead, process-wide (:class:`~argocd_image_updater.registry.cloud.
logins.CloudLogins`), so that pull secrets and registry entries naming the same login share it.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import os
import re
import signal
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
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
from argocd_image_updater.registry.cloud.detect import detect
from argocd_image_updater.registry.cloud.errors import CloudLoginError
from argocd_image_updater.registry.cloud.hosts import CloudKind, registry_host
from argocd_image_updater.registry.cloud.logins import LOGINS, CloudLogins
from argocd_image_updater.registry.cloud.options import (
    CloudOptionError,
    CloudOptions,
    parse_cloud_options,
)
from argocd_image_updater.registry.cloud.refresh import CloudToken, TokenRefresher
from argocd_image_updater.report import metrics
from argocd_image_updater.report.log import get_logger, register_secret

PULL_SECRET_FIELD: Final = ".dockerconfigjson"
DEFAULT_EXT_TIMEOUT: Final = 10.0
_STDERR_LIMIT: Final = 500
_STDOUT_LIMIT: Final = 64 * 1024
_DEFAULT_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_ENV_NAME_RE: Final = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
ACCEPTED_FORMS: Final = (
    "use env:<VARIABLE>, ext:</absolute/path/to/script>, secret:<namespace>/<name>#<field>, "
    "pullsecret:<namespace>/<name>, ecr[:<region>][,<role-arn>], gcp or azure[:<client-id>], "
    "optionally prefixed with <registry>="
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
    ECR = "ecr"
    GCP = "gcp"
    AZURE = "azure"


CLOUD_KINDS: Final = frozenset({CredentialKind.ECR, CredentialKind.GCP, CredentialKind.AZURE})


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
    option: str = ""
    """What follows ``ecr:``/``gcp:``/``azure:`` (canonical form)."""

    @property
    def cloud(self) -> CloudOptions:
        """The options of a cloud login reference (``ecr:``, ``gcp:``, ``azure:``)."""
        return parse_cloud_options(CloudKind(self.kind.value), self.option)

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
            case CredentialKind.ECR | CredentialKind.GCP | CredentialKind.AZURE:
                return f"{self.kind}:{self.option}"

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

    The cloud logins may be written without the colon when nothing follows (``ecr``, ``gcp``,
    ``azure``): ``credentials: ecr:`` is not valid YAML, ``credentials: ecr`` is.

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
    if not sep and kind_text.strip().lower() in CLOUD_KINDS:
        sep = ":"  # the bare cloud words `ecr`, `gcp`, `azure` mean `ecr:`, `gcp:`, `azure:`
    if not sep:
        raise _ref_error("no '<type>:' found")
    try:
        kind = CredentialKind(kind_text.strip().lower())
    except ValueError:
        raise _ref_error("unknown credential type (it is the part before ':')") from None
    if not source and kind not in CLOUD_KINDS:
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
        case CredentialKind.ECR | CredentialKind.GCP | CredentialKind.AZURE:
            try:
                options = parse_cloud_options(CloudKind(kind.value), source)
            except CloudOptionError as exc:
                raise _ref_error(str(exc)) from None
            return CredentialRef(kind, registry, option=options.text)


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
    cloud_logins: CloudLogins | None = None,
) -> Credentials:
    """Read the credentials ``ref`` points to for the registry at ``api_url`` / ``prefix``.

    ``env`` defaults to the process environment; ``secrets`` is needed for ``secret:`` and
    ``pullsecret:``; cloud logins come from ``cloud_logins`` (default: the process-wide ones).
    Raises :class:`CredentialsError`. The password is registered with the log masking so that it
    never appears in a log line.
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
        case CredentialKind.ECR | CredentialKind.GCP | CredentialKind.AZURE:
            endpoint = RegistryEndpoint(prefix=prefix, name=prefix, api_url=api_url)
            refresher = (cloud_logins or LOGINS).refresher(ref.cloud, endpoint)
            try:
                creds = (await refresher.get()).credentials
            except CloudLoginError as exc:
                raise CredentialsError(str(exc)) from None
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


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class _CachingProvider:
    """Single-flight fetching with an optional time-to-live, shared by both providers.

    Cloud login references are served by their process-wide :class:`TokenRefresher` instead
    (cached until shortly before the token expires, whatever ``credsexpire`` says). With
    ``auto_detected`` set, a failing cloud login falls back to anonymous access.
    """

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
        cloud_logins: CloudLogins | None = None,
        auto_detected: bool = False,
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
        self._auto = auto_detected
        self._login: TokenRefresher | None = None
        # the token each task was given: a refusal is reported by the task that used it
        self._handed_out: weakref.WeakKeyDictionary[asyncio.Task[object], CloudToken] = (
            weakref.WeakKeyDictionary()
        )
        self._last_handed_out: CloudToken | None = None
        self._warned = ""
        self.last_error = ""
        """Why the last cloud login failed (empty after a successful one)."""
        if ref is not None and ref.kind in CLOUD_KINDS:
            self._login = (cloud_logins or LOGINS).refresher(ref.cloud, endpoint)

    @property
    def login(self) -> TokenRefresher | None:
        """The cloud login behind a cloud reference."""
        return self._login

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
        if self._login is not None:
            return await self._cloud_get(self._login)
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

    async def _cloud_get(self, login: TokenRefresher) -> Credentials | None:
        try:
            token = await login.get()
        except CloudLoginError as exc:
            self._remember(None)
            self.last_error = str(exc)
            if not self._auto:
                raise CredentialsError(str(exc)) from None
            if self.last_error != self._warned:
                self._warned = self.last_error
                _log.warning(
                    "Cloud login for an auto-detected registry failed; continuing anonymously",
                    registry=self._endpoint.prefix,
                    error=self.last_error,
                )
            return None
        self._remember(token)
        self.last_error = ""
        return token.credentials

    def _remember(self, token: CloudToken | None) -> None:
        self._last_handed_out = token
        task = asyncio.current_task()
        if task is not None:
            if token is None:
                self._handed_out.pop(task, None)
            else:
                self._handed_out[task] = token

    def _refused_token(self) -> CloudToken | None:
        task = asyncio.current_task() if _loop_running() else None
        if task is not None and task in self._handed_out:
            return self._handed_out[task]
        return self._last_handed_out

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
        if self._login is not None:
            return self._login.invalidate(self._refused_token())
        if self._cached is not None:
            self._cached = None
            self._generation += 1
            self._refetch_pending = True
            return True
        return self._refetch_pending


class EndpointCredentials(_CachingProvider):
    """Credentials of a registries.conf entry: cached until ``credsexpire`` (0 = forever).

    Concurrent callers share one fetch (an ``ext:`` script runs once). ``clock`` returns
    seconds (monotonic) and is injectable for tests. ``auto_detected``: the reference was not
    configured but chosen by host (see :mod:`argocd_image_updater.registry.cloud.detect`); a
    failing login then means anonymous access instead of an error.
    """

    def __init__(
        self,
        endpoint: RegistryEndpoint,
        *,
        secrets: SecretReader | None = None,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        ext_timeout: float = DEFAULT_EXT_TIMEOUT,
        cloud_logins: CloudLogins | None = None,
        auto_detected: bool = False,
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
            cloud_logins=cloud_logins,
            auto_detected=auto_detected,
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
        cloud_logins: CloudLogins | None = None,
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
            cloud_logins=cloud_logins,
        )


def auto_detected_credentials(
    endpoint: RegistryEndpoint,
    *,
    enabled: bool = True,
    cloud_logins: CloudLogins | None = None,
) -> EndpointCredentials | None:
    """A cloud login for a registry without ``credentials`` whose host names a cloud registry
    (when enabled, the SDK is installed and an identity is found); None means anonymous."""
    if endpoint.credentials or not enabled:
        return None
    found = detect(registry_host(endpoint.prefix, endpoint.host))
    if not found.reference:
        return None
    _log.debug("using an auto-detected cloud login", registry=endpoint.prefix, login=found.reason)
    return EndpointCredentials(
        replace(endpoint, credentials=found.reference),
        cloud_logins=cloud_logins,
        auto_detected=True,
    )
