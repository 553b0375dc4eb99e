"""Retry policy: Scrapy's retry settings with backoff that blocks nothing, 4xx not
retried (429 aside), every final failure recorded by reason. Real crawls of the
fault-injecting routes of the test site (``tests/site/faults.py``); times are
compared on the site's own clock only."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.settings import Settings
from scrapy.utils.misc import load_object

from scrapy_cdp_pool import Addon
from scrapy_cdp_pool.resilience import HostPauseMiddleware, RetryPolicyMiddleware
from scrapy_cdp_pool.resilience.retry import retry_http_codes
from tests.crawl import crawl
from tests.fault_records import records
from tests.servers import SiteServer

SCRAPY_RETRY = "scrapy.downloadermiddlewares.retry.RetryMiddleware"
BASE = 0.4  # CDP_POOL_RETRY_BACKOFF_BASE_SECONDS in these crawls
RETRYING: dict[str, Any] = {
    "RETRY_ENABLED": True,
    "RETRY_TIMES": 3,
    "CDP_POOL_RETRY_BACKOFF_BASE_SECONDS": BASE,
    "CDP_POOL_RETRY_BACKOFF_MAX_SECONDS": 5,
}


def downloader_middlewares(settings: Settings) -> dict[Any, Any]:
    """Class -> order, as Scrapy reads them (the project's entry wins)."""
    merged = settings.getwithbase("DOWNLOADER_MIDDLEWARES")
    return {load_object(path): order for path, order in merged.items()}


def token() -> str:
    return uuid.uuid4().hex[:10]


def assert_contexts_balanced(crawler: Crawler) -> None:
    stats = crawler.stats.get_stats()
    assert stats.get("cdp_pool/contexts_opened") == stats.get("cdp_pool/contexts_closed")


# Pure parts ------------------------------------------------------------------


def test_default_retry_codes_drop_408_but_keep_429_and_a_set_value_is_kept() -> None:
    settings = Settings()
    Addon().update_settings(settings)
    codes = retry_http_codes(settings)
    assert 408 not in codes
    assert {429, 500, 502, 503, 504} <= codes
    settings = Settings({"RETRY_HTTP_CODES": [408, 503]})
    assert retry_http_codes(settings) == {408, 503}


def test_addon_swaps_scrapys_retry_middleware_for_the_policy() -> None:
    settings = Settings()
    Addon().update_settings(settings)
    middlewares = downloader_middlewares(settings)
    assert middlewares[RetryMiddleware] is None
    assert middlewares[RetryPolicyMiddleware] == 550


def test_addon_replaces_a_retry_middleware_the_project_lists_at_its_order() -> None:
    settings = Settings({"DOWNLOADER_MIDDLEWARES": {SCRAPY_RETRY: 560}})
    Addon().update_settings(settings)
    middlewares = downloader_middlewares(settings)
    assert middlewares[RetryMiddleware] is None
    assert middlewares[RetryPolicyMiddleware] == 560


def test_addon_keeps_the_order_or_the_none_the_project_gave_its_components() -> None:
    settings = Settings(
        {
            "DOWNLOADER_MIDDLEWARES": {
                "scrapy_cdp_pool.resilience.RetryPolicyMiddleware": 500,
                "scrapy_cdp_pool.resilience.HostPauseMiddleware": None,
            }
        }
    )
    Addon().update_settings(settings)
    middlewares = downloader_middlewares(settings)
    assert middlewares[RetryPolicyMiddleware] == 500
    assert middlewares[HostPauseMiddleware] is None
    assert middlewares[RetryMiddleware] is None


# Crawls ----------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_a_project_listing_scrapys_retry_middleware_retries_once_per_failure(
    site: SiteServer,
) -> None:
    """Scrapy's RetryMiddleware listed by the project is replaced, not run
    beside ours: a 503 is requested exactly RETRY_TIMES + 1 times."""
    key = token()
    _, crawler = await crawl(
        [scrapy.Request(site.url(f"/flaky?key={key}&fail=99&status=503"))],
        {
            **RETRYING,
            "RETRY_TIMES": 2,
            "CDP_POOL_RETRY_BACKOFF_BASE_SECONDS": 0.05,
            "DOWNLOADER_MIDDLEWARES": {SCRAPY_RETRY: 550},
        },
    )
    assert len(records(site, key)["arrivals"]) == 3
    stats = crawler.stats.get_stats()
    assert stats["downloader/response_status_count/503"] == 3
    assert stats["retry/count"] == 2
    assert stats["retry/max_reached"] == 1


@pytest_twisted.ensureDeferred
async def test_503_twice_then_200_gives_one_item_after_two_spaced_retries(
    site: SiteServer,
) -> None:
    key = token()
    spider, crawler = await crawl(
        [scrapy.Request(site.url(f"/flaky?key={key}&fail=2&status=503"), meta={"cdp": True})],
        RETRYING,
    )
    assert not spider.failures
    assert [r.status for r in spider.responses] == [200]
    assert spider.responses[0].css("p.item::text").get() == key
    stats = crawler.stats.get_stats()
    assert stats["retry/count"] == 2
    assert stats["retry/reason_count/503 Service Unavailable"] == 2
    assert stats["cdp_pool/contexts_opened"] == 3  # each try in a fresh context
    assert_contexts_balanced(crawler)
    assert "cdp_pool/failures" not in stats
    # Backoff, on the site's clock: retry n waits at least half its step.
    arrivals = records(site, key)["arrivals"]
    assert len(arrivals) == 3
    assert arrivals[1] - arrivals[0] >= BASE / 2
    assert arrivals[2] - arrivals[1] >= BASE


@pytest_twisted.ensureDeferred
async def test_a_request_waiting_for_its_retry_blocks_nothing(site: SiteServer) -> None:
    """While a retry waits out its backoff in the queue, later requests of the
    same host pass it, even with one request in flight per host."""
    key, other = token(), token()
    spider, _ = await crawl(
        [
            scrapy.Request(site.url(f"/flaky?key={key}&fail=1&status=500"), priority=1),
            *(scrapy.Request(site.url(f"/flaky?key={other}{i}&fail=0")) for i in range(3)),
        ],
        {
            **RETRYING,
            "CDP_POOL_RETRY_BACKOFF_BASE_SECONDS": 4,
            "CDP_POOL_RETRY_BACKOFF_MAX_SECONDS": 4,
            "CDP_POOL_HOST_CONCURRENCY": 1,
        },
    )
    assert not spider.failures
    assert len(spider.responses) == 4
    waited = records(site, key)["arrivals"]
    assert waited[1] - waited[0] >= 2
    others = [records(site, f"{other}{i}")["arrivals"][0] for i in range(3)]
    assert all(waited[0] < t < waited[1] for t in others)


@pytest.mark.parametrize("status", [404, 408])
@pytest_twisted.ensureDeferred
async def test_4xx_is_not_retried_and_is_recorded_as_a_failure(
    site: SiteServer, tmp_path: Path, status: int
) -> None:
    failures_file = tmp_path / "failures.jsonl"
    key = token()
    url = site.url(f"/flaky?key={key}&fail=5&status={status}")
    spider, crawler = await crawl(
        [scrapy.Request(url, meta={"cdp": True})],
        {**RETRYING, "CDP_POOL_FAILURES_FILE": str(failures_file)},
    )
    assert [r.status for r in spider.responses] == [status]
    assert len(records(site, key)["arrivals"]) == 1
    stats = crawler.stats.get_stats()
    assert "retry/count" not in stats
    assert stats["cdp_pool/failures"] == 1
    assert stats[f"cdp_pool/failures/http_{status}"] == 1
    assert_contexts_balanced(crawler)
    lines = [json.loads(line) for line in failures_file.read_text().splitlines()]
    assert len(lines) == 1
    assert lines[0]["url"] == url
    assert lines[0]["reason"] == f"http_{status}"
    assert lines[0]["status"] == status
    assert lines[0]["retry_times"] == 0
    assert lines[0]["spider"] == "recording"


@pytest_twisted.ensureDeferred
async def test_retries_are_capped_and_the_give_up_is_recorded(
    site: SiteServer, tmp_path: Path
) -> None:
    failures_file = tmp_path / "failures.jsonl"
    capped, untouched = token(), token()
    _, crawler = await crawl(
        [
            scrapy.Request(
                site.url(f"/flaky?key={capped}&fail=9&status=500"),
                meta={"cdp": True, "max_retry_times": 1},
            ),
            scrapy.Request(
                site.url(f"/flaky?key={untouched}&fail=9&status=502"),
                meta={"cdp": True, "dont_retry": True},
            ),
        ],
        {**RETRYING, "CDP_POOL_FAILURES_FILE": str(failures_file)},
    )
    assert len(records(site, capped)["arrivals"]) == 2
    assert len(records(site, untouched)["arrivals"]) == 1
    stats = crawler.stats.get_stats()
    assert stats["retry/max_reached"] == 1
    assert stats["cdp_pool/failures/http_500"] == 1
    assert stats["cdp_pool/failures/http_502"] == 1
    reasons = sorted(
        (line["reason"], line["retry_times"])
        for line in map(json.loads, failures_file.read_text().splitlines())
    )
    assert reasons == [("http_500", 1), ("http_502", 0)]
    assert_contexts_balanced(crawler)


@pytest_twisted.ensureDeferred
async def test_429_without_retry_after_pauses_the_host_exponentially(site: SiteServer) -> None:
    key = token()
    spider, crawler = await crawl(
        [scrapy.Request(site.url(f"/flaky?key={key}&fail=2&status=429"), meta={"cdp": True})],
        RETRYING,
    )
    assert [r.status for r in spider.responses] == [200]
    arrivals = records(site, key)["arrivals"]
    assert len(arrivals) == 3
    assert arrivals[1] - arrivals[0] >= BASE  # host paused base, then 2 x base
    assert arrivals[2] - arrivals[1] >= 2 * BASE
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/host_pauses"] == 2
    assert stats["cdp_pool/host_pause_seconds_max"] == pytest.approx(2 * BASE)
    assert_contexts_balanced(crawler)
