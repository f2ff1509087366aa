"""When and how long to wait before retrying an HTTP request (``model.retry``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from argocd_image_updater.model.retry import RetryPolicy, parse_retry_after


def test_retry_after_seconds_and_dates():
    now = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("1") == 1.0
    assert parse_retry_after(" 120 ") == 120.0
    assert parse_retry_after("Mon, 01 Jan 2024 12:00:30 GMT", now) == 30.0
    assert parse_retry_after("Mon, 01 Jan 2024 11:00:00 GMT", now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("-5") is None


def test_retry_delay_honours_and_caps_retry_after_and_backs_off():
    policy = RetryPolicy(attempts=5, base_delay=0.5, max_delay=4.0, max_retry_after=10.0)
    assert policy.delay(0, "3") == 3.0
    assert policy.delay(0, "3600") == 10.0
    for retry, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (6, 4.0)]:
        delay = policy.delay(retry, None)
        assert ceiling / 2 <= delay <= ceiling
    with pytest.raises(ValueError, match="at least 1"):
        RetryPolicy(attempts=0)


def test_retry_backoff_grows_and_is_bounded():
    policy = RetryPolicy(base_delay=1.0, max_delay=3.0)
    assert all(policy.backoff(r) <= 3.0 for r in range(10))
    assert timedelta(seconds=policy.backoff(0)) <= timedelta(seconds=1)
