"""The scheduler gates' keys for requests that must wait (retry backoff)."""

from __future__ import annotations

import time

import scrapy
from scrapy.utils.test import get_crawler

from scrapy_cdp_pool import Addon
from scrapy_cdp_pool.runtime import runtime_of
from scrapy_cdp_pool.scheduling.gates import (
    gate_key,
    not_before_of,
    not_before_problem,
    not_before_suffix,
    split_key,
)


def test_a_request_not_to_start_yet_has_a_gate_of_its_own() -> None:
    later = time.time() + 30
    request = scrapy.Request(
        "http://example.com/a", meta={"cdp_profile": "alice", "cdp_not_before": later}
    )
    key = gate_key(request)
    assert key.startswith("alice|example.com|@")
    assert split_key(key) == ("alice", "example.com")
    when = not_before_of(key)
    assert when is not None
    assert later <= when < later + 0.1  # rounded up: never early


def test_a_past_or_bad_not_before_changes_nothing() -> None:
    for value in (time.time() - 1, "tomorrow", None, float("inf"), float("nan"), 10**400, True):
        request = scrapy.Request("http://example.com/a", meta={"cdp_not_before": value})
        assert gate_key(request) == "|example.com"
        assert not_before_of(gate_key(request)) is None
    assert not_before_of("odd|@name|example.com") is None


def test_not_before_problems() -> None:
    now = 1_700_000_000.0
    assert not_before_problem(None, 60, now) is None
    assert not_before_problem(now + 60, 60, now) is None
    assert not_before_problem(now - 3600, 60, now) is None  # in the past: starts now
    assert not_before_problem(0, 60, now) is None
    for value in (float("inf"), float("-inf"), float("nan"), 10**400):
        assert "finite" in (not_before_problem(value, 60, now) or "")
    assert "negative" in (not_before_problem(-1, 60, now) or "")
    assert "(a number)" in (not_before_problem("soon", 60, now) or "")
    assert "(a number)" in (not_before_problem(False, 60, now) or "")
    late = not_before_problem(now * 1000, 60, now)
    assert late is not None
    assert "CDP_POOL_RETRY_BACKOFF_MAX_SECONDS = 60 s" in late
    assert not_before_suffix(float("inf")) == ""
    assert not_before_of("|example.com|@1e12") == 1e12


def test_a_gate_further_than_any_valid_wait_is_open() -> None:
    """A JOBDIR queue stored before values were checked may hold a gate for
    a time far off (milliseconds given as seconds): it does not hold its
    request for ever; the request then fails by name once handed out."""
    crawler = get_crawler(
        settings_dict={"CDP_POOL_RETRY_BACKOFF_MAX_SECONDS": 60, "ADDONS": {Addon: 0}}
    )
    gates = runtime_of(crawler).gates
    assert gates.is_open(f"|example.com|@{time.time() * 1000:.1f}")
    assert gates.is_open("|example.com|@1.0")  # long past
