"""Crawl the JavaScript-rendered demo shop: every product, exactly once.

``scrapy crawl products -O products.json`` (from ``example_project/``)
starts the demo shop, renders its pages in a browser (``meta={"cdp": True}``)
and writes 20 items ``{"id", "name", "price", "url"}``.
"""

from __future__ import annotations

import scrapy

from ..demo_site import DemoSite

RENDER = {"cdp": True}


class ProductsSpider(scrapy.Spider):
    name = "products"

    async def start(self):
        """Start the demo shop, then request its first list page."""
        self.demo_site = DemoSite()
        base_url = self.demo_site.start()
        self.logger.info("Demo shop serving at %s", base_url)
        yield scrapy.Request(f"{base_url}/", meta=RENDER)

    def parse(self, response):
        """A list page: follow each product and the next page."""
        for link in response.css("div.product a"):
            yield response.follow(link, self.parse_product, meta=RENDER)
        next_page = response.css("a.next")
        if next_page:
            yield response.follow(next_page[0], self.parse, meta=RENDER)

    def parse_product(self, response):
        """A product page: one item."""
        yield {
            "id": int(response.url.rstrip("/").rsplit("/", 1)[-1]),
            "name": response.css("h1.name::text").get(),
            "price": response.css("p.price::text").get(),
            "url": response.url,
        }

    def closed(self, reason):
        """Stop the demo shop when the crawl ends."""
        demo_site = getattr(self, "demo_site", None)
        if demo_site is not None:
            demo_site.stop()
