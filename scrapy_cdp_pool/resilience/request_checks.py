"""RequestChecksMiddleware: a request that cannot be what it claims fails by
name, alone, before it is downloaded; the crawl goes on.

- With ``JOBDIR``, Scrapy keeps a request its disk queue cannot serialize in
  memory, silently, so it is lost on a restart. The scheduler queue marks such
  a request (:data:`~scrapy_cdp_pool.core.queue.UNSERIALIZABLE_META_KEY`)
  and it fails here with :class:`UnserializableRequestError`, naming the meta
  keys (or the callback) that cannot be stored.
- A live page in the meta (``cdp_page``, ``playwright_page``: a request built
  with ``meta=response.meta`` before the callback closed its page) fails with
  :class:`InvalidRequestMeta`, naming the request and the key
  (:func:`~scrapy_cdp_pool.core.live_page_fate.check_not_handed_over`); a
  closed page was already dropped when the callback yielded the request.
- ``meta["cdp_not_before"]`` must be epoch seconds: a finite number, not
  negative, at most ``CDP_POOL_RETRY_BACKOFF_MAX_SECONDS`` from now
  (:func:`~scrapy_cdp_pool.core.gates.not_before_problem`). The
  scheduler queue marks a request with an invalid value and hands it out at
  once instead of holding it (for ever, or failing the enqueue); it fails here
  with :class:`InvalidRequestMeta`, through its errback, counted in
  ``cdp_pool/failures/InvalidRequestMeta``.
- ``meta["cdp_profile"]`` must be a profile's name (a non-empty string) or
  ``None`` (no profile). An empty string, ``False`` or a number fails with
  :class:`InvalidRequestMeta` instead of being sent as no profile at all, or
  as a profile named ``"0"``.
- ``meta["cdp"]`` must be ``True``, ``False`` or ``None``: ``"false"`` would
  have been rendered (a non-empty string is true).
- Every other meta value the plugin reads (a rendered request's ``cdp_*`` keys,
  ``download_timeout``, ``download_maxsize``, ``download_warnsize``,
  ``cdp_expect``) is checked here too, by
  :func:`~scrapy_cdp_pool.core.request_meta.check_request_meta`: the one
  module that holds the checks, with one exception type and one stat. A
  ``cdp*`` key the plugin does not read is warned about once.
"""

from __future__ import annotations

import logging
import pickle
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.utils.httpobj import urlparse_cached

from scrapy_cdp_pool.core.gates import INVALID_META_KEY, NOT_BEFORE_META_KEY
from scrapy_cdp_pool.core.handler import RENDERED_SCHEMES
from scrapy_cdp_pool.core.live_page_fate import check_not_handed_over
from scrapy_cdp_pool.core.queue import UNSERIALIZABLE_META_KEY
from scrapy_cdp_pool.core.request_meta import UnknownMetaKeys, check_request_meta
from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.errors import InvalidRequestMeta, UnserializableRequestError
from scrapy_cdp_pool.render import is_rendered

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def unserializable_parts(request: Request, spider: Any) -> list[str]:
    """What keeps ``request`` out of a disk queue: ``"meta['key']"`` for each
    meta value pickle refuses, or the callback the spider does not have."""
    parts: list[str] = []
    try:
        request.to_dict(spider=spider)
    except ValueError as e:
        parts.append(str(e))
    for key, value in request.meta.items():
        if key == UNSERIALIZABLE_META_KEY:
            continue
        try:
            pickle.dumps(value, protocol=4)
        except (pickle.PicklingError, TypeError, AttributeError, ValueError) as e:
            parts.append(f"meta[{key!r}] ({type(value).__name__}: {e})")
    return parts


class RequestChecksMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        runtime = runtime_of(crawler)
        self.gates = runtime.gates
        self.config = runtime.config
        self.unknown_keys = UnknownMetaKeys(extra={"crawler": crawler})
        #: URL schemes a request asked to render that go to Scrapy's own
        #: handler for them (warned once each)
        self.unrendered_schemes: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        # First: a live page in the meta is also what makes it unserializable
        check_not_handed_over(request)
        error = request.meta.get(UNSERIALIZABLE_META_KEY)
        if error is not None:
            parts = unserializable_parts(request, self.crawler.spider) or [str(error)]
            where = (
                "the cluster's Redis, so no worker could take it"
                if self.config.cluster.redis_url is not None
                else "JOBDIR, so it would be lost on a restart"
            )
            raise UnserializableRequestError(
                f"{request} cannot be stored in {where}: {'; '.join(parts)}"
            )
        not_before = request.meta.get(NOT_BEFORE_META_KEY)
        # Marked by the queue (a request whose value was invalid when queued)
        problem = request.meta.pop(INVALID_META_KEY, None)
        if problem is not None:
            raise InvalidRequestMeta(
                f"{request}: meta[{NOT_BEFORE_META_KEY!r}] = {not_before!r}: {problem}"
            )
        self.unknown_keys.check(request.meta)
        rendered = is_rendered(request, self.config.render_all)
        if rendered:
            self._warn_unrendered_scheme(request)
        check_request_meta(request, self.config, self.gates.max_wait_s, rendered=rendered)

    def _warn_unrendered_scheme(self, request: Request) -> None:
        """The browser renders http and https only: a ``file:``, ``data:`` or
        ``ftp:`` request marked for it goes to Scrapy's handler for its
        scheme, unrendered; said once per scheme, naming the first request."""
        scheme = urlparse_cached(request).scheme
        if scheme in RENDERED_SCHEMES or scheme in self.unrendered_schemes:
            return
        self.unrendered_schemes.add(scheme)
        logger.warning(
            "%s asks to be rendered (meta['cdp'] or CDP_POOL_RENDER_ALL), but the browser "
            "renders only http and https URLs: %s: requests go to Scrapy's own handler, "
            "unrendered (said once per scheme)",
            request,
            scheme,
            extra={"crawler": self.crawler},
        )
