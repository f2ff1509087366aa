"""Fakes of the cloud endpoints that the native registry logins talk to, for tests and demos.

Each is a real HTTP server on ``127.0.0.1:<free port>`` (optionally TLS) that records every
request it gets (:attr:`FakeServer.requests`) and can be switched ``down`` (it then answers 503):

* :class:`AwsApiRecorder` — a recording reverse proxy in front of moto's server (the real AWS
  API emulation), so that tests can count ``GetAuthorizationToken`` calls;
* :class:`GceMetadataServer` — the GCE metadata server (service account token);
* :class:`OAuthTokenEndpoint` — an OAuth2 token endpoint (a key file's ``token_uri``, and Entra
  ID for workload identity with its OpenID discovery document);
* :class:`AzureImds` — the Azure instance metadata identity endpoint (managed identity);
* :class:`AcrFake` — the parts of Azure Container Registry a login uses: ``/oauth2/exchange``,
  the Bearer token realm ``/oauth2/token`` and ``/v2/<repository>/tags/list``.

Runs on the standard library's threading HTTP server, so it works from sync and async code alike.
"""

from __future__ import annotations

import base64
import json
import secrets
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from argocd_image_updater_testing.serving import serve_in_thread, shut_down

ACR_NULL_USER = "00000000-0000-0000-0000-000000000000"


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]
    body: bytes

    @property
    def form(self) -> dict[str, str]:
        """The body as an ``application/x-www-form-urlencoded`` form (last value wins)."""
        return {k: v[-1] for k, v in parse_qs(self.body.decode(), keep_blank_values=True).items()}

    def header(self, name: str) -> str:
        lowered = {k.lower(): v for k, v in self.headers.items()}
        return lowered.get(name.lower(), "")


@dataclass(slots=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Reply:
        extra = {"Content-Type": "application/json", **(headers or {})}
        return cls(status, json.dumps(data).encode(), extra)


def fake_jwt(claims: Mapping[str, Any]) -> str:
    """An unsigned-looking JWT with ``claims`` (the fakes' tokens; nothing verifies them)."""

    def part(data: Mapping[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.{secrets.token_urlsafe(16)}"


class FakeServer:
    """Base: records requests, answers through :meth:`handle`; ``start()``/``stop()`` or ``with``."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._tls = tls
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.down = False
        """Answer every request with 503 (the endpoint is down)."""

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the server is not running: call start() first")
        return int(self._server.server_address[1])

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{'https' if self._tls else 'http'}://{self.host}"

    def start(self) -> Self:
        if self._server is None:
            server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
            server.daemon_threads = True
            if self._tls is not None:
                server.socket = self._tls.wrap_socket(server.socket, server_side=True)
            self._server = server
            self._thread = serve_in_thread(server, type(self).__name__)
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        thread, self._thread = self._thread, None
        shut_down(server, thread)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def handle(self, request: RecordedRequest) -> Reply:
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no delayed-ACK stall between head and body

            def log_message(self, format: str, *args: Any) -> None:
                del format, args  # quiet

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                url = urlsplit(self.path)
                request = RecordedRequest(
                    self.command,
                    url.path,
                    parse_qs(url.query, keep_blank_values=True),
                    dict(self.headers.items()),
                    body,
                )
                with fake._lock:
                    fake._requests.append(request)
                if fake.down:
                    reply = Reply.json({"error": "unavailable"}, 503)
                else:
                    try:
                        reply = fake.handle(request)
                    except Exception as exc:  # a bug in a fake shows as a 500 with its text
                        reply = Reply.json({"error": f"{type(exc).__name__}: {exc}"}, 500)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(reply.body)

            do_GET = do_POST = do_PUT = do_HEAD = _serve

        return Handler


class AwsApiRecorder(FakeServer):
    """Forwards every request to ``upstream`` (moto's server) and records it.

    :meth:`calls` names the API operations seen (``GetAuthorizationToken``, ``AssumeRole``).
    """

    def __init__(self, upstream: str) -> None:
        super().__init__()
        self.upstream = upstream.rstrip("/")

    def calls(self, operation: str | None = None) -> list[str]:
        found = []
        for request in self.requests:
            target = request.header("X-Amz-Target")
            name = target.rsplit(".", 1)[-1] if target else request.form.get("Action", "")
            if name and (operation is None or name == operation):
                found.append(name)
        return found

    def handle(self, request: RecordedRequest) -> Reply:
        query = "&".join(f"{k}={v}" for k, vs in request.query.items() for v in vs)
        url = self.upstream + request.path + (f"?{query}" if query else "")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host",)}
        forwarded = urllib.request.Request(  # noqa: S310 - a local http:// upstream
            url, data=request.body or None, headers=headers, method=request.method
        )
        try:
            with urllib.request.urlopen(forwarded, timeout=30) as response:  # noqa: S310
                return Reply(response.status, response.read(), _reply_headers(response.headers))
        except urllib.error.HTTPError as err:
            return Reply(err.code, err.read(), _reply_headers(err.headers))


def _reply_headers(headers: Any) -> dict[str, str]:
    skip = {"content-length", "transfer-encoding", "connection", "server", "date"}
    return {k: v for k, v in headers.items() if k.lower() not in skip}


class _IssuingServer(FakeServer):
    """Hands out numbered tokens ``<prefix>-1``, ``<prefix>-2``, … lasting ``expires_in``."""

    def __init__(
        self, prefix: str, expires_in: int = 3600, tls: ssl.SSLContext | None = None
    ) -> None:
        super().__init__(tls)
        self.prefix = prefix
        self.expires_in = expires_in
        self.issued: list[str] = []

    def issue(self) -> str:
        with self._lock:
            token = f"{self.prefix}-{len(self.issued) + 1}"
            self.issued.append(token)
            return token


class GceMetadataServer(_IssuingServer):
    """``GCE_METADATA_HOST``/``GCE_METADATA_IP`` target: answers only with ``Metadata-Flavor:
    Google``, like the real one."""

    EMAIL = "updater@project.iam.gserviceaccount.com"
    ACCOUNT_PATH = "/computeMetadata/v1/instance/service-accounts/default/"
    TOKEN_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"
    """Also served with the account's e-mail address instead of ``default``."""
    PROJECT_PATH = "/computeMetadata/v1/project/project-id"

    def __init__(self, expires_in: int = 3600) -> None:
        super().__init__("gce-access-token", expires_in)

    def handle(self, request: RecordedRequest) -> Reply:
        flavor = {"Metadata-Flavor": "Google"}
        if request.header("Metadata-Flavor") != "Google":
            return Reply(403, b"Missing Metadata-Flavor: Google header", flavor)
        if request.path == "/":
            return Reply(200, b"computeMetadata/\n", flavor)
        if request.path == self.PROJECT_PATH:
            return Reply(200, b"project", {**flavor, "Content-Type": "text/plain"})
        account_path = request.path.replace(f"/{self.EMAIL}/", "/default/")
        if account_path == self.ACCOUNT_PATH:
            account = {"aliases": ["default"], "email": self.EMAIL, "scopes": []}
            return Reply.json(account, headers=flavor)
        if account_path == self.TOKEN_PATH:
            body = {
                "access_token": self.issue(),
                "expires_in": self.expires_in,
                "token_type": "Bearer",
            }
            return Reply.json(body, headers=flavor)
        return Reply(404, b"not found", flavor)


class OAuthTokenEndpoint(_IssuingServer):
    """``POST /token`` (form) → ``{"access_token", "expires_in", "token_type"}``.

    Also serves an OpenID discovery document for any ``/<tenant>/v2.0/...`` path, so that it can
    stand in for Entra ID (``AZURE_AUTHORITY_HOST``); tokens then carry a ``tid`` claim.
    """

    def __init__(
        self, prefix: str = "oauth-token", expires_in: int = 3600, tls: ssl.SSLContext | None = None
    ) -> None:
        super().__init__(prefix, expires_in, tls)
        self.tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47"

    def handle(self, request: RecordedRequest) -> Reply:
        if request.path.endswith("/.well-known/openid-configuration"):
            tenant = request.path.strip("/").split("/")[0]
            base = f"{self.url}/{tenant}"
            return Reply.json(
                {
                    "token_endpoint": f"{base}/oauth2/v2.0/token",
                    "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                    "issuer": f"{base}/v2.0",
                    "tenant_region_scope": "EU",
                }
            )
        if request.method == "POST" and request.path.endswith("/token"):
            number = self.issue()
            token = fake_jwt({"tid": self.tenant, "jti": number, "exp": _now() + self.expires_in})
            with self._lock:
                self.issued[-1] = token
            body = {"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"}
            return Reply.json(body)
        return Reply.json({"error": "not_found"}, 404)


class AzureImds(_IssuingServer):
    """``AZURE_POD_IDENTITY_AUTHORITY_HOST`` target: ``GET /metadata/identity/oauth2/token``."""

    TOKEN_PATH = "/metadata/identity/oauth2/token"

    def __init__(self, expires_in: int = 3600) -> None:
        super().__init__("imds", expires_in)
        self.tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47"

    def handle(self, request: RecordedRequest) -> Reply:
        if request.path != self.TOKEN_PATH or request.header("Metadata") != "true":
            return Reply.json({"error": "invalid_request"}, 400)
        self.issue()
        expires_on = _now() + self.expires_in
        token = fake_jwt({"tid": self.tenant, "exp": expires_on, "n": len(self.issued)})
        with self._lock:
            self.issued[-1] = token
        return Reply.json(
            {
                "access_token": token,
                "expires_in": str(self.expires_in),
                "expires_on": str(expires_on),
                "resource": request.query.get("resource", [""])[0],
                "token_type": "Bearer",
            }
        )


class AcrFake(_IssuingServer):
    """An ACR login server: ``/oauth2/exchange`` accepts the Entra ID tokens that
    ``accepts_aad`` says yes to and hands out refresh tokens (JWTs with ``exp``);
    ``/oauth2/token`` takes Basic ``<null GUID>:<refresh token>`` and hands out access tokens;
    ``/v2/<repository>/tags/list`` lists ``tags`` for a valid access token."""

    def __init__(
        self,
        tags: Mapping[str, list[str]],
        accepts_aad: Callable[[str], bool] = lambda token: True,
        refresh_lifetime: int = 3 * 3600,
    ) -> None:
        super().__init__("acr-refresh")
        self.tags = dict(tags)
        self.accepts_aad = accepts_aad
        self.refresh_lifetime = refresh_lifetime
        self.revoked: set[str] = set()
        """Refresh tokens no longer accepted (to provoke a 401)."""
        self._access: dict[str, str] = {}

    @property
    def service(self) -> str:
        return self.host.split(":")[0]

    def handle(self, request: RecordedRequest) -> Reply:
        if request.path == "/oauth2/exchange" and request.method == "POST":
            form = request.form
            if form.get("grant_type") != "access_token" or not self.accepts_aad(
                form.get("access_token", "")
            ):
                return Reply.json({"errors": [{"code": "UNAUTHORIZED"}]}, 401)
            self.issue()
            refresh = fake_jwt({"exp": _now() + self.refresh_lifetime, "n": len(self.issued)})
            with self._lock:
                self.issued[-1] = refresh
            return Reply.json({"refresh_token": refresh})
        if request.path == "/oauth2/token":
            return self._token(request)
        if request.path in ("/v2/", "/v2"):
            return self._challenge() if not self._authorized(request) else Reply.json({})
        if request.path.startswith("/v2/") and request.path.endswith("/tags/list"):
            name = request.path[len("/v2/") : -len("/tags/list")]
            if not self._authorized(request):
                return self._challenge(f"repository:{name}:pull")
            if name not in self.tags:
                return Reply.json({"errors": [{"code": "NAME_UNKNOWN"}]}, 404)
            return Reply.json({"name": name, "tags": self.tags[name]})
        return Reply.json({"errors": [{"code": "NOT_FOUND"}]}, 404)

    def _challenge(self, scope: str = "") -> Reply:
        value = f'Bearer realm="{self.url}/oauth2/token",service="{self.service}"'
        if scope:
            value += f',scope="{scope}"'
        return Reply.json(
            {"errors": [{"code": "UNAUTHORIZED"}]}, 401, headers={"WWW-Authenticate": value}
        )

    def _token(self, request: RecordedRequest) -> Reply:
        scheme, _, value = request.header("Authorization").partition(" ")
        if scheme.lower() != "basic":
            return Reply.json({"errors": [{"code": "UNAUTHORIZED"}]}, 401)
        user, _, password = base64.b64decode(value).decode().partition(":")
        with self._lock:
            valid = password in self.issued and password not in self.revoked
        if user != ACR_NULL_USER or not valid:
            return Reply.json({"errors": [{"code": "UNAUTHORIZED"}]}, 401)
        access = secrets.token_urlsafe(24)
        with self._lock:
            self._access[access] = password
        return Reply.json({"access_token": access, "expires_in": 300})

    def _authorized(self, request: RecordedRequest) -> bool:
        scheme, _, value = request.header("Authorization").partition(" ")
        with self._lock:
            refresh = self._access.get(value) if scheme.lower() == "bearer" else None
            return refresh is not None and refresh not in self.revoked


def _now() -> int:
    return int(time.time())
