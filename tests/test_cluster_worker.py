"""One cluster worker in this process (a real crawl, embedded Lightpanda, a
real ``redis-server``): URLs fed from a Redis list, what is refused at start,
a request that cannot be stored failing by name."""

from __future__ import annotations

import shutil
from typing import Any

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.cluster.keys import key_prefix
from scrapy_cdp_pool.resilience.request_checks import UnserializableRequestError
from tests.cluster_harness import RedisServer, cluster
from tests.crawl import RecordingSpider, crawl
from tests.profiles import session_inflight_max, token, write_profile
from tests.servers import SiteServer


@pytest_twisted.ensureDeferred
async def test_urls_pushed_to_the_feed_list_are_crawled(
    site: SiteServer, module_redis_server: RedisServer
) -> None:
    name = token()
    feed = f"feed-{name}"
    urls = [site.url(f"/jobsite/{n}?tag={name}&total=20&hubs=2") for n in range(5)]
    with module_redis_server.client() as client:
        client.rpush(feed, *urls)
    spider, crawler = await crawl(
        [], cluster(module_redis_server.url, name, CDP_POOL_CLUSTER_FEED_KEY=feed)
    )
    assert sorted(response.url for response in spider.responses) == sorted(urls)
    assert crawler.stats.get_value("cdp_pool/cluster/fed") == 5
    with module_redis_server.client() as client:
        assert client.llen(feed) == 0
        assert not client.exists(f"{key_prefix(name)}req")


@pytest_twisted.ensureDeferred
async def test_a_request_that_cannot_be_stored_fails_by_name(
    site: SiteServer, module_redis_server: RedisServer
) -> None:
    url = site.url("/jobsite/1?tag=x&total=5&hubs=1")
    spider, _ = await crawl(
        [scrapy.Request(url, meta={"handle": lambda: None}, dont_filter=True)],
        cluster(module_redis_server.url, token()),
    )
    assert not spider.responses
    assert [type(failure.value) for failure in spider.failures] == [UnserializableRequestError]
    message = str(spider.failures[0].value)
    assert "handle" in message
    # where it could not go: the cluster's Redis (before: "JOBDIR", none in use)
    assert "cannot be stored in the cluster's Redis" in message


def test_an_unreachable_redis_is_refused_at_start(tmp_path: Any) -> None:
    from scrapy.crawler import CrawlerRunner

    from tests.crawl import BASE_SETTINGS, RecordingSpider

    url = f"unix://{tmp_path}/none.sock"
    runner = CrawlerRunner({**BASE_SETTINGS, "CDP_POOL_CLUSTER_REDIS_URL": url})
    with pytest.raises(ValueError, match="CDP_POOL_CLUSTER_REDIS_URL: Redis at unix://"):
        runner.create_crawler(RecordingSpider)._apply_settings()


def test_a_password_in_the_url_is_never_shown(tmp_path: Any) -> None:
    from scrapy.crawler import CrawlerRunner

    from tests.crawl import BASE_SETTINGS, RecordingSpider

    runner = CrawlerRunner(
        {**BASE_SETTINGS, "CDP_POOL_CLUSTER_REDIS_URL": "redis://:s3cret@127.0.0.1:1/0"}
    )
    with pytest.raises(ValueError, match="does not answer") as raised:
        runner.create_crawler(RecordingSpider)._apply_settings()
    assert "s3cret" not in str(raised.value)
    assert ":***@" in str(raised.value)


def test_jobdir_and_a_cluster_are_refused_together(
    module_redis_server: RedisServer, tmp_path: Any
) -> None:
    from scrapy.crawler import CrawlerRunner

    from tests.crawl import BASE_SETTINGS, RecordingSpider

    runner = CrawlerRunner(
        {
            **BASE_SETTINGS,
            **cluster(module_redis_server.url, token()),
            "JOBDIR": str(tmp_path / "job"),
        }
    )
    with pytest.raises(ValueError, match="JOBDIR and CDP_POOL_CLUSTER_REDIS_URL"):
        runner.create_crawler(RecordingSpider)._apply_settings()


@pytest_twisted.ensureDeferred
async def test_a_long_queue_for_one_identity_does_not_hold_back_the_others(
    site: SiteServer, module_redis_server: RedisServer, tmp_path: Any
) -> None:
    """The local queue's no-head-of-line rule, through the cluster frontier:
    the busy identity's 200 requests are stored first, yet every request of
    the three others is done before its 100th."""
    busy = f"busy-{token()}"
    others = [f"other{i}-{token()}" for i in range(3)]
    for name in [busy, *others]:
        write_profile(tmp_path, name, session=name)
    requests = [
        scrapy.Request(site.url(f"/session-inflight?ms=0&i={i}&p={busy}"),
                       meta={"cdp_profile": busy})
        for i in range(200)
    ] + [
        scrapy.Request(site.url(f"/session-inflight?ms=0&i={i}&p={name}"),
                       meta={"cdp_profile": name})
        for name in others
        for i in range(20)
    ]  # fmt: skip
    spider, _ = await crawl(
        requests,
        cluster(module_redis_server.url, token(), CDP_POOL_PROFILES_DIR=str(tmp_path),
                CDP_POOL_CONNECTIONS=4, CONCURRENT_REQUESTS=4),
    )  # fmt: skip
    assert not spider.failures
    order = [response.meta["cdp_profile"] for response in spider.responses]
    assert len(order) == 260
    hundredth_busy = [i for i, name in enumerate(order) if name == busy][99]
    last_other = max(i for i, name in enumerate(order) if name != busy)
    assert last_other < hundredth_busy
    for name in [busy, *others]:
        assert session_inflight_max(site, name) == 1


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize("keep_open", [False, True])
async def test_keep_open_holds_an_idle_worker_open(
    module_redis_server: RedisServer, keep_open: bool
) -> None:
    """With nothing queued and nothing leased a worker's crawl ends, unless
    CDP_POOL_CLUSTER_KEEP_OPEN: then it waits for URLs (here until Scrapy's own
    CLOSESPIDER_TIMEOUT ends it)."""
    settings = cluster(
        module_redis_server.url,
        token(),
        CDP_POOL_CLUSTER_KEEP_OPEN=keep_open,
        CLOSESPIDER_TIMEOUT=2,
    )
    _, crawler = await crawl([], settings)
    reason = crawler.stats.get_value("finish_reason")
    assert reason == ("closespider_timeout" if keep_open else "finished")


@pytest_twisted.ensureDeferred
async def test_a_worker_that_stopped_cleanly_is_not_listed_live(
    site: SiteServer, module_redis_server: RedisServer
) -> None:
    name = token()
    url = site.url(f"/jobsite/1?tag={name}&total=3&hubs=1")
    spider, _ = await crawl([scrapy.Request(url)], cluster(module_redis_server.url, name))
    assert spider.responses
    with module_redis_server.client() as client:
        assert client.zcard(f"{key_prefix(name)}workers") == 0


class RedisRestartingSpider(RecordingSpider):
    """At its first response, restarts Redis empty (``restart``, set by the
    test: a spider method, so that its requests can be stored in Redis) and
    asks for ``then_urls``."""

    restart: Any = None
    then_urls: list[str] = []

    def parse(self, response: scrapy.http.Response) -> Any:
        yield from super().parse(response)
        if type(self).restart is not None:
            restart, type(self).restart = type(self).restart, None
            restart()
            for url in self.then_urls:
                yield self.prepare(scrapy.Request(url))


@pytest_twisted.ensureDeferred
async def test_a_redis_that_lost_the_crawl_closes_the_spider_by_name(site: SiteServer) -> None:
    """Found by a fresh-user trial: Redis restarted without persistence, the
    worker said it was reachable again and finished (``finished``, 40 of 300
    pages) as if the crawl were done. Now: one ERROR and finish_reason
    ``cdp_pool_cluster_state_lost`` (fails before: ``finished``). Here the
    client may reconnect to the new, empty Redis without a call failing."""
    first = RedisServer()
    directory = first.directory
    servers = [first]
    name = token()

    def restart_empty() -> None:
        servers[-1].stop_keeping_directory()
        servers.append(RedisServer(directory))  # same socket, nothing in it

    RedisRestartingSpider.restart = restart_empty
    RedisRestartingSpider.then_urls = [site.url(f"/js?n=1&lost={i}&k={name}") for i in range(3)]
    try:
        _, crawler = await crawl(
            [scrapy.Request(site.url(f"/js?n=1&first&k={name}"))],
            cluster(first.url, name),
            spider_cls=RedisRestartingSpider,
        )
    finally:
        RedisRestartingSpider.restart = None
        servers[-1].stop_keeping_directory()
        shutil.rmtree(directory, ignore_errors=True)
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == "cdp_pool_cluster_state_lost"
    assert stats["cdp_pool/cluster/state_lost"] == 1
    assert stats["log_count/ERROR"] == 1
