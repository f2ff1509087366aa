"""The registry scan stage: from (endpoint, repository, what is needed) to :class:`TagInfo` values.

Requests made for one scan, which are also the minimum needed:

* one tag list (all pages) per repository and round (an update cycle, a webhook event's
  update), shared by every scan of the round through the :class:`TagListCache` (same API,
  repository and credential source); a later round lists the tags again;
* without metadata (``semver``, ``alphabetical``) or on a time-sorted registry: nothing else;
* with metadata, per tag (``only_tags`` applied first):

  - a tag this scanner has not seen: ``GET`` its manifest by tag, which gives digest and content
    in one request; then the config blob (single image) or, for an index, the child manifest and
    config blob of each wanted platform — each skipped when its digest is already cached;
  - a tag seen before, when :class:`~argocd_image_updater.registry.revalidate.Revalidation`
    picks it for this scan (the newest known builds always, the others in turn): ``HEAD`` it
    (tags are mutable). Unchanged digest → everything comes from the cache, no ``GET``.
    Changed digest → ``GET`` the manifest by that digest, and config/children as above. A known
    tag not picked keeps its last digest, without a request.

The ``digest`` strategy (``only_tags``) always asks the registry for its tag's digest;
:meth:`Scanner.tag_digest` (digest pinning, for the one chosen tag) costs one ``HEAD``, or nothing
when a scan of the same round already asked the registry about that tag;
:meth:`Scanner.forget_tags` (a registry webhook) makes the next scan fetch the tags afresh. Content
by digest is cached and never goes stale.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

import httpx

from argocd_image_updater.model.platform import Platform, PlatformFilter
from argocd_image_updater.model.registry import CredentialProvider, RegistryEndpoint
from argocd_image_updater.model.retry import RetryPolicy
from argocd_image_updater.model.tags import PlatformImage, TagInfo
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.registry.auth import TokenCache
from argocd_image_updater.registry.cache import (
    CachedMetadata,
    IndexEntries,
    LruDict,
    MetadataCache,
    TagListCache,
    TagListKey,
)
from argocd_image_updater.registry.client import RegistryClient
from argocd_image_updater.registry.errors import (
    ManifestNotFound,
    RegistryProtocolError,
)
from argocd_image_updater.registry.fleet_budget import FleetBudget
from argocd_image_updater.registry.listed_tags import ListedTags
from argocd_image_updater.registry.ratelimit import DEFAULT_MAX_CONCURRENCY, EndpointLimits
from argocd_image_updater.registry.revalidate import RepositoryTags, Revalidation
from argocd_image_updater.registry.scan_values import AtOnce as AtOnce
from argocd_image_updater.registry.scan_values import ScanRequest as ScanRequest
from argocd_image_updater.registry.scan_values import ScanResult as ScanResult
from argocd_image_updater.registry.scan_values import order_hint
from argocd_image_updater.registry.stats import RequestStats
from argocd_image_updater.registry.transport import TlsKey, http_client
from argocd_image_updater.registry.vouched_lists import VouchedLists

if TYPE_CHECKING:
    from argocd_image_updater.registry.helmindex import HelmIndex
    from argocd_image_updater.registry.manifest import Descriptor, Manifest

REPOSITORIES_REMEMBERED = 10_000
"""Repositories whose tag digests the scanner keeps (least recently scanned out)."""

MAX_METADATA_CONCURRENCY = 20
"""Concurrent metadata fetches per scan (as in the original)."""

_ATTESTATION = "attestation-manifest"


def _is_image_entry(entry: Descriptor) -> bool:
    """Index entries that are runnable images (not attestations or platform-less artifacts)."""
    if entry.platform is None or not entry.platform.os:
        return False
    return entry.annotations.get("vnd.docker.reference.type") != _ATTESTATION


def _group(req: ScanRequest, repository: str) -> tuple[str, str, str]:
    """Fetches that may be shared: same API, repository and credential source."""
    key = req.credentials.key if req.credentials is not None else ""
    return (req.endpoint.api_url, repository, key)


class Scanner:
    """Registry scans with shared clients, caches and limits. Use as ``async with Scanner():``.

    One :class:`RegistryClient` per endpoint; endpoints with equal TLS settings share one HTTP
    client; rate limit and concurrency bound are per API URL.
    """

    def __init__(
        self,
        *,
        metadata_entries: int = 100_000,
        retry: RetryPolicy | None = None,
        metadata_concurrency: int = MAX_METADATA_CONCURRENCY,
        registry_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        clock: Callable[[], float] = time.monotonic,
        revalidation: Revalidation | None = None,
    ) -> None:
        self._retry = retry or RetryPolicy()
        self._metadata_concurrency = metadata_concurrency
        self._registry_concurrency = registry_concurrency
        self._tag_lists = TagListCache()
        self._listed = ListedTags()
        self._metadata = MetadataCache(metadata_entries)
        self._revalidation = revalidation or Revalidation()
        self._repositories: LruDict[tuple[str, str], RepositoryTags] = LruDict(
            REPOSITORIES_REMEMBERED
        )
        self._asked: LruDict[tuple[TagListKey, str], tuple[int, str]] = LruDict(
            REPOSITORIES_REMEMBERED
        )
        self._tokens = TokenCache(clock)
        self._stats = RequestStats()
        self._http: dict[TlsKey, httpx.AsyncClient] = {}
        self._limits: dict[str, EndpointLimits] = {}
        self.budget = FleetBudget()
        """This replica's share of each registry's budget (shared once it joins a fleet)."""
        self._clients: dict[RegistryEndpoint, RegistryClient] = {}
        self._log = get_logger("registry.scanner")
        self._helm_index: HelmIndex | None = None
        self.vouched: VouchedLists | None = None
        """In a sharded fleet: the tag lists reused while their owner vouches for them."""
        self._full_round: int | None = None

    @property
    def helm_index(self) -> HelmIndex:
        """Charts of Helm repositories (``index.yaml``); set its ``credentials`` to read Argo
        CD's repository Secrets."""
        if self._helm_index is None:
            from argocd_image_updater.registry.helmindex import HelmIndex

            self._helm_index = HelmIndex()
        return self._helm_index

    async def __aenter__(self) -> Scanner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        clients, self._http = list(self._http.values()), {}
        self._clients.clear()
        for http in clients:
            await http.aclose()
        if self._helm_index is not None:
            await self._helm_index.aclose()

    @property
    def stats(self) -> Mapping[str, int]:
        """Requests made so far by kind (``tags``, ``manifest``, ``manifest_head``, ``blob``, …)."""
        return self._stats.snapshot()

    def reset_stats(self) -> None:
        self._stats.clear()

    def client(self, endpoint: RegistryEndpoint) -> RegistryClient:
        client = self._clients.get(endpoint)
        if client is None:
            key = TlsKey.of(endpoint)
            http = self._http.get(key)
            if http is None:
                http = self._http[key] = http_client(endpoint)
            api = endpoint.api_url.rstrip("/")
            limits = self._limits.get(api)
            if limits is None:
                limits = self._limits[api] = EndpointLimits(
                    endpoint.host,
                    endpoint.limit,
                    max_concurrency=self._registry_concurrency,
                    budget=self.budget,
                )
            client = RegistryClient(
                endpoint,
                http=http,
                limits=limits,
                tokens=self._tokens,
                retry=self._retry,
                stats=self._stats,
            )
            self._clients[endpoint] = client
        return client

    def new_round(self, *, full: bool = False) -> int:
        """Start a round (an update cycle): scans passing its number share one tag listing per
        repository, started after this call; no later round sees it. A ``full`` round (a
        cycle, not a webhook event's update) may reuse the tag lists :attr:`vouched` for."""
        self._listed.new_round()
        number = self._tag_lists.new_round()
        if full and self.vouched is not None:
            self.vouched.new_round()
            self._full_round = number
        return number

    @staticmethod
    def tag_list_key(req: ScanRequest) -> TagListKey:
        """What the tag list of ``req`` is shared by: API, repository path and credentials."""
        return TagListKey(
            req.endpoint.api_url.rstrip("/"),
            req.endpoint.repository_path(req.repository),
            req.credentials.key if req.credentials is not None else "",
        )

    async def scan(self, req: ScanRequest, scan_round: int | None = None) -> ScanResult:
        """Scan one repository. With ``scan_round`` (from :meth:`new_round`) the tag list is the
        round's; without, a listing still in flight is joined, else the tags are listed."""
        client = self.client(req.endpoint)
        key = self.tag_list_key(req)
        repository = key.repository

        def fetch() -> Awaitable[list[str]]:
            return client.list_tags(repository, req.credentials)

        copy = None
        if self.vouched is not None:
            full = scan_round is not None and scan_round == self._full_round
            fetch, copy = self.vouched.listing(key, fetch, full=full)
        names = await self._tag_lists.get(key, fetch, scan_round, copy)
        # Time-sorted registries need no metadata; the digest strategy (only_tags) still needs
        # the digest of its tag.
        if not req.metadata or (
            req.only_tags is None and req.endpoint.tag_sort_mode.is_time_sorted
        ):
            return self._named(req, key, names)
        listed = len(names)
        if req.only_tags is not None:
            names = tuple(n for n in names if n in req.only_tags)
        hint = order_hint(names, req.endpoint)
        state = self._repository(req.endpoint.api_url, repository)
        if req.only_tags is None:
            state.keep_only(names)
            check = state.to_check(names, self._revalidation, self._created)
        else:
            check = names  # one tag named by the policy: always asked for
        asked = (key, scan_round) if scan_round is not None else None
        infos = await self._fetch_all(client, repository, names, req, state, check, asked)
        return ScanResult(req, tuple(i for i in infos if i is not None), hint, listed)

    @contextlib.contextmanager
    def answering_at_once(self) -> Iterator[None]:
        """A block of many :meth:`scan_at_once` calls with no wait in between: the copies
        :attr:`vouched` for are checked at one instant and the listings they give counted once
        (:meth:`VouchedLists.asked_together`, :meth:`TagListCache.counted_together`)."""
        vouched = self.vouched
        with self._tag_lists.counted_together():
            if vouched is None:
                yield
                return
            with vouched.asked_together():
                yield

    def scan_at_once(
        self, req: ScanRequest, scan_round: int, last: AtOnce | None = None
    ) -> AtOnce | None:
        """The scan of ``req`` (tag names only) when it needs neither a request nor a wait: the
        round holds its tag list already, or, in a full round of a sharded fleet, the
        repository's owner vouches for this replica's copy (:attr:`vouched`); else None (scan
        it). Spares a task per scan where most repositories are another replica's to list.
        ``last``: the answer of this very request in an earlier round, handed out again while
        the round holds the very same names (its tag-list key and result not made again)."""
        if req.metadata:
            return None
        if last is not None and last.request is not req:
            last = None
        key = self.tag_list_key(req) if last is None else last.key
        names = self._tag_lists.finished(key, scan_round)
        if names is None and self.vouched is not None and scan_round == self._full_round:
            copy = self.vouched.reuse(key)
            names = self._tag_lists.put(key, copy) if copy is not None else None
        if names is None:
            return None
        if last is not None and last.names is names:
            return last
        return AtOnce(req, key, names, self._named(req, key, names))

    def _named(self, req: ScanRequest, key: TagListKey, names: tuple[str, ...]) -> ScanResult:
        """The result of a scan of tag names only."""
        listed = len(names)
        if req.only_tags is not None:
            names = tuple(n for n in names if n in req.only_tags)
        hint = order_hint(names, req.endpoint)
        return ScanResult(req, self._listed.tags((key, req.only_tags), names), hint, listed)

    async def tag_digest(
        self,
        endpoint: RegistryEndpoint,
        repository: str,
        tag: str,
        credentials: CredentialProvider | None = None,
        scan_round: int | None = None,
    ) -> str:
        """The digest the registry serves for ``tag`` now (``repository`` as configured, like
        :attr:`ScanRequest.repository`). Every manifest type is accepted, so a multi-arch image
        answers with its index's digest, the same for every client whatever its architecture.
        One ``HEAD`` (a ``GET`` when the registry sends no digest header); none when a scan of
        the same ``scan_round`` already asked the registry about the tag."""
        path = endpoint.repository_path(repository)
        key = (
            TagListKey(
                endpoint.api_url.rstrip("/"),
                path,
                credentials.key if credentials is not None else "",
            ),
            tag,
        )
        if scan_round is not None:
            seen = self._asked.get(key)
            if seen is not None and seen[0] == scan_round:
                return seen[1]
        digest = await self.client(endpoint).head_digest(path, tag, credentials)
        if scan_round is not None:
            self._asked.put(key, (scan_round, digest))
        return digest

    def forget_tags(self, repository: str, tags: Iterable[str] | None = None) -> None:
        """Forget the digests of ``tags`` (all when ``None``) of ``repository`` (its path in the
        registry, on any endpoint): the next scan asks the registry for them. For registry
        webhooks, which announce a pushed tag before the scan that follows."""
        wanted = repository.strip("/")
        for (_, path), state in self._repositories.items():
            # "nginx" also names "library/nginx" (a default namespace): forgetting too much
            # costs one request, missing a push would cost an interval.
            if path == wanted or path.endswith(f"/{wanted}"):
                state.forget(tags)

    def _repository(self, api_url: str, repository: str) -> RepositoryTags:
        key = (api_url.rstrip("/"), repository)
        state = self._repositories.get(key)
        if state is None:
            state = RepositoryTags(f"{key[0]}/{repository}")
            self._repositories.put(key, state)
        return state

    def _created(self, digest: str) -> datetime | None:
        """The build date of a digest's cached metadata (newest of an index's images)."""
        meta = self._metadata.peek(digest)
        if isinstance(meta, PlatformImage):
            return meta.created
        if meta is None:
            return None
        dates = [
            child.created
            for _, d in meta.entries
            if isinstance(child := self._metadata.peek(d), PlatformImage)
            and child.created is not None
        ]
        return max(dates, default=None)

    async def _fetch_all(
        self,
        client: RegistryClient,
        repository: str,
        names: tuple[str, ...],
        req: ScanRequest,
        state: RepositoryTags,
        check: Collection[str],
        asked: tuple[TagListKey, int] | None = None,
    ) -> list[TagInfo | None]:
        """Every tag's metadata; with ``asked`` (the tag list's key and the scan round) the
        digests the registry gave now are remembered for :meth:`tag_digest`."""
        slots = asyncio.Semaphore(self._metadata_concurrency)

        async def one(tag: str) -> TagInfo | None:
            async with slots:
                fresh = asked is None or tag in check or state.known(tag) is None
                info = await self._fetch_tag(client, repository, tag, req, state, tag in check)
                if asked is not None and fresh and info is not None and info.digest:
                    self._asked.put((asked[0], tag), (asked[1], info.digest))
                return info

        tasks = [asyncio.ensure_future(one(tag)) for tag in names]
        try:
            return await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _fetch_tag(
        self,
        client: RegistryClient,
        repository: str,
        tag: str,
        req: ScanRequest,
        state: RepositoryTags,
        check: bool,
    ) -> TagInfo | None:
        """One tag's metadata: a tag not seen before is fetched, a known one is asked about
        again (``HEAD``) when ``check``, else it keeps the digest it had."""
        log = self._log.bind(registry=client.endpoint.host, repository=repository, tag=tag)
        try:
            manifest: Manifest | None = None
            digest = state.known(tag)
            if digest is None:
                manifest = await client.get_manifest(repository, tag, req.credentials)
                digest = manifest.digest
            elif check:
                digest = await client.head_digest(repository, tag, req.credentials)
            state.remember(tag, digest)
            known = manifest

            async def load() -> CachedMetadata:
                nonlocal known
                if known is None:
                    known = await client.get_manifest(repository, digest, req.credentials)
                return await self._describe(client, repository, known, req)

            meta = await self._metadata.get_or_fetch(digest, load, _group(req, repository))
            if isinstance(meta, PlatformImage):
                return TagInfo(tag, digest, (meta,))
            images = await asyncio.gather(
                *(self._child(client, repository, p, d, req) for p, d in meta.entries)
            )
            return TagInfo(tag, digest, tuple(images))
        except ManifestNotFound:
            log.debug("Tag disappeared while scanning, skipping it")
            state.forget((tag,))
            return None
        except RegistryProtocolError as exc:
            log.warning("Could not read the metadata of this tag, skipping it", error=str(exc))
            return None

    async def _describe(
        self, client: RegistryClient, repository: str, manifest: Manifest, req: ScanRequest
    ) -> CachedMetadata:
        if manifest.is_index:
            return IndexEntries(
                tuple(
                    (e.platform, e.digest)
                    for e in manifest.manifests
                    if e.platform is not None and _is_image_entry(e)
                )
            )
        if manifest.config is None:  # pragma: no cover - parse_manifest guarantees a config
            raise RegistryProtocolError(
                f"manifest {manifest.digest} has no config",
                registry=client.endpoint.host,
                repository=repository,
            )
        if not manifest.is_image:
            # An OCI artifact (a Helm chart, …): no platform; built when its manifest says.
            return PlatformImage(Platform("", ""), manifest.digest, manifest.created)
        config = await client.get_config(repository, manifest.config.digest, req.credentials)
        return PlatformImage(config.platform, manifest.digest, config.created, config.labels)

    async def _child(
        self,
        client: RegistryClient,
        repository: str,
        platform: Platform,
        digest: str,
        req: ScanRequest,
    ) -> PlatformImage:
        """An index entry; created/labels only for wanted platforms. Platform from the index."""
        if not PlatformFilter(req.platforms).wants(platform):
            return PlatformImage(platform, digest)

        async def load() -> CachedMetadata:
            child = await client.get_manifest(repository, digest, req.credentials)
            if child.is_index:
                raise RegistryProtocolError(
                    f"registry {client.endpoint.host}, repository '{repository}': index entry "
                    f"{digest} is itself an index (nested indexes are not supported)",
                    registry=client.endpoint.host,
                    repository=repository,
                )
            return await self._describe(client, repository, child, req)

        meta = await self._metadata.get_or_fetch(digest, load, _group(req, repository))
        if not isinstance(meta, PlatformImage):  # the digest is also a tag's (nested) index
            return PlatformImage(platform, digest)
        return PlatformImage(platform, digest, meta.created, meta.labels)
