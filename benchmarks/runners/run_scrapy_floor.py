"""Scrapy's own cost per request: the same crawl as the other Scrapy runners, but every request is
answered at once by a download handler that returns one stored page (the kind's first page as
plain HTTP gives it, fetched once before the crawl). No network, no browser: the crawler CPU per
page is what Scrapy itself (engine, scheduler, middlewares, the spider's callback) spends per
request, the floor under any Scrapy download handler, this plugin's included."""

from __future__ import annotations

import asyncio
import sys
import urllib.request

from _common import page_urls, parser
from _scrapy import crawl
from scrapy.http import HtmlResponse, Request, Response

BODY = b""


class StoredPageHandler:
    """Answers every request with ``BODY`` (status 200, text/html); nothing is downloaded."""

    lazy = False

    async def download_request(self, request: Request) -> Response:
        await asyncio.sleep(0)  # a real handler yields to the loop at least once
        return HtmlResponse(
            request.url,
            status=200,
            headers={"Content-Type": "text/html; charset=utf-8"},
            body=BODY,
            request=request,
        )

    async def close(self) -> None:
        pass


if __name__ == "__main__":
    args = parser(__doc__).parse_args()
    first = page_urls(args.base_url, args.kind, 1, args.first_page)[0]
    with urllib.request.urlopen(first, timeout=30) as page:
        BODY = page.read()
    handler = "%s.StoredPageHandler" % __name__
    settings = {
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
        "DOWNLOAD_HANDLERS": {"http": handler, "https": handler},
    }
    sys.exit(crawl(args, settings, meta={}, raw_html=True))
