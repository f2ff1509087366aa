"""The ``oidc`` auth provider of a kubeconfig (``users[].user.auth-provider``), as client-go's:
the ``id-token`` is sent as the bearer token and, once it has expired (its ``exp`` claim, ten
seconds ahead) or the API server refused it, renewed with the ``refresh-token`` at the issuer's
token endpoint, found in ``<idp-issuer-url>/.well-known/openid-configuration``.

Unlike kubectl, the renewed tokens are kept in memory, not written back to the kubeconfig (a
controller's kubeconfig is usually a read-only mount). Hand-written because it is one discovery
request and one ``refresh_token`` grant (RFC 6749 section 6); an OAuth library would bring a
second HTTP stack for them.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, urlencode

import httpx

from argocd_image_updater import http1
from argocd_image_updater.kits.tlstrust import client_context
from argocd_image_updater.kube.auth import EXPIRY_MARGIN, KubeAuth, KubeAuthError
from argocd_image_updater.kube.errors import KubeConfigError
from argocd_image_updater.kube.tls import verifying_context
from argocd_image_updater.observe.log import register_secret

IDP_TIMEOUT: Final = 30.0
ANSWER_LIMIT: Final = 1024 * 1024
"""The longest discovery document or token answer read from the issuer."""


def token_expiry(token: str) -> float | None:
    """The ``exp`` claim of a JWT (read, not verified: the API server verifies it), or None when
    the token carries none that can be read."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        claims = json.loads(payload)
    except (binascii.Error, ValueError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


class OidcProvider(KubeAuth):
    """An id-token renewed with its refresh token (see the module's description)."""

    refreshable = True

    def __init__(
        self, config: Mapping[str, Any], base: Path, clock: Callable[[], float] = time.time
    ) -> None:
        def text(key: str) -> str:
            return str(config.get(key) or "")

        self.issuer = text("idp-issuer-url").rstrip("/")
        self.client_id, self.client_secret = text("client-id"), text("client-secret")
        self._id_token, self._refresh_token = text("id-token"), text("refresh-token")
        for secret in (self.client_secret, self._id_token, self._refresh_token):
            if secret:
                register_secret(secret)
        if not self._id_token and not self._refresh_token:
            raise KubeConfigError(
                "the oidc auth provider has neither an id-token nor a refresh-token"
            )
        if self._refresh_token and not (self.issuer and self.client_id):
            raise KubeConfigError(
                "the oidc auth provider needs idp-issuer-url and client-id to use its refresh-token"
            )
        ca_file = text("idp-certificate-authority")
        if ca_file and not Path(ca_file).expanduser().is_absolute():
            ca_file = str(base / ca_file)
        try:
            ca_data = base64.b64decode(text("idp-certificate-authority-data"), validate=True)
        except (binascii.Error, ValueError):
            raise KubeConfigError("idp-certificate-authority-data is not valid base64") from None
        self._ca = (str(Path(ca_file).expanduser()) if ca_file else "", ca_data)
        self._clock = clock
        self._token_endpoint = ""
        self._lock: asyncio.Lock | None = None

    def _expired(self) -> bool:
        if not self._id_token:
            return True
        expiry = token_expiry(self._id_token)
        return expiry is not None and self._clock() + EXPIRY_MARGIN.total_seconds() >= expiry

    async def authorization(self, refresh: bool) -> str:
        if self._lock is None:
            self._lock = asyncio.Lock()
        used = self._id_token
        async with self._lock:
            # Another request may have renewed the token while this one waited for the lock.
            if self._id_token == used and (refresh or self._expired()):
                if not self._refresh_token:
                    if refresh:  # nothing to renew it with: the 401 is the caller's
                        return f"Bearer {self._id_token}"
                    raise KubeAuthError(
                        "the oidc auth provider's id-token has expired and it has no "
                        "refresh-token: log in again (or use an exec plugin such as kubelogin)"
                    )
                await self._renew()
        return f"Bearer {self._id_token}"

    async def _renew(self) -> None:
        if self._ca[0] or self._ca[1]:
            try:
                context = verifying_context(ca_file=self._ca[0], ca_data=self._ca[1])
            except KubeConfigError as err:
                raise KubeAuthError(f"oidc auth provider: {err}") from None
        else:
            context = client_context()
        client = http1.async_client(ssl_context=context, timeout=httpx.Timeout(IDP_TIMEOUT))
        try:
            if not self._token_endpoint:
                self._token_endpoint = await self._discover(client)
            doc = await self._grant(client)
        except httpx.HTTPError as err:
            raise KubeAuthError(
                f"oidc auth provider: the issuer {self.issuer} is unreachable: "
                f"{str(err) or type(err).__name__}"
            ) from None
        finally:
            await client.aclose()
        id_token = doc.get("id_token")
        if not isinstance(id_token, str) or not id_token:
            raise KubeAuthError(
                f"oidc auth provider: the token response of {self._token_endpoint} has no id_token"
            )
        register_secret(id_token)
        self._id_token = id_token
        refresh_token = doc.get("refresh_token")
        if isinstance(refresh_token, str) and refresh_token:
            register_secret(refresh_token)
            self._refresh_token = refresh_token

    async def _discover(self, client: httpx.AsyncClient) -> str:
        url = f"{self.issuer}/.well-known/openid-configuration"
        answer = await http1.fetch(client, "GET", url, limit=ANSWER_LIMIT)
        doc = _json(answer) if answer.status == 200 else None
        endpoint = doc.get("token_endpoint") if doc is not None else None
        if not isinstance(endpoint, str) or not endpoint.startswith(("https://", "http://")):
            raise KubeAuthError(
                f"oidc auth provider: {url} (HTTP {answer.status}) names no token_endpoint"
            )
        return endpoint

    async def _grant(self, client: httpx.AsyncClient) -> dict[str, Any]:
        """The refresh_token grant; the client authenticates with HTTP basic auth, else (when
        the issuer refuses that) in the form, as Go's oauth2 package tries them."""
        form: dict[str, str] = {"grant_type": "refresh_token", "refresh_token": self._refresh_token}
        answer: http1.Answer | None = None
        for in_header in (True, False):
            headers = {"Content-Type": "application/x-www-form-urlencoded"}
            body = dict(form)
            if in_header:
                pair = f"{quote(self.client_id, safe='')}:{quote(self.client_secret, safe='')}"
                headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
            else:
                body["client_id"] = self.client_id
                if self.client_secret:
                    body["client_secret"] = self.client_secret
            answer = await http1.fetch(
                client,
                "POST",
                self._token_endpoint,
                headers=headers,
                content=urlencode(body).encode(),
                limit=ANSWER_LIMIT,
            )
            if not _client_refused(answer):
                break
        assert answer is not None
        doc = _json(answer)
        if answer.status != 200 or doc is None:
            detail = ""
            if doc is not None and doc.get("error"):
                detail = f": {doc.get('error')} {doc.get('error_description') or ''}".rstrip()
            raise KubeAuthError(
                f"oidc auth provider: renewing the id-token at {self._token_endpoint} failed "
                f"(HTTP {answer.status}){detail}"
            )
        return doc


def _client_refused(answer: http1.Answer) -> bool:
    """Whether the issuer refused the client's authentication (not the grant)."""
    if answer.status == 401:
        return True
    doc = _json(answer) if answer.status == 400 else None
    return doc is not None and doc.get("error") == "invalid_client"


def _json(answer: http1.Answer) -> dict[str, Any] | None:
    try:
        doc = answer.json()
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None
