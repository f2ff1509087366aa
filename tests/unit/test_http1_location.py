"""Where ``http1.fetch`` sends a request: the location it splits from a URL string on a known
origin is the one httpx parses (connection key, request target, Host), for any URL."""

from __future__ import annotations

import httpx
from hypothesis import given
from hypothesis import strategies as st

from argocd_image_updater.http1.client import _Direct, _location
from argocd_image_updater.http1.transport import AsyncHTTP1Transport

ORIGINS = (
    "http://registry.example:5000",
    "https://Registry.Example",
    "http://127.0.0.1:8080",
    "https://[::1]:8443",
    "HTTP://registry.example",
    "http://registry.example?x",
    "http://user@registry.example",
    "ftp://registry.example",
    "http://",
)
PATH_CHARS = "az09-._~/?&=:@!$'()*+,;%#[] \\\"<>^`{|}é"


def _httpx_location(url: str) -> object:
    try:
        return _location(httpx.URL(url), "")
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        return type(exc)


def _located(direct: _Direct, url: str) -> object:
    try:
        return direct.locate(url, "")
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        return type(exc)


@given(
    st.lists(
        st.tuples(st.sampled_from(ORIGINS), st.text(PATH_CHARS, max_size=20)),
        min_size=1,
        max_size=8,
    )
)
def test_a_url_is_located_as_httpx_parses_it(urls: list[tuple[str, str]]) -> None:
    direct = _Direct(AsyncHTTP1Transport())
    for origin, path in urls:
        url = f"{origin}/{path}"
        assert _located(direct, url) == _httpx_location(url)


def test_a_known_origin_is_not_parsed_again() -> None:
    direct = _Direct(AsyncHTTP1Transport())
    direct.locate("http://registry.example:5000/v2/", "")
    assert list(direct.origins) == ["http://registry.example:5000"]
    key, target, host = direct.locate("http://registry.example:5000/v2/a/b/tags/list?n=5", "")
    assert (key, target, host) == (
        (b"http", "registry.example", 5000, ""),
        b"/v2/a/b/tags/list?n=5",
        b"registry.example:5000",
    )
    assert direct.locate("http://registry.example:5000/v2/x y/", "")[1] == b"/v2/x%20y/"
