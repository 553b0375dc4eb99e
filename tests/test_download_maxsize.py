"""``DOWNLOAD_MAXSIZE`` / ``meta["download_maxsize"]`` cut a rendered main
document while it arrives, on both embedded backends.

Found by a fresh-user trial: a 200 MB page streamed without
``Content-Length`` with ``DOWNLOAD_MAXSIZE`` = 10 MiB was loaded whole first
(Lightpanda: 11 s, 1.9 GB in the crawler; Chromium: 43 s, 3.1 GB in the
browser, then ``PageScriptStalled``) where plain Scrapy stops at 10 MiB. The
site records how many bytes it wrote before the connection closed: far fewer
than the body.
"""

from __future__ import annotations

import json
import urllib.request
import uuid
from typing import Any

import pytest
import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import SiteServer

MAXSIZE = 2 * 1024 * 1024  # bytes
TOTAL = 64 * 1024 * 1024  # bytes the site would send

BACKENDS = ["lightpanda", "chromium"]


def _settings(browser: str, **extra: Any) -> dict[str, Any]:
    return {
        "CDP_POOL_BROWSER": browser,
        "DOWNLOAD_MAXSIZE": MAXSIZE,
        "CDP_POOL_CONNECTIONS": 1,
        **extra,
    }


def _sent(site: SiteServer, key: str) -> dict[str, Any]:
    """What the site's stream of ``key`` wrote before its connection closed
    (the site waits for its handler to end)."""
    with urllib.request.urlopen(site.url(f"/oversize/sent?key={key}"), timeout=40) as answer:
        record: dict[str, Any] = json.loads(answer.read())
    return record


def _stream(site: SiteServer, key: str, query: str = "") -> str:
    return site.url(f"/oversize/stream?key={key}{query}&bytes={TOTAL}")


@pytest.mark.parametrize("browser", BACKENDS)
@pytest.mark.parametrize("kind", ["html", "text"])
@pytest_twisted.ensureDeferred
async def test_a_streamed_document_past_maxsize_is_cut_while_it_arrives(
    site: SiteServer, browser: str, kind: str
) -> None:
    key = f"{browser}-{kind}-{uuid.uuid4().hex}"
    url = _stream(site, key, f"&type={kind}")
    spider, crawler = await crawl(
        [
            scrapy.Request(url, meta={"cdp": True}),
            # queued behind it on the one connection: the crawl goes on
            scrapy.Request(site.url("/js?n=3"), meta={"cdp": True}, priority=-1),
        ],
        _settings(browser),
    )
    assert [r.url for r in spider.responses] == [site.url("/js?n=3")]
    assert len(spider.responses[0].css("p.item")) == 3, spider.responses[0].text[:300]
    assert len(spider.failures) == 1
    message = str(spider.failures[0].value)
    assert "larger than download max size (2097152)" in message, message
    assert url in message, message
    record = _sent(site, key)
    assert record["ended"], record
    # cut while it arrives: the site did not send the whole body (how much it
    # sent before the cut moves with the machine's load: not asserted, a CI
    # run on a loaded machine saw 22 of 64 MB with a remote Chromium)
    assert not record["finished"], record
    assert record["sent"] < TOTAL, record
    assert crawler.stats.get_value("cdp_pool/errors/ResponseTooLarge") == 1


@pytest.mark.parametrize("browser", BACKENDS)
@pytest.mark.parametrize("kind", ["html", "text"])
@pytest_twisted.ensureDeferred
async def test_a_streamed_document_just_under_maxsize_renders(
    site: SiteServer, browser: str, kind: str
) -> None:
    key = f"{browser}-under-{kind}-{uuid.uuid4().hex}"
    size = MAXSIZE - 64 * 1024
    url = site.url(f"/oversize/stream?key={key}&type={kind}&bytes={size}")
    spider, _ = await crawl([scrapy.Request(url, meta={"cdp": True})], _settings(browser))
    assert not spider.failures, [str(f.value) for f in spider.failures]
    body = spider.responses[0].body
    assert MAXSIZE - 128 * 1024 < len(body) <= MAXSIZE, len(body)
    assert _sent(site, key)["finished"]


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_content_length_that_lies_low_never_loads_the_body(
    site: SiteServer, browser: str
) -> None:
    """``Content-Length: 1000`` then 64 MB: the browser takes what the header
    announced (as Scrapy's client does) and drops the connection; the rest is
    never read, let alone held. (Without ``Connection: close`` Lightpanda
    1.0.2 reuses that connection and the site's next page fails with
    ``WeirdServerReply``: the site's fault, not a size the plugin could cut.)"""
    key = f"{browser}-lie-{uuid.uuid4().hex}"
    url = _stream(site, key, "&type=text&length=1000")
    spider, _ = await crawl(
        [
            scrapy.Request(url, meta={"cdp": True}),
            scrapy.Request(site.url("/js?n=1"), meta={"cdp": True}, priority=-1),
        ],
        _settings(browser),
    )
    assert not spider.failures, [str(f.value) for f in spider.failures]
    assert [r.url for r in spider.responses] == [url, site.url("/js?n=1")]
    assert len(spider.responses[0].body) == 1000
    record = _sent(site, key)
    assert not record["finished"], record  # cut while it arrived (see above)
    assert record["sent"] < TOTAL, record


@pytest_twisted.ensureDeferred
async def test_a_maxsize_over_lightpandas_cap_is_refused_by_name(site: SiteServer) -> None:
    """The embedded Lightpanda cuts every response at DOWNLOAD_MAXSIZE: a
    request asking for more (or for no limit) is refused, not cut short."""
    requests = [
        scrapy.Request(site.url(f"/js?n=1&m={m}"), meta={"cdp": True, "download_maxsize": m})
        for m in (MAXSIZE * 2, 0)
    ]
    requests.append(scrapy.Request(site.url("/js?n=2"), meta={"cdp": True, "download_maxsize": 10}))
    spider, _ = await crawl(requests, _settings("lightpanda"))
    assert spider.responses == []
    messages = sorted(str(f.value) for f in spider.failures)
    assert len(messages) == 3, messages
    refused = [m for m in messages if "--http-max-response-size" in m]
    assert len(refused) == 2, messages
    for message in refused:
        assert "DOWNLOAD_MAXSIZE" in message, message
        assert "download_maxsize" in message, message
        assert "/js?n=1" in message, message
    # a smaller one is still honoured (on the DOM, after its load)
    assert any("larger than download max size (10)" in m for m in messages), messages


@pytest_twisted.ensureDeferred
async def test_no_maxsize_at_all_renders_on_lightpanda(site: SiteServer) -> None:
    """``DOWNLOAD_MAXSIZE = 0`` (no limit): nothing refused, Lightpanda keeps
    its own 1 GiB cap."""
    spider, _ = await crawl(
        [scrapy.Request(site.url("/js?n=4"), meta={"cdp": True, "download_maxsize": 0})],
        _settings("lightpanda", DOWNLOAD_MAXSIZE=0),
    )
    assert not spider.failures, [str(f.value) for f in spider.failures]
    assert len(spider.responses[0].css("p.item")) == 4


@pytest_twisted.ensureDeferred
async def test_a_remote_chromium_cuts_the_document_while_it_arrives(
    site: SiteServer, chromium_endpoint: str
) -> None:
    key = f"remote-chromium-{uuid.uuid4().hex}"
    url = _stream(site, key)
    spider, _ = await crawl(
        [scrapy.Request(url, meta={"cdp": True})],
        {"CDP_POOL_ENDPOINTS": [chromium_endpoint], "DOWNLOAD_MAXSIZE": MAXSIZE},
    )
    assert "larger than download max size (2097152)" in str(spider.failures[0].value)
    record = _sent(site, key)
    assert not record["finished"], record  # cut while it arrived (see above)
    assert record["sent"] < TOTAL, record


@pytest_twisted.ensureDeferred
async def test_a_remote_lightpanda_is_warned_about_once(
    site: SiteServer, lightpanda_endpoint: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The plugin cannot give a remote Lightpanda its response cap: one
    WARNING names DOWNLOAD_MAXSIZE and the flag; the document is still
    refused once loaded."""
    spider, _ = await crawl(
        [
            scrapy.Request(site.url(f"/js?n=50&i={i}"), meta={"cdp": True}, dont_filter=True)
            for i in range(3)
        ],
        {"CDP_POOL_ENDPOINTS": [lightpanda_endpoint], "DOWNLOAD_MAXSIZE": 1000},
    )
    warnings = [r for r in caplog.records if "--http-max-response-size" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "DOWNLOAD_MAXSIZE" in warnings[0].getMessage()
    assert len(spider.failures) == 3
    assert "larger than download max size (1000)" in str(spider.failures[0].value)


@pytest_twisted.ensureDeferred
async def test_no_limit_for_one_request_renders_at_scrapys_default_maxsize(
    site: SiteServer,
) -> None:
    """``meta["download_maxsize"] = 0`` (Scrapy's way to lift the limit for
    one request) with ``DOWNLOAD_MAXSIZE`` at Scrapy's 1 GiB: rendered,
    bounded by Lightpanda's cap as before (it was refused by the first cut
    of this check, which broke that idiom)."""
    spider, _ = await crawl(
        [scrapy.Request(site.url("/js?n=3&unlimited"), meta={"cdp": True, "download_maxsize": 0})],
        {"CDP_POOL_BROWSER": "lightpanda"},
    )
    assert not spider.failures, spider.failures
    assert len(spider.responses[0].css("p.item")) == 3
