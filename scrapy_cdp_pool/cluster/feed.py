"""The feed: start URLs pushed to Redis as scrapy-redis users push them.

- :func:`feed_key_for`: which key (``CDP_POOL_CLUSTER_FEED_KEY``, else a
  scrapy-redis spider's ``redis_key``, else ``REDIS_START_URLS_KEY``, else
  ``<spider name>:start_urls``; ``%(name)s`` is the spider's name, as in
  scrapy-redis).
- :data:`READABLE_TYPES`: a list (``LPUSH``/``RPUSH``, read from the left),
  a set (``SADD``, read in no order) or a sorted set (``ZADD``, highest score
  first), chosen by the key's ``TYPE`` in the take
  (:data:`~scrapy_cdp_pool.cluster.scripts.TAKE`); another type is refused at
  start (:func:`~scrapy_cdp_pool.cluster.install.check_feed`).
- :func:`requests_from_feed`: an item becomes requests: the spider's own
  ``make_request_from_data(data)`` if it defines one (scrapy-redis's hook),
  else :func:`request_from_data`: a JSON object (scrapy-redis's form:
  ``{"url": ..., "meta": {...}, "method": ..., "headers": {...}, "body": ...}``
  or ``"formdata": {...}``; other keys are form data, as scrapy-redis makes
  them), or a URL.
- :func:`adopt_redis_spider`: a scrapy-redis ``RedisSpider`` or
  ``RedisCrawlSpider`` runs as it is, the cluster reading its feed: its own
  reading of the key (at start and when idle) and its idle handler (which
  keeps a worker open for ever by default) are turned off, so the crawl ends
  as every cluster crawl does (the frontier empty and nothing leased, unless
  ``CDP_POOL_CLUSTER_KEEP_OPEN``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from scrapy import FormRequest, Request, signals

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

READABLE_TYPES = ("list", "set", "zset")
"""Types of the feed key the take reads (``none``: no key yet, nothing to read)."""
REDIS_MIXIN = "scrapy_redis.spiders.RedisMixin"
"""scrapy-redis's base of ``RedisSpider`` and ``RedisCrawlSpider`` (not imported:
scrapy-redis is not a dependency)."""
_JSON_KEYS = ("url", "method", "meta", "headers", "body", "formdata")


def is_redis_spider(spidercls: type) -> bool:
    """Whether ``spidercls`` derives from scrapy-redis's ``RedisMixin``."""
    return any(f"{c.__module__}.{c.__qualname__}" == REDIS_MIXIN for c in spidercls.__mro__)


def feed_key_for(spidercls: type, settings: Any, configured: str | None) -> str:
    """The feed's key for a crawl of ``spidercls``.

    :raises ValueError: a scrapy-redis spider's ``redis_key`` names several
        keys (the feed is one key)."""
    name = str(getattr(spidercls, "name", "") or "")
    if configured:
        return configured
    key = getattr(spidercls, "redis_key", None) if is_redis_spider(spidercls) else None
    if isinstance(key, list | tuple):
        raise ValueError(
            f"spider {name!r}: redis_key = {key!r} names several keys; the cluster reads one "
            "feed: set CDP_POOL_CLUSTER_FEED_KEY (or redis_key) to one key"
        )
    if not key:
        key = settings.get("REDIS_START_URLS_KEY") or "%(name)s:start_urls"
    return str(key) % {"name": name}


def request_from_data(data: bytes, encoding: str = "utf-8") -> Request:
    """A request for one feed item, ``dont_filter`` as scrapy-redis makes them.

    A JSON object: ``url`` (required), ``method`` (default ``GET``), ``meta``
    and ``headers`` (objects), then either ``body`` (a string) or form data
    (``formdata``, an object, and every other key, as scrapy-redis's
    ``make_request_from_data`` sends them: a ``FormRequest``, in the query of
    a ``GET``). Anything else is a URL.

    :raises ValueError: the item is neither (the message says what is wrong)."""
    text = data.decode(encoding).strip()
    if not text.startswith("{"):
        if not text:
            raise ValueError("empty feed item")
        return Request(text, dont_filter=True)
    try:
        item = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"feed item is not valid JSON: {e}") from None
    if not isinstance(item, dict):
        raise ValueError("feed item is not a JSON object")
    url = item.get("url")
    if not isinstance(url, str) or not url:
        raise ValueError('feed item has no "url" (a string)')
    method = item.get("method", "GET")
    if not isinstance(method, str):
        raise ValueError(f'feed item: "method" must be a string, not {method!r}')
    for key in ("meta", "headers", "formdata"):
        if not isinstance(item.get(key, {}), dict):
            raise ValueError(f'feed item: "{key}" must be a JSON object')
    body = item.get("body")
    if body is not None and not isinstance(body, str):
        raise ValueError('feed item: "body" must be a string')
    formdata = {k: v for k, v in item.items() if k not in _JSON_KEYS}
    formdata.update(item.get("formdata") or {})
    common: dict[str, Any] = {
        "method": method.upper(),
        "meta": item.get("meta") or {},
        "headers": item.get("headers"),
        "dont_filter": True,
    }
    if formdata:
        if body is not None:
            raise ValueError('feed item has both "body" and form data')
        return FormRequest(url, formdata=formdata, **common)
    return Request(url, body=body, **common)


def _own_hook(spider: Any) -> Any:
    """The spider's ``make_request_from_data``, unless it is scrapy-redis's
    own (which :func:`request_from_data` does, without its deprecation
    warning per plain URL)."""
    make = getattr(spider, "make_request_from_data", None)
    func = getattr(make, "__func__", None)
    if func is not None and f"{func.__module__}.{func.__qualname__}" == (
        "scrapy_redis.spiders.RedisMixin.make_request_from_data"
    ):
        return None
    return make


def requests_from_feed(spider: Any, data: bytes) -> list[Request]:
    """The requests for one feed item (see the module); the spider's hook may
    return one request, several, or none.

    :raises Exception: whatever the spider's hook raises; ``ValueError`` for
        an item :func:`request_from_data` cannot read."""
    make = _own_hook(spider)
    if make is None:
        encoding = getattr(spider, "redis_encoding", None) or "utf-8"
        return [request_from_data(data, encoding)]
    made = make(data)
    if made is None:
        return []
    if isinstance(made, Request):
        return [made]
    if isinstance(made, Iterable):
        return [request for request in made if isinstance(request, Request)]
    raise ValueError(f"make_request_from_data returned {type(made).__name__}, not a request")


def _nothing(key: str, batch_size: int) -> list[bytes]:
    return []


def adopt_redis_spider(crawler: Crawler, spider: Any, feed_key: str) -> bool:
    """Turn off a scrapy-redis spider's own reading of its key and its idle
    handler (see the module); whether ``spider`` is one."""
    if not is_redis_spider(type(spider)):
        return False
    idle = getattr(spider, "spider_idle", None)
    if idle is not None:
        crawler.signals.disconnect(idle, signal=signals.spider_idle)
    # what its start_requests() and idle handler pop the key with (set by its
    # setup_redis() as an attribute of the spider): the cluster reads the key
    spider.fetch_data = _nothing
    logger.info(
        "Spider %r is a scrapy-redis spider: the cluster reads its feed %r (list, set or "
        "sorted set) and ends the crawl when the frontier is empty and nothing is leased "
        "(CDP_POOL_CLUSTER_KEEP_OPEN = True keeps workers open for more); its own reading "
        "and idle handler are off", getattr(spider, "name", ""), feed_key,
        extra={"crawler": crawler},
    )  # fmt: skip
    return True
