"""Authorized requests to one registry endpoint.

* credentials: on 401/403 with a :class:`CredentialProvider`, ``invalidate()`` it and retry once
  with freshly fetched credentials (when the provider says that may help);
* authorization: requests go out anonymously until the registry sends a challenge; the challenge
  is remembered, so later requests carry Basic credentials or a cached Bearer token up front.
"""

from __future__ import annotations

import base64

import httpx

from argocd_image_updater.model.registry import CredentialProvider, Credentials
from argocd_image_updater.observe.log import register_secret
from argocd_image_updater.registry.auth import (
    Challenge,
    Token,
    TokenCache,
    TokenKey,
    TokenResponseError,
    parse_token_response,
    pick_challenge,
    token_scope,
)
from argocd_image_updater.registry.errors import RegistryAuthError
from argocd_image_updater.registry.exchange import MAX_MANIFEST_BYTES, EndpointHTTP
from argocd_image_updater.registry.replies import (
    AUTH_CODES,
    Reply,
    error_codes,
    error_detail,
    protocol_error,
    raise_for,
)
from argocd_image_updater.registry.stats import RequestKind

MAX_TOKEN_BYTES = 1024 * 1024


def _basic(credentials: Credentials) -> str:
    raw = f"{credentials.username}:{credentials.password}".encode()
    value = "Basic " + base64.b64encode(raw).decode()
    register_secret(value[len("Basic ") :])
    return value


class Authorizer:
    """Sends requests over ``http`` with the authorization the registry asked for."""

    def __init__(self, http: EndpointHTTP, tokens: TokenCache | None = None) -> None:
        self._http = http
        self._tokens = tokens or TokenCache()
        self.challenge: Challenge | None = None

    async def request(
        self,
        kind: RequestKind,
        method: str,
        url: str | httpx.URL,
        repository: str,
        credentials: CredentialProvider | None,
        accept: str = "",
        limit: int = MAX_MANIFEST_BYTES,
        redirects: bool = False,
    ) -> Reply:
        refetched = False
        while True:
            creds = await credentials.get() if credentials is not None else None
            if creds is not None:
                register_secret(creds.password)
            key = credentials.key if credentials is not None else ""
            try:
                return await self._authorized(
                    kind, method, url, repository, creds, key, accept, limit, redirects
                )
            except RegistryAuthError:
                self._tokens.forget(self._http.api, key)
                if credentials is None or refetched or not credentials.invalidate():
                    raise
                refetched = True
                self._http.log.info(
                    "Credentials were refused, fetching them again and retrying once",
                    repository=repository,
                    credentials=key,
                )

    async def _authorized(
        self,
        kind: RequestKind,
        method: str,
        url: str | httpx.URL,
        repository: str,
        creds: Credentials | None,
        creds_key: str,
        accept: str,
        limit: int,
        redirects: bool,
    ) -> Reply:
        registry = self._http.registry
        headers = {"Accept": accept} if accept else {}
        auth = await self._authorization(self.challenge, repository, creds, creds_key)
        if auth:
            headers["Authorization"] = auth
        reply = await self._http.send(kind, method, url, headers, repository, limit, redirects)
        if reply.status == 401 and not auth:
            challenge = pick_challenge(reply.header_list("www-authenticate"))
            if challenge is None:
                raise RegistryAuthError(
                    registry=registry,
                    repository=repository,
                    status=401,
                    detail="no usable WWW-Authenticate challenge",
                )
            self.challenge = challenge
            auth = await self._authorization(challenge, repository, creds, creds_key)
            if not auth:
                raise RegistryAuthError(
                    registry=registry,
                    repository=repository,
                    status=401,
                    detail="the registry requires credentials and none are configured",
                )
            headers["Authorization"] = auth
            reply = await self._http.send(kind, method, url, headers, repository, limit, redirects)
        codes = {code for code, _ in error_codes(reply)} if reply.status >= 400 else set()
        if reply.status in (401, 403) or codes & AUTH_CODES:
            raise RegistryAuthError(
                registry=registry,
                repository=repository,
                status=reply.status,
                detail=error_detail(reply),
            )
        return reply

    async def _authorization(
        self,
        challenge: Challenge | None,
        repository: str,
        creds: Credentials | None,
        creds_key: str,
    ) -> str:
        if challenge is None:
            return ""
        if challenge.scheme == "basic":
            return _basic(creds) if creds is not None else ""
        api = self._http.api
        scope = token_scope(api, repository) if repository else ""
        key = TokenKey(api, scope, creds_key)
        token = await self._tokens.get(
            key, lambda: self._fetch_token(challenge, scope, repository, creds)
        )
        return f"Bearer {token}"

    async def _fetch_token(
        self, challenge: Challenge, scope: str, repository: str, creds: Credentials | None
    ) -> Token:
        registry = self._http.registry
        try:
            realm = httpx.URL(challenge.realm)
        except httpx.InvalidURL:
            realm = httpx.URL("")
        if realm.scheme not in ("http", "https") or not realm.host:
            raise protocol_error(
                registry, repository, f"Bearer challenge has no usable realm ('{challenge.realm}')"
            )
        if creds is not None and realm.scheme == "http" and self._http.api.startswith("https:"):
            raise protocol_error(
                registry,
                repository,
                f"token realm {realm} is plain HTTP: refusing to send credentials unencrypted",
            )
        params = {"service": challenge.service} if challenge.service else {}
        if scope:
            params["scope"] = scope
        headers = {}
        if creds is not None:
            params["account"] = creds.username
            headers["Authorization"] = _basic(creds)
        url = realm.copy_merge_params(params)
        reply = await self._http.send("token", "GET", url, headers, repository, MAX_TOKEN_BYTES)
        if reply.status in (401, 403):
            raise RegistryAuthError(
                registry=registry,
                repository=repository,
                status=reply.status,
                detail=f"the token server {realm.host} refused the credentials",
            )
        raise_for(reply, registry, repository, self._http.retry.attempts, what="token")
        try:
            token = parse_token_response(reply.body)
        except TokenResponseError as exc:
            raise protocol_error(
                registry, repository, f"token server {realm.host}: {exc}"
            ) from None
        register_secret(token.value)
        return token
