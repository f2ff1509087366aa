from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from argocd_image_updater.config.durations import (
    DurationError,
    duration_from_env,
    format_go_duration,
    format_go_duration_ns,
    parse_go_duration,
    parse_go_duration_ns,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2m", timedelta(minutes=2)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("3s", timedelta(seconds=3)),
        ("500ms", timedelta(milliseconds=500)),
        ("1.5h", timedelta(hours=1, minutes=30)),
        ("0", timedelta(0)),
        ("-0", timedelta(0)),
        ("+5s", timedelta(seconds=5)),
        ("-3s", timedelta(seconds=-3)),
        ("-1.5m", timedelta(seconds=-90)),
        (".5s", timedelta(milliseconds=500)),
        ("1.s", timedelta(seconds=1)),
        ("1h2m3.25s", timedelta(hours=1, minutes=2, seconds=3.25)),
        ("5h", timedelta(hours=5)),
        ("10us", timedelta(microseconds=10)),
        ("10µs", timedelta(microseconds=10)),
        ("10μs", timedelta(microseconds=10)),
        ("1500ns", timedelta(microseconds=1)),
        ("500ns", timedelta(0)),
        (" 30s\n", timedelta(seconds=30)),
    ],
)
def test_parse_go_duration(text: str, expected: timedelta) -> None:
    assert parse_go_duration(text) == expected


def test_parse_keeps_nanoseconds_when_asked() -> None:
    assert parse_go_duration_ns("1.5µs") == 1500
    assert parse_go_duration_ns("100ns") == 100
    assert parse_go_duration_ns("9223372036854775807ns") == (1 << 63) - 1
    assert parse_go_duration_ns("-9223372036854775808ns") == -(1 << 63)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "invalid duration ''"),
        ("abc", "invalid duration 'abc'"),
        ("-", "invalid duration '-'"),
        (".s", "invalid duration '.s'"),
        ("1", "missing unit in duration '1'"),
        ("1.5.5s", "missing unit in duration '1.5.5s'"),
        ("2m3", "missing unit in duration '2m3'"),
        ("1x", "unknown unit 'x' in duration '1x'"),
        ("3 s", "unknown unit ' s' in duration '3 s'"),
        ("1d", "unknown unit 'd' in duration '1d'"),
        ("9223372036854775808ns", "out of range"),
        ("3000000h", "out of range"),
    ],
)
def test_parse_errors_name_the_text(text: str, fragment: str) -> None:
    with pytest.raises(DurationError) as info:
        parse_go_duration(text)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("td", "expected"),
    [
        (timedelta(0), "0s"),
        (timedelta(seconds=1), "1s"),
        (timedelta(minutes=1), "1m0s"),
        (timedelta(hours=1), "1h0m0s"),
        (timedelta(hours=1, minutes=30), "1h30m0s"),
        (timedelta(hours=24), "24h0m0s"),
        (timedelta(minutes=2), "2m0s"),
        (timedelta(seconds=1.5), "1.5s"),
        (timedelta(milliseconds=500), "500ms"),
        (timedelta(microseconds=1500), "1.5ms"),
        (timedelta(microseconds=7), "7µs"),
        (timedelta(minutes=-1), "-1m0s"),
        (timedelta(minutes=1, microseconds=250), "1m0.00025s"),
    ],
)
def test_format_go_duration(td: timedelta, expected: str) -> None:
    assert format_go_duration(td) == expected


def test_format_below_a_microsecond() -> None:
    assert format_go_duration_ns(1) == "1ns"
    assert format_go_duration_ns(1500) == "1.5µs"
    assert format_go_duration_ns(-999) == "-999ns"


@given(st.integers(min_value=-(1 << 63) + 1, max_value=(1 << 63) - 1))
def test_format_then_parse_round_trips(ns: int) -> None:
    assert parse_go_duration_ns(format_go_duration_ns(ns)) == ns


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"IVL": "1m"}, timedelta(minutes=1)),
        ({"IVL": ""}, timedelta(minutes=2)),
        ({}, timedelta(minutes=2)),
        ({"IVL": "bad format"}, timedelta(minutes=2)),
        ({"IVL": "0"}, timedelta(0)),
    ],
)
def test_duration_from_env(env: dict[str, str], expected: timedelta) -> None:
    assert duration_from_env("IVL", timedelta(minutes=2), env) == expected
