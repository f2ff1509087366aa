"""Registry credentials by scan job, kept across cycles (providers honour ``credsexpire``); the
per-image pull secrets read once a round (:mod:`.round_secrets`)."""

from __future__ import annotations

from argocd_image_updater.config.secrets import SecretReader
from argocd_image_updater.controller.round_secrets import RoundSecrets
from argocd_image_updater.model.registry import CredentialProvider, RegistryEndpoint
from argocd_image_updater.registry.credentials import (
    EndpointCredentials,
    ImageCredentials,
    auto_detected_credentials,
)


class CredentialsCache:
    """Registry-level credential providers live across cycles (they honour ``credsexpire``)."""

    def __init__(self, secrets: SecretReader | None, cloud_auto: bool = True) -> None:
        self._secrets = secrets
        self._pull_secrets = RoundSecrets(secrets) if secrets is not None else None
        """The per-image pull secrets' reader: each Secret read once a round."""
        self._cloud_auto = cloud_auto
        self._by_endpoint: dict[tuple[str, str], EndpointCredentials | None] = {}

    @property
    def secrets(self) -> SecretReader | None:
        return self._secrets

    def new_round(self) -> None:
        """A cycle or a webhook event's update begins: each Secret is read again when used."""
        if self._pull_secrets is not None:
            self._pull_secrets.new_round()

    def for_job(
        self, endpoint: RegistryEndpoint, pull_secret: str | None, namespace: str
    ) -> CredentialProvider | None:
        if pull_secret:
            pulls = self._pull_secrets
            secrets = pulls.restricted_to(namespace) if pulls is not None else None
            return ImageCredentials(pull_secret, endpoint, secrets=secrets)
        key = (endpoint.prefix, endpoint.credentials)
        if key not in self._by_endpoint:
            self._by_endpoint[key] = (
                EndpointCredentials(endpoint, secrets=self._secrets)
                if endpoint.credentials
                else auto_detected_credentials(endpoint, enabled=self._cloud_auto)
            )
        return self._by_endpoint[key]
