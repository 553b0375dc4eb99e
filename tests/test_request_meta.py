"""One way to refuse bad input (issue 28): every request-meta value the plugin
reads fails its request alone, with InvalidRequestMeta naming the key, counted
in one stat, before the browser is asked; a ``cdp*`` key the plugin does not
read is warned about once, with the key meant (issue 26)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.errors import InvalidRequestMeta
from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BAD: list[tuple[dict[str, Any], str]] = [
    ({"cdp_wait_until": "loaded"}, "meta['cdp_wait_until'] = 'loaded'"),
    ({"download_maxsize": "abc"}, "meta['download_maxsize'] = 'abc'"),
    ({"download_warnsize": -1}, "meta['download_warnsize'] = -1"),
    ({"download_timeout": -5}, "meta['download_timeout'] = -5"),
    ({"cdp_expect": {"nonsense": 1}}, "meta['cdp_expect']"),
    ({"cdp_dialogs": "maybe"}, "meta['cdp_dialogs'] = 'maybe'"),
]


@pytest.mark.parametrize(
    ("meta", "named"),
    BAD,
    ids=["wait_until", "maxsize", "warnsize", "timeout", "expect", "dialogs"],
)
@pytest_twisted.ensureDeferred
async def test_a_bad_meta_value_fails_its_request_alone_by_name(
    site: SiteServer, meta: dict[str, Any], named: str
) -> None:
    spider, crawler = await crawl(
        [
            scrapy.Request(site.url("/js?n=1&bad"), meta={"cdp": True, **meta}),
            scrapy.Request(site.url("/js?n=1&good"), meta={"cdp": True}),
        ],
        {"RETRY_ENABLED": True},
    )
    assert [r.url for r in spider.responses] == [site.url("/js?n=1&good")]
    [failure] = spider.failures
    assert isinstance(failure.value, InvalidRequestMeta)
    assert named in str(failure.value)
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/failures/InvalidRequestMeta"] == 1
    assert stats["cdp_pool/pages"] == 1  # the bad one never reached the browser
    assert "retry/count" not in stats  # not retried


@pytest_twisted.ensureDeferred
async def test_a_misspelt_meta_key_is_warned_about_once_with_the_key_meant(
    site: SiteServer, caplog: pytest.LogCaptureFixture
) -> None:
    requests = [
        scrapy.Request(
            site.url(f"/js?n=1&i={i}"),
            meta={"cdp": True, "cdp_action": [["click", "a"]], "cpd": True},
        )
        for i in range(3)
    ]
    with caplog.at_level(logging.WARNING, logger="scrapy_cdp_pool"):
        spider, _ = await crawl(requests)
    assert len(spider.responses) == 3
    warnings = [r.getMessage() for r in caplog.records if "is not a key" in r.getMessage()]
    assert len(warnings) == 2  # once per key, not per request
    assert any("'cdp_action'" in w and "did you mean 'cdp_actions'" in w for w in warnings)
    assert any("'cpd'" in w for w in warnings)


@pytest_twisted.ensureDeferred
async def test_a_request_to_render_a_scheme_the_browser_does_not_render_is_warned_about_once(
    site: SiteServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by a fresh-user trial: ``meta["cdp"]`` on a ``data:`` URL was
    silently not rendered. Scrapy's own handler still answers it, as plain
    Scrapy would; one WARNING per scheme names it, and http is not named."""
    requests = [
        scrapy.Request(f"data:text/html,<p>{i}</p>", meta={"cdp": True}, dont_filter=True)
        for i in range(3)
    ] + [scrapy.Request(site.url("/js?n=1&scheme=1"), meta={"cdp": True})]
    with caplog.at_level(logging.WARNING, logger="scrapy_cdp_pool"):
        spider, _ = await crawl(requests)
    assert sorted(r.text for r in spider.responses if r.url.startswith("data:")) == [
        f"<p>{i}</p>" for i in range(3)
    ]
    named = [
        r.getMessage() for r in caplog.records if "renders only http and https" in r.getMessage()
    ]
    assert len(named) == 1, named
    assert ": data: requests go to Scrapy's own handler" in named[0]
