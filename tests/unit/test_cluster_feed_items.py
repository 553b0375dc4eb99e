"""Feed items turned into requests (:mod:`scrapy_cdp_pool.cluster.feed`), as
scrapy-redis's ``make_request_from_data`` makes them, and the feed's key."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scrapy import FormRequest, Request, Spider
from scrapy.settings import Settings
from scrapy_redis.spiders import RedisSpider

from scrapy_cdp_pool.cluster.feed import feed_key_for, request_from_data, requests_from_feed


def scrapy_redis_request(data: bytes) -> Any:
    """What scrapy-redis's own ``RedisMixin.make_request_from_data`` makes."""
    spider = RedisSpider(name="s")
    spider.redis_encoding = "utf-8"
    return spider.make_request_from_data(data)


@pytest.mark.parametrize(
    "item",
    [
        b"https://example.com/a?b=1",
        json.dumps({"url": "https://example.com/", "meta": {"job-id": "123xsd"}}).encode(),
        json.dumps(
            {
                "url": "https://example.com/p",
                "meta": {"k": 1},
                "url_cookie_key": "fertxsas",
                "method": "post",
            }
        ).encode(),
        json.dumps({"url": "https://example.com/g?x=1", "q": "a b"}).encode(),
    ],
)
def test_the_same_request_as_scrapy_redis_makes(item: bytes) -> None:
    ours, theirs = request_from_data(item), scrapy_redis_request(item)
    for attribute in ("url", "method", "body", "meta", "dont_filter"):
        assert getattr(ours, attribute) == getattr(theirs, attribute), attribute


def test_headers_and_body() -> None:
    request = request_from_data(
        json.dumps(
            {"url": "https://example.com/", "method": "PUT", "headers": {"X-A": "1"},
             "body": "{}", "meta": {"cdp": True}}
        ).encode()
    )  # fmt: skip
    assert type(request) is Request
    assert (request.method, request.body, request.headers["X-A"]) == ("PUT", b"{}", b"1")
    assert request.meta == {"cdp": True}
    assert request.dont_filter


def test_formdata_merges_with_other_keys() -> None:
    request = request_from_data(
        b'{"url": "https://example.com/", "method": "POST", "formdata": {"a": "1"}, "b": "2"}'
    )
    assert isinstance(request, FormRequest)
    assert request.body == b"b=2&a=1"


@pytest.mark.parametrize(
    ("item", "problem"),
    [
        (b"", "empty"),
        (b"{not json", "not valid JSON"),
        (b'{"meta": {}}', 'no "url"'),
        (b'{"url": "https://e.com/", "body": "x", "a": "1"}', "both"),
        (b'{"url": "https://e.com/", "meta": []}', '"meta" must be'),
    ],
)
def test_an_item_that_is_no_request_is_named(item: bytes, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        request_from_data(item)


def test_the_spiders_own_hook_is_preferred() -> None:
    class Own(RedisSpider):
        name = "own"

        def make_request_from_data(self, data: bytes) -> list[Request]:
            return [Request(f"https://example.com/{data.decode()}/{n}") for n in range(2)]

    requests = requests_from_feed(Own(), b"x")
    assert [r.url for r in requests] == ["https://example.com/x/0", "https://example.com/x/1"]
    # scrapy-redis's own hook (not the spider's): ours, without its warning per URL
    assert [r.url for r in requests_from_feed(RedisSpider(name="s"), b"https://e.com/")] == [
        "https://e.com/"
    ]


def test_the_feed_key() -> None:
    class Plain(Spider):
        name = "plain"

    class Keyed(RedisSpider):
        name = "keyed"
        redis_key = "%(name)s:queue"

    settings = Settings()
    assert feed_key_for(Plain, settings, None) == "plain:start_urls"
    assert feed_key_for(Keyed, settings, None) == "keyed:queue"
    assert feed_key_for(Keyed, settings, "mine") == "mine"
    settings.set("REDIS_START_URLS_KEY", "urls:%(name)s")
    assert feed_key_for(Plain, settings, None) == "urls:plain"
    Keyed.redis_key = ["a", "b"]  # type: ignore[assignment]
    with pytest.raises(ValueError, match="names several keys"):
        feed_key_for(Keyed, settings, None)
