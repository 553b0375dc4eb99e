"""Scrapy's politeness settings hold for rendered requests as the site sees
them (issue 26, item 1): ``DOWNLOAD_DELAY`` with and without its jitter,
retries and redirects, a shared ``download_slot`` with ``DOWNLOAD_SLOTS``,
AutoThrottle and ``CDP_POOL_HOST_RATE``, under ``CONCURRENT_REQUESTS = 16``
and two browser connections, on both backends, with plain Scrapy on the same
input as the reference.

Checked on the site's own clock (:mod:`tests.site.faults` records the
``time.monotonic()`` of each arrival): no two arrivals of one slot are closer
than the slot's delay, less the jitter Scrapy documents (``DOWNLOAD_DELAY_JITTER``,
0.5 by default: a delay drawn between 0.5 and 1.5 times the setting). The
first gap counts: the browser is still starting when Scrapy dispatches the
first requests. No speed is asserted.

Each test runs its crawl on the three backends at once
(:func:`tests.at_once.each_at_once`: the crawls mostly wait out the delays; one
parametrized case after another, each held a worker of the suite); each
backend's requests carry a key of their own, and the site's records are
read per key.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest_twisted
import scrapy

from tests.at_once import each_at_once
from tests.crawl import crawl
from tests.fault_records import records
from tests.servers import SiteServer

BACKENDS = ["lightpanda", "chromium", "plain"]

BASE: dict[str, Any] = {
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "CDP_POOL_CONNECTIONS": 2,
    # pages get generous deadlines: the machine may be loaded
    "DOWNLOAD_TIMEOUT": 60,
    "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": 30,
}


def _settings(backend: str, extra: dict[str, Any]) -> dict[str, Any]:
    browser = "lightpanda" if backend == "plain" else backend
    return {**BASE, "CDP_POOL_BROWSER": browser, **extra}


async def _on_each_backend(case: Callable[[str], Awaitable[None]]) -> None:
    """``case(backend)`` on every backend, at once."""
    await each_at_once({backend: lambda b=backend: case(b) for backend in BACKENDS})


async def _six_pages_spaced(site: SiteServer, settings: dict[str, Any], gap: float) -> None:
    """Six pages on every backend at once, ``settings`` on top of :data:`BASE`:
    each backend's six arrivals at the site at least ``gap`` seconds apart."""

    async def case(backend: str) -> None:
        gaps, spider, _ = await _crawl_and_gaps(site, backend, settings, _pages(site, 6))
        assert not spider.failures
        assert len(gaps) == 5
        assert min(gaps) >= gap, gaps

    await _on_each_backend(case)


def _gaps(arrivals: list[float]) -> list[float]:
    ordered = sorted(arrivals)
    return [b - a for a, b in itertools.pairwise(ordered)]


async def _crawl_and_gaps(
    site: SiteServer, backend: str, settings: dict[str, Any], urls: list[tuple[str, dict[str, Any]]]
) -> tuple[list[float], Any, Any]:
    key = uuid.uuid4().hex[:10]
    requests = [
        scrapy.Request(url.format(key=key), meta={"cdp": backend != "plain", **meta})
        for url, meta in urls
    ]
    spider, crawler = await crawl(requests, _settings(backend, settings))
    seen = records(site, key)
    gaps = _gaps(seen["arrivals"])
    print(f"{backend}: {len(gaps) + 1} arrivals, gaps {[round(g, 3) for g in gaps]}")
    return gaps, spider, crawler


def _pages(
    site: SiteServer, count: int, host: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    base = site.url("")
    if host is not None:
        base = base.replace("127.0.0.1", host)
    return [(f"{base}/flaky?key={{key}}&fail=0&i={i}", {}) for i in range(count)]


@pytest_twisted.ensureDeferred
async def test_download_delay_holds_at_the_site(site: SiteServer) -> None:
    # 0.5 s (1.0 before): the rule holds for any delay; 5 gaps are waited out
    settings = {"DOWNLOAD_DELAY": 0.5, "DOWNLOAD_DELAY_JITTER": 0}
    await _six_pages_spaced(site, settings, 0.5)


@pytest_twisted.ensureDeferred
async def test_a_randomized_delay_is_never_below_half_the_delay(site: SiteServer) -> None:
    # 0.5 s (1.0 before), DOWNLOAD_DELAY_JITTER: 0.5, Scrapy's default: each
    # delay drawn between 0.25 and 0.75 s
    settings = {"DOWNLOAD_DELAY": 0.5}
    await _six_pages_spaced(site, settings, 0.25)


@pytest_twisted.ensureDeferred
async def test_retries_and_redirects_keep_the_delay(site: SiteServer) -> None:
    async def case(backend: str) -> None:
        settings = {
            "DOWNLOAD_DELAY": 0.5,
            "DOWNLOAD_DELAY_JITTER": 0,
            "RETRY_ENABLED": True,
            "RETRY_TIMES": 2,
            "CDP_POOL_RETRY_BACKOFF_BASE_SECONDS": 0.1,
        }
        base = site.url("")
        urls: list[tuple[str, dict[str, Any]]] = [
            # the first arrival of the key gets a 503: a retry
            (f"{base}/flaky?key={{key}}&fail=1&status=503&i=f", {}),
            *((f"{base}/polite-redirect?key={{key}}&i={i}", {}) for i in range(3)),
            *_pages(site, 2),
        ]
        gaps, spider, crawler = await _crawl_and_gaps(site, backend, settings, urls)
        assert not spider.failures
        assert len(spider.responses) == 6
        assert len(gaps) == 9  # 6 requests, a retry and 3 redirect hops
        assert crawler.stats.get_value("retry/count") == 1
        assert min(gaps) >= 0.5, gaps

    await _on_each_backend(case)


@pytest_twisted.ensureDeferred
async def test_a_shared_download_slot_spaces_two_hosts(site: SiteServer) -> None:
    async def case(backend: str) -> None:
        settings = {"DOWNLOAD_SLOTS": {"shared": {"delay": 0.5, "jitter": 0}}}
        urls = [
            (url, {"download_slot": "shared"})
            for url, _ in _pages(site, 3) + _pages(site, 3, host="localhost")
        ]
        gaps, spider, _ = await _crawl_and_gaps(site, backend, settings, urls)
        assert not spider.failures
        assert len(gaps) == 5
        assert min(gaps) >= 0.5, gaps

    await _on_each_backend(case)


@pytest_twisted.ensureDeferred
async def test_autothrottle_keeps_at_least_the_download_delay(site: SiteServer) -> None:
    settings = {
        "AUTOTHROTTLE_ENABLED": True,
        "AUTOTHROTTLE_START_DELAY": 1.0,
        "AUTOTHROTTLE_TARGET_CONCURRENCY": 16.0,
        "DOWNLOAD_DELAY": 0.5,  # AutoThrottle's floor
        "DOWNLOAD_DELAY_JITTER": 0,
    }
    await _six_pages_spaced(site, settings, 0.5)


@pytest_twisted.ensureDeferred
async def test_the_host_rate_holds_at_the_site(site: SiteServer) -> None:
    settings = {"CDP_POOL_HOST_RATE": 2.0}
    await _six_pages_spaced(site, settings, 0.5)


@pytest_twisted.ensureDeferred
async def test_concurrent_requests_per_domain_hold_at_the_site(site: SiteServer) -> None:
    async def case(backend: str) -> None:
        key = uuid.uuid4().hex[:10]
        requests = [
            scrapy.Request(
                site.url(f"/held?key={key}&ms=400&i={i}"), meta={"cdp": backend != "plain"}
            )
            for i in range(8)
        ]
        settings = {"CONCURRENT_REQUESTS_PER_DOMAIN": 2, "CDP_POOL_CONNECTIONS": 4}
        spider, _ = await crawl(requests, _settings(backend, settings))
        assert not spider.failures
        seen = records(site, key)
        assert len(seen["arrivals"]) == 8
        assert 1 <= seen["in_flight_max"] <= 2, seen["in_flight_max"]

    await _on_each_backend(case)
