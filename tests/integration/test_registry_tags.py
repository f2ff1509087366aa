"""Tag listing through a misbehaving proxy: pagination, retries, truncation, bad JSON."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from argocd_image_updater.model.retry import RetryPolicy
from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater.registry.client import RegistryClient
from argocd_image_updater.registry.errors import (
    RegistryProtocolError,
    RegistryUnavailable,
    RepositoryNotFound,
)
from argocd_image_updater_testing.push import ImagePusher

FAST = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02)
TAGS = [f"1.{i}.0" for i in range(7)]
P = "argocd_image_updater_"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(P + name, labels) or 0.0


@pytest.fixture
async def tagged_repo(registry, repo):
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_tags(repo, TAGS, datetime(2024, 1, 1, tzinfo=UTC), timedelta(hours=1))
    return repo


@pytest.mark.parametrize("absolute", [False, True])
async def test_pagination_follows_link_headers(
    absolute, registry, tagged_repo, proxy, endpoint_for
):
    p = await proxy(registry)
    p.paginate(3, absolute_links=absolute)
    async with RegistryClient(endpoint_for(p)) as client:
        tags = await client.list_tags(tagged_repo)
    assert sorted(tags) == sorted(TAGS)
    assert p.counts["tags"] == 3
    assert [path for _, path, _ in p.log] == [f"/v2/{tagged_repo}/tags/list"] * 3


async def test_truncated_page_fails_the_listing_never_partial(
    registry, tagged_repo, proxy, endpoint_for
):
    p = await proxy(registry)
    p.paginate(3)
    p.truncate(kind="tags", after=1, times=100)  # page 2 and later are cut short
    async with RegistryClient(endpoint_for(p), retry=FAST) as client:
        with pytest.raises(RegistryProtocolError) as err:
            await client.list_tags(tagged_repo)
    message = str(err.value)
    assert "page 2 is not valid JSON" in message
    assert p.host in message and tagged_repo in message


async def test_dropped_connection_is_retried(registry, tagged_repo, proxy, endpoint_for):
    p = await proxy(registry)
    p.paginate(3)
    p.drop(kind="tags", after=1, times=1)
    async with RegistryClient(endpoint_for(p), retry=FAST) as client:
        tags = await client.list_tags(tagged_repo)
    assert sorted(tags) == sorted(TAGS)
    assert p.counts["tags"] == 4  # page 2 twice


async def test_persistently_dropped_connection_is_unavailable(
    registry, tagged_repo, proxy, endpoint_for
):
    p = await proxy(registry)
    p.drop(kind="tags", times=100)
    async with RegistryClient(endpoint_for(p), retry=FAST) as client:
        with pytest.raises(RegistryUnavailable) as err:
            await client.list_tags(tagged_repo)
    assert p.counts["tags"] == FAST.attempts
    assert "sent a malformed or cut-off answer" in str(err.value)
    assert tagged_repo in str(err.value)


async def test_429_retry_after_is_honoured(registry, tagged_repo, proxy, endpoint_for):
    p = await proxy(registry)
    p.fail(429, kind="tags", times=1, retry_after="1")
    policy = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02)
    async with RegistryClient(endpoint_for(p), retry=policy) as client:
        start = time.monotonic()
        tags = await client.list_tags(tagged_repo)
        elapsed = time.monotonic() - start
    assert sorted(tags) == sorted(TAGS)
    assert [status for _, _, status in p.log] == [429, 200]
    assert elapsed >= 1.0  # the header's second, not the 10 ms backoff


async def test_retry_after_is_capped(registry, tagged_repo, proxy, endpoint_for):
    p = await proxy(registry)
    p.fail(429, kind="tags", times=1, retry_after="3600")
    policy = RetryPolicy(attempts=2, base_delay=0.01, max_retry_after=0.05)
    async with RegistryClient(endpoint_for(p), retry=policy) as client:
        assert sorted(await client.list_tags(tagged_repo)) == sorted(TAGS)


async def test_5xx_then_success_and_metrics(registry, tagged_repo, proxy, endpoint_for):
    p = await proxy(registry)
    p.fail(503, kind="tags", times=2)
    endpoint = endpoint_for(p)
    host = endpoint.host
    requests_before = sample("registry_requests_total", registry=host)
    failed_before = sample("registry_requests_failed_total", registry=host)
    async with RegistryClient(endpoint, retry=FAST) as client:
        assert sorted(await client.list_tags(tagged_repo)) == sorted(TAGS)
    assert [status for _, _, status in p.log] == [503, 503, 200]
    assert sample("registry_requests_total", registry=host) - requests_before == 3
    assert sample("registry_requests_failed_total", registry=host) - failed_before == 2
    responses = "registry_responses_total"
    assert sample(responses, registry=host, kind="tags", status="503") == 2
    assert sample(responses, registry=host, kind="tags", status="200") == 1
    assert sample("registry_request_duration_seconds_count", registry=host, kind="tags") == 3


async def test_persistent_5xx_is_unavailable(registry, tagged_repo, proxy, endpoint_for):
    p = await proxy(registry)
    p.fail(502, kind="tags", times=100)
    async with RegistryClient(endpoint_for(p), retry=FAST) as client:
        with pytest.raises(RegistryUnavailable) as err:
            await client.list_tags(tagged_repo)
    assert p.counts["tags"] == FAST.attempts
    assert "HTTP 502 after 3 attempts" in str(err.value)
    assert err.value.repository == tagged_repo


async def test_malformed_json_names_registry_and_repository(
    registry, tagged_repo, proxy, endpoint_for
):
    p = await proxy(registry)
    p.corrupt(kind="tags", body=b'{"name": "x", "tags": [1, 2')
    async with RegistryClient(endpoint_for(p), retry=FAST) as client:
        with pytest.raises(RegistryProtocolError) as err:
            await client.list_tags(tagged_repo)
    assert err.value.registry == p.host
    assert err.value.repository == tagged_repo
    assert f"registry {p.host}, repository '{tagged_repo}'" in str(err.value)


async def test_tags_not_a_string_list_is_protocol_error(registry, tagged_repo, proxy, endpoint_for):
    p = await proxy(registry)
    p.corrupt(kind="tags", body=b'{"name": "x", "tags": [1, 2]}')
    async with RegistryClient(endpoint_for(p)) as client:
        with pytest.raises(RegistryProtocolError, match="no 'tags' string list"):
            await client.list_tags(tagged_repo)


async def test_unknown_repository(registry, endpoint_for, repo):
    async with RegistryClient(endpoint_for(registry)) as client:
        with pytest.raises(RepositoryNotFound) as err:
            await client.list_tags(repo)
    assert f"repository '{repo}' not found" in str(err.value)


async def test_ping_of_non_registry_names_the_endpoint(registry, proxy, endpoint_for):
    p = await proxy(registry)
    p.fail(500, kind="ping", times=100)
    async with RegistryClient(endpoint_for(p), retry=FAST) as client:
        with pytest.raises(RegistryUnavailable, match="does not seem to be a valid v2 Docker"):
            await client.ping()
    p.reset()
    p.fail(404, kind="ping", times=1)
    async with RegistryClient(endpoint_for(p), retry=FAST) as client:
        with pytest.raises(RegistryProtocolError, match="does not seem to be a valid v2 Docker"):
            await client.ping()


async def test_connection_refused_is_unavailable(endpoint_for, repo):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    async with RegistryClient(endpoint_for(f"http://127.0.0.1:{port}"), retry=FAST) as client:
        with pytest.raises(RegistryUnavailable, match="could not be reached"):
            await client.list_tags(repo)
