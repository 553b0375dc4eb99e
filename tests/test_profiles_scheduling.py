"""One request in flight per identity, and no head-of-line blocking: real
crawls, with the test site recording how many requests of each session cookie
it serves at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy

from tests.crawl import RecordingSpider, crawl
from tests.profiles import hits, session_inflight_max, token, write_profile
from tests.servers import SiteServer


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_one_request_in_flight_per_identity(
    site: SiteServer, tmp_path: Path, browser: str
) -> None:
    names = [f"p{i}-{token()}" for i in range(4)]
    for name in names:
        write_profile(tmp_path, name, session=name)
    per_identity = 6 if browser == "lightpanda" else 3
    requests = [
        scrapy.Request(site.url(f"/session-inflight?ms=150&i={i}&p={name}"),
                       meta={"cdp_profile": name})
        for i in range(per_identity)
        for name in names
    ]  # fmt: skip
    # A retried request (503) is the same identity again: still one at a time.
    requests += [
        scrapy.Request(site.url(f"/session-inflight?ms=50&status=503&p={name}"),
                       meta={"cdp_profile": name})
        for name in names
    ]  # fmt: skip
    spider, crawler = await crawl(
        requests,
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_PROFILES_DIR": str(tmp_path),
         "CDP_POOL_CONNECTIONS": 4, "CONCURRENT_REQUESTS": 8,
         "RETRY_ENABLED": True, "RETRY_TIMES": 1,
         "CDP_POOL_RETRY_BACKOFF_BASE_SECONDS": 0.05},
    )  # fmt: skip
    assert not spider.failures
    assert len(spider.responses) == len(requests)
    for name in names:
        assert session_inflight_max(site, name) == 1, name
        assert hits(site, f"/session-inflight?ms=50&status=503&p={name}") == 2  # retried once
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/pages_in_flight_max"] >= 2  # identities did run side by side
    assert sum(stats[f"cdp_pool/profile/{name}/requests"] for name in names) == len(requests) + 4


@pytest_twisted.ensureDeferred
async def test_a_long_queue_for_one_identity_does_not_hold_back_the_others(
    site: SiteServer, tmp_path: Path
) -> None:
    busy = f"busy-{token()}"
    others = [f"other{i}-{token()}" for i in range(3)]
    for name in [busy, *others]:
        write_profile(tmp_path, name, session=name)
    # The busy identity's 200 requests are queued first.
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
        {"CDP_POOL_PROFILES_DIR": str(tmp_path), "CDP_POOL_CONNECTIONS": 4,
         "CONCURRENT_REQUESTS": 4},
    )  # fmt: skip
    assert not spider.failures
    order = [response.meta["cdp_profile"] for response in spider.responses]
    assert len(order) == 260
    hundredth_busy = [i for i, name in enumerate(order) if name == busy][99]
    last_other = max(i for i, name in enumerate(order) if name != busy)
    assert last_other < hundredth_busy
    for name in [busy, *others]:
        assert session_inflight_max(site, name) == 1


class RerouteMiddleware:
    """Returns a new request from ``process_request`` (a documented pattern):
    the identity the queue marked busy must still be freed."""

    def process_request(self, request: scrapy.Request) -> scrapy.Request | None:
        if "reroute" not in request.meta:
            return None
        meta = {k: v for k, v in request.meta.items() if k != "reroute"}
        return request.replace(url=request.meta["reroute"], meta=meta)


class InlineDownloadSpider(RecordingSpider):
    """Each response's callback downloads another page of the same identity
    with ``engine.download_async``, bypassing the scheduler queue."""

    async def parse(self, response: scrapy.http.Response) -> Any:  # type: ignore[override]
        self.responses.append(response)
        inline = response.meta.get("inline")
        if inline:
            assert self.crawler.engine is not None
            extra = scrapy.Request(inline, meta={"cdp_profile": response.meta["cdp_profile"]})
            self.responses.append(await self.crawler.engine.download_async(extra))
        return
        yield


@pytest_twisted.ensureDeferred
async def test_identity_is_freed_when_a_middleware_returns_a_request(
    site: SiteServer, tmp_path: Path
) -> None:
    name = f"reroute-{token()}"
    write_profile(tmp_path, name, session=name)
    requests = [
        scrapy.Request(site.url(f"/status/200?{name}&i={i}"), meta={
            "cdp_profile": name,
            "reroute": site.url(f"/session-inflight?ms=50&p={name}&i={i}"),
        })
        for i in range(4)
    ]  # fmt: skip
    spider, _ = await crawl(
        requests,
        {"CDP_POOL_PROFILES_DIR": str(tmp_path),
         "DOWNLOADER_MIDDLEWARES": {f"{__name__}.RerouteMiddleware": 100}},
    )  # fmt: skip
    assert not spider.failures
    assert sorted(r.url for r in spider.responses) == sorted(
        site.url(f"/session-inflight?ms=50&p={name}&i={i}") for i in range(4)
    )
    assert session_inflight_max(site, name) == 1


@pytest_twisted.ensureDeferred
async def test_inline_downloads_wait_for_their_identity(site: SiteServer, tmp_path: Path) -> None:
    name = f"inline-{token()}"
    write_profile(tmp_path, name, session=name)
    requests = [
        scrapy.Request(site.url(f"/session-inflight?ms=200&p={name}&i={i}"), meta={
            "cdp_profile": name,
            "inline": site.url(f"/session-inflight?ms=200&p={name}&inline={i}"),
        })
        for i in range(3)
    ]  # fmt: skip
    spider, _ = await crawl(
        requests, {"CDP_POOL_PROFILES_DIR": str(tmp_path)}, spider_cls=InlineDownloadSpider
    )
    assert not spider.failures
    assert len(spider.responses) == 6
    assert session_inflight_max(site, name) == 1
