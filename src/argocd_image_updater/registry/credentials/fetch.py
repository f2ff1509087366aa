"""Reading the credentials a reference points to: the environment, an ``ext:`` script, a
Secret (through the :class:`~argocd_image_updater.config.secrets.SecretReader` interface) or a
native cloud login."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from argocd_image_updater.config.credentials import (
    CredentialKind,
    CredentialRef,
    split_user_password,
)
from argocd_image_updater.config.dockerconfig import (
    DockerConfigError,
    credentials_from_docker_config,
)
from argocd_image_updater.config.secrets import SecretError, SecretReader, read_field
from argocd_image_updater.model.registry import Credentials, RegistryEndpoint
from argocd_image_updater.observe.log import register_secret
from argocd_image_updater.registry.cloud.errors import CloudLoginError
from argocd_image_updater.registry.credentials.errors import CredentialsError
from argocd_image_updater.registry.credentials.scripts import DEFAULT_EXT_TIMEOUT, run_script

if TYPE_CHECKING:
    from argocd_image_updater.registry.cloud.logins import CloudLogins


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
            creds = split_user_password(value)
            if creds is None:
                raise CredentialsError(
                    f"env '{ref.env_name}' does not hold credentials in the form "
                    "<username>:<password> (both parts non-empty)"
                )
        case CredentialKind.EXT:
            creds = await run_script(ref.script_path, ext_timeout)
        case CredentialKind.SECRET | CredentialKind.PULLSECRET:
            creds = await _from_secret(ref, api_url=api_url, prefix=prefix, secrets=secrets)
        case CredentialKind.ECR | CredentialKind.GCP | CredentialKind.AZURE:
            endpoint = RegistryEndpoint(prefix=prefix, name=prefix, api_url=api_url)
            refresher = (cloud_logins or process_logins()).refresher(ref.cloud, endpoint)
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
    creds = split_user_password(text)
    if creds is None:
        raise CredentialsError(
            f"invalid credentials in secret '{ref.namespace}/{ref.name}' field '{ref.field}': "
            "expected <username>:<password> (both parts non-empty)"
        )
    return creds


def process_logins() -> CloudLogins:
    """The process-wide cloud logins, imported when a reference first needs one (the SDK glue of
    three clouds is not loaded by commands that never log in to one)."""
    from argocd_image_updater.registry.cloud.logins import LOGINS

    return LOGINS
