"""A Bloom filter of the crawl's fingerprints in Redis, on plain bitmaps
(``CDP_POOL_CLUSTER_DUPEFILTER = "bloom"``, docs/cluster.md).

The fingerprint set (``P seen``) costs Redis ~80 bytes per request (8 GB per
100 M). A Bloom filter sized for ``capacity`` requests at false-positive rate
``p`` costs ``-capacity * ln(p) / ln(2)**2`` bits (1.8 bytes per request at
0.1%: ~180 MB per 100 M) and answers "seen" for a request never seen with
probability ``p`` once ``capacity`` requests are in (such a request is
dropped as a duplicate, as by Scrapy's own dupefilter on a fingerprint
collision, but ``p`` of them); past ``capacity`` the rate grows.

Layout: ``P seen_bloom:<part>`` (strings, bitmaps of :attr:`Bloom.bits` bits
each, at most 2**32, Redis's limit on a bit offset: a filter that needs more
is split into parts, a fingerprint's bits all in the part its hash picks),
``P seen_bloom_count`` (fingerprints added), ``P seen_bloom_params``
(``<capacity>:<error rate>``: every worker must size the filter alike, checked
at start). The ``k`` bit offsets of a fingerprint are computed by the worker
(double hashing of a BLAKE2b digest: Kirsch and Mitzenmacher, "Less hashing,
same performance", 2006); the store script sets them with one ``BITFIELD``
and learns from the old bits whether the fingerprint was there
(:data:`~scrapy_cdp_pool.cluster.scripts.PUSH`).
"""

from __future__ import annotations

import hashlib
import math
import struct
from dataclasses import dataclass
from typing import Any

MAX_BITS = 2**32
"""Most bits of one bitmap (Redis's bit offsets stop at 2**32 - 1)."""
BLOOM = "seen_bloom"
BLOOM_COUNT = "seen_bloom_count"
BLOOM_PARAMS = "seen_bloom_params"


@dataclass(frozen=True)
class Bloom:
    """A filter for ``capacity`` fingerprints at false-positive rate
    ``error_rate`` (0 < rate < 1): ``parts`` bitmaps of ``bits`` bits each,
    ``hashes`` bits per fingerprint."""

    capacity: int
    error_rate: float
    bits: int
    hashes: int
    parts: int

    @classmethod
    def sized(cls, capacity: int, error_rate: float) -> Bloom:
        """:raises ValueError: ``capacity`` < 1 or ``error_rate`` not in (0, 1)."""
        if capacity < 1 or not 0 < error_rate < 1:
            raise ValueError(f"a Bloom filter of {capacity} at {error_rate}: no such size")
        total = math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2)
        hashes = max(1, round(total / capacity * math.log(2)))
        parts = math.ceil(total / MAX_BITS)
        return cls(capacity, error_rate, math.ceil(total / parts), hashes, parts)

    @property
    def memory_bytes(self) -> int:
        """Redis memory of the bitmaps once full, bytes."""
        return self.parts * math.ceil(self.bits / 8)

    @property
    def params(self) -> str:
        return f"{self.capacity}:{self.error_rate!r}"

    def place(self, prefix: str, fp: bytes) -> tuple[str, list[int]]:
        """The bitmap key of fingerprint ``fp`` and its ``hashes`` bit offsets."""
        h1, h2, h3 = struct.unpack("<QQQ", hashlib.blake2b(fp, digest_size=24).digest())
        h2 |= 1  # odd: the offsets differ for any number of bits that is a power of 2
        part = h3 % self.parts
        return f"{prefix}{BLOOM}:{part}", [(h1 + i * h2) % self.bits for i in range(self.hashes)]


def check_crawl(client: Any, prefix: str, bloom: Bloom | None) -> int | None:
    """Check the crawl's dupefilter against this worker's settings, at start:
    with ``bloom``, record its size if no worker has (``SET NX``) and return
    the fingerprints added so far; without, ``None``.

    :raises ValueError: the crawl's filter has another size (every worker
        must set ``CDP_POOL_CLUSTER_BLOOM_*`` alike), or its fingerprints are
        in the other form (a set with ``"bloom"`` asked, a filter with
        ``"set"``): switching would forget them; flush the crawl
        (``SCHEDULER_FLUSH_ON_START``) or keep the form it has."""
    stored = client.get(prefix + BLOOM_PARAMS)
    stored = stored.decode() if isinstance(stored, bytes) else stored
    if bloom is None:
        if stored is not None:
            raise ValueError(
                f'CDP_POOL_CLUSTER_DUPEFILTER = "set": the crawl\'s fingerprints are in a Bloom '
                f'filter ({prefix}{BLOOM}:*, {stored}); set "bloom" with its size, or flush '
                "the crawl (SCHEDULER_FLUSH_ON_START = True)"
            )
        return None
    if stored is None:
        seen = int(client.scard(prefix + "seen"))
        if seen:
            raise ValueError(
                f'CDP_POOL_CLUSTER_DUPEFILTER = "bloom": the crawl\'s {seen} fingerprints are in '
                f'the set {prefix}seen; keep "set", or flush the crawl '
                "(SCHEDULER_FLUSH_ON_START = True)"
            )
        client.set(prefix + BLOOM_PARAMS, bloom.params, nx=True)
        stored = client.get(prefix + BLOOM_PARAMS)
        stored = stored.decode() if isinstance(stored, bytes) else stored
    if stored != bloom.params:
        raise ValueError(
            f"CDP_POOL_CLUSTER_BLOOM_CAPACITY / CDP_POOL_CLUSTER_BLOOM_ERROR_RATE: this worker's "
            f"{bloom.params} differs from the crawl's Bloom filter ({stored}): every worker "
            "must size it alike"
        )
    return int(client.get(prefix + BLOOM_COUNT) or 0)
