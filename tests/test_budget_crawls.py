"""Several crawlers in one process: one budget bounds their pages in flight
together (counted by the test site itself), a late crawler gets pages, the
autoscaler follows the load, and ``CDP_POOL_NAME`` decides which crawlers share
a pool and its server. Invariants and recorded states, no wall-clock limits."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.crawler import Crawler, CrawlerRunner
from twisted.internet.defer import Deferred

from scrapy_cdp_pool import ConcurrencyBudget
from scrapy_cdp_pool.browser.pool.server_flags import TIMEOUTS_FLAG
from scrapy_cdp_pool.budget import LoadThresholds, budget_for
from scrapy_cdp_pool.core.runtime import runtime_of
from tests.crawl import BASE_SETTINGS, RecordingSpider
from tests.servers import SiteServer, process_tree_alive


class AlphaSpider(RecordingSpider):
    name = "alpha"


class BetaSpider(RecordingSpider):
    name = "beta"


def token() -> str:
    return uuid.uuid4().hex[:10]


def crawler(spider_cls: type[RecordingSpider], **settings: Any) -> Crawler:
    return Crawler(spider_cls, {**BASE_SETTINGS, **settings})


def pages(site: SiteServer, key: str, tag: str, n: int, ms: int = 200) -> list[scrapy.Request]:
    return [
        scrapy.Request(site.url(f"/inflight?key={key}&ms={ms}&tag={tag}&i={i}"), meta={"cdp": True})
        for i in range(n)
    ]


def spider_of(crawler: Crawler) -> RecordingSpider:
    spider = crawler.spider
    assert isinstance(spider, RecordingSpider)
    return spider


def remember_pool(seen: dict[str, Any], tag: str) -> Any:
    """A ``then`` hook keeping the crawler's pool and its server's pid."""

    def then(spider: RecordingSpider, response: scrapy.http.Response) -> list[scrapy.Request]:
        pool = runtime_of(spider.crawler).pool
        assert pool is not None
        assert pool.server is not None
        seen[tag] = (pool, pool.server.pid)
        return []

    return then


@pytest_twisted.ensureDeferred
async def test_two_crawlers_share_one_budget_of_four(site: SiteServer) -> None:
    """Each crawler's own pool could hold 4 pages (8 together): the site never
    sees more than the budget's 4 at once, and both crawlers finish."""
    key = token()
    budget = ConcurrencyBudget(max=4, autoscale=False, name="shared")
    settings = {"CDP_POOL_BUDGET": budget, "CDP_POOL_CONNECTIONS": 4}
    alpha, beta = crawler(AlphaSpider, **settings), crawler(BetaSpider, **settings)
    runner = CrawlerRunner()
    crawls = [
        runner.crawl(alpha, requests=pages(site, key, "a", 12)),
        runner.crawl(beta, requests=pages(site, key, "b", 12)),
    ]
    for crawl in crawls:
        await crawl
    await runner.join()
    for c in (alpha, beta):
        assert not spider_of(c).failures
        assert len(spider_of(c).responses) == 12
    assert 1 <= site.stats()["inflight_max"][key] <= 4
    assert 1 <= budget.in_flight_max <= 4
    assert budget.current == 0
    assert budget.crawlers == ()  # both detached
    for c in (alpha, beta):
        stats = c.stats.get_stats()
        assert stats["cdp_pool/budget/max"] == 4
        assert stats["cdp_pool/budget/crawler_pages"] == 12
        assert 1 <= stats["cdp_pool/budget/crawler_pages_in_flight_max"] <= 4
        assert stats["cdp_pool/budget/pages_in_flight_max"] <= 4
        assert "cdp_pool/budget/ticks" not in stats  # not autoscaled


@pytest_twisted.ensureDeferred
async def test_a_crawler_attached_late_still_gets_pages(site: SiteServer) -> None:
    """Beta joins while alpha uses the whole budget: each of beta's pages
    waits for at most the pages alpha has in flight, so beta is done long
    before alpha's 40 pages are. They share a pool (already started), so
    beta's pages do not wait for a server of their own."""
    key = token()
    budget = ConcurrencyBudget(max=2, autoscale=False)
    order: list[str] = []
    first = Deferred[None]()

    def note(tag: str) -> Any:
        def then(spider: RecordingSpider, response: scrapy.http.Response) -> list[Any]:
            order.append(tag)
            if not first.called:
                first.callback(None)
            return []

        return then

    settings = {
        "CDP_POOL_BUDGET": budget, "CDP_POOL_NAME": f"late-{key}", "CDP_POOL_CONNECTIONS": 2,
    }  # fmt: skip
    alpha, beta = crawler(AlphaSpider, **settings), crawler(BetaSpider, **settings)
    alpha_requests = [
        r.replace(meta={**r.meta, "then": note("a")}) for r in pages(site, key, "a", 40)
    ]
    beta_requests = [
        r.replace(meta={**r.meta, "then": note("b")}) for r in pages(site, key, "b", 3)
    ]
    runner = CrawlerRunner()
    alpha_done = runner.crawl(alpha, requests=alpha_requests)
    await first  # alpha is crawling, the budget is in use
    assert budget.crawlers == ("alpha",)
    beta_done = runner.crawl(beta, requests=beta_requests)
    await beta_done
    await alpha_done
    assert len(spider_of(beta).responses) == 3
    assert len(spider_of(alpha).responses) == 40
    last_beta = max(i for i, tag in enumerate(order) if tag == "b")
    assert order[last_beta + 1 :].count("a") >= 10  # alpha still had many pages to go
    assert site.stats()["inflight_max"][key] <= 2
    assert beta.stats.get_value("cdp_pool/budget/crawler_pages") == 3


class ScalingSpider(RecordingSpider):
    """Keeps 8 pages wanted until the budget's recorded states show it went
    down to ``min`` under a tiny memory limit, then lifts the limit and goes
    on until they show it back at ``max``."""

    name = "scaling"
    limit = 600  # pages; reaching it fails the test

    async def start(self) -> Any:
        self.phase = "down"
        self.lifted_at = 0
        self.sent = 0
        for _ in range(8):
            yield self.next_page()

    def next_page(self) -> scrapy.Request:
        self.sent += 1
        url = self.to_send[0].url + f"&n={self.sent}"
        return self.prepare(scrapy.Request(url, meta={"cdp": True}))

    def parse(self, response: scrapy.http.Response) -> Any:
        self.responses.append(response)
        budget = budget_for(self.crawler)
        assert budget is not None
        states = budget.states
        if self.phase == "down" and any(
            s.desired == budget.min and "memory" in s.overloaded for s in states
        ):
            self.phase, self.lifted_at = "up", len(states)
            budget.thresholds = replace(budget.thresholds, memory_limit_mb=1_000_000.0)
        elif self.phase == "up" and any(
            s.desired == budget.max and not s.overloaded for s in states[self.lifted_at :]
        ):
            self.phase = "done"
        if self.phase != "done" and self.sent < self.limit:
            yield self.next_page()


@pytest_twisted.ensureDeferred
async def test_autoscale_goes_down_to_min_over_a_memory_limit_and_back_up(
    site: SiteServer, tmp_path: Path
) -> None:
    key = token()
    budget = ConcurrencyBudget(
        min=1, max=4, autoscale=True, interval_s=0.25, name="scaling",
        # Only memory can overload: CPU and loop lag bounds out of reach on a shared machine.
        thresholds=LoadThresholds(memory_limit_mb=1.0, cpu_ratio=1.0, loop_lag_s=60.0),
    )  # fmt: skip
    status_file = tmp_path / "status.jsonl"
    scaling = crawler(
        ScalingSpider, CDP_POOL_BUDGET=budget, CDP_POOL_CONNECTIONS=4,
        CDP_POOL_STATUS_FILE=str(status_file),
    )  # fmt: skip
    runner = CrawlerRunner()
    await runner.crawl(scaling, requests=pages(site, key, "s", 1, ms=50))
    spider = spider_of(scaling)
    assert not spider.failures
    assert spider.phase == "done"  # type: ignore[attr-defined]
    ticks = [s for s in budget.states if s.reason == "tick"]
    overloaded = [s for s in ticks if s.overloaded]
    assert overloaded
    assert all(s.overloaded == ("memory",) for s in overloaded)
    down = ticks[: ticks.index(next(s for s in ticks if s.desired == 1)) + 1]
    assert [s.desired for s in down] == sorted((s.desired for s in down), reverse=True)
    assert any(s.desired == 4 for s in ticks[len(down) :])
    assert all(s.current <= 4 for s in budget.states)
    assert site.stats()["inflight_max"][key] <= 4
    stats = scaling.stats.get_stats()
    assert stats["cdp_pool/budget/scale_downs"] >= 3  # 4 -> 1
    assert stats["cdp_pool/budget/scale_ups"] >= 3  # 1 -> 4
    assert stats["cdp_pool/budget/overloaded_ticks"] >= 3
    samples = [json.loads(line) for line in status_file.read_text().splitlines()]
    last = samples[-1]
    assert (last["budget_min"], last["budget_max"]) == (1, 4)
    assert last["budget_desired"] in (1, 2, 3, 4)
    assert last["budget_overloaded"] == list(budget.overloaded)


@pytest_twisted.ensureDeferred
async def test_same_name_shares_one_pool_and_server_and_its_budget(site: SiteServer) -> None:
    key = token()
    seen: dict[str, Any] = {}
    settings = {
        "CDP_POOL_NAME": f"shop-{key}", "CDP_POOL_AUTOSCALE": True, "CDP_POOL_BUDGET_MAX": 3,
        "CDP_POOL_CONNECTIONS": 4,
    }  # fmt: skip
    alpha, beta = crawler(AlphaSpider, **settings), crawler(BetaSpider, **settings)
    runner = CrawlerRunner()
    alpha_requests = pages(site, key, "a", 8)
    beta_requests = pages(site, key, "b", 8)
    alpha_requests[0].meta["then"] = remember_pool(seen, "a")
    beta_requests[0].meta["then"] = remember_pool(seen, "b")
    crawls = [
        runner.crawl(alpha, requests=alpha_requests),
        runner.crawl(beta, requests=beta_requests),
    ]
    budget = budget_for(alpha)
    assert budget is not None
    assert budget_for(beta) is budget
    assert budget.crawlers == ("alpha", "beta")
    for crawl in crawls:
        await crawl
    assert len(spider_of(alpha).responses) == len(spider_of(beta).responses) == 8
    assert seen["a"][0] is seen["b"][0]  # one pool
    assert seen["a"][1] == seen["b"][1]  # one server
    assert not process_tree_alive(seen["a"][1])  # stopped by the last crawler
    assert runtime_of(alpha).pool is None
    assert runtime_of(beta).pool is None
    assert site.stats()["inflight_max"][key] <= 3
    assert alpha.stats.get_value("cdp_pool/budget/max") == 3
    for each in (alpha, beta):  # each crawler's own pages, not the shared pool's
        stats = each.stats.get_stats()
        assert sum(v for k, v in stats.items() if k.startswith("cdp_pool/connection/")) == 8


@pytest_twisted.ensureDeferred
async def test_other_names_without_autoscale_are_independent(site: SiteServer) -> None:
    key = token()
    seen: dict[str, Any] = {}
    alpha = crawler(AlphaSpider, CDP_POOL_NAME=f"a-{key}")
    beta = crawler(BetaSpider, CDP_POOL_NAME=f"b-{key}")
    alpha_requests = pages(site, key, "a", 3)
    beta_requests = pages(site, key, "b", 3)
    alpha_requests[0].meta["then"] = remember_pool(seen, "a")
    beta_requests[0].meta["then"] = remember_pool(seen, "b")
    runner = CrawlerRunner()
    crawls = [
        runner.crawl(alpha, requests=alpha_requests),
        runner.crawl(beta, requests=beta_requests),
    ]
    for crawl in crawls:
        await crawl
    assert len(spider_of(alpha).responses) == len(spider_of(beta).responses) == 3
    assert seen["a"][0] is not seen["b"][0]
    assert seen["a"][1] != seen["b"][1]  # two servers
    assert budget_for(alpha) is None
    assert budget_for(beta) is None
    assert "cdp_pool/budget/max" not in alpha.stats.get_stats()


POOL_REFUSED = (
    "CDP_POOL_CONNECTIONS = 3, but the shared pool was made by crawler 'alpha' with "
    "CDP_POOL_CONNECTIONS = 2"
)
BUDGET_REFUSED = (
    "CDP_POOL_BUDGET_MAX = 5, but the shared budget comes from crawler 'alpha', which sets 2"
)
# Found by a trial: settings the embedded Lightpanda takes as flags at its
# start were not compared: the second crawler's pages failed on the first's.
MAXSIZE = "DOWNLOAD_MAXSIZE (Lightpanda's --http-max-response-size)"
MAXSIZE_REFUSED = (
    f"{MAXSIZE} = 100000, but the shared pool was made by crawler 'alpha' with {MAXSIZE} = "
    f"{1024 * 1024 * 1024}"
)
TIMEOUT_REFUSED = (
    f"{TIMEOUTS_FLAG} = 10000, but the shared pool was made by crawler 'alpha' with "
    f"{TIMEOUTS_FLAG} = 30000"
)


@pytest.mark.parametrize(
    ("beta_settings", "message"),
    [
        ({"CDP_POOL_CONNECTIONS": 3}, POOL_REFUSED),
        ({"CDP_POOL_BUDGET_MAX": 5}, BUDGET_REFUSED),
        ({"DOWNLOAD_MAXSIZE": 100_000}, MAXSIZE_REFUSED),
        ({"DOWNLOAD_TIMEOUT": 10}, TIMEOUT_REFUSED),
    ],
    ids=["pool", "budget", "server flag: maxsize", "server flag: timeout"],
)
@pytest_twisted.ensureDeferred
async def test_a_crawler_with_other_settings_for_a_shared_name_is_refused(
    site: SiteServer, beta_settings: dict[str, Any], message: str
) -> None:
    key = token()
    shared = {"CDP_POOL_NAME": f"shop-{key}", "CDP_POOL_AUTOSCALE": True,
              "CDP_POOL_BUDGET_MAX": 2, "CDP_POOL_CONNECTIONS": 2}  # fmt: skip
    alpha = crawler(AlphaSpider, **shared)
    beta = crawler(BetaSpider, **{**shared, **beta_settings})
    runner = CrawlerRunner()
    alpha_done = runner.crawl(alpha, requests=pages(site, key, "a", 2))
    expected = f"CDP_POOL_NAME = 'shop-{key}': crawler 'beta' sets {message}"
    with pytest.raises(ValueError, match=re.escape(expected)):
        await runner.crawl(beta, requests=pages(site, key, "b", 2))
    await alpha_done
    assert len(spider_of(alpha).responses) == 2
