"""A scrapy-redis ``RedisSpider`` as its users write it (``redis_key`` from
the ``REDIS_START_URLS_KEY`` setting, ``parse``): an item ``{"n": n}`` per
page of the test site's ``/jobsite`` pushed to the key."""

from __future__ import annotations

from typing import Any

from scrapy.http import Response
from scrapy_redis.spiders import RedisSpider


class RedisFeedSpider(RedisSpider):
    name = "redisfeed"

    def parse(self, response: Response) -> Any:
        yield {"n": int(response.css("#n::text").get(""))}
