"""The scheduler gates' keys for requests that must wait (retry backoff)."""

from __future__ import annotations

import time

import scrapy

from scrapy_cdp_pool.scheduling.gates import gate_key, not_before_of, split_key


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
    for value in (time.time() - 1, "tomorrow", None):
        request = scrapy.Request("http://example.com/a", meta={"cdp_not_before": value})
        assert gate_key(request) == "|example.com"
        assert not_before_of(gate_key(request)) is None
    assert not_before_of("odd|@name|example.com") is None
