"""Google Artifact Registry and GCR: an OAuth2 access token from Application Default Credentials.

``google.auth.default()`` finds the identity (``GOOGLE_APPLICATION_CREDENTIALS`` key file or
external-account configuration, gcloud's ADC file, GKE workload identity and the GCE metadata
server); the registry takes the access token as the password of user ``oauth2accesstoken``.
google-auth honours ``GCE_METADATA_HOST``/``GCE_METADATA_IP``. Calls block, so they run in a
worker thread, one at a time.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime
from typing import Any, Final

from argocd_image_updater.config.cloud_options import CloudKind
from argocd_image_updater.model.registry import Credentials
from argocd_image_updater.registry.cloud.errors import CloudLoginError, Failure, shorten
from argocd_image_updater.registry.cloud.refresh import CloudToken
from argocd_image_updater.registry.cloud.sdk import require_sdk

SCOPE: Final = "https://www.googleapis.com/auth/cloud-platform"
USERNAME: Final = "oauth2accesstoken"


def expiry_timestamp(expiry: datetime | None) -> float | None:
    """google-auth's ``expiry`` is a naive UTC datetime."""
    if expiry is None:
        return None
    if expiry.tzinfo is None:
        expiry = expiry.replace(tzinfo=UTC)
    return expiry.timestamp()


class GcpLogin:
    """One Application Default Credentials identity, shared by every Google registry."""

    kind: Final = CloudKind.GCP

    def __init__(self) -> None:
        self._credentials: Any = None
        self._lock = threading.Lock()

    @property
    def cache_key(self) -> tuple[str, ...]:
        return ("gcp",)

    def describe(self) -> str:
        return "gcp (Application Default Credentials)"

    async def fetch(self) -> CloudToken:
        require_sdk(CloudKind.GCP)
        return await asyncio.to_thread(self._fetch_blocking)

    def _fetch_blocking(self) -> CloudToken:
        import google.auth
        import google.auth.exceptions as gx
        import google.auth.transport.requests

        with self._lock:
            try:
                if self._credentials is None:
                    self._credentials, _ = google.auth.default(scopes=[SCOPE])
                credentials = self._credentials
                credentials.refresh(google.auth.transport.requests.Request())
            except gx.DefaultCredentialsError as exc:
                raise CloudLoginError(
                    "gcp: no Google identity found by Application Default Credentials "
                    "(GOOGLE_APPLICATION_CREDENTIALS, workload identity or the metadata server): "
                    + shorten(str(exc)),
                    Failure.NO_IDENTITY,
                ) from None
            except gx.TransportError as exc:
                raise CloudLoginError(
                    f"gcp: the token endpoint could not be reached: {shorten(str(exc))}",
                    Failure.UNREACHABLE,
                ) from None
            except gx.RefreshError as exc:
                raise CloudLoginError(
                    f"gcp: getting an access token failed: {shorten(str(exc))}",
                    Failure.UNREACHABLE if getattr(exc, "retryable", False) else Failure.DENIED,
                ) from None
            except gx.GoogleAuthError as exc:
                raise CloudLoginError(
                    f"gcp: {type(exc).__name__}: {shorten(str(exc))}", Failure.CONFIG
                ) from None
            token = getattr(credentials, "token", None)
            if not isinstance(token, str) or not token:
                raise CloudLoginError(
                    "gcp: the credentials gave no access token", Failure.INVALID_RESPONSE
                )
            return CloudToken(Credentials(USERNAME, token), expiry_timestamp(credentials.expiry))
