"""The webhook types the webhook receiver accepts, as plain values (pure).

Each :class:`WebhookDescription` says which ``type=`` selects it, how help texts name the
sender, where the sender puts the secret and the name of its secret setting, from which the
flag, environment variable, Secret key and chart value are derived. The process settings
(``config.settings``: one ``--<setting>-webhook-secret`` each) come from :data:`WEBHOOK_TYPES`;
each module of ``webhook/types`` refers to its description and adds the payload schema and the
parser, and the webhook registry checks that both lists name the same types.

Adding a type: describe it here, and write its module in ``webhook/types`` (plus its tests and
its row in docs/webhooks.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class WebhookDescription:
    """One webhook type and every name derived from it.

    ``setting`` names its secret everywhere: the flag ``--<setting>-webhook-secret``, the
    environment variable ``<SETTING>_WEBHOOK_SECRET``, the ``argocd-image-updater-secret`` key
    ``webhook.<setting>-secret`` and the chart value ``webhook.secrets.<setting in camelCase>``
    (``_`` in ``setting`` becomes ``-`` in the flag and the key).
    """

    name: str
    """The ``type`` query parameter (or ``X-Registry-Type`` header) that selects it."""
    setting: str
    label: str
    """How help texts name the sender (``Docker Hub``)."""
    secret_in: str
    """Where the sender puts the secret (Markdown, for the docs table)."""
    needs_secret: bool = False
    """Only ever served with a configured secret, even with ``--webhook-require-secret=false``."""

    @property
    def option(self) -> str:
        """The name of its secret in the process settings."""
        return f"{self.setting}_webhook_secret"

    @property
    def flag(self) -> str:
        return f"--{self.setting.replace('_', '-')}-webhook-secret"

    @property
    def env(self) -> str:
        return f"{self.setting.upper()}_WEBHOOK_SECRET"

    @property
    def secret_key(self) -> str:
        """Its key in the ``argocd-image-updater-secret`` Secret."""
        return f"webhook.{self.setting.replace('_', '-')}-secret"

    @property
    def chart_key(self) -> str:
        """Its key under ``webhook.secrets`` in the Helm chart's values."""
        first, *rest = self.setting.split("_")
        return first + "".join(part.capitalize() for part in rest)


_QUERY_SECRET: Final = "query `secret=`"
_AUTHORIZATION: Final = "the whole `Authorization` header"

ACR: Final = WebhookDescription("acr", "acr", "Azure ACR", _AUTHORIZATION)
ALIYUN_ACR: Final = WebhookDescription("aliyun-acr", "aliyun_acr", "Aliyun ACR", _QUERY_SECRET)
CLOUDEVENTS: Final = WebhookDescription(
    "cloudevents",
    "cloudevents",
    "CloudEvents",
    "header `X-Webhook-Secret` or query `secret=`",
)
DOCKER: Final = WebhookDescription("docker.io", "docker", "Docker Hub", _QUERY_SECRET)
GENERIC: Final = WebhookDescription(
    "generic",
    "generic",
    "generic signed JSON",
    "HMAC-SHA256 in `X-Signature-256` with `X-Timestamp`",
    needs_secret=True,
)
GHCR: Final = WebhookDescription(
    "ghcr.io", "ghcr", "GHCR", "HMAC-SHA256 of the body in `X-Hub-Signature-256`"
)
HARBOR: Final = WebhookDescription("harbor", "harbor", "Harbor", _AUTHORIZATION)
QUAY: Final = WebhookDescription("quay.io", "quay", "Quay", _QUERY_SECRET)


def _checked(types: tuple[WebhookDescription, ...]) -> tuple[WebhookDescription, ...]:
    for attribute in ("name", "setting"):
        values = [getattr(t, attribute) for t in types]
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise ValueError(f"webhook types share the {attribute} {', '.join(twice)}")
    return tuple(sorted(types, key=lambda t: t.name))


WEBHOOK_TYPES: Final[tuple[WebhookDescription, ...]] = _checked(
    (ACR, ALIYUN_ACR, CLOUDEVENTS, DOCKER, GENERIC, GHCR, HARBOR, QUAY)
)
"""Every webhook type, sorted by name."""
