"""Bad input fails by name, alone: a request JOBDIR cannot store, a bad
``cdp_not_before``; the rest of the crawl goes on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.errors import InvalidRequestMeta, UnserializableRequestError
from tests.crawl import RecordingSpider, crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True


@pytest_twisted.ensureDeferred
async def test_request_jobdir_cannot_store_fails_naming_the_meta_key(
    site: SiteServer, tmp_path: Path
) -> None:
    spider, crawler = await crawl(
        [
            scrapy.Request(site.url("/js?n=1&bad"), meta={"cdp": True, "parser": lambda x: x}),
            scrapy.Request(site.url("/js?n=1&good"), meta={"cdp": True, "note": "fine"}),
        ],
        {"JOBDIR": str(tmp_path / "job")},
    )
    assert [r.url for r in spider.responses] == [site.url("/js?n=1&good")]
    assert len(spider.failures) == 1
    error = spider.failures[0].value
    assert isinstance(error, UnserializableRequestError)
    assert "meta['parser']" in str(error)
    assert "JOBDIR" in str(error)
    assert "/js?n=1&bad" in str(error)
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/failures/UnserializableRequestError"] == 1
    assert stats["cdp_pool/pages"] == 1  # the bad one never reached the browser


@pytest_twisted.ensureDeferred
async def test_without_jobdir_the_same_request_is_fine(site: SiteServer) -> None:
    spider, _ = await crawl(
        [scrapy.Request(site.url("/js?n=1&memory"), meta={"cdp": True, "parser": lambda x: x})]
    )
    assert not spider.failures
    assert len(spider.responses) == 1


@pytest_twisted.ensureDeferred
async def test_bad_not_before_fails_its_request_by_name(site: SiteServer) -> None:
    spider, _ = await crawl(
        [
            scrapy.Request(site.url("/js?n=1&when"), meta={"cdp_not_before": "tomorrow"}),
            scrapy.Request(site.url("/js?n=1&now")),
        ]
    )
    assert [r.url for r in spider.responses] == [site.url("/js?n=1&now")]
    assert "meta['cdp_not_before'] = 'tomorrow'" in str(spider.failures[0].value)


BAD_NOT_BEFORE: list[tuple[Any, str]] = [
    (float("inf"), "a finite number"),
    (float("nan"), "a finite number"),
    (-5.0, "not a negative number"),
    (1e12, "more than CDP_POOL_RETRY_BACKOFF_MAX_SECONDS = 60 s"),  # milliseconds
    (True, "(a number)"),
]


@pytest.mark.parametrize("origin", ["start", "callback"])
@pytest.mark.parametrize(
    ("value", "why"), BAD_NOT_BEFORE, ids=["inf", "nan", "negative", "milliseconds", "bool"]
)
@pytest_twisted.ensureDeferred
async def test_an_invalid_not_before_fails_its_request_alone(
    site: SiteServer, origin: str, value: Any, why: str
) -> None:
    """From ``start()`` or from a callback, beside good requests: the bad one
    reaches its errback with :class:`InvalidRequestMeta`, every good one is
    fetched, the crawl ends."""
    bad = scrapy.Request(site.url("/js?n=1&bad"), meta={"cdp_not_before": value})
    good = [scrapy.Request(site.url(f"/js?n=1&good={i}")) for i in range(3)]
    if origin == "start":
        requests = [good[0], bad, *good[1:]]
    else:
        requests = [
            scrapy.Request(site.url("/js?n=1&parent"), meta={"then": lambda _s, _r: [bad, *good]})
        ]
    spider, crawler = await crawl(requests, spider_cls=RecordingSpider)
    fetched = {r.url for r in spider.responses}
    assert {site.url(f"/js?n=1&good={i}") for i in range(3)} <= fetched
    assert site.url("/js?n=1&bad") not in fetched
    assert len(spider.failures) == 1
    error = spider.failures[0].value
    assert isinstance(error, InvalidRequestMeta)
    assert "/js?n=1&bad" in str(error)
    assert f"meta['cdp_not_before'] = {value!r}" in str(error)
    assert why in str(error)
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/failures/InvalidRequestMeta"] == 1
    assert stats["finish_reason"] == "finished"


@pytest_twisted.ensureDeferred
async def test_an_invalid_not_before_fails_alone_with_jobdir(
    site: SiteServer, tmp_path: Path
) -> None:
    bad = scrapy.Request(site.url("/js?n=1&bad"), meta={"cdp_not_before": float("inf")})
    good = scrapy.Request(site.url("/js?n=1&good"))
    spider, crawler = await crawl([bad, good], {"JOBDIR": str(tmp_path / "job")})
    assert [r.url for r in spider.responses] == [site.url("/js?n=1&good")]
    assert isinstance(spider.failures[0].value, InvalidRequestMeta)
    assert crawler.stats.get_value("finish_reason") == "finished"


@pytest.mark.parametrize("value", ["", "  ", False, 0, ["alice"]], ids=repr)
@pytest_twisted.ensureDeferred
async def test_a_profile_that_is_no_name_fails_its_request_by_name(
    site: SiteServer, value: Any
) -> None:
    """``meta["cdp_profile"] = ""`` (say, a name read from an empty field) was
    rendered with no identity at all; ``0`` would have been a profile "0"."""
    spider, crawler = await crawl(
        [
            scrapy.Request(site.url("/js?n=1&who"), meta={"cdp": True, "cdp_profile": value}),
            scrapy.Request(site.url("/js?n=1&none"), meta={"cdp": True, "cdp_profile": None}),
        ]
    )
    assert [r.url for r in spider.responses] == [site.url("/js?n=1&none")]
    error = spider.failures[0].value
    assert isinstance(error, InvalidRequestMeta)
    assert f"meta['cdp_profile'] = {value!r}" in str(error)
    assert "/js?n=1&who" in str(error)
    assert crawler.stats.get_value("cdp_pool/failures/InvalidRequestMeta") == 1


@pytest.mark.parametrize("value", ["false", "yes", 1, 0], ids=repr)
@pytest_twisted.ensureDeferred
async def test_a_cdp_flag_that_is_not_a_bool_fails_its_request_by_name(
    site: SiteServer, value: Any
) -> None:
    """Found by a fresh-user trial: ``meta["cdp"] = "false"`` was rendered."""
    spider, _ = await crawl(
        [
            scrapy.Request(site.url("/js?n=1&flag"), meta={"cdp": value}),
            scrapy.Request(site.url("/js?n=1&plain"), meta={"cdp": False}),
        ]
    )
    assert [r.url for r in spider.responses] == [site.url("/js?n=1&plain")]
    error = spider.failures[0].value
    assert isinstance(error, InvalidRequestMeta)
    assert f"meta['cdp'] = {value!r}" in str(error)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e300 * 1e10], ids=repr)
@pytest_twisted.ensureDeferred
async def test_a_navigation_timeout_that_is_not_finite_fails_its_request_by_name(
    site: SiteServer, value: float
) -> None:
    """Found by a fresh-user trial: NaN and infinity passed the "> 0" check."""
    spider, _ = await crawl(
        [scrapy.Request(site.url("/js?n=1&nan"), meta={"cdp": True,
                                                      "cdp_navigation_timeout": value})]
    )  # fmt: skip
    assert not spider.responses
    assert "meta['cdp_navigation_timeout']" in str(spider.failures[0].value)
    assert "finite" in str(spider.failures[0].value)


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_a_url_with_credentials_is_refused_as_plain_scrapy_refuses_it(
    site: SiteServer, browser: str
) -> None:
    """``http://bob:pw@host/``: plain Scrapy fails it ("invalid hostname");
    rendered, Lightpanda sent the pair as ``Authorization`` and Chromium
    dropped it (found by a fresh-user trial). Now it fails by name, without
    the password, on both; plain Scrapy's result is the reference."""
    url = site.url("/headers?creds").replace("http://", "http://bob:pw123@")
    spider, _ = await crawl(
        [
            scrapy.Request(url, meta={"cdp": True}),
            scrapy.Request(url, meta={"cdp": False}, dont_filter=True),
            scrapy.Request(site.url("/js?n=1&after"), meta={"cdp": True}),
        ],
        {"CDP_POOL_BROWSER": browser},
    )
    assert [r.url for r in spider.responses] == [site.url("/js?n=1&after")]
    assert len(spider.failures) == 2
    rendered = next(f.value for f in spider.failures if f.request.meta["cdp"])
    plain = next(f.value for f in spider.failures if not f.request.meta["cdp"])
    assert "invalid hostname" in str(plain)  # the reference
    assert "user part" in str(rendered)
    assert "pw123" not in str(rendered)
