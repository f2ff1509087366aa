"""A registry front with the OCI distribution 1.1 Referrers API, for registries without it
(distribution 2.8 answers 404 there).

Everything is forwarded to ``upstream``. Manifests pushed through the proxy that carry a
``subject`` are remembered, as a 1.1 registry indexes them:

* ``PUT /v2/<repo>/manifests/<ref>`` with a ``subject`` → stored upstream; on success the
  descriptor (``mediaType``, ``digest``, ``size``, ``artifactType`` — the manifest's, else its
  config's media type — and ``annotations``) is added to the subject's referrers and the answer
  carries ``OCI-Subject: <subject digest>``;
* ``DELETE /v2/<repo>/manifests/<digest>`` → removed from every referrers list;
* ``GET /v2/<repo>/referrers/<digest>[?artifactType=…]`` → ``200`` with an OCI image index of
  the referrers (empty when there are none, even for an unknown digest), filtered on
  ``artifactType`` with ``OCI-Filters-Applied: artifactType``; a malformed digest is ``400``.

Runs in the caller's event loop: ``async with ReferrersProxy(upstream) as proxy:``.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
from collections import Counter
from typing import Any

import aiohttp
from aiohttp import web

from argocd_image_updater.registry.manifest import OCI_INDEX, is_digest

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)
_REFERRERS = re.compile(r"^/v2/(.+)/referrers/([^/]+)$")
_MANIFEST = re.compile(r"^/v2/(.+)/manifests/([^/]+)$")


class ReferrersProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.referrers: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        """``(repository, subject digest)`` → referrer digest → descriptor."""
        self.counts: Counter[str] = Counter()
        """``referrers`` GETs and forwarded requests (``forwarded``)."""
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._port = 0

    @property
    def host(self) -> str:
        if not self._port:
            raise RuntimeError("the proxy is not running: use 'async with' or start()")
        return f"127.0.0.1:{self._port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    async def start(self) -> ReferrersProxy:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._serve)
        self._session = aiohttp.ClientSession(
            auto_decompress=False, timeout=aiohttp.ClientTimeout(total=60)
        )
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None
        self._port = 0

    async def __aenter__(self) -> ReferrersProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        referrers = _REFERRERS.match(request.path)
        if referrers is not None and request.method in ("GET", "HEAD"):
            self.counts["referrers"] += 1
            return self._index(referrers.group(1), referrers.group(2), request)
        body = await request.read() if request.can_read_body else b""
        status, headers, answer = await self._forward(request, body)
        manifest = _MANIFEST.match(request.path)
        if manifest is not None and 200 <= status < 300:
            repository = manifest.group(1)
            if request.method == "PUT":
                subject = self._remember(repository, body, request.headers.get("Content-Type"))
                if subject:
                    headers["OCI-Subject"] = subject
            elif request.method == "DELETE":
                for entries in self.referrers.values():
                    entries.pop(manifest.group(2), None)
        return web.Response(status=status, headers=headers, body=answer)

    def _remember(self, repository: str, body: bytes, content_type: str | None) -> str:
        try:
            data = json.loads(body)
        except ValueError:
            return ""
        subject = data.get("subject") if isinstance(data, dict) else None
        if not isinstance(subject, dict) or not is_digest(str(subject.get("digest", ""))):
            return ""
        config = data.get("config") if isinstance(data.get("config"), dict) else {}
        descriptor: dict[str, Any] = {
            "mediaType": data.get("mediaType") or content_type,
            "digest": "sha256:" + hashlib.sha256(body).hexdigest(),
            "size": len(body),
        }
        artifact_type = data.get("artifactType") or config.get("mediaType")
        if artifact_type:
            descriptor["artifactType"] = artifact_type
        if data.get("annotations"):
            descriptor["annotations"] = data["annotations"]
        key = (repository, str(subject["digest"]))
        self.referrers.setdefault(key, {})[descriptor["digest"]] = descriptor
        return str(subject["digest"])

    def _index(self, repository: str, digest: str, request: web.Request) -> web.Response:
        if not is_digest(digest):
            errors = {"errors": [{"code": "DIGEST_INVALID", "message": "invalid digest"}]}
            return web.json_response(errors, status=400)
        entries = list(self.referrers.get((repository, digest), {}).values())
        headers = {"Content-Type": OCI_INDEX}
        wanted = request.query.getall("artifactType", [])
        if wanted:
            entries = [e for e in entries if e.get("artifactType") in wanted]
            headers["OCI-Filters-Applied"] = "artifactType"
        index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}
        return web.Response(status=200, headers=headers, body=json.dumps(index).encode())

    async def _forward(
        self, request: web.Request, body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        assert self._session is not None
        self.counts["forwarded"] += 1
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        async with self._session.request(
            request.method,
            self.upstream + request.path,
            params=dict(request.query) or None,
            headers=headers,
            data=body or None,
            allow_redirects=False,
        ) as response:
            answer = await response.read()
            out = {k: v for k, v in response.headers.items() if k.lower() not in _HOP_BY_HOP}
            return response.status, out, answer
