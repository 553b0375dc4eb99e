"""Per-host rules held at the scheduler queue: a 429's ``Retry-After`` pauses the
whole host, ``CDP_POOL_HOST_CONCURRENCY`` and ``CDP_POOL_HOST_RATE`` are exact.
Checked on the test site's records (its own clock, its own in-flight counts) and
on the queue's dequeue times, never on how long a crawl took."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy import signals

from scrapy_cdp_pool.core.runtime import runtime_of
from tests.crawl import RecordingSpider, crawl
from tests.fault_records import records
from tests.servers import SiteServer

RETRYING: dict[str, Any] = {
    "RETRY_ENABLED": True,
    "RETRY_TIMES": 3,
    "CDP_POOL_RETRY_BACKOFF_BASE_SECONDS": 0.2,
    "CDP_POOL_RETRY_BACKOFF_MAX_SECONDS": 10,
}


def token() -> str:
    return uuid.uuid4().hex[:10]


class FollowUpAfterRetrySpider(RecordingSpider):
    """Yields its first request, waits until that request's retry is scheduled
    (the host is paused by then), then yields the rest: requests produced
    while the host is paused."""

    async def start(self) -> Any:
        retry_scheduled = asyncio.Event()

        def on_scheduled(request: scrapy.Request, spider: Any) -> None:
            if request.meta.get("retry_times"):
                retry_scheduled.set()

        self.crawler.signals.connect(on_scheduled, signal=signals.request_scheduled, weak=False)
        first, *rest = self.to_send
        yield self.prepare(first)
        await retry_scheduled.wait()
        for request in rest:
            yield self.prepare(request)


@pytest.mark.parametrize("as_date", [False, True], ids=["seconds", "http-date"])
@pytest_twisted.ensureDeferred
async def test_retry_after_pauses_the_whole_host(
    site: SiteServer, as_date: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="scrapy_cdp_pool.resilience.host_pause")
    key = token()
    date = "&date=1" if as_date else ""
    spider, crawler = await crawl(
        [
            scrapy.Request(site.url(f"/rate-limited?key={key}&after=2{date}"), meta={"cdp": True}),
            *(
                scrapy.Request(site.url(f"/rate-limited?key={key}&n={i}"), meta={"cdp": i % 2 == 0})
                for i in range(3)
            ),
        ],
        RETRYING,
        spider_cls=FollowUpAfterRetrySpider,
    )
    assert not spider.failures
    assert sorted(r.status for r in spider.responses) == [200] * 4
    seen = records(site, key)
    assert len(seen["arrivals"]) == 5  # the 429, its retry, three others
    assert all(t >= seen["window_end"] for t in seen["arrivals"][1:])
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/host_pauses"] == 1
    assert stats["retry/count"] == 1
    assert any(
        r.getMessage().startswith("Pausing requests to 127.0.0.1 for ")
        and "HTTP 429" in r.getMessage()
        for r in caplog.records
    )
    assert stats["cdp_pool/contexts_opened"] == stats["cdp_pool/contexts_closed"]


@pytest_twisted.ensureDeferred
async def test_host_concurrency_is_exact(site: SiteServer) -> None:
    """Rendered and plain requests of one host together: never more than the
    limit in flight at the site, with more connections and Scrapy slots free."""
    key = token()
    spider, crawler = await crawl(
        [
            scrapy.Request(site.url(f"/inflight?key={key}&ms=300&i={i}"), meta={"cdp": i % 2 == 0})
            for i in range(8)
        ],
        {"CDP_POOL_HOST_CONCURRENCY": 2, "CDP_POOL_CONNECTIONS": 4},
    )
    assert not spider.failures
    assert len(spider.responses) == 8
    assert 1 <= site.stats()["inflight_max"][key] <= 2
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/host_in_flight_max"] <= 2
    assert stats["cdp_pool/contexts_opened"] == stats["cdp_pool/contexts_closed"] == 4


class DequeueTimesSpider(RecordingSpider):
    """Records the queue's dequeue time of each request (the clock the rate
    limit reads)."""

    async def start(self) -> Any:
        self.dequeued: list[float] = []
        runtime_of(self.crawler).gates.add_dequeue_hook(
            lambda request, now: self.dequeued.append(now)
        )
        for request in self.to_send:
            yield self.prepare(request)


@pytest_twisted.ensureDeferred
async def test_host_rate_spaces_request_starts(site: SiteServer) -> None:
    rate = 5.0
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/flaky?key={token()}&fail=0")) for _ in range(5)],
        {"CDP_POOL_HOST_RATE": rate},
        spider_cls=DequeueTimesSpider,
    )
    assert not spider.failures
    assert len(spider.responses) == 5
    starts = spider.dequeued  # type: ignore[attr-defined]
    assert len(starts) == 5
    assert all(b - a >= 1 / rate for a, b in itertools.pairwise(starts))
