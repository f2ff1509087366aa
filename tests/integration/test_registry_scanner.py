"""The registry scan stage against a real registry behind a counting proxy."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from argocd_image_updater.model.platform import Platform
from argocd_image_updater.model.registry import TagSortMode
from argocd_image_updater.model.retry import RetryPolicy
from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater.registry.errors import RegistryAuthError
from argocd_image_updater.registry.revalidate import Revalidation
from argocd_image_updater.registry.scanner import Scanner, ScanRequest
from argocd_image_updater_testing.push import ImagePusher

START = datetime(2024, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
FAST = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.02)
AMD64 = Platform("linux", "amd64")


class Anonymous:
    """Credential source without credentials, under a given key."""

    def __init__(self, key: str) -> None:
        self._key = key

    @property
    def key(self) -> str:
        return self._key

    async def get(self) -> None:
        return None

    def invalidate(self) -> bool:
        return False


@pytest.fixture
async def five_tags(registry, repo) -> dict[str, str]:
    async with ImagePusher(registry.url) as pusher:
        return await pusher.push_tags(repo, [f"1.{i}" for i in range(5)], START, HOUR)


async def test_scan_without_metadata_lists_tags_only(
    registry, repo, five_tags, proxy, endpoint_for
):
    p = await proxy(registry)
    async with Scanner() as scanner:
        result = await scanner.scan(ScanRequest(endpoint_for(p), repo))
        assert scanner.stats == {"tags": 1}
    assert sorted(t.name for t in result.tags) == sorted(five_tags)
    assert all(not t.has_metadata and t.digest == "" for t in result.tags)
    assert result.order_hint is None
    assert dict(p.counts) == {"tags": 1}


NO_ROTATION = Revalidation(newest=1, rotate=0)


async def test_newest_build_second_scan_fetches_no_manifest_or_config(
    registry, repo, five_tags, proxy, endpoint_for
):
    p = await proxy(registry)
    request = ScanRequest(endpoint_for(p), repo, metadata=True)
    async with Scanner(revalidation=NO_ROTATION) as scanner:
        first = await scanner.scan(request)
        assert dict(p.counts) == {"tags": 1, "manifest": 5, "blob": 5}  # the minimum
        p.reset()
        second = await scanner.scan(request)
        # only the newest build, the tag that wins now, is asked about again
        assert dict(p.counts) == {"tags": 1, "manifest_head": 1}
        assert p.log[-1] == ("HEAD", f"/v2/{repo}/manifests/1.4", 200)
        assert scanner.stats == {"tags": 2, "manifest": 5, "blob": 5, "manifest_head": 1}
    assert first == second
    by_name = {t.name: t for t in first.tags}
    for i in range(5):
        tag = by_name[f"1.{i}"]
        assert tag.digest == five_tags[f"1.{i}"]
        (image,) = tag.images
        assert image.platform == AMD64
        assert image.digest == tag.digest
        assert image.created == START + i * HOUR


async def test_moved_candidate_tag_is_noticed_in_the_next_scan(
    registry, repo, five_tags, proxy, endpoint_for
):
    p = await proxy(registry)
    request = ScanRequest(endpoint_for(p), repo, metadata=True)
    async with Scanner(revalidation=NO_ROTATION) as scanner:
        await scanner.scan(request)
        async with ImagePusher(registry.url) as pusher:
            moved = await pusher.push_image(repo, "1.4", created=START + 100 * HOUR)
        p.reset()
        result = await scanner.scan(request)
    assert dict(p.counts) == {"tags": 1, "manifest_head": 1, "manifest": 1, "blob": 1}
    assert ("GET", f"/v2/{repo}/manifests/{moved}", 200) in p.log
    tag = next(t for t in result.tags if t.name == "1.4")
    assert tag.digest == moved
    assert tag.images[0].created == START + 100 * HOUR


async def test_other_known_tags_are_checked_in_turn(registry, repo, five_tags, proxy, endpoint_for):
    p = await proxy(registry)
    request = ScanRequest(endpoint_for(p), repo, metadata=True)
    async with Scanner(revalidation=Revalidation(newest=1, rotate=1)) as scanner:
        await scanner.scan(request)
        async with ImagePusher(registry.url) as pusher:
            moved = await pusher.push_image(repo, "1.1", created=START + 100 * HOUR)
        heads: list[str] = []
        noticed = None
        for _ in range(4):  # four other tags, one per scan: the moved one gets its turn
            p.reset()
            result = await scanner.scan(request)
            assert p.counts["tags"] == 1 and p.counts["manifest_head"] == 2
            heads += [path for method, path, _ in p.log if method == "HEAD"]
            tag = next(t for t in result.tags if t.name == "1.1")
            if noticed is None and tag.digest == moved:
                noticed = tag
    assert f"/v2/{repo}/manifests/1.1" in heads
    assert noticed is not None and noticed.images[0].created == START + 100 * HOUR


async def test_a_forgotten_tag_is_fetched_afresh(registry, repo, five_tags, proxy, endpoint_for):
    p = await proxy(registry)
    request = ScanRequest(endpoint_for(p), repo, metadata=True)
    async with Scanner(revalidation=NO_ROTATION) as scanner:
        await scanner.scan(request)
        async with ImagePusher(registry.url) as pusher:
            moved = await pusher.push_image(repo, "1.2", created=START + 100 * HOUR)
        scanner.forget_tags(repo, ["1.2"])  # what a registry webhook for 1.2 does
        p.reset()
        result = await scanner.scan(request)
    assert dict(p.counts) == {"tags": 1, "manifest_head": 1, "manifest": 1, "blob": 1}
    assert ("GET", f"/v2/{repo}/manifests/1.2", 200) in p.log
    assert next(t for t in result.tags if t.name == "1.2").digest == moved


async def test_steady_state_requests_stay_within_a_tenth_of_the_minimum(
    registry, proxy, endpoint_for
):
    repos = [f"test/r{uuid.uuid4().hex[:12]}" for _ in range(4)]
    async with ImagePusher(registry.url) as pusher:
        for repo in repos:
            await pusher.push_tags(repo, [f"1.{i}" for i in range(5)], START, HOUR)
    p = await proxy(registry)
    requests = [ScanRequest(endpoint_for(p), repo, metadata=True) for repo in repos]
    scans = 20
    async with Scanner() as scanner:  # the default schedule
        for request in requests:
            await scanner.scan(request)
        p.reset()
        for _ in range(scans):
            for request in requests:
                await scanner.scan(request)
    # minimum per scan: the tag list and the current newest build's digest
    minimum = scans * len(repos) * 2
    total = sum(p.counts.values())
    assert set(p.counts) == {"tags", "manifest_head"}
    assert minimum < total <= 1.1 * minimum


async def test_index_children_fetched_only_for_wanted_platforms(
    registry, repo, proxy, endpoint_for
):
    arm = Platform("linux", "arm", "v7")
    builds = [(AMD64, START), (Platform("linux", "arm64"), START + HOUR), (arm, START + 2 * HOUR)]
    async with ImagePusher(registry.url) as pusher:
        digest = await pusher.push_index(repo, "multi", builds, oci=True, labels={"a": "b"})
    p = await proxy(registry)
    wanted = (Platform("linux", "arm"),)  # os/arch matches any variant
    async with Scanner() as scanner:
        result = await scanner.scan(
            ScanRequest(endpoint_for(p), repo, metadata=True, platforms=wanted)
        )
    assert dict(p.counts) == {"tags": 1, "manifest": 2, "blob": 1}
    (tag,) = result.tags
    assert tag.digest == digest
    assert [i.platform for i in tag.images] == [p for p, _ in builds]
    assert [i.created for i in tag.images] == [None, None, START + 2 * HOUR]
    assert dict(tag.images[2].labels) == {"a": "b"}
    assert all(i.digest.startswith("sha256:") and i.digest != digest for i in tag.images)


async def test_digest_strategy_always_asks_the_registry(registry, repo, proxy, endpoint_for):
    async with ImagePusher(registry.url) as pusher:
        old = await pusher.push_image(repo, "latest", created=START)
        await pusher.push_image(repo, "other", created=START)
    p = await proxy(registry)
    request = ScanRequest(
        endpoint_for(p), repo, metadata=True, only_tags=frozenset({"latest", "gone"})
    )
    async with Scanner() as scanner:
        first = await scanner.scan(request)
        async with ImagePusher(registry.url) as pusher:
            new = await pusher.push_image(repo, "latest", created=START + HOUR)
        second = await scanner.scan(request)
    assert [(t.name, t.digest) for t in first.tags] == [("latest", old)]
    assert [(t.name, t.digest) for t in second.tags] == [("latest", new)]
    assert second.tags[0].images[0].created == START + HOUR


async def test_concurrent_scans_share_one_tag_listing(
    registry, repo, five_tags, proxy, endpoint_for
):
    p = await proxy(registry)
    p.latency = 0.05  # keep the listing in flight while the other scans arrive
    endpoint = endpoint_for(p)
    async with Scanner() as scanner:
        results = await asyncio.gather(
            *(scanner.scan(ScanRequest(endpoint, repo)) for _ in range(10))
        )
        assert p.counts["tags"] == 1
        # A different credential source never shares a listing.
        await asyncio.gather(
            scanner.scan(ScanRequest(endpoint, repo, credentials=Anonymous("env:A"))),
            scanner.scan(ScanRequest(endpoint, repo, credentials=Anonymous("env:B"))),
        )
        assert p.counts["tags"] == 3
    assert len({r.tags for r in results}) == 1


async def test_tag_list_shared_within_a_round_and_listed_again_by_the_next(
    registry, repo, five_tags, proxy, endpoint_for
):
    p = await proxy(registry)
    endpoint = endpoint_for(p)
    async with Scanner() as scanner:
        cycle = scanner.new_round()
        await scanner.scan(ScanRequest(endpoint, repo), cycle)
        # Another scan of the same repository in the same cycle (other metadata needs).
        await scanner.scan(ScanRequest(endpoint, repo, metadata=True), cycle)
        assert p.counts["tags"] == 1
        async with ImagePusher(registry.url) as pusher:
            await pusher.push_image(repo, "2.0", created=START + 10 * HOUR)
        result = await scanner.scan(ScanRequest(endpoint, repo), scanner.new_round())
        assert p.counts["tags"] == 2
    assert "2.0" in {t.name for t in result.tags}


@pytest.mark.parametrize("mode", [TagSortMode.LATEST_FIRST, TagSortMode.LATEST_LAST])
async def test_time_sorted_registry_gets_order_hint_and_no_metadata(
    mode, registry, repo, five_tags, proxy, endpoint_for
):
    p = await proxy(registry)
    endpoint = endpoint_for(p, tag_sort_mode=mode)
    async with Scanner() as scanner:
        result = await scanner.scan(ScanRequest(endpoint, repo, metadata=True))
    assert dict(p.counts) == {"tags": 1}
    names = [t.name for t in result.tags]
    assert result.order_hint is not None
    expected = [5 - i for i in range(5)] if mode is TagSortMode.LATEST_FIRST else list(range(5))
    assert [result.order_hint[n] for n in names] == expected


async def test_default_namespace_is_applied(registry, proxy, endpoint_for):
    name = f"n{uuid.uuid4().hex[:10]}"
    ns = "libtest"
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(f"{ns}/{name}", "1.0", created=START)
    p = await proxy(registry)
    async with Scanner() as scanner:
        result = await scanner.scan(ScanRequest(endpoint_for(p, default_ns=ns), name))
    assert [t.name for t in result.tags] == ["1.0"]
    assert p.log[0][1] == f"/v2/{ns}/{name}/tags/list"


async def test_vanished_tag_is_skipped_other_errors_fail_the_scan(
    registry, repo, five_tags, proxy, endpoint_for
):
    p = await proxy(registry)
    p.fail(404, kind="manifest", times=1, body=b'{"errors": [{"code": "MANIFEST_UNKNOWN"}]}')
    async with Scanner(retry=FAST) as scanner:
        result = await scanner.scan(ScanRequest(endpoint_for(p), repo, metadata=True))
        assert len(result.tags) == 4
    p.reset()
    p.fail(403, kind="blob", times=1, body=b'{"errors": [{"code": "DENIED"}]}')
    async with Scanner(retry=FAST) as scanner:
        with pytest.raises(RegistryAuthError, match=repo):
            await scanner.scan(ScanRequest(endpoint_for(p), repo, metadata=True))
    assert p.counts["blob"] >= 1


async def test_per_registry_concurrency_is_bounded(registry, repo, proxy, endpoint_for):
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_tags(repo, [f"2.{i}" for i in range(9)], START, HOUR)
    p = await proxy(registry)
    p.latency = 0.02
    async with Scanner(registry_concurrency=3) as scanner:
        result = await scanner.scan(ScanRequest(endpoint_for(p), repo, metadata=True))
    assert len(result.tags) == 9
    assert p.max_in_flight == 3


async def test_rate_limit_paces_requests_and_counts_waits(
    registry, repo, five_tags, proxy, endpoint_for
):
    p = await proxy(registry)
    endpoint = endpoint_for(p, limit=100.0)
    waits_before = (
        REGISTRY.get_sample_value(
            "argocd_image_updater_registry_rate_limit_waits_total", {"registry": p.host}
        )
        or 0.0
    )
    async with Scanner() as scanner:
        await scanner.scan(ScanRequest(endpoint, repo, metadata=True))
    waits = REGISTRY.get_sample_value(
        "argocd_image_updater_registry_rate_limit_waits_total", {"registry": p.host}
    )
    # 11 requests at 100/s; at least the 4 manifests that went out together with a fifth had
    # to wait for their slot.
    assert waits is not None and waits - waits_before >= 4
