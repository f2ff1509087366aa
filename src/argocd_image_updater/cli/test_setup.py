"""The inputs and the answer of a ``test`` run, shared by images (:mod:`.test_run`) and charts
(:mod:`.test_chart`): the options, the registry configuration, the endpoint serving a repository
with its credentials, the failure that ends a run and the choice made with what it was made
from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import click

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.config.registries_file import load_registries_conf
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.observe.log import Logger
from argocd_image_updater.policy.select import Policy, Selection
from argocd_image_updater.registry.cloud.detect import detect
from argocd_image_updater.registry.cloud.hosts import registry_host

# Loaded where they are used: credentials with a configured or detected login only, and the
# signature checks with --verify-* only (cryptography).
if TYPE_CHECKING:
    from argocd_image_updater.config.secrets import SecretReader
    from argocd_image_updater.registry.credentials import EndpointCredentials
    from argocd_image_updater.verify.policy import TrustPolicy
    from argocd_image_updater.verify.verifier import Verdict

DEFAULT_REGISTRIES_CONF: Final = Path("/app/config/registries.conf")


class TestFailed(Exception):
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class TestOptions:
    """The options of one ``test`` run (see :mod:`argocd_image_updater.cli.test_cmd`)."""

    image: str
    semver_constraint: str = ""
    update_strategy: str = "semver"
    allow_tags: str = ""
    ignore_tags: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()
    registries_conf_path: str = ""
    credentials: str = ""
    rate_limit: float | None = None
    kubeconfig: str = ""
    secrets_dir: str = ""
    explain: bool = False
    cloud_credentials_auto: bool = True
    plain_http: bool = False
    verify_key: str = ""
    verify_cosign_repository: str = ""
    verify_identity: str = ""
    verify_issuer: str = ""
    verify_trusted_root: str = ""
    pin_digest: bool = False
    min_age: str = ""
    min_age_from: str = "seen"

    @property
    def verifies(self) -> bool:
        return bool(
            self.verify_key
            or self.verify_identity
            or self.verify_issuer
            or self.verify_trusted_root
        )


def load_registries(path: str, log: Logger) -> RegistryConfig:
    """The original's rule: an explicit path must load; otherwise the default path if present."""
    if path:
        return load_registries_conf(Path(path), missing_ok=False).config
    result = load_registries_conf(DEFAULT_REGISTRIES_CONF, missing_ok=True)
    if not result.missing:
        log.debug("loaded registry configuration from %s", str(DEFAULT_REGISTRIES_CONF))
    return result.config


async def secret_reader(opts: TestOptions) -> tuple[SecretReader | None, Any]:
    """A reader for ``secret:``/``pullsecret:`` references: files, or the Kubernetes API."""
    if opts.secrets_dir:
        from argocd_image_updater.config.secrets import FileSecretReader

        return FileSecretReader(opts.secrets_dir), None
    from argocd_image_updater.controller.secrets import KubeSecretReader
    from argocd_image_updater.kube.client import KubeClient

    kube = await KubeClient.connect(opts.kubeconfig)
    return KubeSecretReader(kube), kube


def choose_credentials(
    opts: TestOptions, endpoint: RegistryEndpoint, secrets: SecretReader | None
) -> tuple[EndpointCredentials | None, str]:
    """The credential provider for ``endpoint`` and a line saying where it comes from and why."""
    if endpoint.credentials:
        from argocd_image_updater.config.credentials import parse_credential_ref
        from argocd_image_updater.registry.credentials import EndpointCredentials

        ref = parse_credential_ref(endpoint.credentials)
        where = "--credentials" if opts.credentials else f"registries.conf entry '{endpoint.name}'"
        return EndpointCredentials(endpoint, secrets=secrets), f"{ref.key} (from {where})"
    if not opts.cloud_credentials_auto:
        return None, "none (anonymous; cloud login auto-detection is switched off)"
    found = detect(registry_host(endpoint.prefix, endpoint.host))
    if not found.reference:
        return None, found.reason
    from argocd_image_updater.registry.credentials import EndpointCredentials

    auto = dataclasses.replace(endpoint, credentials=found.reference)
    return EndpointCredentials(auto, auto_detected=True), found.reason


async def registry_access(
    opts: TestOptions, registries: RegistryConfig, registry: str, repository: str
) -> tuple[RegistryEndpoint, EndpointCredentials | None, Any]:
    """The endpoint serving ``repository`` with the command's overrides (``--credentials``,
    ``--rate-limit``, ``--plain-http``), its credentials (where they come from is printed with
    ``--explain``) and the Kubernetes client opened to read a Secret, if one was (the caller
    closes it after the scan)."""
    endpoint = registries.endpoint_for(registry, repository)
    if opts.credentials:
        endpoint = dataclasses.replace(endpoint, credentials=opts.credentials)
    if opts.rate_limit is not None:
        endpoint = dataclasses.replace(endpoint, limit=opts.rate_limit)
    if opts.plain_http:
        endpoint = dataclasses.replace(
            endpoint, api_url="http://" + endpoint.api_url.split("://", 1)[-1]
        )
    secrets: SecretReader | None = None
    kube: Any = None
    if endpoint.credentials:
        from argocd_image_updater.config.credentials import (
            CredentialKind,
            CredentialRefError,
            parse_credential_ref,
        )

        try:
            ref = parse_credential_ref(endpoint.credentials)
        except CredentialRefError as err:
            raise TestFailed(f"invalid credentials reference: {err}") from None
        if ref.kind in (CredentialKind.SECRET, CredentialKind.PULLSECRET):
            secrets, kube = await secret_reader(opts)
    credentials, source = choose_credentials(opts, endpoint, secrets)
    if opts.explain:
        click.echo(f"credentials: {source}")
    return endpoint, credentials, kube


@dataclasses.dataclass(frozen=True, slots=True)
class Explained:
    """The choice with what it was made from (``--explain`` orders the tags by the policy)."""

    selection: Selection
    policy: Policy
    tags: tuple[TagInfo, ...]
    order_hint: Mapping[str, int] | None
    verdict: Verdict | None = None
    """The signature check of the chosen tag (``--verify-key``, ``--verify-identity``)."""
    trust: TrustPolicy | None = None
    pinned: str = ""
    """``--pin-digest``: the digest the registry serves for the chosen tag."""
