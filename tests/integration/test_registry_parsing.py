"""The registry package's pure parts, with plain values: challenges, tokens, dates,
manifests, caches and pacing (no server needed)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from argocd_image_updater.model.platform import Platform
from argocd_image_updater.model.registry import RegistryEndpoint, TagSortMode
from argocd_image_updater.model.tags import PlatformImage
from argocd_image_updater.registry.auth import (
    Token,
    TokenCache,
    TokenKey,
    TokenResponseError,
    parse_challenges,
    parse_token_response,
    pick_challenge,
    token_scope,
)
from argocd_image_updater.registry.cache import MetadataCache, TagListCache, TagListKey
from argocd_image_updater.registry.client import RegistryClient
from argocd_image_updater.registry.errors import RegistryConfigError
from argocd_image_updater.registry.manifest import (
    DOCKER_MANIFEST,
    OCI_INDEX,
    ManifestFormatError,
    parse_config,
    parse_manifest,
    parse_rfc3339,
    sha256_digest,
)
from argocd_image_updater.registry.ratelimit import RateLimiter
from argocd_image_updater.registry.scanner import order_hint
from argocd_image_updater.registry.singleflight import SingleFlight

DIGEST = "sha256:" + "a" * 64


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- WWW-Authenticate -------------------------------------------------------------------------


def test_bearer_challenge_parameters():
    (challenge,) = parse_challenges(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
        'scope="repository:library/nginx:pull"'
    )
    assert challenge.scheme == "bearer"
    assert challenge.realm == "https://auth.docker.io/token"
    assert challenge.service == "registry.docker.io"
    assert challenge.params["scope"] == "repository:library/nginx:pull"


def test_several_challenges_quoted_commas_and_escapes():
    challenges = parse_challenges(
        'Basic realm="a, \\"quoted\\" realm", Bearer realm=https://x/token , service=svc, '
        "Negotiate abc123=="
    )
    assert [c.scheme for c in challenges] == ["basic", "bearer", "negotiate"]
    assert challenges[0].realm == 'a, "quoted" realm'
    assert challenges[1].realm == "https://x/token"
    assert challenges[1].service == "svc"


def test_pick_prefers_bearer_and_ignores_garbage():
    picked = pick_challenge(['Basic realm="r"', 'Bearer realm="https://t/token"'])
    assert picked is not None and picked.scheme == "bearer"
    assert pick_challenge(['Basic realm="r"']) is not None
    assert pick_challenge(["Negotiate"]) is None
    assert pick_challenge([""]) is None


@pytest.mark.parametrize(
    ("api_url", "actions"),
    [
        ("https://myreg.azurecr.io", "pull,metadata_read,content_read"),
        ("https://registry-1.docker.io", "pull"),
        ("https://ghcr.io", "pull"),
        ("https://quay.io", "pull"),
        ("https://gcr.io", "pull"),
        ("https://harbor.example.com", "pull"),
        ("https://registry.gitlab.com", "pull"),
    ],
)
def test_token_scope_per_registry(api_url, actions):  # EP-14
    assert token_scope(api_url, "team/app") == f"repository:team/app:{actions}"


# --- token responses and the token cache ------------------------------------------------------


def test_token_response_fields():
    assert parse_token_response(b'{"token": "t1", "expires_in": 300}') == Token("t1", 300.0)
    assert parse_token_response(b'{"access_token": "t2"}') == Token("t2", 60.0)
    assert parse_token_response(b'{"token": "t3", "expires_in": true}').expires_in == 60.0
    assert "*****" in repr(Token("secret-token", 1)) and "secret-token" not in repr(
        Token("secret-token", 1)
    )
    for bad in (b"nope", b"[]", b'{"token": ""}', b'{"expires_in": 5}'):
        with pytest.raises(TokenResponseError):
            parse_token_response(bad)


async def test_token_cache_reuses_until_shortly_before_expiry_and_merges_fetches():
    clock = Clock()
    cache = TokenCache(clock)
    fetches = 0
    gate = asyncio.Event()

    async def fetch() -> Token:
        nonlocal fetches
        fetches += 1
        await gate.wait()
        return Token(f"t{fetches}", 60)

    key = TokenKey("https://r", "repository:a:pull", "")
    waiters = [asyncio.ensure_future(cache.get(key, fetch)) for _ in range(5)]
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.gather(*waiters) == ["t1"] * 5
    assert fetches == 1
    clock.now += 54
    assert await cache.get(key, fetch) == "t1"
    clock.now += 2  # 56 s: within the 5 s renewal margin
    assert await cache.get(key, fetch) == "t2"
    cache.forget("https://r", "")
    assert await cache.get(key, fetch) == "t3"
    other = TokenKey("https://r", "repository:a:pull", "env:X")
    assert await cache.get(other, fetch) == "t4"


# --- dates, manifests, configs ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-02T03:04:05Z", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2024-01-02T03:04:05.123456789Z", datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)),
        ("2024-01-02T03:04:05.5+02:00", datetime(2024, 1, 2, 1, 4, 5, 500000, tzinfo=UTC)),
        ("2024-01-02t03:04:05z", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ],
)
def test_rfc3339_with_nanoseconds_and_offsets(text, expected):
    assert parse_rfc3339(text) == expected


@pytest.mark.parametrize("text", ["20240102", "2024-01-02", "2024-13-02T00:00:00Z", "yesterday"])
def test_rfc3339_rejects_other_formats(text):
    with pytest.raises(ManifestFormatError, match=f"created '{text}'"):
        parse_rfc3339(text)


def test_manifest_type_from_header_or_document():
    index = (
        b'{"mediaType": "%s", "manifests": [{"mediaType": "x", "digest": "%s", "size": 3, "platform": {"os": "linux", "architecture": "arm", "variant": "v7"}}]}'
        % (
            OCI_INDEX.encode(),
            DIGEST.encode(),
        )
    )
    parsed = parse_manifest(index, "application/json; charset=utf-8")
    assert parsed.is_index and parsed.digest == sha256_digest(index)
    assert parsed.manifests[0].platform == Platform("linux", "arm", "v7")
    single = b'{"config": {"mediaType": "c", "digest": "%s", "size": 1}}' % DIGEST.encode()
    assert parse_manifest(single, DOCKER_MANIFEST).config is not None


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"{", "not valid JSON"),
        (b"[]", "not a JSON object"),
        (b'{"mediaType": "%s"}' % DOCKER_MANIFEST.encode(), "no 'config'"),
        (b'{"mediaType": "%s"}' % OCI_INDEX.encode(), "no 'manifests' list"),
        (
            b'{"mediaType": "%s", "config": {"digest": "md5:1", "size": 1}}'
            % DOCKER_MANIFEST.encode(),
            "is not sha256",
        ),
        (b'{"schemaVersion": 1}', "unsupported manifest media type"),
    ],
)
def test_bad_manifests_say_what_is_wrong(body, problem):
    with pytest.raises(ManifestFormatError, match=problem):
        parse_manifest(body, "")


def test_config_fields():
    config = parse_config(
        b'{"os": "linux", "architecture": "arm64", "variant": "v8", '
        b'"created": "2024-05-06T07:08:09.000000001Z", "config": {"Labels": {"a": "b"}}}'
    )
    assert config.platform == Platform("linux", "arm64", "v8")
    assert config.created == datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    assert dict(config.labels) == {"a": "b"}
    bare = parse_config(b'{"os": "linux", "architecture": "amd64", "config": {"Labels": null}}')
    assert bare.created is None and dict(bare.labels) == {}
    with pytest.raises(ManifestFormatError, match=r"'config\.Labels' is not an object"):
        parse_config(b'{"config": {"Labels": [1]}}')


# --- time-sorted registries -------------------------------------------------------------------


def test_order_hint_per_sort_mode():  # RC-19
    endpoint = RegistryEndpoint(prefix="r", name="r", api_url="https://r")
    names = ("c", "b", "a")
    assert order_hint(names, endpoint) is None
    first = order_hint(
        names, RegistryEndpoint("r", "r", "https://r", tag_sort_mode=TagSortMode.LATEST_FIRST)
    )
    last = order_hint(
        names, RegistryEndpoint("r", "r", "https://r", tag_sort_mode=TagSortMode.LATEST_LAST)
    )
    assert first == {"c": 3, "b": 2, "a": 1}
    assert last == {"c": 0, "b": 1, "a": 2}


# --- pacing -----------------------------------------------------------------------------------


def test_rate_limiter_spaces_requests_evenly():
    clock = Clock()
    limiter = RateLimiter(10, clock=clock)
    assert [round(limiter.reserve(), 3) for _ in range(4)] == [0.0, 0.1, 0.2, 0.3]
    clock.now += 10  # idle: the next request goes at once
    assert limiter.reserve() == 0.0
    burst = RateLimiter(10, burst=3, clock=clock)
    assert [round(burst.reserve(), 3) for _ in range(5)] == [0.0, 0.0, 0.0, 0.1, 0.2]
    with pytest.raises(ValueError, match="positive"):
        RateLimiter(0)


# --- single-flight and caches -----------------------------------------------------------------


async def test_single_flight_shares_result_and_failure_is_not_kept():
    flight: SingleFlight[str, int] = SingleFlight()
    calls = 0
    gate = asyncio.Event()

    async def failing() -> int:
        nonlocal calls
        calls += 1
        await gate.wait()
        raise RuntimeError("boom")

    waiters = [asyncio.ensure_future(flight.do("k", failing)) for _ in range(3)]
    await asyncio.sleep(0)
    gate.set()
    results = await asyncio.gather(*waiters, return_exceptions=True)
    assert calls == 1 and all(isinstance(r, RuntimeError) for r in results)

    async def ok() -> int:
        return 7

    assert await flight.do("k", ok) == (7, False)
    assert len(flight) == 0


async def test_single_flight_survives_a_cancelled_caller():
    flight: SingleFlight[str, int] = SingleFlight()
    gate = asyncio.Event()

    async def slow() -> int:
        await gate.wait()
        return 1

    first = asyncio.ensure_future(flight.do("k", slow))
    second = asyncio.ensure_future(flight.do("k", slow))
    await asyncio.sleep(0)
    first.cancel()
    gate.set()
    assert await second == (1, True)
    assert first.cancelled()


async def test_tag_list_cache_serves_one_round_only_and_forgets_failures():
    cache = TagListCache()
    key = TagListKey("https://r", "a/b", "")
    calls = 0

    async def fetch() -> list[str]:
        nonlocal calls
        calls += 1
        return ["1.0", f"call{calls}"]

    async def broken() -> list[str]:
        raise RuntimeError("registry down")

    first = cache.new_round()
    assert await cache.get(key, fetch, first) == ("1.0", "call1")
    assert await cache.get(key, fetch, first) == ("1.0", "call1")  # the same round shares
    second = cache.new_round()
    assert await cache.get(key, fetch, second) == ("1.0", "call2")  # a later round lists again
    assert await cache.get(key, fetch, first) == ("1.0", "call2")  # newer than the first round
    third = cache.new_round()
    with pytest.raises(RuntimeError):
        await cache.get(key, broken, third)
    assert await cache.get(key, fetch, third) == ("1.0", "call3")  # a failure is not kept
    assert await cache.get(key, fetch) == ("1.0", "call4")  # no round: nothing finished is reused


async def test_tag_list_cache_round_never_joins_a_listing_started_before_it():
    cache = TagListCache()
    key = TagListKey("https://r", "a/b", "")
    gate = asyncio.Event()
    calls = 0

    async def slow() -> list[str]:
        nonlocal calls
        calls += 1
        number = calls
        await gate.wait()
        return [f"call{number}"]

    early = cache.new_round()
    in_flight = asyncio.ensure_future(cache.get(key, slow, early))
    joined = asyncio.ensure_future(cache.get(key, slow))  # no round: joins the one in flight
    await asyncio.sleep(0)
    late = cache.new_round()  # e.g. a webhook event received while the listing runs
    fresh = asyncio.ensure_future(cache.get(key, slow, late))
    await asyncio.sleep(0)
    gate.set()
    assert await in_flight == ("call1",)
    assert await joined == ("call1",)
    assert await fresh == ("call2",)
    assert calls == 2


async def test_metadata_cache_is_bounded_lru():
    cache = MetadataCache(max_entries=2)
    image = PlatformImage(Platform("linux", "amd64"), DIGEST)
    cache.put("d1", image)
    cache.put("d2", image)
    assert cache.get("d1") is image  # d1 is now the most recently used
    cache.put("d3", image)
    assert cache.get("d2") is None
    assert cache.get("d1") is image and cache.get("d3") is image
    assert len(cache) == 2
    fetched = 0

    async def fetch() -> PlatformImage:
        nonlocal fetched
        fetched += 1
        return image

    await asyncio.gather(*(cache.get_or_fetch("d4", fetch) for _ in range(4)))
    assert fetched == 1


def test_token_scope_ignores_case_and_path_of_azure_host():
    assert token_scope("https://X.AzureCR.io/v2", "a").endswith("metadata_read,content_read")
    assert token_scope("https://azurecr.io.evil.example", "a").endswith(":pull")


@pytest.mark.parametrize("api_url", ["", "registry.example.com", "ftp://registry.example.com"])
def test_api_url_must_be_http_or_https(api_url):  # EP-15
    endpoint = RegistryEndpoint(prefix="r.example", name="Example", api_url=api_url)
    with pytest.raises(RegistryConfigError, match="unsupported protocol scheme") as err:
        RegistryClient(endpoint)
    assert f"api_url '{api_url}' of registry Example" in str(err.value)
