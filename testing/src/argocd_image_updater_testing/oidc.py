"""An OpenID Connect issuer stand-in for the kubeconfig ``oidc`` auth provider: discovery
(``/.well-known/openid-configuration``) and the token endpoint's ``refresh_token`` grant.

Its id-tokens are JWTs with ``exp`` ``lifetime`` seconds ahead and no signature to speak of
(the client reads ``exp`` without verifying; the Kubernetes API fake compares tokens as
strings). Each grant rotates the refresh token, as most issuers do, and calls ``on_token`` with
the new id-token (tests make the API fake accept it).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from aiohttp import web

from argocd_image_updater_testing.kube import ServedApp, json_response


def make_jwt(claims: dict[str, Any]) -> str:
    def part(doc: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.unsigned"


class OidcIssuer(ServedApp):
    """``client_id``/``client_secret`` authenticate the client (HTTP basic auth, or the form
    when ``basic_auth`` is False); ``refresh_token`` is the one the kubeconfig holds."""

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str,
        refresh_token: str,
        lifetime: float = 3600.0,
        basic_auth: bool = True,
        on_token: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self.client_id, self.client_secret = client_id, client_secret
        self.refresh_token, self.lifetime, self.basic_auth = refresh_token, lifetime, basic_auth
        self.on_token = on_token
        self.issued: list[str] = []
        """The id-tokens issued, in order."""

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/.well-known/openid-configuration", self._discovery)
        app.router.add_post("/token", self._token)
        return app

    def id_token(self, expires_in: float) -> str:
        """An id-token of this issuer expiring ``expires_in`` seconds from now (negative:
        already expired)."""
        now = time.time()
        claims = {"iss": self.url, "sub": "updater", "aud": self.client_id}
        return make_jwt({**claims, "iat": int(now), "exp": int(now + expires_in)})

    async def _discovery(self, request: web.Request) -> web.Response:
        self.requests[("get", "discovery")] += 1
        return json_response(
            {
                "issuer": self.url,
                "token_endpoint": f"{self.url}/token",
                "jwks_uri": f"{self.url}/keys",
                "response_types_supported": ["code"],
            }
        )

    def _client_ok(self, request: web.Request, form: dict[str, str]) -> bool:
        given = request.headers.get("Authorization", "")
        if self.basic_auth:
            if not given.startswith("Basic "):
                return False
            pair = base64.b64decode(given[6:]).decode()
            name, _, secret = pair.partition(":")
            return (unquote(name), unquote(secret)) == (self.client_id, self.client_secret)
        return not given and (form.get("client_id"), form.get("client_secret")) == (
            self.client_id,
            self.client_secret,
        )

    async def _token(self, request: web.Request) -> web.Response:
        self.requests[("post", "token")] += 1
        form = {k: str(v) for k, v in (await request.post()).items()}
        if not self._client_ok(request, form):
            return json_response({"error": "invalid_client"}, 401)
        if form.get("grant_type") != "refresh_token":
            return json_response({"error": "unsupported_grant_type"}, 400)
        if form.get("refresh_token") != self.refresh_token:
            return json_response({"error": "invalid_grant", "error_description": "revoked"}, 400)
        token = self.id_token(self.lifetime)
        self.issued.append(token)
        self.refresh_token = f"refresh-{len(self.issued)}"
        if self.on_token is not None:
            self.on_token(token)
        return json_response(
            {
                "access_token": f"access-{len(self.issued)}",
                "token_type": "Bearer",
                "expires_in": int(self.lifetime),
                "id_token": token,
                "refresh_token": self.refresh_token,
            }
        )
