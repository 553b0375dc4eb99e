"""Network capture (``meta["cdp_capture"]``, issue 18 item 1) on both embedded
backends: real crawls of the test site's ``/pc/*`` pages."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import SiteServer
from tests.site.pagecontrol import api_body

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BACKENDS = ["lightpanda", "chromium"]
WAIT_DONE = [["wait_for_selector", "#done"]]


def _request(url: str, capture: Any, **meta: Any) -> scrapy.Request:
    return scrapy.Request(
        url, meta={"cdp": True, "cdp_capture": capture, "cdp_actions": WAIT_DONE, **meta}
    )


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_the_json_a_page_fetches_after_load_is_captured_byte_for_byte(
    site: SiteServer, browser: str
) -> None:
    spider, crawler = await crawl(
        [_request(site.url("/pc/spa?key=abc"), ["*/pc/api?*", "re:/pc/echo-post$"])],
        {"CDP_POOL_BROWSER": browser},
    )
    assert not spider.failures, spider.failures
    response = spider.responses[0]
    assert response.css("#out::text").get() == "abc"
    network = response.meta["cdp_network"]
    assert [e["url"] for e in network] == [
        site.url("/pc/api?key=abc"),
        site.url("/pc/echo-post"),
    ], network
    api, post = network
    assert api["body"] == api_body("abc")
    assert api["status"] == 200
    assert api["method"] == "GET"
    assert api["resource_type"] == "fetch"
    assert api["post_data"] is None
    assert api["body_skipped"] is None
    assert api["error"] is None
    content_type = {k.lower(): v for k, v in api["headers"].items()}["content-type"]
    assert content_type.startswith("application/json")
    timing = api["timing"]
    assert 0 <= timing["request"] <= timing["response"] <= timing["finished"]
    assert post["method"] == "POST"
    assert post["resource_type"] == "xhr"
    assert post["post_data"] == b"a=1&b=%C3%A9"
    assert post["body"] == b"a=1&b=%C3%A9"
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/network_captured"] == 2
    assert "cdp_pool/network_bodies_skipped" not in stats


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_resource_types_select_what_is_captured_and_the_rest_is_not(
    site: SiteServer, browser: str
) -> None:
    spider, _ = await crawl(
        [_request(site.url("/pc/spa?key=t"), {"resource_types": ["xhr"]}),
         scrapy.Request(site.url("/pc/spa?key=none"),
                        meta={"cdp": True, "cdp_actions": WAIT_DONE})],
        {"CDP_POOL_BROWSER": browser},
    )  # fmt: skip
    assert not spider.failures, spider.failures
    network = spider.by_url("key=t").meta["cdp_network"]
    assert [(e["url"], e["body"]) for e in network] == [
        (site.url("/pc/echo-post"), b"a=1&b=%C3%A9")
    ]
    assert "cdp_network" not in spider.by_url("key=none").meta


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_body_over_the_cap_is_flagged_not_dropped(site: SiteServer, browser: str) -> None:
    spider, crawler = await crawl(
        [_request(site.url("/pc/spa-big?kb=200"), "*/pc/big?*")],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_CAPTURE_MAX_BODY_MB": 0.1},
    )
    assert not spider.failures, spider.failures
    (entry,) = spider.responses[0].meta["cdp_network"]
    assert entry["status"] == 200
    assert entry["body"] is None
    assert entry["body_skipped"].startswith("larger than CDP_POOL_CAPTURE_MAX_BODY_MB")
    assert crawler.stats.get_value("cdp_pool/network_bodies_skipped") == 1


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_the_total_cap_keeps_the_first_bodies_and_flags_the_rest(
    site: SiteServer, browser: str
) -> None:
    # Room for either body (the API's, the 12-byte echo) but not for both.
    total = len(api_body("tot")) + 6
    spider, _ = await crawl(
        [_request(site.url("/pc/spa?key=tot"), ["*/pc/api?*", "*/pc/echo-post"])],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_CAPTURE_MAX_TOTAL_MB": total / 1024 / 1024},
    )
    assert not spider.failures, spider.failures
    network = spider.responses[0].meta["cdp_network"]
    assert len(network) == 2
    kept = [e for e in network if e["body"] is not None]
    skipped = [e for e in network if e["body"] is None]
    assert len(kept) == 1
    assert len(skipped) == 1
    assert skipped[0]["body_skipped"].startswith("over CDP_POOL_CAPTURE_MAX_TOTAL_MB")


@pytest.mark.parametrize(
    "value",
    [42, {"url": ["x"]}, {"resource_types": ["pictures"]}, ["re:("], [""], {"urls": [1]}],
)
@pytest_twisted.ensureDeferred
async def test_an_invalid_capture_value_fails_its_request_by_name(
    site: SiteServer, value: Any
) -> None:
    spider, _ = await crawl(
        [scrapy.Request(site.url("/pc/api?key=bad"), meta={"cdp": True, "cdp_capture": value}),
         scrapy.Request(site.url("/pc/api?key=good"), meta={"cdp": True})],
    )  # fmt: skip
    assert len(spider.failures) == 1
    message = str(spider.failures[0].value)
    assert "key=bad" in message
    assert "meta['cdp_capture']" in message
    assert [r.url for r in spider.responses] == [site.url("/pc/api?key=good")]
