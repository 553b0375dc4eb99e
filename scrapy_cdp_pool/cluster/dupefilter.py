"""ClusterDupeFilter: ``DUPEFILTER_CLASS`` of a cluster crawl; its fingerprints
are one Redis set (``<prefix>seen``) shared by every worker, one per bucket
of the crawl (:mod:`~scrapy_cdp_pool.cluster.shards`: a request's fingerprint
is in its profile's bucket, else its host's).

Fingerprints come from the crawler's ``REQUEST_FINGERPRINTER_CLASS`` (Scrapy's
default: 20 bytes of SHA-1), so a project's own fingerprinter decides what a
duplicate is, as with Scrapy's ``RFPDupeFilter``. The
:class:`~scrapy_cdp_pool.cluster.ClusterScheduler` adds a request's
fingerprint in the same Lua call that stores the request (both or neither);
:meth:`request_seen` is for other callers. Memory: Redis keeps each
fingerprint as a set member, ~70 bytes each for 20-byte fingerprints
(``benchmarks/cluster.py`` measures it with ``MEMORY USAGE``); with
``CDP_POOL_CLUSTER_DUPEFILTER = "bloom"`` they are bits of a Bloom filter
instead (:mod:`~scrapy_cdp_pool.cluster.bloom`, ~1.8 bytes each at 0.1%).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.dupefilters import RFPDupeFilter

from scrapy_cdp_pool.cluster.bloom import BLOOM_COUNT, Bloom
from scrapy_cdp_pool.cluster.frontier import SEEN
from scrapy_cdp_pool.cluster.link import ClusterLink, link_for
from scrapy_cdp_pool.core.gates import host_of, profile_of

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.utils.request import RequestFingerprinterProtocol

    from scrapy_cdp_pool.cluster.frontier import Frontier


class ClusterDupeFilter(RFPDupeFilter):
    def __init__(
        self,
        link: ClusterLink,
        debug: bool = False,
        *,
        fingerprinter: RequestFingerprinterProtocol | None = None,
    ) -> None:
        super().__init__(None, debug, fingerprinter=fingerprinter)
        self.link = link

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(
            link_for(crawler),
            crawler.settings.getbool("DUPEFILTER_DEBUG"),
            fingerprinter=crawler.request_fingerprinter,
        )

    def fingerprint(self, request: Request) -> bytes:
        return self.fingerprinter.fingerprint(request)

    def request_seen(self, request: Request) -> bool:
        """Add the request's fingerprint to the shared set (or Bloom filter);
        whether it was there. :raises RedisUnavailable: Redis could not be reached."""
        frontier = self.link.shards.of(host_of(request), profile_of(request))
        fp = self.fingerprint(request)
        bloom = frontier.bloom
        if bloom is not None:
            return self.link.call("seen", lambda: bloom_add(frontier, bloom, fp))
        key = f"{frontier.prefix}{SEEN}"
        return not self.link.call("seen", lambda: frontier.client.sadd(key, fp))


def bloom_add(frontier: Frontier, bloom: Bloom, fp: bytes) -> bool:
    """Set ``fp``'s bits in the crawl's Bloom filter (one ``BITFIELD``, and
    its count's ``INCR`` when it was new); whether they were all set (seen)."""
    key, offsets = bloom.place(frontier.prefix, fp)
    field = frontier.client.bitfield(key)
    for offset in offsets:
        field.set("u1", offset, 1)
    frontier.calls += 1
    old: list[int] = field.execute()  # type: ignore[assignment]
    if all(old):
        return True
    frontier.calls += 1
    frontier.client.incr(frontier.prefix + BLOOM_COUNT)
    return False
