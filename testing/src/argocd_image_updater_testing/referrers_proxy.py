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
from collections import Counter
from typing import Any

from aiohttp import web

from argocd_image_updater.registry.manifest import OCI_INDEX, is_digest
from argocd_image_updater_testing.forwarding import RegistryFront

_REFERRERS = re.compile(r"^/v2/(.+)/referrers/([^/]+)$")
_MANIFEST = re.compile(r"^/v2/(.+)/manifests/([^/]+)$")


class ReferrersProxy(RegistryFront):
    def __init__(self, upstream: str) -> None:
        super().__init__(upstream, client_max_size=64 * 1024 * 1024)
        self.referrers: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        """``(repository, subject digest)`` → referrer digest → descriptor."""
        self.counts: Counter[str] = Counter()
        """``referrers`` GETs and forwarded requests (``forwarded``)."""

    async def _handle(self, request: web.Request) -> web.StreamResponse:
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
        self.counts["forwarded"] += 1
        return await self._upstream(request, body=body)
