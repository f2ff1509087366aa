"""Async client for one registry endpoint (Docker Registry HTTP API v2 / OCI distribution).

Layers, from the outside in:

* credentials and authorization (:mod:`~argocd_image_updater.registry.authorize`): a refused
  credential is fetched again once; the registry's challenge is remembered, so later requests
  carry Basic credentials or a cached Bearer token up front;
* retries, pacing and accounting (:mod:`~argocd_image_updater.registry.exchange`);
* reading the answers (:mod:`~argocd_image_updater.registry.replies`): error bodies, the error a
  status means, tag pages, and the reference grammar the names are checked against.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from argocd_image_updater.model.registry import CredentialProvider, RegistryEndpoint
from argocd_image_updater.model.retry import RETRY_STATUSES, RetryPolicy
from argocd_image_updater.registry.auth import TokenCache, pick_challenge
from argocd_image_updater.registry.authorize import Authorizer
from argocd_image_updater.registry.errors import (
    RegistryProtocolError,
    RegistryUnavailable,
)
from argocd_image_updater.registry.exchange import MAX_MANIFEST_BYTES, EndpointHTTP
from argocd_image_updater.registry.media import (
    MANIFEST_ACCEPT,
    OCI_INDEX,
    is_digest,
    sha256_digest,
)
from argocd_image_updater.registry.ratelimit import EndpointLimits
from argocd_image_updater.registry.replies import (
    Reply,
    check_digest,
    check_reference,
    check_repository,
    parse_tag_page,
    protocol_error,
    raise_for,
)
from argocd_image_updater.registry.stats import RequestStats

if TYPE_CHECKING:  # parsed content: imported where a manifest or config is read
    from argocd_image_updater.registry.manifest import ImageConfig, Manifest

MAX_CONFIG_BYTES = 8 * 1024 * 1024
MAX_TAG_PAGE_BYTES = 32 * 1024 * 1024
MAX_TAG_PAGES = 10_000


class RegistryClient:
    """Talks to one :class:`RegistryEndpoint`. Use as ``async with`` or call :meth:`aclose`.

    ``http`` may be shared between endpoints with equal TLS settings (see
    :func:`~argocd_image_updater.registry.transport.http_client`); a client that creates its own
    closes it.
    """

    def __init__(
        self,
        endpoint: RegistryEndpoint,
        *,
        http: httpx.AsyncClient | None = None,
        limits: EndpointLimits | None = None,
        tokens: TokenCache | None = None,
        retry: RetryPolicy | None = None,
        stats: RequestStats | None = None,
    ) -> None:
        self.endpoint = endpoint
        self._http = EndpointHTTP(endpoint, http=http, limits=limits, retry=retry, stats=stats)
        self._auth = Authorizer(self._http, tokens)
        self._registry = endpoint.host
        self.stats = self._http.stats

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> RegistryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def ping(self) -> None:
        """Check that the endpoint speaks the v2 API (``GET /v2/`` answers 200 or 401)."""
        api = self._http.api
        reply = await self._http.send("ping", "GET", httpx.URL(f"{api}/v2/"), {}, "")
        if reply.status == 401:
            self._auth.challenge = pick_challenge(reply.header_list("www-authenticate"))
            return
        if reply.status == 200:
            return
        error = RegistryUnavailable if reply.status in RETRY_STATUSES else RegistryProtocolError
        raise error(
            f"endpoint {api} does not seem to be a valid v2 Docker Registry API "
            f"(GET /v2/ answered HTTP {reply.status}); check 'api_url' of registry "
            f"{self.endpoint.name} in registries.conf",
            registry=self._registry,
        )

    async def list_tags(
        self, repository: str, credentials: CredentialProvider | None = None
    ) -> list[str]:
        """All tags of ``repository``, following ``Link: <…>; rel="next"`` pagination.

        A page that fails or is cut short fails the whole listing: never a partial list.
        """
        check_repository(self._registry, repository)
        url: str | httpx.URL = f"{self._http.api}/v2/{repository}/tags/list"
        tags: list[str] = []
        seen_urls: set[str] = set()
        for page in range(1, MAX_TAG_PAGES + 1):
            reply = await self._auth.request(
                "tags", "GET", url, repository, credentials, limit=MAX_TAG_PAGE_BYTES
            )
            self._raise_for(reply, repository)
            tags.extend(parse_tag_page(reply, self._registry, repository, page))
            next_url = self._next_page(reply, url, repository)
            if next_url is None:
                return list(dict.fromkeys(tags))
            seen_urls.add(str(httpx.URL(url)))  # parsed only when there is a next page
            if str(next_url) in seen_urls:
                raise self._protocol(
                    repository, f"tag list pagination loops back to {next_url.path}"
                )
            url = next_url
        raise self._protocol(repository, f"tag list has more than {MAX_TAG_PAGES} pages")

    async def get_manifest(
        self, repository: str, reference: str, credentials: CredentialProvider | None = None
    ) -> Manifest:
        """The manifest or index ``reference`` (a tag or ``sha256:`` digest) points to.

        The digest is the sha256 of the bytes received; for digest references it must equal the
        reference and the ``Docker-Content-Digest`` header.
        """
        return (await self.get_manifest_bytes(repository, reference, credentials))[0]

    async def get_manifest_bytes(
        self, repository: str, reference: str, credentials: CredentialProvider | None = None
    ) -> tuple[Manifest, bytes]:
        """:meth:`get_manifest` with the bytes received (signature manifests are read whole)."""
        check_repository(self._registry, repository)
        check_reference(self._registry, reference)
        url = httpx.URL(f"{self._http.api}/v2/{repository}/manifests/{reference}")
        reply = await self._auth.request(
            "manifest", "GET", url, repository, credentials, MANIFEST_ACCEPT, MAX_MANIFEST_BYTES
        )
        self._raise_for(reply, repository, reference)
        from argocd_image_updater.registry.manifest import ManifestFormatError, parse_manifest

        try:
            manifest = parse_manifest(reply.body, reply.header("content-type"))
        except ManifestFormatError as exc:
            raise self._protocol(repository, f"manifest '{reference}': {exc}") from None
        if is_digest(reference):
            header = reply.header("docker-content-digest")
            if manifest.digest != reference or (
                header.startswith("sha256:") and header != manifest.digest
            ):
                raise self._protocol(
                    repository,
                    f"manifest '{reference}' has digest {manifest.digest} "
                    f"(Docker-Content-Digest: {header or 'absent'}): the content was altered",
                )
        return manifest, reply.body

    async def get_referrers(
        self,
        repository: str,
        digest: str,
        artifact_type: str,
        credentials: CredentialProvider | None = None,
    ) -> bytes | None:
        """The OCI 1.1 referrers index of ``digest`` (filtered on ``artifact_type`` where the
        registry filters; callers filter again), ``None`` when the registry has no referrers
        API (404)."""
        check_repository(self._registry, repository)
        check_digest(self._registry, repository, digest, "digest")
        url = httpx.URL(f"{self._http.api}/v2/{repository}/referrers/{digest}")
        url = url.copy_merge_params({"artifactType": artifact_type})
        reply = await self._auth.request(
            "manifest", "GET", url, repository, credentials, OCI_INDEX, MAX_MANIFEST_BYTES
        )
        if reply.status == 404:
            return None
        self._raise_for(reply, repository, digest, what="referrers")
        return reply.body

    async def get_blob(
        self,
        repository: str,
        digest: str,
        credentials: CredentialProvider | None = None,
        limit: int = MAX_CONFIG_BYTES,
        what: str = "blob",
    ) -> bytes:
        """The blob ``digest``, checked against its digest (``what`` names it in errors)."""
        check_repository(self._registry, repository)
        check_digest(self._registry, repository, digest, "blob digest")
        url = httpx.URL(f"{self._http.api}/v2/{repository}/blobs/{digest}")
        reply = await self._auth.request(
            "blob", "GET", url, repository, credentials, limit=limit, redirects=True
        )
        self._raise_for(reply, repository, digest, what=what)
        if sha256_digest(reply.body) != digest:
            raise self._protocol(
                repository, f"{what} {digest} has different content (digest mismatch)"
            )
        return reply.body

    async def head_digest(
        self, repository: str, tag: str, credentials: CredentialProvider | None = None
    ) -> str:
        """The current digest of ``tag`` from a HEAD request (a GET if the header is missing)."""
        check_repository(self._registry, repository)
        check_reference(self._registry, tag)
        url = httpx.URL(f"{self._http.api}/v2/{repository}/manifests/{tag}")
        reply = await self._auth.request(
            "manifest", "HEAD", url, repository, credentials, MANIFEST_ACCEPT, 0
        )
        self._raise_for(reply, repository, tag)
        digest = reply.header("docker-content-digest")
        if is_digest(digest):
            return digest
        return (await self.get_manifest(repository, tag, credentials)).digest

    async def get_config(
        self, repository: str, digest: str, credentials: CredentialProvider | None = None
    ) -> ImageConfig:
        """The image config blob ``digest``: platform, ``created`` and ``config.Labels``."""
        check_repository(self._registry, repository)
        check_digest(self._registry, repository, digest, "config digest")
        body = await self.get_blob(repository, digest, credentials, what="config blob")
        from argocd_image_updater.registry.manifest import ManifestFormatError, parse_config

        try:
            return parse_config(body)
        except ManifestFormatError as exc:
            raise self._protocol(repository, f"config blob {digest}: {exc}") from None

    def _raise_for(
        self, reply: Reply, repository: str, reference: str = "", what: str = "manifest"
    ) -> None:
        raise_for(reply, self._registry, repository, self._http.retry.attempts, reference, what)

    def _protocol(self, repository: str, problem: str) -> RegistryProtocolError:
        return protocol_error(self._registry, repository, problem)

    def _next_page(self, reply: Reply, url: str | httpx.URL, repository: str) -> httpx.URL | None:
        link = reply.links.get("next")
        if not link or not link.get("url"):
            return None
        next_url = httpx.URL(url).join(link["url"])
        if not self._http.is_own(next_url):
            raise self._protocol(
                repository, f"tag list pagination points to another host ({next_url.host})"
            )
        return next_url
