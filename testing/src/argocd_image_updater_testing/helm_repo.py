"""A Helm chart repository over HTTP: ``/index.yaml`` with an ``ETag``, served from a thread.

It answers as static hosts (and ChartMuseum) do: ``GET /index.yaml`` gives the index and its
``ETag`` (the SHA-256 of the body); a request whose ``If-None-Match`` names the current ETag gets
``304 Not Modified`` without a body. With ``users`` set, requests need HTTP Basic authentication;
with ``tls`` (a server context) it serves HTTPS.
Every request is counted in :attr:`HelmRepoServer.requests` by ``(path, status)``.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import ssl
import threading
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Self

from argocd_image_updater_testing.serving import serve_in_thread, shut_down


def render_index(charts: Mapping[str, Mapping[str, datetime]], base_url: str) -> bytes:
    """An ``index.yaml`` listing ``charts`` (name → version → created)."""
    lines = ["apiVersion: v1", "entries:"]
    for name, versions in sorted(charts.items()):
        lines.append(f"  {name}:")
        for version, created in versions.items():
            stamp = created.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            digest = hashlib.sha256(f"{name}-{version}".encode()).hexdigest()
            lines += [
                "  - apiVersion: v2",
                f"    name: {name}",
                f'    version: "{version}"',
                f'    created: "{stamp}"',
                f"    digest: {digest}",
                "    urls:",
                f"    - {base_url}/{name}-{version}.tgz",
            ]
    lines.append('generated: "2026-01-01T00:00:00Z"')
    return ("\n".join(lines) + "\n").encode()


class HelmRepoServer:
    """``with HelmRepoServer() as repo:`` — ``repo.url``; ``repo.set_chart(name, {v: created})``
    changes the index (a new ETag)."""

    def __init__(
        self, users: Mapping[str, str] | None = None, tls: ssl.SSLContext | None = None
    ) -> None:
        self.users = dict(users or {})
        self.tls = tls
        self.charts: dict[str, dict[str, datetime]] = {}
        self.requests: Counter[tuple[str, int]] = Counter()
        self.authorizations: list[str] = []
        self._lock = threading.Lock()
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "start the server first"
        host, port = self._server.server_address[:2]
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{host!s}:{port}"

    def set_chart(self, name: str, versions: Mapping[str, datetime]) -> None:
        with self._lock:
            self.charts[name] = dict(versions)

    def index(self) -> tuple[bytes, str]:
        with self._lock:
            body = render_index(self.charts, self.url)
        return body, '"' + hashlib.sha256(body).hexdigest() + '"'

    def count(self, status: int) -> int:
        """Requests of ``/index.yaml`` answered with ``status``."""
        return self.requests[("/index.yaml", status)]

    def _authorized(self, header: str | None) -> bool:
        if not self.users:
            return True
        if not header or not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return False
        return self.users.get(user) == password

    def start(self) -> Self:
        repo = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _reply(
                self, status: int, body: bytes = b"", headers: Mapping[str, str] = {}
            ) -> None:
                repo.requests[(self.path, status)] += 1
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if body:
                    self.wfile.write(body)

            def do_GET(self) -> None:
                if not repo._authorized(self.headers.get("Authorization")):
                    self._reply(401, b"unauthorized", {"WWW-Authenticate": 'Basic realm="helm"'})
                    return
                if self.path != "/index.yaml":
                    self._reply(404, b"not found")
                    return
                body, etag = repo.index()
                if self.headers.get("If-None-Match") == etag:
                    self._reply(304, b"", {"ETag": etag})
                    return
                self._reply(200, body, {"ETag": etag, "Content-Type": "application/x-yaml"})

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if self.tls is not None:
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = serve_in_thread(self._server, "helm-repo")
        return self

    def stop(self) -> None:
        shut_down(self._server, self._thread)
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
