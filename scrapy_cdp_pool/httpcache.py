"""Scrapy's HTTP cache with rendered and plain responses kept apart.

:class:`RenderAwareCacheStorage` is installed by the add-on as
``HTTPCACHE_STORAGE`` and wraps the storage that was set before
(``CDP_POOL_HTTPCACHE_STORAGE``, Scrapy's filesystem storage by default). For a
rendered request:

- the cache key is the request's fingerprint combined with its render key
  (:func:`render_key`: rendered, profile, actions, wait), so a rendered and a
  plain response of one URL, or two renders with different actions, get
  different entries; plain requests keep their fingerprint, and the
  dupefilter's fingerprints are not touched;
- each stored response carries its render key, action results and what the
  render ladder said of it in headers (``X-Cdp-Render-Key``,
  ``X-Cdp-Results``, ``X-Cdp-Ladder``), checked and removed when it is read
  back: a cached entry stands in only for a request with the same render key
  (even with a storage whose key cannot be changed), and a cached render gives
  back ``meta["cdp_results"]`` and the ladder's ``cdp_rung``, ``cdp_ladder``,
  ``cdp_fallback_reason`` and ``cdp_page_kind``.

Its entries hold what requests sent and responses carried (cookies, a
``Proxy-Authorization`` header, a profile's pages), so the directory of
Scrapy's filesystem and DBM storages (their ``cachedir``) is made 0700 at
``open_spider``: only the crawl's user can read it (:func:`make_private`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.http import Headers
from scrapy.utils.misc import load_object

from scrapy_cdp_pool.render import is_rendered
from scrapy_cdp_pool.scrapy_internals import cache_fingerprinter, set_cache_fingerprinter
from scrapy_cdp_pool.shared.disk_full import is_disk_full, stop_for_full_disk

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

DEFAULT_STORAGE = "scrapy.extensions.httpcache.FilesystemCacheStorage"
KEY_HEADER = b"X-Cdp-Render-Key"
RESULTS_HEADER = b"X-Cdp-Results"
#: what the render ladder said of the stored render (``cdp_rung``...), as JSON
LADDER_HEADER = b"X-Cdp-Ladder"
LADDER_META_KEYS = ("cdp_rung", "cdp_ladder", "cdp_fallback_reason", "cdp_page_kind")
#: meta keys that change what a render gives (``cdp_results`` is its output)
RENDER_META_KEYS = ("cdp_profile", "cdp_actions", "cdp_wait_until")
#: the same, in the key only when set (keys of requests without them unchanged)
OPTIONAL_RENDER_META_KEYS = ("cdp_capture", "cdp_init_scripts")


def render_key(request: Request, render_all: bool) -> str | None:
    """A digest of what the render of ``request`` depends on beyond its URL,
    method, headers and body; ``None`` for a request that is not rendered."""
    if not is_rendered(request, render_all):
        return None
    parts = {key: request.meta.get(key) for key in RENDER_META_KEYS}
    parts.update(
        {key: request.meta[key] for key in OPTIONAL_RENDER_META_KEYS if key in request.meta}
    )
    text = json.dumps(parts, sort_keys=True, default=repr)
    return "cdp-" + hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


class RenderKeyFingerprinter:
    """The wrapped storage's fingerprinter, with the render key mixed in for
    rendered requests only."""

    def __init__(self, inner: Any, render_all: bool) -> None:
        self.inner = inner
        self.render_all = render_all

    def fingerprint(self, request: Request) -> bytes:
        base: bytes = self.inner.fingerprint(request)
        key = render_key(request, self.render_all)
        if key is None:
            return base
        return hashlib.sha1(base + key.encode(), usedforsecurity=False).digest()


class RenderAwareCacheStorage:
    """An ``HTTPCACHE_STORAGE`` that wraps another (see the module docstring)."""

    def __init__(self, settings: BaseSettings) -> None:
        path = settings.get("CDP_POOL_HTTPCACHE_STORAGE") or DEFAULT_STORAGE
        self.inner = load_object(path)(settings)
        self.render_all = settings.getbool("CDP_POOL_RENDER_ALL")

    def open_spider(self, spider: Spider) -> None:
        self.inner.open_spider(spider)
        cachedir = getattr(self.inner, "cachedir", None)
        if isinstance(cachedir, str):
            make_private(Path(cachedir), spider)
        # Scrapy's filesystem and DBM storages key entries with the
        # fingerprinter they take from the crawler at open_spider.
        fingerprinter = cache_fingerprinter(self.inner)
        if fingerprinter is not None:
            set_cache_fingerprinter(
                self.inner, RenderKeyFingerprinter(fingerprinter, self.render_all)
            )
        else:
            logger.warning(
                "HTTPCACHE_STORAGE %s has no fingerprinter to extend: a rendered and a plain "
                "response of one URL share its cache entry (neither is served for the other; "
                "each replaces the other)",
                type(self.inner).__name__,
                extra={"spider": spider},
            )

    def close_spider(self, spider: Spider) -> None:
        self.inner.close_spider(spider)

    def retrieve_response(self, spider: Spider, request: Request) -> Response | None:
        if request.meta.get("cdp_include_page"):
            # Its callback needs the live page: never from the cache, and
            # Scrapy's dont_cache keeps its response out of it (and out of
            # httpcache/store).
            request.meta["dont_cache"] = True
            return None
        response: Response | None = self.inner.retrieve_response(spider, request)
        if response is None:
            return None
        stored = response.headers.get(KEY_HEADER)
        key = render_key(request, self.render_all)
        if (stored.decode("ascii") if stored else None) != key:
            return None
        if key is None:
            return response
        results = response.headers.get(RESULTS_HEADER)
        request.meta["cdp_results"] = json.loads(results) if results else []
        ladder = response.headers.get(LADDER_HEADER)
        if ladder:
            request.meta.update(json.loads(ladder))
        headers = Headers(response.headers)
        headers.pop(KEY_HEADER, None)
        headers.pop(RESULTS_HEADER, None)
        headers.pop(LADDER_HEADER, None)
        return response.replace(headers=headers)

    def store_response(self, spider: Spider, request: Request, response: Response) -> None:
        if request.meta.get("cdp_include_page"):
            return  # never served from the cache (see retrieve_response)
        key = render_key(request, self.render_all)
        if key is not None:
            headers = Headers(response.headers)
            headers[KEY_HEADER] = key
            headers[RESULTS_HEADER] = json.dumps(request.meta.get("cdp_results", []))
            ladder = {k: request.meta[k] for k in LADDER_META_KEYS if k in request.meta}
            if ladder:
                headers[LADDER_HEADER] = json.dumps(ladder)
            response = response.replace(headers=headers)
        try:
            self.inner.store_response(spider, request, response)
        except OSError as e:  # the response itself is good: a full disk stops the crawl
            crawler = getattr(spider, "crawler", None)
            if not is_disk_full(e) or crawler is None:
                raise
            where = getattr(e, "filename", None) or str(crawler.settings.get("HTTPCACHE_DIR"))
            stop_for_full_disk(crawler, where, "a response for the HTTP cache", e)


def make_private(directory: Path, spider: Spider) -> None:
    """Create ``directory`` (mode 0700) or, when it exists and is the crawl
    user's, take away every other user's access (an INFO line says so once).

    :raises OSError: it could not be created or changed (an error naming it).
    """
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.stat()
        if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077:
            directory.chmod(stat.S_IMODE(info.st_mode) & 0o700)
            logger.info(
                "HTTP cache %s made private (mode 0700): its entries hold cookies and "
                "request headers",
                directory,
                extra={"spider": spider},
            )
    except OSError as e:
        raise OSError(f"HTTPCACHE_DIR {directory}: cannot make it private: {e}") from e
