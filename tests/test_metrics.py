"""Prometheus metrics (issue 16, item 7): scraped over HTTP during a real
crawl, they are the figures of the status JSON line of the same sample; the
cluster's figures when it sends them; 127.0.0.1 only by default; closed with
the crawl."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy
from prometheus_client.parser import text_string_to_metric_families

from scrapy_cdp_pool.telemetry.cluster_figures import ClusterFigures
from scrapy_cdp_pool.telemetry.extension import EngineStatusExtension
from scrapy_cdp_pool.telemetry.metrics import COUNTERS, WORDS, MetricsExtension
from scrapy_cdp_pool.telemetry.signals import cluster_figures_updated
from tests.crawl import crawl
from tests.redis_server import RedisServer
from tests.servers import SiteServer

FIGURES = ClusterFigures(
    queued={0: 12, 10: 3}, leased=4, leases_by_owner={"host-a:1": 3, "host-b:2": 1},
    busy_identities=2, paused_hosts={"shop.example": 7.5}, workers=2,
    pages_per_second=41.5, requeued=1,
)  # fmt: skip


def extension(crawler: Any, kind: type) -> Any:
    found = [e for e in crawler.extensions.middlewares if isinstance(e, kind)]
    assert len(found) == 1
    return found[0]


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the endpoint: (name, sorted labels) -> value."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def refused(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=5).close()
    except urllib.error.URLError:
        return True
    return False


@pytest.mark.parametrize("browser", ["lightpanda"])
@pytest_twisted.ensureDeferred
async def test_metrics_during_a_crawl_are_the_status_lines(
    site: SiteServer, tmp_path: Path, browser: str
) -> None:
    status_file = tmp_path / "status.jsonl"
    seen: dict[str, Any] = {}

    def then(spider: Any, response: Any) -> Any:
        """Mid-crawl: take a status sample, send cluster figures, scrape."""
        crawler = spider.crawler
        metrics = extension(crawler, MetricsExtension)
        seen["url"] = metrics.url
        seen["address"] = metrics.endpoint.server.server_address[0]
        sample = extension(crawler, EngineStatusExtension).sample("interval")
        seen["sample"] = json.loads(json.dumps(sample.as_json()))  # as in the file
        seen["before_cluster"] = scrape(metrics.url)
        crawler.signals.send_catch_log(cluster_figures_updated, figures=FIGURES)
        seen["scraped"] = scrape(metrics.url)
        return [scrapy.Request(site.url("/inflight?ms=10&after"), meta={"cdp": True})]

    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/inflight?ms=10&i={i}"), meta={"cdp": True}) for i in range(3)]
        + [scrapy.Request(site.url("/inflight?ms=10&then"), meta={"cdp": True, "then": then})],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_METRICS_PORT": 0,
         "CDP_POOL_STATUS_FILE": str(status_file)},
    )  # fmt: skip
    assert not spider.failures
    assert seen["address"] == "127.0.0.1"
    scraped = seen["scraped"]
    spider_label = ("spider", "recording")

    # The JSON line of the sample the scrape saw, figure by figure.
    lines = [json.loads(line) for line in status_file.read_text().splitlines()]
    line = next(x for x in lines if x == seen["sample"])
    assert line["responses"] >= 1
    compared = 0
    for name, value in line.items():
        if name in WORDS or name == "timestamp" or isinstance(value, (list, dict)):
            continue
        metric = f"cdp_pool_{name}_total" if name in COUNTERS else f"cdp_pool_{name}"
        key = (metric, (spider_label,))
        if value is None:
            assert key not in scraped, name  # "not available" is no sample, never 0
            continue
        assert scraped[key] == float(value), name
        compared += 1
    assert compared >= 20
    words = {k: str(v) for k, v in line.items() if k in WORDS and v is not None}
    info = (("spider", "recording"), *sorted(words.items()))
    assert scraped[("cdp_pool_status_info", tuple(sorted(info)))] == 1
    for c in line["connections"]:
        labels = {"spider": "recording", "connection": str(c["connection"]),
                  "endpoint": c["endpoint"] or "", "state": c["state"]}  # fmt: skip
        key = ("cdp_pool_connection_open_pages", tuple(sorted(labels.items())))
        assert scraped[key] == c["open_pages"]

    # The cluster's figures, once sent (none before).
    assert not any(name.startswith("cdp_pool_cluster_") for name, _ in seen["before_cluster"])
    assert scraped[("cdp_pool_cluster_queued_requests",
                    (("priority", "10"), spider_label))] == 3  # fmt: skip
    assert scraped[("cdp_pool_cluster_leases", (("owner", "host-a:1"), spider_label))] == 3
    assert scraped[("cdp_pool_cluster_host_pause_seconds",
                    (("host", "shop.example"), spider_label))] == 7.5  # fmt: skip
    assert scraped[("cdp_pool_cluster_workers", (spider_label,))] == 2
    assert scraped[("cdp_pool_cluster_requeued_total", (spider_label,))] == 1

    # Closed with the crawl.
    assert refused(seen["url"])


def test_metrics_are_off_by_default() -> None:
    from scrapy.exceptions import NotConfigured
    from scrapy.utils.test import get_crawler

    crawler = get_crawler(settings_dict={"ADDONS": {"scrapy_cdp_pool.Addon": 0}})
    with pytest.raises(NotConfigured):
        MetricsExtension.from_crawler(crawler)


@pytest.mark.parametrize("where", ["port in use", "not this machine's address"])
def test_a_metrics_address_that_cannot_be_listened_on_is_refused_naming_the_settings(
    where: str,
) -> None:
    """Found by a fresh-user trial: a bare OSError ("Address already in use")
    that named no setting (fails before)."""
    from scrapy.utils.test import get_crawler

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        settings: dict[str, Any] = {
            "ADDONS": {"scrapy_cdp_pool.Addon": 0},
            "CDP_POOL_METRICS_PORT": port,
        }
        if where != "port in use":
            settings["CDP_POOL_METRICS_HOST"] = "192.0.2.1"  # TEST-NET-1: no machine's
            settings["CDP_POOL_METRICS_PORT"] = 0
        with pytest.raises(ValueError, match="CDP_POOL_METRICS_PORT") as raised:
            MetricsExtension.from_crawler(get_crawler(settings_dict=settings))
    assert "CDP_POOL_METRICS_HOST" in str(raised.value)


@pytest_twisted.ensureDeferred
async def test_a_cluster_worker_sends_the_cluster_s_figures(
    site: SiteServer, redis_server: RedisServer
) -> None:
    """A real cluster crawl with CDP_POOL_METRICS_PORT: at each lease renewal
    (every third of a 1.5 s lease here) the worker reads the cluster's figures
    from Redis and the metrics hold them."""
    urls = [site.url(f"/inflight?key=metrics-cluster&ms=400&i={i}") for i in range(8)]
    _, crawler = await crawl(
        [scrapy.Request(url, meta={"cdp": True}) for url in urls],
        {
            "CDP_POOL_CLUSTER_REDIS_URL": redis_server.url,
            "CDP_POOL_CLUSTER_NAME": "metrics-figures",
            "CDP_POOL_CLUSTER_LEASE_SECONDS": 1.5,
            "CDP_POOL_METRICS_PORT": 0,
            "CDP_POOL_CONNECTIONS": 1,
        },
    )
    figures = extension(crawler, MetricsExtension).collector.cluster
    assert isinstance(figures, ClusterFigures)
    assert figures.workers == 1
