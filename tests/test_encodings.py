"""Encodings (issue 27 item 7): a page's text, decoded by the browser, is the
text plain Scrapy decodes from the same bytes, on both backends: UTF-16 and
UTF-32 with a byte order mark, with or without a charset in the header;
UTF-16 named by the header only; a charset only a ``<meta>`` names."""

from __future__ import annotations

import pytest
import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import SiteServer
from tests.site.encodings import text_in

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BACKENDS = {"lightpanda": {}, "chromium": {"CDP_POOL_BROWSER": "chromium"}}
#: name -> query of /enc/page
VARIANTS = {
    "utf16le-bom": "codec=utf-16-le&bom=1",
    "utf16be-bom": "codec=utf-16-be&bom=1",
    "utf16le-bom-header": "codec=utf-16-le&bom=1&header=1",
    "utf16le-header": "codec=utf-16-le&header=1",
    "utf8-bom": "codec=utf-8&bom=1",
    "windows-1252-meta": "codec=windows-1252&meta=1",
    "shift_jis-meta": "codec=shift_jis&meta=1",
    "shift_jis-header": "codec=shift_jis&header=1",
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_pages_text_is_what_plain_scrapy_decodes(site: SiteServer, backend: str) -> None:
    requests = [
        scrapy.Request(site.url(f"/enc/page?{query}&v={name}"), meta={"cdp": cdp, "v": name})
        for name, query in VARIANTS.items()
        for cdp in (False, True)
    ]
    settings = {**BACKENDS[backend], "DUPEFILTER_CLASS": "scrapy.dupefilters.BaseDupeFilter"}
    spider, _ = await crawl(requests, settings)
    assert not spider.failures, spider.failures
    texts = {(r.meta["v"], r.meta["cdp"]): r.css("#t::text").get() for r in spider.responses}
    wrong = {}
    for name, query in VARIANTS.items():
        expected = text_in(dict(part.split("=") for part in query.split("&"))["codec"])
        plain, rendered = texts[name, False], texts[name, True]
        if plain != expected or rendered != plain:
            wrong[name] = {"expected": expected, "plain": plain, "rendered": rendered}
    assert not wrong
