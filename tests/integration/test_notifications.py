"""Notifications delivered over HTTP to real receivers (small aiohttp servers): exact payloads
and signatures, one message per target per cycle, filters, retries after 500 and 429 (with
``Retry-After``), a full queue, and receivers that refuse connections or never answer."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import io
import logging
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from waiting import eventually

from argocd_image_updater.config.notifications import Notifications
from argocd_image_updater.config.secrets import FileSecretReader
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.retry import RetryPolicy
from argocd_image_updater.notify import metrics
from argocd_image_updater.notify.dispatcher import Notifier
from argocd_image_updater.observe.log import TextFormatter
from argocd_image_updater.pipeline.records import AppOutcome, Collected, CRState, CycleResult
from argocd_image_updater.plan.model import AppPlan, ImageChange, ImageResult, Outcome
from argocd_image_updater_testing.receivers import NotificationReceiver, unused_port

NS = "shop"
SIGNING_KEY = "s3cr3t-signing-key"


@pytest.fixture
async def receiver() -> AsyncIterator[NotificationReceiver]:
    async with NotificationReceiver() as server:
        yield server


def write_secret(root: Path, namespace: str, name: str, data: dict[str, str]) -> None:
    directory = root / namespace / name
    directory.mkdir(parents=True, exist_ok=True)
    for key, value in data.items():
        (directory / key).write_text(value)


def change(alias: str, image: str, old: str, new: str) -> ImageChange:
    return ImageChange(alias, ImageRef.parse(image), old, new, "")


def plan(app: str, *changes: ImageChange, errors: tuple[ImageResult, ...] = ()) -> AppPlan:
    results = [
        ImageResult(c.alias, c.image.full_name, None, None, Outcome.UPDATED, "updated", "")
        for c in changes
    ]
    return AppPlan.build(
        app_name=app,
        app_namespace=NS,
        source_path=("spec", "source"),
        source_type="Kustomize",
        results=[*results, *errors],
        changes=changes,
    )


def cr_state(notifications: dict[str, Any] | None, name: str = "shop") -> CRState:
    spec: dict[str, Any] = {"applicationRefs": []}
    if notifications is not None:
        spec["notifications"] = notifications
    return CRState(NS, name, 1, "1", raw={"metadata": {"name": name}, "spec": spec})


def target(name: str, type_: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "urlSecret": {"secretName": "hooks", "key": name}, **extra}


def failed_image(alias: str, reason: str, message: str) -> ImageResult:
    return ImageResult(
        alias, f"example/{alias}", f"example/{alias}:1", None, Outcome.ERROR, reason, message
    )


def two_updates(cr: CRState) -> tuple[Collected, CycleResult]:
    """Two Applications of one ImageUpdater, each with one update written."""
    outcomes = [
        AppOutcome(
            f"{NS}/web",
            plan("web", change("web", "ghcr.io/shop/web:~1.0", "1.0.0", "1.0.1")),
            written=True,
            cr=cr,
            link="https://github.com/shop/deploy/pull/7",
        ),
        AppOutcome(
            f"{NS}/worker",
            plan("worker", change("worker", "ghcr.io/shop/worker", "2.0.0", "2.1.0")),
            written=True,
            cr=cr,
        ),
    ]
    return Collected(crs=[cr]), CycleResult(apps=outcomes)


def notifier(tmp_path: Path, **kwargs: Any) -> Notifier:
    kwargs.setdefault("retry", RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.05))
    return Notifier(FileSecretReader(tmp_path), namespace="argocd", **kwargs)


async def submitted(n: Notifier, collected: Collected, result: CycleResult) -> int:
    queued = n.submit(collected, result, dry_run=False)
    await asyncio.wait_for(n.idle(), 30)
    return queued


def sent(type_: str, event: str) -> float:
    return float(metrics.SENT.labels(type_, event)._value.get())


def failed(type_: str, reason: str) -> float:
    return float(metrics.FAILED.labels(type_, reason)._value.get())


UPDATED_EVENTS = [
    {
        "event": "updated",
        "application": "shop/web",
        "imageUpdater": "shop/shop",
        "alias": "web",
        "image": "ghcr.io/shop/web",
        "from": "1.0.0",
        "to": "1.0.1",
        "reason": "updated",
        "message": "updated from 1.0.0 to 1.0.1",
        "link": "https://github.com/shop/deploy/pull/7",
    },
    {
        "event": "updated",
        "application": "shop/worker",
        "imageUpdater": "shop/shop",
        "alias": "worker",
        "image": "ghcr.io/shop/worker",
        "from": "2.0.0",
        "to": "2.1.0",
        "reason": "updated",
        "message": "updated from 2.0.0 to 2.1.0",
    },
]


async def test_webhook_is_one_signed_message_listing_every_change(
    receiver: NotificationReceiver, tmp_path: Path
) -> None:
    write_secret(tmp_path, NS, "hooks", {"audit": receiver.url, "key": SIGNING_KEY})
    signing = {"secretName": "hooks", "key": "key"}
    cr = cr_state({"targets": [target("audit", "webhook", signingSecret=signing)]})
    n = notifier(tmp_path, clock=lambda: 1767225600.0)
    before = sent("webhook", "updated")
    try:
        assert await submitted(n, *two_updates(cr)) == 1
    finally:
        await n.aclose()

    assert len(receiver.requests) == 1  # two images, one message
    request = receiver.requests[0]
    body = request.json()
    assert body["events"] == UPDATED_EVENTS
    assert body["imageUpdater"] == "shop/shop"
    assert body["source"] == "/argocd-image-updater/namespaces/shop/imageupdaters/shop"
    assert set(body) == {"id", "time", "source", "imageUpdater", "events"}
    assert request.header("Content-Type") == "application/json"
    assert request.header("X-Timestamp") == "1767225600"
    expected = hmac.new(SIGNING_KEY.encode(), b"1767225600." + request.body, hashlib.sha256)
    assert request.header("X-Signature-256") == f"sha256={expected.hexdigest()}"
    assert sent("webhook", "updated") == before + 2


async def test_slack_gets_block_kit_with_a_text_fallback(
    receiver: NotificationReceiver, tmp_path: Path
) -> None:
    write_secret(tmp_path, NS, "hooks", {"chat": receiver.url})
    cr = cr_state({"targets": [target("chat", "slack")]})
    n = notifier(tmp_path)
    try:
        await submitted(n, *two_updates(cr))
    finally:
        await n.aclose()

    assert len(receiver.requests) == 1
    assert receiver.requests[0].header("X-Signature-256") is None
    assert receiver.requests[0].json() == {
        "text": "argocd-image-updater (shop/shop): 2 updated",
        "blocks": [
            {
                "type": "header",
                "text": {
                    "type": "plain_text",
                    "text": "argocd-image-updater (shop/shop): 2 updated",
                },
            },
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": "• *shop/web web*: ghcr.io/shop/web 1.0.0 → 1.0.1 "
                    "(<https://github.com/shop/deploy/pull/7|link>)\n"
                    "• *shop/worker worker*: ghcr.io/shop/worker 2.0.0 → 2.1.0",
                },
            },
        ],
    }


async def test_teams_gets_an_adaptive_card_in_the_attachments_envelope(
    receiver: NotificationReceiver, tmp_path: Path
) -> None:
    write_secret(tmp_path, NS, "hooks", {"chat": receiver.url})
    cr = cr_state({"targets": [target("chat", "teams")]})
    n = notifier(tmp_path)
    try:
        await submitted(n, *two_updates(cr))
    finally:
        await n.aclose()

    body = receiver.requests[0].json()
    assert body["type"] == "message"
    [attachment] = body["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    assert attachment["contentUrl"] is None
    card = attachment["content"]
    assert card["type"] == "AdaptiveCard" and card["version"] == "1.4"
    assert card["$schema"] == "http://adaptivecards.io/schemas/adaptive-card.json"
    assert [block["text"] for block in card["body"]] == [
        "argocd-image-updater (shop/shop): 2 updated",
        "**shop/web web**: ghcr.io/shop/web 1.0.0 → 1.0.1 "
        "([link](https://github.com/shop/deploy/pull/7))",
        "**shop/worker worker**: ghcr.io/shop/worker 2.0.0 → 2.1.0",
    ]
    assert all(block["type"] == "TextBlock" and block["wrap"] for block in card["body"])


async def test_cloudevents_are_structured_one_per_event_kind(
    receiver: NotificationReceiver, tmp_path: Path
) -> None:
    write_secret(tmp_path, NS, "hooks", {"sink": receiver.url})
    cr = cr_state({"targets": [target("sink", "cloudevents")]})
    collected, result = two_updates(cr)
    result.apps[1].plan = plan(
        "worker",
        errors=(failed_image("worker", "registry-error", "registry answered 503"),),
    )
    n = notifier(tmp_path)
    try:
        await submitted(n, collected, result)
    finally:
        await n.aclose()

    assert [r.header("Content-Type") for r in receiver.requests] == [
        "application/cloudevents+json"
    ] * 2
    updated, failure = (r.json() for r in receiver.requests)
    batch_id = updated["id"].removesuffix("-updated")
    for event, kind in ((updated, "updated"), (failure, "failed")):
        assert event["specversion"] == "1.0"
        assert event["type"] == f"io.argoproj.imageupdater.{kind}"
        assert event["id"] == f"{batch_id}-{kind}"
        assert event["source"] == "/argocd-image-updater/namespaces/shop/imageupdaters/shop"
        assert event["subject"] == "shop/shop"
        assert event["datacontenttype"] == "application/json"
        assert event["time"].endswith("Z")
    assert updated["data"] == {"events": UPDATED_EVENTS[:1]}
    assert failure["data"] == {
        "events": [
            {
                "event": "failed",
                "application": "shop/worker",
                "imageUpdater": "shop/shop",
                "alias": "worker",
                "image": "example/worker",
                "from": "example/worker:1",
                "reason": "registry-error",
                "message": "registry answered 503",
            }
        ]
    }


def with_failure(cr: CRState) -> tuple[Collected, CycleResult]:
    """``web`` updated, ``worker``'s signature check failed."""
    collected, result = two_updates(cr)
    result.apps[1].plan = plan(
        "worker",
        errors=(failed_image("worker", "verification-failed", "no signature of sha256:ab"),),
    )
    return collected, result


async def test_filters_choose_the_events_and_a_lasting_failure_is_sent_once(
    receiver: NotificationReceiver, tmp_path: Path
) -> None:
    write_secret(tmp_path, NS, "hooks", {"updates": receiver.url, "failures": receiver.url})
    cr = cr_state(
        {
            "targets": [
                target("updates", "slack", on=["updated"]),
                target("failures", "teams", on=["failed", "verification-failed"]),
            ]
        }
    )
    n = notifier(tmp_path)
    try:
        assert await submitted(n, *with_failure(cr)) == 2
        assert await submitted(n, *with_failure(cr)) == 1  # the failure lasts: not again
        assert await submitted(n, *two_updates(cr)) == 1  # it cleared
        assert await submitted(n, *with_failure(cr)) == 2  # it is back
    finally:
        await n.aclose()

    slack = [r.json()["text"] for r in receiver.requests if "blocks" in r.json()]
    teams = [r.json() for r in receiver.requests if "attachments" in r.json()]
    assert slack == [
        "argocd-image-updater (shop/shop): 1 updated",
        "argocd-image-updater (shop/shop): 1 updated",
        "argocd-image-updater (shop/shop): 2 updated",
        "argocd-image-updater (shop/shop): 1 updated",
    ]
    assert len(teams) == 2
    card = teams[0]["attachments"][0]["content"]
    assert card["body"][0]["text"] == "argocd-image-updater (shop/shop): 1 verification failed"
    assert card["body"][1]["text"] == (
        "**shop/worker worker**: verification failed (verification-failed) — "
        "no signature of sha256:ab"
    )


async def test_the_configmap_default_serves_imageupdaters_without_their_own(
    receiver: NotificationReceiver, tmp_path: Path
) -> None:
    write_secret(tmp_path, "argocd", "defaults", {"all": receiver.url})
    default = Notifications.model_validate(
        {
            "targets": [
                {
                    "name": "all",
                    "type": "slack",
                    "urlSecret": {"secretName": "defaults", "key": "all"},
                }
            ]
        }
    )
    opted_out = cr_state({"targets": []}, name="quiet")
    collected, result = two_updates(cr_state(None))
    result.apps.append(
        AppOutcome(
            f"{NS}/quiet",
            plan("quiet", change("q", "ghcr.io/shop/q", "1", "2")),
            written=True,
            cr=opted_out,
        )
    )
    result.apps.append(
        AppOutcome("legacy/app", plan("app", change("a", "nginx", "1.25", "1.26")), written=True)
    )
    n = notifier(tmp_path, default=lambda: default)
    try:
        assert await submitted(n, collected, result) == 1
    finally:
        await n.aclose()

    [request] = receiver.requests
    text = request.json()["blocks"][1]["text"]["text"]
    assert "shop/web" in text and "shop/worker" in text and "legacy/app" in text
    assert "quiet" not in text
    assert request.json()["text"] == "argocd-image-updater: 3 updated"


async def test_retries_after_500_and_429_honouring_retry_after(
    receiver: NotificationReceiver, tmp_path: Path
) -> None:
    write_secret(tmp_path, NS, "hooks", {"audit": receiver.url, "key": SIGNING_KEY})
    cr = cr_state(
        {
            "targets": [
                target("audit", "webhook", signingSecret={"secretName": "hooks", "key": "key"})
            ]
        }
    )
    receiver.answer(500, (429, {"Retry-After": "7"}), 503)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    retry = RetryPolicy(attempts=5, base_delay=1.0, max_delay=60.0, max_retry_after=300.0)
    n = notifier(tmp_path, retry=retry, sleep=sleep)
    try:
        await submitted(n, *two_updates(cr))
    finally:
        await n.aclose()

    assert len(receiver.requests) == 4
    assert len({r.body for r in receiver.requests}) == 1  # the same message each time
    assert 0.5 <= waits[0] <= 1.0  # backoff with jitter: 1 s ceiling, at least half of it
    assert waits[1] == 7.0  # Retry-After
    assert 2.0 <= waits[2] <= 4.0  # third retry: 4 s ceiling
    assert len(waits) == 3


@contextlib.contextmanager
def log_lines() -> Iterator[io.StringIO]:
    """Every log line of the product as formatted (secrets are masked by the formatter)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(TextFormatter())
    logger = logging.getLogger("argocd_image_updater")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


async def test_a_client_error_is_final_counted_and_logged_without_the_url(
    receiver: NotificationReceiver, tmp_path: Path
) -> None:
    url = receiver.url + "/T0/B0/very-secret-token"
    write_secret(tmp_path, NS, "hooks", {"chat": url})
    cr = cr_state({"targets": [target("chat", "slack")]})
    receiver.answer((404, {}, f"no_service: {url}"))
    before = failed("slack", "rejected")
    n = notifier(tmp_path)
    with log_lines() as lines:
        try:
            await submitted(n, *two_updates(cr))
        finally:
            await n.aclose()
    assert len(receiver.requests) == 1
    assert receiver.requests[0].path == "/hook/T0/B0/very-secret-token"
    assert failed("slack", "rejected") == before + 1
    assert "notification not sent: HTTP 404: no_service: *****" in lines.getvalue()
    assert "very-secret-token" not in lines.getvalue()


async def test_an_unreachable_receiver_is_retried_then_counted(tmp_path: Path) -> None:
    write_secret(tmp_path, NS, "hooks", {"chat": f"http://127.0.0.1:{unused_port()}/hook"})
    cr = cr_state({"targets": [target("chat", "slack")]})
    before = failed("slack", "unreachable")
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    n = notifier(tmp_path, sleep=sleep)
    try:
        await submitted(n, *two_updates(cr))
    finally:
        await n.aclose()
    assert failed("slack", "unreachable") == before + 1
    assert len(waits) == 3  # four attempts


async def test_a_secret_that_cannot_be_read_is_counted(tmp_path: Path) -> None:
    cr = cr_state({"targets": [target("chat", "teams")]})
    before = failed("teams", "secret")
    n = notifier(tmp_path)
    try:
        await submitted(n, *two_updates(cr))
    finally:
        await n.aclose()
    assert failed("teams", "secret") == before + 1


async def test_a_full_queue_drops_its_oldest_message(
    receiver: NotificationReceiver, tmp_path: Path
) -> None:
    write_secret(tmp_path, NS, "hooks", {"chat": receiver.url})
    cr = cr_state({"targets": [target("chat", "slack")]})
    receiver.hang = True
    before = metrics.DROPPED._value.get()
    n = notifier(tmp_path, max_queue=2, timeout=120.0)
    try:
        for _ in range(4):  # the first is in flight, two wait, the third waiting one overflows
            n.submit(*two_updates(cr), dry_run=False)
            await eventually(lambda: len(receiver.requests) == 1, "the first message in flight")
        assert metrics.DROPPED._value.get() == before + 1
        assert n.pending() == 3
    finally:
        await n.aclose(grace=0.1)
    assert metrics.DROPPED._value.get() == before + 4  # and the three left at shutdown


def test_jitter_stays_within_the_backoff_bounds() -> None:
    policy = RetryPolicy(attempts=5, base_delay=1.0, max_delay=60.0)
    rng = random.Random(7)
    for retry in range(8):
        ceiling = min(60.0, 2.0**retry)
        assert ceiling / 2 <= policy.backoff(retry, rng) <= ceiling
