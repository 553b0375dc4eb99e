"""Pages with cross-origin iframes beside plain pages on Chromium (issue 27
item 5): closing the context of a page whose frames Chromium runs in other
processes (site isolation) never retires a connection, restarts the browser or
fails a neighbouring request: frames that loaded, and a frame stuck in a
script loop (the page read at ``domcontentloaded``: its frame never loads).
Two connections on the browser's one pipe, so a retired connection would
restart the browser under every page in flight.

Measured here (each ``Target.disposeBrowserContext`` timed, the machine's load
average 20-27): 4 or 30 frames a page, 15-290 ms; a frame in a loop, up to
770 ms; against ``CDP_POOL_CONTEXT_CLOSE_TIMEOUT_SECONDS`` (5 s). No context
closed slowly enough to retire its connection, in any run."""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

FRAMED_PAGES = 12
FRAMES_PER_PAGE = 4
PLAIN_PAGES = 12
LOOPING_FRAME_PAGES = 4


def _looping_frame_page(site: SiteServer, i: int) -> scrapy.Request:
    """A page framing a page of another origin whose script never ends."""
    port = urlsplit(site.base).port
    query = urlencode({"frame": f"http://localhost:{port}/busy-loop?frame={i}"})
    return scrapy.Request(
        site.url(f"/private/probe?{query}"),
        meta={"cdp": True, "cdp_wait_until": "domcontentloaded"},
    )


@pytest_twisted.ensureDeferred
async def test_closing_contexts_with_cross_origin_frames_disturbs_no_neighbour(
    site: SiteServer,
) -> None:
    hits_before = site.stats()["hits"]
    requests = []
    for i in range(max(FRAMED_PAGES, PLAIN_PAGES)):
        # each frame is of http://localhost:<port>, another site than 127.0.0.1
        framed = site.url(f"/hostile/iframes?n={FRAMES_PER_PAGE}&page={i}")
        requests.append(scrapy.Request(framed, meta={"cdp": True}))
        requests.append(scrapy.Request(site.url(f"/js?page={i}"), meta={"cdp": True}))
    requests += [_looping_frame_page(site, i) for i in range(LOOPING_FRAME_PAGES)]
    spider, crawler = await crawl(
        requests,
        {
            "CDP_POOL_BROWSER": "chromium",
            "CDP_POOL_CONNECTIONS": 2,
            "CDP_POOL_ALLOW_PRIVATE_NETWORKS": True,  # the frames' localhost is loopback
            "DOWNLOAD_TIMEOUT": 120,
            "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": 60,
        },
    )
    assert crawler.stats is not None
    stats = crawler.stats.get_stats()
    assert not spider.failures, [str(f.value) for f in spider.failures]
    assert len(spider.responses) == FRAMED_PAGES + PLAIN_PAGES + LOOPING_FRAME_PAGES
    # the frames were fetched, from the other origin
    hits = site.stats()["hits"]
    for path, count in (
        ("/hostile/leaf", FRAMED_PAGES * FRAMES_PER_PAGE),
        ("/busy-loop", LOOPING_FRAME_PAGES),
    ):
        assert hits.get(path, 0) - hits_before.get(path, 0) == count, path
    assert stats.get("cdp_pool/retired", 0) == 0
    assert stats.get("cdp_pool/server_restarts", 0) == 0
    assert stats.get("cdp_pool/reconnects", 0) == 0
    assert stats["cdp_pool/contexts_opened"] == stats["cdp_pool/contexts_closed"]
    assert not any(key.startswith("cdp_pool/errors/") for key in stats), stats
