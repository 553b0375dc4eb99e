"""Retry backoff, host pauses and Retry-After parsing (pure functions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from scrapy_cdp_pool.resilience.backoff import backoff_delay, parse_retry_after, pause_delay


def test_backoff_doubles_with_jitter_in_the_upper_half_and_is_capped() -> None:
    for attempt, step in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (9, 10.0)]:
        delays = [backoff_delay(attempt, 1.0, 10.0) for _ in range(200)]
        assert all(step / 2 <= d <= step for d in delays), (attempt, min(delays), max(delays))
        assert len(set(delays)) > 1  # jittered
    assert [pause_delay(n, 0.5, 3.0) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]


def test_retry_after_seconds_and_http_dates() -> None:
    now = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after(b"2", now) == 2.0
    assert parse_retry_after(" 120 ", now) == 120.0
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(later, now) == 30.0
    assert parse_retry_after("Tue, 01 Jan 2030 12:00:05 -0000", now) == 5.0
    assert parse_retry_after("Mon, 31 Dec 2029 00:00:00 GMT", now) == 0.0  # past
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after("-1", now) is None
    assert parse_retry_after(None, now) is None
