"""TakeChecks: the hosts a take just found unpaused, so that the check right
before a navigation (:meth:`ClusterHostPauseMiddleware.remaining
<scrapy_cdp_pool.cluster.host_pause.ClusterHostPauseMiddleware.remaining>`)
need not ask Redis again.

The take script hands a request out only after reading its host's pause
(``PTTL <prefix>pause:<host>``, in the same atomic step), so a take sent at
``t`` has seen every pause written before ``t``, as a ``PTTL`` sent at ``t``
would. Right after it, the check before the navigation is answered from that
take (no round trip) when the take was sent at most :data:`FRESH_S` earlier
and the worker's subscription to the fleet's pauses is live: a pause another
worker writes after the take reaches the worker as a message
(:mod:`~scrapy_cdp_pool.cluster.host_events`) and is seen from then on. What
it can miss, and a ``PTTL`` at the navigation would not: a pause written
after the take whose message has not come yet when the navigation starts,
at most :data:`FRESH_S` after the take (a ``PTTL`` misses one written after
its own answer). Measured in ``benchmarks/cluster.py --crawl`` (3 workers,
12 profiles, 600 pages, quiet): the check came 10 ms after its take (median;
99th percentile 78 ms, at most 200 ms), every check was answered by its take,
and a page cost 3.09 round trips instead of 4.11 (docs/cluster.md).
"""

from __future__ import annotations

#: how long after a take was sent (seconds) its pause check stands for the
#: navigation of a request of the same host (longer: a ``PTTL`` is sent)
FRESH_S = 0.5

#: hosts remembered before the stale ones are dropped (a broad crawl's)
_PRUNE_AT = 4096


class TakeChecks:
    """host -> when (``time.monotonic()``) the latest take that handed out a
    request of it was sent: every pause of it written before then was seen."""

    def __init__(self, fresh_s: float = FRESH_S) -> None:
        self.fresh_s = fresh_s
        self._sent: dict[str, float] = {}

    def taken(self, host: str, sent: float) -> None:
        """A take sent at ``sent`` handed out a request of ``host``."""
        sent_before = self._sent.get(host)
        if sent_before is None or sent > sent_before:
            if sent_before is None and len(self._sent) >= _PRUNE_AT:
                self._prune(sent)
            self._sent[host] = sent

    def checked_at(self, host: str, now: float) -> float | None:
        """When ``host``'s pause was last read by a take, if that was at most
        :attr:`fresh_s` before ``now``; else ``None`` (ask Redis)."""
        sent = self._sent.get(host)
        if sent is None or now - sent > self.fresh_s:
            return None
        return sent

    def _prune(self, now: float) -> None:
        self._sent = {h: t for h, t in self._sent.items() if now - t <= self.fresh_s}

    def __len__(self) -> int:
        return len(self._sent)
