"""Helm repositories: a chart's versions from the repository's ``index.yaml``.

One index per repository URL serves every chart of it. Requests, which are also the minimum:

* the first scan downloads ``<repository>/index.yaml`` in full and keeps its ``ETag`` (and
  ``Last-Modified``) with the parsed versions;
* every later scan round asks again with ``If-None-Match`` (``If-Modified-Since``): an unchanged
  index is a ``304 Not Modified`` without a body, and the kept versions are used;
* scans of one round (an update cycle) share one request per repository, whatever the number of
  charts and Applications.

A large index (a popular repository lists thousands of charts in tens of megabytes) is not
parsed as a whole: a Helm-written ``index.yaml`` is split into its charts' blocks with one text
scan, and a chart's block is parsed the first time that chart is read (about 13 s of CPU for a
whole 2 MB index with the pure-Python YAML parser, against 0.03 s for the split and 0.2 s per
chart used). Other layouts (flow style, quoted keys) and JSON indexes are read whole.

A chart's versions become :class:`~argocd_image_updater.model.tags.TagInfo` values (the
version as the tag name, the entry's ``created`` as the build date for ``newest-build``, its
``digest`` when set). Credentials come from a :class:`HelmRepoCredentials` (Argo CD's repository
Secrets of type ``helm``: :mod:`argocd_image_updater.registry.helmrepo_secrets`); they are sent
as HTTP Basic authentication, never over plain ``http://`` unless the Secret says
``insecure: "true"``, and never appear in logs or URLs.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final, Protocol

import httpx

from argocd_image_updater.http1 import (
    DEFAULT_DEADLINE,
    DeadlineExceeded,
    ProxyConfigError,
    async_client,
    fetch,
)
from argocd_image_updater.kits.tlstrust import client_context
from argocd_image_updater.model.platform import Platform
from argocd_image_updater.model.tags import PlatformImage, TagInfo
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.registry.manifest import ManifestFormatError, parse_rfc3339
from argocd_image_updater.registry.transport import USER_AGENT

TIMEOUT: Final = httpx.Timeout(connect=10.0, read=60.0, write=30.0, pool=30.0)
MAX_INDEX_BYTES: Final = 64 * 2**20
"""The largest ``index.yaml`` read (the largest public ones are some 20 MB): a longer answer is
an error, never read whole."""
NO_PLATFORM: Final = Platform("", "")

log = get_logger("registry.helm")


class HelmIndexError(Exception):
    """A Helm repository index that could not be read; the message names the repository."""


@dataclass(frozen=True, slots=True)
class HelmRepoAuth:
    """Credentials of one Helm repository (``username``/``password``; TLS options)."""

    username: str = ""
    password: str = ""
    insecure: bool = False
    """Skip TLS verification, and allow sending the password over plain ``http://``."""
    ca_pem: str = ""


class HelmRepoCredentials(Protocol):
    async def for_repository(self, url: str) -> HelmRepoAuth | None:
        """The credentials Argo CD holds for the Helm repository ``url``; ``None``: anonymous."""
        ...


@dataclass(frozen=True, slots=True)
class IndexScan:
    """A chart's versions, in the index's order (a ``plan.decide.ScanResultLike``)."""

    repository_url: str
    chart: str
    tags: tuple[TagInfo, ...]
    order_hint: Mapping[str, int] | None = None

    @property
    def listed(self) -> int:
        return len(self.tags)


@dataclass(slots=True)
class _Index:
    etag: str = ""
    last_modified: str = ""
    charts: Mapping[str, tuple[TagInfo, ...]] = field(default_factory=dict)
    round: int | None = None


def index_url(repository_url: str) -> str:
    return repository_url.rstrip("/") + "/index.yaml"


def _created(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return parse_rfc3339(value)
    except ManifestFormatError:
        return None


def _versions(versions: Any) -> tuple[TagInfo, ...]:
    if not isinstance(versions, list):
        return ()
    tags: list[TagInfo] = []
    for entry in versions:
        if not isinstance(entry, Mapping):
            continue
        version = entry.get("version")
        if not isinstance(version, (str, int, float)) or isinstance(version, bool):
            continue
        digest = entry.get("digest")
        created = _created(entry.get("created"))
        tags.append(
            TagInfo(
                str(version),
                str(digest) if isinstance(digest, str) else "",
                (PlatformImage(NO_PLATFORM, "", created),),
            )
        )
    return tuple(tags)


def _load_yaml(text: str, repository_url: str) -> Any:
    # The YAML parser is imported by the first index read: `test IMAGE` and a controller
    # without chart references never load it.
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        return YAML(typ="safe").load(text)
    except YAMLError as err:
        raise HelmIndexError(f"{index_url(repository_url)} is not valid YAML: {err}") from None


_ENTRIES = re.compile(r"^entries:[ \t]*(?:#.*)?$", re.M)
_TOP_LEVEL = re.compile(r"^[^\s#]", re.M)
_FIRST_KEY = re.compile(r"^( +)[^\s#-][^\n]*?:[ \t]*$", re.M)


def chart_blocks(text: str) -> dict[str, tuple[int, int]] | None:
    """Where each chart's entries are in a Helm-written ``index.yaml`` (block style, ``entries:``
    at the top level, one key line per chart): chart name → (start, end) offsets of its block.
    ``None`` when the text is not laid out that way (then it is parsed as a whole)."""
    found = _ENTRIES.search(text)
    if found is None:
        return None
    start = found.end()
    after = _TOP_LEVEL.search(text, start + 1)
    end = after.start() if after is not None else len(text)
    first = _FIRST_KEY.search(text, start, end)
    if first is None:
        return None
    indent = first.group(1)
    keys = list(re.compile(rf"^{indent}([^\s#-][^\n]*?):[ \t]*$", re.M).finditer(text, start, end))
    blocks: dict[str, tuple[int, int]] = {}
    for i, key in enumerate(keys):
        name = key.group(1).strip()
        if name[:1] in "\"'":
            return None  # quoted keys: read the whole document
        stop = keys[i + 1].start() if i + 1 < len(keys) else end
        blocks[name] = (key.start(), stop)
    return blocks


class IndexCharts(Mapping[str, tuple[TagInfo, ...]]):
    """Chart name → versions; each chart's block is parsed when it is first read, so a large
    repository (thousands of charts) costs the parse of the charts in use only."""

    def __init__(self, text: str, blocks: Mapping[str, tuple[int, int]], repository_url: str):
        self._text = text
        self._blocks = blocks
        self._url = repository_url
        self._parsed: dict[str, tuple[TagInfo, ...]] = {}

    def __getitem__(self, name: str) -> tuple[TagInfo, ...]:
        found = self._parsed.get(name)
        if found is None:
            start, stop = self._blocks[name]
            data = _load_yaml("entries:\n" + self._text[start:stop], self._url)
            entries = data.get("entries") if isinstance(data, Mapping) else None
            found = _versions(entries.get(name) if isinstance(entries, Mapping) else None)
            self._parsed[name] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._blocks)

    def __len__(self) -> int:
        return len(self._blocks)


def parse_index(body: bytes, repository_url: str) -> Mapping[str, tuple[TagInfo, ...]]:
    """Chart name → its versions from an ``index.yaml`` (or an index in JSON);
    :class:`HelmIndexError` when the body is not a Helm repository index. A Helm-written
    index is only split into its charts here; each chart is parsed when it is read."""
    text = body.decode("utf-8", errors="replace")
    if text.lstrip().startswith("{"):
        try:
            data: Any = json.loads(text)
        except ValueError as err:
            raise HelmIndexError(f"{index_url(repository_url)} is not valid JSON: {err}") from None
    else:
        blocks = chart_blocks(text)
        if blocks is not None:
            return IndexCharts(text, blocks, repository_url)
        data = _load_yaml(text, repository_url)
    if not isinstance(data, Mapping) or not isinstance(data.get("entries"), Mapping):
        raise HelmIndexError(
            f"{index_url(repository_url)} is not a Helm repository index (no 'entries' map)"
        )
    return MappingProxyType({str(k): _versions(v) for k, v in data["entries"].items()})


class HelmIndex:
    """Reads Helm repository indexes with conditional requests; shared by a whole process."""

    def __init__(self, credentials: HelmRepoCredentials | None = None) -> None:
        self.credentials = credentials
        self._indexes: dict[str, _Index] = {}
        self._inflight: dict[tuple[str, int | None], asyncio.Future[_Index]] = {}
        self._clients: dict[tuple[bool, str], httpx.AsyncClient] = {}
        self.requests: Counter[str] = Counter()
        """Requests by outcome: ``index`` (full download), ``not_modified`` (304)."""

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()

    def _client(self, auth: HelmRepoAuth | None) -> httpx.AsyncClient:
        insecure = auth.insecure if auth is not None else False
        ca = auth.ca_pem if auth is not None else ""
        key = (insecure, ca)
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = async_client(
                ssl_context=client_context(insecure=insecure, ca_data=ca),
                timeout=TIMEOUT,
                headers={"User-Agent": USER_AGENT},
                follow_redirects=True,
            )
        return client

    async def versions(self, repository_url: str, chart: str, scan_round: int | None) -> IndexScan:
        """The versions of ``chart`` in the repository; :class:`HelmIndexError` when the index
        cannot be read or does not list the chart."""
        index = await self._index(repository_url, scan_round)
        tags = await asyncio.to_thread(index.charts.get, chart)
        if tags is None:
            raise HelmIndexError(
                f"chart '{chart}' is not listed in {index_url(repository_url)}; check the chart "
                "name and the repository URL"
            )
        return IndexScan(repository_url, chart, tags)

    async def _index(self, repository_url: str, scan_round: int | None) -> _Index:
        url = repository_url.rstrip("/")
        known = self._indexes.get(url)
        if known is not None and scan_round is not None and known.round == scan_round:
            return known
        key = (url, scan_round)
        running = self._inflight.get(key)
        if running is not None:
            return await asyncio.shield(running)
        future: asyncio.Future[_Index] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            index = await self._fetch(url, known, scan_round)
        except BaseException as err:
            future.set_exception(err)
            future.exception()  # retrieved: waiters re-raise it
            raise
        else:
            future.set_result(index)
            return index
        finally:
            del self._inflight[key]

    async def _fetch(self, url: str, known: _Index | None, scan_round: int | None) -> _Index:
        auth = await self.credentials.for_repository(url) if self.credentials else None
        if auth is not None and auth.password and url.startswith("http://") and not auth.insecure:
            raise HelmIndexError(
                f"refusing to send the credentials of Helm repository {url} over plain http://; "
                'use https (or set insecure: "true" in the repository Secret)'
            )
        headers: dict[str, str] = {}
        if known is not None and known.etag:
            headers["If-None-Match"] = known.etag
        if known is not None and known.last_modified:
            headers["If-Modified-Since"] = known.last_modified
        if auth is not None and auth.password:
            pair = f"{auth.username}:{auth.password}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        target = index_url(url)
        try:
            answer = await fetch(
                self._client(auth),
                "GET",
                target,
                headers=headers,
                limit=MAX_INDEX_BYTES,
                follow_redirects=True,
            )
        except DeadlineExceeded:
            raise HelmIndexError(
                f"cannot read {target}: no complete answer within {DEFAULT_DEADLINE:.0f} s"
            ) from None
        except ProxyConfigError as err:
            raise HelmIndexError(f"cannot read {target}: {err}") from None
        except httpx.HTTPError as err:
            raise HelmIndexError(f"cannot read {target}: {type(err).__name__}: {err}") from None
        if answer.status == 304 and known is not None:
            self.requests["not_modified"] += 1
            known.round = scan_round
            return known
        if answer.status != 200:
            hint = (
                "; add an Argo CD repository Secret of type helm with its credentials"
                if answer.status in (401, 403)
                else ""
            )
            raise HelmIndexError(f"cannot read {target}: HTTP {answer.status}{hint}")
        if answer.truncated:
            raise HelmIndexError(
                f"cannot read {target}: the index is larger than {MAX_INDEX_BYTES} bytes"
            )
        self.requests["index"] += 1
        charts = await asyncio.to_thread(parse_index, answer.body, url)
        index = _Index(
            etag=answer.header("etag"),
            last_modified=answer.header("last-modified"),
            charts=charts,
            round=scan_round,
        )
        self._indexes[url] = index
        log.debug("read Helm repository index", repository=url, charts=len(charts))
        return index
