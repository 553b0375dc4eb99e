"""The scheduler gates: keys for requests that must wait (retry backoff),
one request in flight per identity, host limits. No crawl: a test crawler
(Scrapy's ``get_crawler``) holds the gates."""

from __future__ import annotations

import time

import pytest
import scrapy
from scrapy.utils.test import get_crawler

from scrapy_cdp_pool import Addon
from scrapy_cdp_pool.core.gates import (
    gate_key,
    not_before_of,
    not_before_problem,
    not_before_suffix,
    split_key,
)
from scrapy_cdp_pool.core.pacing import HOST_PAUSES, HostPaused
from scrapy_cdp_pool.core.parts import PartKey
from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.resilience.host_limits import HostLimits


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


def test_one_request_in_flight_per_identity_and_host_limits_gate_by_host() -> None:
    # no CDP_POOL_HOST_CONCURRENCY: the add-on would install its own HostLimits
    crawler = get_crawler(settings_dict={"ADDONS": {Addon: 0}})
    gates = runtime_of(crawler).gates
    limits = HostLimits(crawler, gates, concurrency=1)
    a1 = scrapy.Request("http://a.test/1", meta={"cdp_profile": "alice"})
    a2 = scrapy.Request("http://b.test/2", meta={"cdp_profile": "alice"})
    b1 = scrapy.Request("http://a.test/3")
    assert gates.is_open(gate_key(a1))
    assert gates.on_dequeued(a1)
    assert not gates.is_open(gate_key(a2))  # alice is busy, whatever the host
    assert not gates.is_open(gate_key(b1))  # a.test is full (1 in flight)
    assert limits.in_flight["a.test"] == 1
    gates.on_finished(a1)
    assert gates.is_open(gate_key(a2))
    assert gates.is_open(gate_key(b1))
    assert not limits.in_flight


def test_a_host_rate_spaces_starts_and_wakes_the_engine_when_due(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # one start per 1000 s: the host pacing holds the rate in the queue
    crawler = get_crawler(settings_dict={"CDP_POOL_HOST_RATE": 0.001, "ADDONS": {Addon: 0}})
    runtime = runtime_of(crawler)
    gates = runtime.gates
    woken: list[float] = []
    # no timer left behind: record the wakes instead
    monkeypatch.setattr(gates, "wake", lambda delay_s=0.0: woken.append(delay_s))
    rate = runtime.pacing.rate
    assert rate is not None
    first, second = scrapy.Request("http://a.test/1"), scrapy.Request("http://a.test/2")
    assert gates.on_dequeued(first)
    gates.on_finished(first)
    assert not rate.is_open("a.test")
    assert rate.is_open("b.test")
    assert gates.is_open(gate_key(scrapy.Request("http://b.test/")))
    assert not gates.is_open(gate_key(second))
    delayed = [delay_s for delay_s in woken if delay_s > 0]
    assert delayed
    assert all(delay_s <= 1000 for delay_s in delayed)  # when the next start is due


class StandInPauses:
    """Host pauses of one paused host (the resilience middleware's shape)."""

    def __init__(self, paused: str) -> None:
        self.paused = paused

    def observe(self, request: object, url: str, status: int, retry_after: bytes | None) -> None:
        pass

    def remaining(self, host: str) -> float:
        return 5.0 if host == self.paused else 0.0

    def known_remaining(self, host: str) -> float:
        return self.remaining(host)

    def is_open(self, host: str) -> bool:
        return host != self.paused

    async def wait_open(self, host: str) -> float:
        return 0.0


def test_host_pauses_plug_into_the_pacing_which_holds_the_queue_and_the_handler() -> None:
    crawler = get_crawler(settings_dict={"ADDONS": {Addon: 0}})
    runtime = runtime_of(crawler)
    pacing = runtime.pacing
    assert runtime.gates.is_open("|a.test")
    pacing.plug(HOST_PAUSES, StandInPauses("a.test"))
    assert not runtime.gates.is_open("|a.test")  # the queue holds it
    assert runtime.gates.is_open("|b.test")
    with pytest.raises(HostPaused):  # so does the handler, right before a start
        pacing.check("a.test")
    pacing.check("b.test")
    with pytest.raises(KeyError, match="no place for"):
        pacing.plug(PartKey[object]("something else"), object())
