"""A Docker registry token server for tests and demos (the ``auth.token`` flow of distribution).

``GET /token?service=…&scope=repository:<name>:<actions>`` with optional Basic credentials answers
``{"token", "access_token", "expires_in", "issued_at"}``. Tokens are ES256 JWTs signed by a
self-signed P-256 certificate that is both the registry's ``rootcertbundle`` and the ``x5c``
header. Listed users get every action they ask for; anonymous callers get ``pull`` when allowed.

Runs on the standard library's threading HTTP server, so it works from sync and async code alike.
PyJWT is needed only when a token is issued (it is a development dependency).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import secrets
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from argocd_image_updater_testing.serving import serve_in_thread, shut_down


def _signing_identity(issuer: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, cert


class TokenServer:
    """Issues registry tokens on ``127.0.0.1:<free port>``; ``start()``/``stop()`` or ``with``.

    ``requests`` counts token requests (all, including refused ones).
    """

    def __init__(
        self,
        users: Mapping[str, str],
        *,
        service: str = "test-registry",
        issuer: str = "test-issuer",
        allow_anonymous: bool = False,
        expires_in: int = 300,
        legacy_field_only: bool = False,
    ) -> None:
        self.users = dict(users)
        self.service = service
        self.issuer = issuer
        self.allow_anonymous = allow_anonymous
        self.expires_in = expires_in
        self.legacy_field_only = legacy_field_only
        """Answer with ``access_token`` only (as OAuth2-style token servers do)."""
        self._key, self._cert = _signing_identity(issuer)
        self._lock = threading.Lock()
        self._requests = 0
        self.granted: list[tuple[str, str]] = []
        """``(user, scope)`` of each token issued (user ``""`` = anonymous)."""
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def requests(self) -> int:
        with self._lock:
            return self._requests

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the token server is not running: call start() first")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def realm(self) -> str:
        return f"{self.url}/token"

    def certificate_pem(self) -> bytes:
        return self._cert.public_bytes(serialization.Encoding.PEM)

    def write_rootcertbundle(self, path: Path) -> Path:
        path.write_bytes(self.certificate_pem())
        return path

    def start(self) -> TokenServer:
        if self._server is None:
            self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
            self._server.daemon_threads = True
            self._thread = serve_in_thread(self._server, "token-server")
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        thread, self._thread = self._thread, None
        shut_down(server, thread)

    def __enter__(self) -> TokenServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- token issuing -------------------------------------------------------------------------

    def _authenticate(self, header: str | None) -> str | None:
        """The user name for valid Basic credentials, ``""`` for none, None for bad ones."""
        if not header:
            return ""
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, _, password = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        expected = self.users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            return None
        return user

    def _access(self, scopes: list[str], user: str) -> list[dict[str, Any]]:
        access = []
        for scope in scopes:
            kind, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            if not (kind and name and actions):
                continue
            wanted = [a for a in actions.split(",") if a]
            granted = wanted if user else [a for a in wanted if a == "pull"]
            access.append({"type": kind, "name": name, "actions": granted})
        return access

    def issue(self, user: str, scopes: list[str]) -> dict[str, Any]:
        import jwt  # development dependency: imported only when a token is issued

        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": user,
            "aud": self.service,
            "exp": now + self.expires_in,
            "nbf": now - 5,
            "iat": now,
            "jti": secrets.token_hex(8),
            "access": self._access(scopes, user),
        }
        der = self._cert.public_bytes(serialization.Encoding.DER)
        token: str = jwt.encode(
            claims,
            self._key,
            algorithm="ES256",
            headers={"x5c": [base64.b64encode(der).decode()]},
        )
        issued = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body: dict[str, Any] = {"access_token": token, "expires_in": self.expires_in}
        if not self.legacy_field_only:
            body.update(token=token, issued_at=issued)
        with self._lock:
            self.granted.extend((user, s) for s in scopes)
        return body

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no delayed-ACK stall between head and body

            def log_message(self, format: str, *args: Any) -> None:
                del format, args  # quiet

            def _reply(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 401:
                    self.send_header("WWW-Authenticate", 'Basic realm="token"')
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                with server._lock:
                    server._requests += 1
                url = urlsplit(self.path)
                if url.path != "/token":
                    self._reply(404, {"errors": [{"code": "NOT_FOUND"}]})
                    return
                query = parse_qs(url.query)
                user = server._authenticate(self.headers.get("Authorization"))
                if user is None or (user == "" and not server.allow_anonymous):
                    self._reply(
                        401, {"errors": [{"code": "UNAUTHORIZED", "message": "bad credentials"}]}
                    )
                    return
                if query.get("service", [""])[0] != server.service:
                    self._reply(400, {"errors": [{"code": "UNSUPPORTED", "message": "service"}]})
                    return
                self._reply(200, server.issue(user, query.get("scope", [])))

        return Handler
