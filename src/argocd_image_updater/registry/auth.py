"""Registry authentication: ``WWW-Authenticate`` challenges, token scopes and the token cache.

The HTTP exchange itself (``GET realm?service=…&scope=…``) is done by the client; this module holds
the pure parts and the cache.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import urlsplit

from argocd_image_updater.observe.metrics import CACHE_HITS, CACHE_MISSES
from argocd_image_updater.registry.singleflight import SingleFlight

DEFAULT_TOKEN_LIFETIME = 60.0
"""Seconds a token is valid when the token server does not say (the distribution spec's default)."""


@dataclass(frozen=True, slots=True)
class Challenge:
    """One challenge of a ``WWW-Authenticate`` header; ``scheme`` is lower case."""

    scheme: str
    params: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def realm(self) -> str:
        return self.params.get("realm", "")

    @property
    def service(self) -> str:
        return self.params.get("service", "")


# Written by hand: neither the standard library nor httpx parses challenge lists with quoted
# parameters (RFC 9110 §11.6.1). Grammar: scheme [ param *( "," param ) ] *( "," challenge ).
_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"


@functools.cache
def _grammar() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Scheme, parameter and token68 patterns, compiled at the first challenge (not at start)."""
    return (
        re.compile(rf"[\s,]*({_TOKEN})"),
        # Unquoted values are taken up to the next comma: registries send unquoted URLs as realms.
        re.compile(rf'[\s,]*({_TOKEN})\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]+))'),
        re.compile(r"\s+[A-Za-z0-9\-._~+/]+=*\s*(?=,|$)"),
    )


def parse_challenges(header: str) -> list[Challenge]:
    """All challenges in one ``WWW-Authenticate`` value; unparsable text ends the list."""
    scheme_re, param_re, token68_re = _grammar()
    challenges: list[Challenge] = []
    pos = 0
    while pos < len(header):
        scheme = scheme_re.match(header, pos)
        if scheme is None:
            break
        pos = scheme.end()
        params: dict[str, str] = {}
        if token68 := token68_re.match(header, pos):
            pos = token68.end()
        while not token68:
            param = param_re.match(header, pos)
            if param is None:
                break
            quoted, plain = param.group(2), param.group(3)
            value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else plain
            params[param.group(1).lower()] = value
            pos = param.end()
        challenges.append(Challenge(scheme.group(1).lower(), MappingProxyType(params)))
    return challenges


def pick_challenge(headers: list[str]) -> Challenge | None:
    """The challenge to answer: Bearer when offered (registries prefer it), else Basic."""
    found = [c for h in headers for c in parse_challenges(h)]
    for scheme in ("bearer", "basic"):
        for challenge in found:
            if challenge.scheme == scheme:
                return challenge
    return None


def token_scope(api_url: str, repository: str) -> str:
    """The token scope for pulling ``repository``; Azure ACR also needs metadata/content reads."""
    host = (urlsplit(api_url).hostname or "").lower()
    actions = "pull,metadata_read,content_read" if host.endswith(".azurecr.io") else "pull"
    return f"repository:{repository}:{actions}"


@dataclass(frozen=True, slots=True)
class Token:
    """A bearer token from a token server and its lifetime in seconds (never printed)."""

    value: str
    expires_in: float

    def __repr__(self) -> str:  # never print the token
        return f"Token(value='*****', expires_in={self.expires_in})"


class TokenResponseError(ValueError):
    """The token server's answer is not a token response."""


def parse_token_response(body: bytes) -> Token:
    """``{"token"|"access_token": …, "expires_in": …}`` → :class:`Token` (lifetime default 60 s)."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise TokenResponseError(f"token response is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise TokenResponseError("token response is not a JSON object")
    value = data.get("token") or data.get("access_token")
    if not isinstance(value, str) or not value:
        raise TokenResponseError("token response has neither 'token' nor 'access_token'")
    expires = data.get("expires_in")
    lifetime = (
        float(expires)
        if isinstance(expires, int | float) and not isinstance(expires, bool) and expires > 0
        else DEFAULT_TOKEN_LIFETIME
    )
    return Token(value, lifetime)


@dataclass(frozen=True, slots=True)
class TokenKey:
    """Tokens are only shared between requests to the same API, scope and credential source."""

    api_url: str
    scope: str
    credentials_key: str


class TokenCache:
    """Bearer tokens until shortly before they expire; concurrent fetches for a key are merged."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._tokens: dict[TokenKey, tuple[str, float]] = {}
        self._flight: SingleFlight[TokenKey, Token] = SingleFlight()

    async def get(self, key: TokenKey, fetch: Callable[[], Awaitable[Token]]) -> str:
        cached = self._tokens.get(key)
        if cached is not None and cached[1] > self._clock():
            CACHE_HITS.labels("token").inc()
            return cached[0]
        CACHE_MISSES.labels("token").inc()
        token, _ = await self._flight.do(key, fetch)
        # Renew a little early so that a token does not expire between check and use.
        margin = min(5.0, token.expires_in / 2)
        self._tokens[key] = (token.value, self._clock() + token.expires_in - margin)
        return token.value

    def forget(self, api_url: str, credentials_key: str) -> None:
        """Drop every token obtained with these credentials at this API."""
        for key in [
            k for k in self._tokens if k.api_url == api_url and k.credentials_key == credentials_key
        ]:
            del self._tokens[key]
