"""HTTP clients of the product and the one call they are used through: :func:`async_client`
builds an ``httpx.AsyncClient`` (on :class:`AsyncHTTP1Transport`, or on httpx's own transport
where a proxy is in play); :func:`fetch` sends one request and reads its answer whole.

For a client on :class:`AsyncHTTP1Transport` with nothing for httpx's request pipeline to do
(no auth flow, cookies or event hooks) and no redirect to follow, :func:`fetch` writes the
request head itself and hands it to the transport: no ``httpx.Request``/``httpx.Response``, no
URL re-parse for a URL seen before. That is most of what a request costs above the wire (about
0.3 ms of CPU of 0.5 ms per small request on the reference machine; see
``benchmarks/http_client.py``), and a controller cycle sends hundreds. Every other request goes
through httpx unchanged and is read into the same :class:`Answer`.
"""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import os
import ssl
import weakref
import zlib
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote, urlencode

import httpx

from argocd_image_updater.http1.answer import Answer
from argocd_image_updater.http1.transport import (
    DEFAULT_LIMITS,
    AsyncHTTP1Transport,
    ConnectionKey,
    read_within,
)
from argocd_image_updater.http1.wire import ProtocolError, encode_request_head
from argocd_image_updater.observe.log import register_secret

_PROXY_VARIABLES: Final = ("http_proxy", "https_proxy", "all_proxy")
_PORTS: Final = {b"http": 80, b"https": 443}
_UNLIMITED: Final = 1 << 62
_ACCEPT_ENCODING: Final = (b"Accept-Encoding", b"gzip, deflate")
"""The codings :func:`fetch` decodes itself (httpx asks for brotli and zstd too when their
packages are installed)."""
_SAFE_IN_PATH_AND_QUERY: Final = "/?&=%:@!$'()*+,;-._~"
_LOCATIONS_KEPT: Final = 4096
DEFAULT_DEADLINE: Final = 120.0
"""The longest a :func:`fetch` may take, in seconds, when its caller gives no deadline (the
Kubernetes and Argo CD APIs): the read timeout alone never fires while a peer keeps sending a
byte now and then."""


class DeadlineExceeded(httpx.TimeoutException):
    """A request was not answered in full (connection, request, response head and body, every
    redirect) within its deadline of ``deadline`` seconds."""

    def __init__(self, deadline: float, request: httpx.Request | None = None) -> None:
        super().__init__(
            f"no complete answer within the request's deadline of {deadline:g}s", request=request
        )
        self.deadline = deadline


class _Direct:
    """What :func:`fetch` needs of a client on :class:`AsyncHTTP1Transport`, derived from the
    client at its first request: default header fields, timeouts, the base URL's location."""

    __slots__ = ("base", "defaults", "locations", "origins", "timeouts", "transport")

    def __init__(self, transport: AsyncHTTP1Transport) -> None:
        self.transport = transport
        self.defaults: dict[bytes, tuple[bytes, bytes]] | None = None
        self.timeouts: dict[str, float | None] = {}
        self.base: tuple[ConnectionKey, bytes, bytes] | None = None
        self.locations: dict[str, tuple[ConnectionKey, bytes, bytes]] = {}
        self.origins: dict[str, tuple[ConnectionKey, bytes]] = {}
        """``scheme://authority`` of the URLs parsed so far: their connection key and Host."""

    def prepare(self, client: httpx.AsyncClient) -> dict[bytes, tuple[bytes, bytes]]:
        if self.defaults is None:
            defaults = {name.lower(): (name, value) for name, value in client.headers.raw}
            defaults[b"accept-encoding"] = _ACCEPT_ENCODING
            self.timeouts = client.timeout.as_dict()
            if str(client.base_url):
                self.base = _location(client.base_url, "")
            self.defaults = defaults
        return self.defaults

    def locate(self, url: str | httpx.URL, sni: str) -> tuple[ConnectionKey, bytes, bytes]:
        """The connection key, request target and Host value of ``url`` (a path starting with
        ``/`` is relative to the client's base URL, as in httpx)."""
        if not isinstance(url, str):
            return _location(url, sni)
        if url.startswith("/") and self.base is not None:
            key, base_path, host = self.base
            target = base_path + quote(url[1:], safe=_SAFE_IN_PATH_AND_QUERY).encode("ascii")
            return (key[0], key[1], key[2], sni), target, host
        found = self.locations.get(url)
        if found is None:
            if len(self.locations) >= _LOCATIONS_KEPT:
                self.locations.clear()
                self.origins.clear()
            found = self.locations[url] = self._parse(url)
        if sni:
            key, target, host = found
            return (key[0], key[1], key[2], sni), target, host
        return found

    def _parse(self, url: str) -> tuple[ConnectionKey, bytes, bytes]:
        """:func:`_location` of ``url``. A URL on an origin seen before whose path and query
        httpx would send as written (no character it encodes, no dot segment it removes) is
        split here: parsing it as an ``httpx.URL`` costs more than the rest of a request."""
        origin, path = _split_origin(url)
        if path is not None:
            known = self.origins.get(origin)
            if known is not None:
                return known[0], path.encode("ascii"), known[1]
        found = _location(httpx.URL(url), "")
        if path is not None and found[1] == path.encode("ascii"):
            self.origins[origin] = (found[0], found[2])
        return found


_AS_WRITTEN: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/?&=:@!$'()*+,;"
)
"""The characters httpx keeps as they are in a URL's path and query."""
_IN_AUTHORITY: Final = frozenset("?#@\\")
"""Characters that end the authority or carry credentials: such URLs are left to httpx."""


def _split_origin(url: str) -> tuple[str, str | None]:
    """``url``'s ``scheme://authority`` and its path and query when httpx would send them as
    written (else None): a path starting with ``/``, of :data:`_AS_WRITTEN` characters only and
    without a dot segment (``/.``), after a plain authority."""
    start = url.find("://")
    if start < 0:
        return url, None
    slash = url.find("/", start + 3)
    if slash < 0:
        return url, None
    path = url[slash:]
    if (
        "/." in path
        or not _AS_WRITTEN.issuperset(path)
        or not _IN_AUTHORITY.isdisjoint(url[start + 3 : slash])
    ):
        return url[:slash], None
    return url[:slash], path


def _location(url: httpx.URL, sni: str) -> tuple[ConnectionKey, bytes, bytes]:
    scheme = url.raw_scheme
    if scheme not in _PORTS:
        raise httpx.UnsupportedProtocol(
            f"the URL scheme {scheme.decode(errors='replace')!r} is not supported"
        )
    host = url.raw_host.decode("ascii")
    if not host:
        raise httpx.UnsupportedProtocol("the URL has no host")
    if url.userinfo:
        raise httpx.UnsupportedProtocol("credentials in a URL are not sent")
    return (scheme, host, url.port or _PORTS[scheme], sni), url.raw_path, url.netloc


_direct: weakref.WeakKeyDictionary[httpx.AsyncClient, _Direct] = weakref.WeakKeyDictionary()
"""The clients :func:`async_client` built on :class:`AsyncHTTP1Transport`."""


class ProxyConfigError(ValueError):
    """A proxy URL that cannot be used; the message names where it came from, never its
    credentials."""


def _check_proxy(url: str, where: str) -> None:
    """Raise :class:`ProxyConfigError` unless ``url`` (from ``where``) is a proxy httpx speaks to:
    ``http://`` or ``https://`` (a URL without a scheme is taken as ``http://``, as httpx does),
    or SOCKS5 when httpx's optional ``socksio`` package is installed."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else "http"
    if scheme in ("http", "https"):
        return
    if scheme in ("socks5", "socks5h") and importlib.util.find_spec("socksio") is not None:
        return
    raise ProxyConfigError(
        f"{where} names a proxy with the unsupported scheme '{scheme}://'; give an http:// or "
        "https:// proxy URL (http://host:port, or http://user:password@host:port)"
    )


def _register_credentials(url: str) -> None:
    """Mask the password of the proxy URL ``url`` (and the ``Proxy-Authorization`` value made of
    it) in every log line."""
    try:
        parsed = httpx.URL(url if "://" in url else f"http://{url}")
    except httpx.InvalidURL:
        return
    if parsed.password:
        register_secret(parsed.password)
        token = f"{parsed.username}:{parsed.password}".encode()
        register_secret(base64.b64encode(token).decode("ascii"))


def environment_proxies() -> bool:
    """Whether the environment names a proxy (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, in
    either case), which httpx would then apply to the hosts ``NO_PROXY`` does not exclude."""
    return any(name.lower() in _PROXY_VARIABLES and value for name, value in os.environ.items())


def async_client(
    *,
    ssl_context: ssl.SSLContext | None = None,
    proxy: str | None = None,
    proxy_origin: str = "the proxy URL",
    limits: httpx.Limits = DEFAULT_LIMITS,
    **options: Any,
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` with ``options`` (base URL, auth, headers, timeouts …).

    Without a proxy it runs on :class:`AsyncHTTP1Transport`. With ``proxy``, or a proxy in the
    environment, it is httpx's own client, which speaks to proxies (CONNECT tunnels, ``NO_PROXY``
    exclusions) exactly as before; TLS is then verified with ``ssl_context`` as well.
    """
    if proxy or environment_proxies():
        if proxy:
            _check_proxy(proxy, proxy_origin)
            _register_credentials(proxy)
        else:
            for name, value in os.environ.items():
                if name.lower() in _PROXY_VARIABLES and value:
                    _check_proxy(value, f"the environment variable {name}")
                    _register_credentials(value)
        from argocd_image_updater.kits.absent_modules import mark_absent

        mark_absent("sniffio")  # httpcore looks for it on every request: see kits.absent_modules
        return httpx.AsyncClient(
            verify=ssl_context if ssl_context is not None else True,
            proxy=proxy,
            limits=limits,
            **options,
        )
    transport = AsyncHTTP1Transport(ssl_context=ssl_context, limits=limits)
    client = httpx.AsyncClient(transport=transport, **options)
    _direct[client] = _Direct(transport)
    return client


def _plain(client: httpx.AsyncClient) -> _Direct | None:
    """The direct path of a client of :func:`async_client` that has nothing for httpx's request
    pipeline to do (no auth flow, cookies or event hooks); None for any other client."""
    direct = _direct.get(client)
    if (
        direct is None
        or client.auth is not None
        or client.cookies
        or any(client.event_hooks.values())
    ):
        return None
    return direct


async def fetch(
    client: httpx.AsyncClient,
    method: str,
    url: str | httpx.URL,
    *,
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    content: bytes | None = None,
    limit: int = _UNLIMITED,
    follow_redirects: bool = False,
    sni_hostname: str = "",
    deadline: float | None = DEFAULT_DEADLINE,
) -> Answer:
    """``method`` ``url`` (with the query ``params``, the body ``content`` and the header fields
    ``headers`` over the client's own) and its answer, the body read whole up to ``limit`` bytes
    (:attr:`Answer.truncated` tells when it was longer; the rest is not read). Failures are
    httpx's exceptions, as from ``client.request``; an exchange that takes longer than
    ``deadline`` seconds in all (None: no limit but the client's timeouts) is given up with
    :class:`DeadlineExceeded`, its connection closed."""
    try:
        async with asyncio.timeout(deadline) as scope:
            return await _fetch(
                client,
                method,
                url,
                headers,
                params,
                content,
                limit,
                follow_redirects,
                sni_hostname,
            )
    except TimeoutError:
        if deadline is not None and scope.expired():
            raise DeadlineExceeded(deadline) from None
        raise


async def _fetch(
    client: httpx.AsyncClient,
    method: str,
    url: str | httpx.URL,
    headers: Mapping[str, str] | None,
    params: Mapping[str, str] | None,
    content: bytes | None,
    limit: int,
    follow_redirects: bool,
    sni_hostname: str,
) -> Answer:
    direct = None if follow_redirects else _plain(client)
    if direct is None:
        return await _through_httpx(
            client, method, url, headers, params, content, limit, follow_redirects, sni_hostname
        )
    defaults = direct.prepare(client)
    if params:
        url = f"{url}{'&' if '?' in str(url) else '?'}{urlencode(params)}"
    key, target, host = direct.locate(url, sni_hostname)
    fields = [(b"Host", host)]
    if headers:
        given = {name.lower().encode("ascii"): name for name in headers}
        fields += [field for name, field in defaults.items() if name not in given]
        fields += [(name.encode("ascii"), headers[name].encode("ascii")) for name in headers]
    else:
        fields += defaults.values()
    if content:
        fields.append((b"Content-Length", b"%d" % len(content)))
    verb = method.encode("ascii")
    try:
        out = encode_request_head(verb, target, fields)
    except ProtocolError as exc:
        raise httpx.LocalProtocolError(str(exc)) from None
    head, body, truncated = await direct.transport.fetch(
        key, verb, out, content or b"", direct.timeouts, limit
    )
    for name, value in head.headers:
        if name.lower() == b"content-encoding" and value.strip().lower() != b"identity":
            body, cut = _decoded(value, body, limit)
            truncated = truncated or cut
    return Answer(
        status=head.status,
        raw_headers=head.headers,
        body=body,
        method=method,
        url=url,
        reason=head.reason.decode("latin-1"),
        truncated=truncated,
    )


def _decoded(coding: bytes, body: bytes, limit: int) -> tuple[bytes, bool]:
    """``body`` decoded from the content coding ``coding`` (gzip or deflate, as asked for), at
    most ``limit`` bytes of it, and whether there was more."""
    name = coding.strip().lower()
    if name in (b"gzip", b"x-gzip"):
        wbits = 16 + zlib.MAX_WBITS
    elif name == b"deflate":
        wbits = zlib.MAX_WBITS if body[:1] == b"\x78" else -zlib.MAX_WBITS  # zlib or raw
    else:
        raise httpx.DecodingError(f"unsupported content coding {name.decode(errors='replace')!r}")
    decoder = zlib.decompressobj(wbits)
    try:
        data = decoder.decompress(body, limit)
    except zlib.error as exc:
        raise httpx.DecodingError(f"invalid {name.decode()} body: {exc}") from None
    return data, bool(decoder.unconsumed_tail)


async def _through_httpx(
    client: httpx.AsyncClient,
    method: str,
    url: str | httpx.URL,
    headers: Mapping[str, str] | None,
    params: Mapping[str, str] | None,
    content: bytes | None,
    limit: int,
    follow_redirects: bool,
    sni_hostname: str,
) -> Answer:
    request = client.build_request(
        method,
        url,
        headers=headers,
        params=params,
        content=content,
        extensions={"sni_hostname": sni_hostname} if sni_hostname else None,
    )
    response = await client.send(request, stream=True, follow_redirects=follow_redirects)
    try:
        body, truncated = await read_within(response.aiter_bytes(), limit)
    finally:
        await response.aclose()
    return Answer(
        status=response.status_code,
        raw_headers=list(response.headers.raw),
        body=body,
        method=method,
        url=response.request.url,
        reason=response.reason_phrase,
        truncated=truncated,
    )
